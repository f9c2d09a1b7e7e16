# Generators run lazily: next/send/throw/close, yield from, yield inside loops, try and with;
# endless ones (itertools.count, cycle, repeat), contextlib.contextmanager, and zip/map/filter/enumerate over them.
def gen(n):
    print("start")
    for i in range(n):
        print("before", i)
        x = yield i
        print("got", x)
    return "done"

g = gen(3)
print("made")
print(next(g))
print(g.send("a"))
print(next(g))
try:
    next(g)
except StopIteration as e:
    print("stop", e.value if hasattr(e, "value") else e)

def count(start=0):
    n = start
    while True:
        yield n
        n += 1

for i in count(5):
    if i > 8:
        break
    print(i)

def inner():
    try:
        yield 1
        yield 2
    finally:
        print("inner finally")
    return 10

def outer():
    r = yield from inner()
    print("inner returned", r)
    yield 3

print(list(outer()))

def catcher():
    while True:
        try:
            v = yield
            print("recv", v)
        except ValueError as e:
            print("caught", e)
            yield "handled"

c = catcher()
next(c)
c.send(1)
print(c.throw(ValueError("boom")))
c.send(2)
c.close()

def with_gen():
    class Ctx:
        def __enter__(self):
            print("enter")
            return self
        def __exit__(self, *a):
            print("exit", a[0])
            return False
    with Ctx():
        yield 1
        yield 2
    print("after with")

w = with_gen()
print(next(w))
w.close()
print(list(with_gen()))

def fib():
    a, b = 0, 1
    while True:
        yield a
        a, b = b, a + b

f = fib()
print([next(f) for _ in range(10)])
print(sum(x for x in [1, 2, 3]))
print(sum(gen(2)))
print(", ".join(str(v) for v in gen(2)))
print(dict(enumerate(count(0) if False else gen(2))))

class It:
    def __init__(self):
        self.i = 0
    def __iter__(self):
        return self
    def __next__(self):
        self.i += 1
        if self.i > 3:
            raise StopIteration
        return self.i
print(list(It()))
for v in It():
    print("it", v)

class Tree:
    def __init__(self, items):
        self.items = items
    def __iter__(self):
        for x in self.items:
            yield x * 2
print(list(Tree([1, 2, 3])))
a, b = gen(2)
print(a, b)
print(*gen(2))

import itertools
from contextlib import contextmanager
import contextlib

@contextmanager
def tag(name):
    print("<%s>" % name)
    try:
        yield name.upper()
    finally:
        print("</%s>" % name)

with tag("a") as t:
    print("body", t)

try:
    with tag("b"):
        raise ValueError("inside")
except ValueError as e:
    print("propagated", e)

@contextmanager
def swallow():
    try:
        yield
    except KeyError:
        print("swallowed")

with swallow():
    raise KeyError("k")
print("after swallow")

for i, x in zip(itertools.count(10, 5), "abc"):
    print(i, x)
print(list(itertools.islice(itertools.count(), 2, 10, 3)))
print(list(itertools.islice(itertools.cycle([1, 2]), 5)))
print(list(itertools.islice(itertools.repeat("x"), 3)))
print(list(itertools.islice([1, 2, 3, 4], 2)))
it = iter([1, 2, 3, 4, 5])
print(list(itertools.islice(it, 2)), next(it))
with contextlib.suppress(ZeroDivisionError):
    1 / 0
print("ok")

def data_stream(n):
    rng = 0
    while True:
        perm = list(range(n))
        for i in range(0, n, 2):
            rng += 1
            yield perm[i:i + 2], rng

batches = data_stream(4)
for _ in range(5):
    print(next(batches))

def walk(t):
    if isinstance(t, list):
        for c in t:
            yield from walk(c)
    else:
        yield t
print(list(walk([1, [2, [3, 4]], 5])))

def g():
    yield next(me)
me = g()
try:
    next(me)
except ValueError as e:
    print("VE", e)

def deep(n):
    if n == 0:
        yield 0
    else:
        yield from deep(n - 1)
try:
    print(list(deep(50)))
    print(list(deep(5000)))
except RecursionError as e:
    print("RE", e)

def nums():
    i = 0
    while True:
        yield float(i)
        i += 1

src = nums()
def step(x):
    return x * 2.0 + next(src)

acc = 0.0
for k in range(300):
    acc = step(acc) * 0.5
print(acc)

def gen_err():
    yield 1
    raise KeyError("bad")
try:
    for x in gen_err():
        print(x)
except KeyError as e:
    print("KE", e)

def ret_in_loop():
    for i in range(10):
        if i == 2:
            return
        yield i
print(list(ret_in_loop()))

def try_else():
    try:
        yield 1
    except Exception:
        yield "no"
    else:
        yield "else"
    finally:
        yield "fin"
print(list(try_else()))
g2 = try_else()
next(g2)
print(g2.throw(RuntimeError("x")))
print(list(g2))

def w():
    while True:
        x = yield
        if x is None:
            break
        print("x", x)
    else:
        print("never")
    yield "end"
ww = w(); next(ww); ww.send(1); print(ww.send(None))

def forelse():
    for i in range(2):
        yield i
    else:
        yield "else"
print(list(forelse()))
print(list(map(lambda a, b: a + b, nums(), [10, 20, 30])))
print(list(filter(lambda x: x > 2, (i for i in [1, 2, 3, 4]))))
gg = nums()
print(next(gg), next(gg))
gg.close()
print(next(gg, "exhausted"))
def unstarted():
    yield 1
u = unstarted()
try:
    u.send(5)
except TypeError as e:
    print("TE", e)
def nested_yield():
    x = [(yield 1), (yield 2)]
    yield x
print(list(nested_yield()))
