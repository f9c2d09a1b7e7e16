# GroupNorm: groups by count or by size, custom reduction axes, a mask, no
# bias, its parameters, its gradient, and the errors of a bad grouping.
import jax
import jax.numpy as jnp
from flax import nnx

x = jax.random.normal(jax.random.key(0), (2, 3, 4, 8))
gn = nnx.GroupNorm(8, num_groups=4, rngs=nnx.Rngs(0))
y = gn(x)
print(y.shape, y[0, 0, 0], y.mean(), y.std())
print(nnx.GroupNorm(8, num_groups=None, group_size=2, use_bias=False, rngs=nnx.Rngs(1))(x * 3 + 1)[1, 2, 3])
print(nnx.GroupNorm(8, num_groups=2, reduction_axes=(2, -1), rngs=nnx.Rngs(1))(x)[1, 2])
mask = jnp.arange(8) % 3 != 0
print(nnx.GroupNorm(8, num_groups=2, rngs=nnx.Rngs(2))(x, mask=jnp.broadcast_to(mask, x.shape))[0, 1, 2])
print(jax.tree.map(jnp.shape, nnx.state(gn, nnx.Param)))
g = nnx.grad(lambda m, v: (m(v) ** 3).sum())(gn, x)
print(g['scale'][...], g['bias'][...])
for bad in [dict(num_groups=4), dict(num_groups=None, group_size=4), dict(num_groups=None)]:
    try:
        nnx.GroupNorm(6, rngs=nnx.Rngs(0), **bad)
    except ValueError as e:
        print(e)
