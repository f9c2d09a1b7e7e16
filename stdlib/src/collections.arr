# collections, written in arr: defaultdict, Counter and deque as classes over a dict or
# a list. Loaded at the first `import collections` (lib.rs's LIBRARIES).

class defaultdict:
    def __init__(self, default_factory=None, *args, **kwargs):
        self.default_factory = default_factory
        self._d = dict(*args, **kwargs)

    def __getitem__(self, key):
        if key not in self._d:
            if self.default_factory is None:
                raise KeyError(key)
            self._d[key] = self.default_factory()
        return self._d[key]

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        del self._d[key]

    def __contains__(self, key):
        return key in self._d

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(self._d)

    def __eq__(self, other):
        return self._d == (other._d if isinstance(other, defaultdict) else other)

    def keys(self):
        return self._d.keys()

    def values(self):
        return self._d.values()

    def items(self):
        return self._d.items()

    def get(self, key, default=None):
        return self._d.get(key, default)

    def pop(self, key, *default):
        return self._d.pop(key, *default)

    def setdefault(self, key, default=None):
        if key not in self._d:
            self._d[key] = default
        return self._d[key]

    def update(self, *args, **kwargs):
        self._d.update(*args, **kwargs)

    def copy(self):
        return defaultdict(self.default_factory, self._d)

    def __repr__(self):
        f = self.default_factory
        name = "None" if f is None else (f"<class '{f.__name__}'>" if isinstance(f, type) else repr(f))
        return f"defaultdict({name}, {self._d!r})"


class Counter:
    def __init__(self, iterable=None, **kwargs):
        self._d = {}
        self.update(iterable, **kwargs)

    def update(self, iterable=None, **kwargs):
        if iterable is not None:
            if isinstance(iterable, (dict, Counter)):
                for k, v in iterable.items():
                    self._d[k] = self._d.get(k, 0) + v
            else:
                for k in iterable:
                    self._d[k] = self._d.get(k, 0) + 1
        for k, v in kwargs.items():
            self._d[k] = self._d.get(k, 0) + v

    def __getitem__(self, key):
        return self._d.get(key, 0)

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        del self._d[key]

    def __contains__(self, key):
        return key in self._d

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(self._d)

    def __eq__(self, other):
        return self._d == (other._d if isinstance(other, Counter) else other)

    def keys(self):
        return self._d.keys()

    def values(self):
        return self._d.values()

    def items(self):
        return self._d.items()

    def get(self, key, default=None):
        return self._d.get(key, default)

    def total(self):
        return sum(self._d.values())

    def most_common(self, n=None):
        pairs = sorted(self._d.items(), key=lambda kv: -kv[1])
        return pairs if n is None else pairs[:n]

    def elements(self):
        return [k for k, v in self._d.items() for _ in range(v)]

    def __add__(self, other):
        out = Counter(self._d)
        out.update(other)
        return Counter({k: v for k, v in out.items() if v > 0})

    def __repr__(self):
        if not self._d:
            return "Counter()"
        body = ", ".join(f"{k!r}: {v!r}" for k, v in self.most_common())
        return "Counter({" + body + "})"


class deque:
    def __init__(self, iterable=(), maxlen=None):
        self.maxlen = maxlen
        self._items = []
        self.extend(iterable)

    def _trim_right(self):
        if self.maxlen is not None and len(self._items) > self.maxlen:
            self._items = self._items[len(self._items) - self.maxlen:]

    def _trim_left(self):
        if self.maxlen is not None and len(self._items) > self.maxlen:
            self._items = self._items[:self.maxlen]

    def append(self, x):
        self._items.append(x)
        self._trim_right()

    def appendleft(self, x):
        self._items.insert(0, x)
        self._trim_left()

    def extend(self, xs):
        for x in xs:
            self.append(x)

    def extendleft(self, xs):
        for x in xs:
            self.appendleft(x)

    def pop(self):
        if not self._items:
            raise IndexError("pop from an empty deque")
        return self._items.pop()

    def popleft(self):
        if not self._items:
            raise IndexError("pop from an empty deque")
        return self._items.pop(0)

    def clear(self):
        self._items = []

    def rotate(self, n=1):
        if self._items:
            n = n % len(self._items)
            self._items = self._items[len(self._items) - n:] + self._items[:len(self._items) - n]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __getitem__(self, i):
        return self._items[i]

    def __setitem__(self, i, v):
        self._items[i] = v

    def __contains__(self, x):
        return x in self._items

    def __eq__(self, other):
        return isinstance(other, deque) and self._items == other._items

    def __repr__(self):
        if self.maxlen is None:
            return f"deque({self._items!r})"
        return f"deque({self._items!r}, maxlen={self.maxlen})"
