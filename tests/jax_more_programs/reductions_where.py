# Reductions with where= and initial=, as jax.numpy takes them.
import jax
import jax.numpy as jnp
x = jnp.arange(6.).reshape(2, 3)
m = x > 1
print(jnp.mean(x, where=m), jnp.mean(x, axis=1, where=m))
print(jnp.sum(x, where=m), jnp.sum(x, axis=0, where=m, keepdims=True))
print(jnp.max(x, where=x < 4, initial=-1.0), jnp.min(x, axis=1, where=x > 0, initial=10.0))
print(jnp.max(x, initial=7.0), jnp.prod(x + 1, where=m))
print(jnp.all(x > 0, where=m), jnp.any(x > 4, axis=1, where=m))
print(x.sum(where=m), x.mean(axis=0, where=m))
print(jax.grad(lambda x: jnp.mean(x, where=x > 1))(x))
