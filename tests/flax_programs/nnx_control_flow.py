from flax import nnx
import jax, jax.numpy as jnp

class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.Variable(jnp.array(0))
        self.total = nnx.Variable(jnp.array(0.0))

def up(c, x):
    c.count[...] += 1
    c.total[...] += x
    return x * 2

def down(c, x):
    c.count[...] -= 1
    return x / 2

c = Counter()
print(nnx.cond(True, up, down, c, 3.0), c.count[...], c.total[...])
print(nnx.cond(jnp.array(False), up, down, c, 3.0), c.count[...])
print(nnx.switch(1, [up, down], c, 4.0), c.count[...])

@nnx.jit
def f(c, p):
    return nnx.cond(p > 0, up, down, c, p)
print(f(c, 2.0), c.count[...], c.total[...])

def body(i, c):
    c.count[...] += i
    return c
c2 = nnx.fori_loop(0, 5, body, c)
print(c2 is c, c.count[...])

def body2(i, carry):
    c, s = carry
    c.total[...] += 1.0
    return c, s + i
c3, s = nnx.fori_loop(0, 4, body2, (c, 0))
print(c3 is c, c.total[...], s)

def cf(carry):
    c, i = carry
    return i < 3
def bf(carry):
    c, i = carry
    c.count[...] += 10
    return c, i + 1
out = nnx.while_loop(cf, bf, (c, 0))
print(out[0] is c, c.count[...], out[1])
