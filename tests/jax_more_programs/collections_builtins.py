# collections.defaultdict, Counter and deque, and the builtins over iterable objects of user classes.
from collections import defaultdict, Counter, deque
import collections
d = defaultdict(list)
for k, v in [("a", 1), ("b", 2), ("a", 3)]:
    d[k].append(v)
print(d)
print(d["a"], len(d), "c" in d, sorted(d.keys()))
c = defaultdict(int)
for w in "the cat the hat".split():
    c[w] += 1
print(dict(c))
cnt = Counter("abracadabra")
print(cnt)
print(cnt.most_common(2), cnt["z"], cnt["a"])
cnt.update("aaz")
print(cnt["a"], cnt.total(), len(cnt))
q = deque([1, 2, 3], maxlen=3)
q.append(4)
print(q, q.popleft(), q)
q.appendleft(0)
print(list(q), len(q), q[0])
r = collections.deque()
r.extend(range(5))
r.rotate(2)
print(r)
print(sum(x for x in q), max(cnt.values()))
print(sum(q), max(q), min(q), any(q), all(q), sorted(cnt), sorted(set(q)))
for k in Counter("aab"):
    print(k, end=" ")
print()
print(list(reversed(deque([1, 2]))), list(zip(deque("ab"), deque([1, 2]))), list(enumerate(deque("xy"))))
print(dict(Counter("aab")), list(map(str, deque([1, 2]))))
