# lax.map: over arrays and pytrees, with batch_size, under jit and grad (it was Python's map).
import jax, jax.numpy as jnp
print(jax.lax.map(jnp.sin, jnp.arange(3.)))
print(jax.lax.map(lambda t: {'s': t[0] + t[1], 'p': t[0] * t[1]}, (jnp.arange(5.), jnp.ones(5))))
print(jax.lax.map(lambda x: x ** 2, jnp.arange(7.), batch_size=3))
print(jax.jit(lambda xs: jax.lax.map(lambda x: x * 2, xs))(jnp.arange(4)))
print(jax.grad(lambda xs: jax.lax.map(jnp.sin, xs).sum())(jnp.arange(3.)))
