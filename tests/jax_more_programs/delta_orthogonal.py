# jax.nn.initializers.delta_orthogonal: an orthogonal matrix at the kernel's spatial centre, zeros elsewhere, and its shape errors.
import jax, jax.numpy as jnp
init = jax.nn.initializers.delta_orthogonal()
w = init(jax.random.key(42), (3, 3, 3), jnp.float32)
print(w.shape, w.dtype)
m = w[1]
print(jnp.allclose(m @ m.T, jnp.eye(3), atol=1e-5), float(jnp.abs(w[0]).sum()), float(jnp.abs(w[2]).sum()))
w4 = jax.nn.initializers.delta_orthogonal(scale=2.0)(jax.random.key(0), (3, 5, 2, 4))
c = w4[1, 2]
print(w4.shape, jnp.allclose(c @ c.T, 4 * jnp.eye(2), atol=1e-4), float(jnp.abs(w4).sum() - jnp.abs(c).sum()))
for bad in [(3, 3), (3, 3, 4, 2)]:
    try:
        init(jax.random.key(0), bad)
    except ValueError as e:
        print(e)
print(w[1])
