# Flax NNX's recurrent layers (LSTMCell, GRUCell, SimpleCell driven by
# nnx.RNN over time: return_carry, reverse with keep_order, time_major,
# seq_lengths), a gradient through an RNN under nnx.jit, ConvTranspose
# (strides, padding modes, transpose_kernel, dilation) and InstanceNorm:
# parameter names and shapes, and the numbers, as Flax computes them.
import jax
import jax.numpy as jnp
from flax import nnx

x = jax.random.normal(jax.random.key(0), (2, 5, 3))
for cls in [nnx.LSTMCell, nnx.GRUCell, nnx.SimpleCell]:
    cell = cls(3, 4, rngs=nnx.Rngs(0))
    print(cls.__name__, jax.tree.map(jnp.shape, nnx.state(cell)))
    carry = cell.initialize_carry((2, 3), nnx.Rngs(1))
    carry, y = cell(carry, x[:, 0])
    print(y)
    rnn = nnx.RNN(cell)
    out = rnn(x)
    print(out.shape, out[:, -1])
    c, out2 = nnx.RNN(cell, return_carry=True)(x)
    print(jax.tree.map(jnp.shape, c), jnp.abs(out2 - out).max())
    out3 = nnx.RNN(cell, reverse=True, keep_order=True)(x, seq_lengths=jnp.array([3, 5]))
    print(out3[0, :, 0])
    out4 = nnx.RNN(cell, time_major=True)(jnp.swapaxes(x, 0, 1))
    print(out4.shape, jnp.abs(jnp.swapaxes(out4, 0, 1) - out).max())
    c5, out5 = nnx.RNN(cell, return_carry=True)(x, seq_lengths=jnp.array([2, 4]))
    print(jax.tree.map(lambda a: a[:, 0], c5))
print(nnx.state(nnx.RNN(nnx.SimpleCell(3, 2, rngs=nnx.Rngs(0)))))
cell = nnx.SimpleCell(3, 4, residual=True, rngs=nnx.Rngs(2))
print(nnx.RNN(cell)(x)[0, -1])

# gradient through an RNN under nnx.jit
model = nnx.RNN(nnx.LSTMCell(3, 4, rngs=nnx.Rngs(0)))
@nnx.jit
def lossgrad(m):
    return nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(m)
l, g = lossgrad(model)
print(l, g['cell']['hi']['kernel'][...][0])

img = jax.random.normal(jax.random.key(1), (2, 5, 5, 3))
for kw in [dict(), dict(strides=2), dict(strides=2, padding='VALID'), dict(padding='CIRCULAR', strides=2),
                      dict(transpose_kernel=True, strides=(2, 1)), dict(kernel_dilation=2, padding='VALID'),
                      dict(padding=((1, 2), (0, 1))), dict(padding='CIRCULAR', transpose_kernel=True, strides=2)]:
    ct = nnx.ConvTranspose(3, 4, (3, 3), rngs=nnx.Rngs(0), **kw)
    y = ct(img)
    print(kw, ct.kernel.shape, y.shape, y.sum(), y[0, 0, 0])
ct1 = nnx.ConvTranspose(3, 2, 3, rngs=nnx.Rngs(0))
print(ct1(jnp.ones((4, 3))).shape, ct1(jnp.ones((2, 3, 4, 3))).shape)

inorm = nnx.InstanceNorm(3, rngs=nnx.Rngs(0))
print(jax.tree.map(jnp.shape, nnx.state(inorm)))
print(inorm(img)[0, 0])
print(nnx.InstanceNorm(5, feature_axes=1, use_bias=False, rngs=nnx.Rngs(0))(img)[1, 2, 3])
