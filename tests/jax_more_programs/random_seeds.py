# Seeds as JAX takes them without 64-bit mode: negative and large Python ints
# modulo 2**32 in the low word, traced seeds inside vmap and jit.
import jax, jax.numpy as jnp
print(jax.random.key_data(jax.random.key(-1)))
print(jax.vmap(lambda s: jax.random.key_data(jax.random.key(s)))(jnp.array([0, 1, -1, 7])))
print(jax.jit(lambda s: jax.random.key_data(jax.random.PRNGKey(s)))(jnp.int32(-3)))
print(jax.vmap(lambda s: jax.random.normal(jax.random.PRNGKey(s), (2,)))(jnp.arange(3)))
print(jax.random.PRNGKey(jnp.int32(5)))
