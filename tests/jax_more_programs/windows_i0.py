# jnp.i0 (values, gradients under vmap and jit) and the window functions hamming, hanning, blackman, bartlett and kaiser.
import jax, jax.numpy as jnp
for M in [0, 1, 2, 5, 8]:
    print(M, jnp.hamming(M), jnp.hanning(M), jnp.blackman(M), jnp.bartlett(M), jnp.kaiser(M, 4.0))
print(jnp.kaiser(6, 0.0), jnp.hamming(4).dtype)
x = jnp.array([-10.0, -3.5, 0.0, 0.5, 1.0, 4.0, 7.99, 8.0, 8.01, 20.0, 60.0])
print(jnp.i0(x))
print(jnp.i0(3), jnp.i0(jnp.arange(3)).dtype)
print(jax.grad(jnp.i0)(2.0), jax.grad(jnp.i0)(9.0))
print(jax.vmap(jax.grad(jnp.i0))(jnp.array([0.5, -1.5, 12.0])))
print(jax.jit(jnp.i0)(jnp.array([1.0, 10.0])))
