# jit's stages and its cache, as the jit guide shows them.
from functools import partial
import jax
import jax.numpy as jnp


def log2_if_rank_2(x):
    if x.ndim == 2:
        return jnp.log(x) / jnp.log(2.0)
    else:
        return x


print(jax.jit(log2_if_rank_2).trace(jnp.array([1, 2, 3])).jaxpr)
print(jax.jit(lambda x: x * 2.0 + 1.0).trace(jnp.ones((2, 3))).jaxpr)


@partial(jax.jit, static_argnums=1)
def scale(x, n):
    return x * n


print(scale.trace(jnp.ones(3), 2).jaxpr)
print(scale.lower(jnp.ones(3), 4).compile()(jnp.arange(3.)))


@jax.jit(static_argnames=['n'])
def g_jit_decorated(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i


print(g_jit_decorated(10, 20), g_jit_decorated(10, n=5))

# The cache belongs to the function: a second jit of it reuses the program
# traced with the global's old value, as JAX's does.
g = 0.


def impure_uses_globals(x):
    return x + g


print("First call: ", jax.jit(impure_uses_globals)(4.))
g = 10.
print("Second call: ", jax.jit(impure_uses_globals)(5.))
print("Third call, different type: ", jax.jit(impure_uses_globals)(jnp.array([4.])))


# Functions and objects as static arguments are compared by identity.
@partial(jax.jit, static_argnums=(0,))
def apply(fn, x):
    return fn(x)


print(apply(jnp.sin, 1.0), apply(lambda x: 2 * x, 1.0), apply(lambda x: 3 * x, 1.0))


class CustomClass:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y


c = CustomClass(2, True)
print(c.calc(3))
c.mul = False
print(c.calc(3))
print(CustomClass(2, False).calc(3))
