# Typed PRNG keys inside jit and vmap: they stay keys (shape, dtype, printing),
# random functions take them, and jit returns them typed.
import jax
import jax.numpy as jnp
from flax import nnx

k = jax.random.key(0)


@jax.jit
def f(k):
    print(k.shape, k.dtype, jnp.ndim(k), jnp.shape(k))
    k1, k2 = jax.random.split(k)
    return jax.random.fold_in(k1, 3), jax.random.normal(k2, (2,))


a, b = f(k)
print(a, b)
print(jax.jit(jax.random.split)(k))
print(jax.jit(lambda k: jax.random.split(k, 4).shape)(k) if False else jax.jit(lambda k: jax.random.split(k, 4))(k).shape)
print(jax.random.key_data(jax.jit(lambda k: jax.random.fold_in(k, 7))(k)))
print(jax.jit(lambda k: jax.random.key_data(k) + 1)(k))
print(jax.vmap(lambda k: jax.random.uniform(k))(jax.random.split(k, 3)))
print(jax.jit(lambda k: nnx.Linear(2, 3, rngs=nnx.Rngs(k)).kernel[...])(k))
print(jax.jit(lambda k: nnx.Rngs(k).params())(k))
ks = jax.random.split(k, 3)
print(jax.vmap(lambda k: jax.random.fold_in(k, 1))(ks))
print(jax.vmap(jax.random.split)(ks).shape, jax.jit(jax.vmap(lambda k: jax.random.split(k, 2)))(ks).shape)
print(jax.vmap(lambda k: jax.random.split(k, 2), out_axes=1)(ks).shape)
s = jnp.stack([jax.random.key(i) for i in range(3)])
print(s.shape, s.dtype, jnp.stack([jax.random.split(k, 2)] * 2, axis=-1).shape)
