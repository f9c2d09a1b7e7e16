# Keyword modes of the jax.numpy / jax.scipy surface that documentation uses:
# take's out-of-range modes, logsumexp's scale factors and sign, vectorize
# (with a gufunc signature), conv_dimension_numbers, QR of an already
# triangular matrix, and fori_loop's weakly typed index.
import jax
import jax.numpy as jnp
from jax import lax
import jax.scipy.special as jsp

x = jnp.arange(3.)
print(jnp.take(x, jnp.array([5, -1, 1])))
print(jnp.take(jnp.arange(3), jnp.array([5, -5]), mode="clip"), jnp.take(jnp.arange(3), jnp.array([4, -4]), mode="wrap"))
print(jnp.take(jnp.arange(3), jnp.array([7]), mode="fill", fill_value=-1))
print(jnp.arange(6.).reshape(2, 3).take(jnp.array([0, 3]), axis=1))

print(jsp.logsumexp(jnp.array([1., 2.]), b=jnp.array([1., -1.]), return_sign=True))
print(jsp.logsumexp(jnp.array([1., 2.]), b=jnp.array([2., 1.])), jax.nn.logsumexp(jnp.arange(6.).reshape(2, 3), axis=1, b=2.0))
print(jsp.logsumexp(jnp.array([1., 2.]), b=jnp.array([1., -1.])))
print(jax.nn.logsumexp(jnp.arange(4.), where=jnp.array([True, False, True, False])))
print(jax.grad(lambda v: jsp.logsumexp(v, b=jnp.array([1., 2., 3.])))(jnp.arange(3.)))

print(jnp.vectorize(jnp.add)(jnp.arange(2), 1))
dot = jnp.vectorize(lambda a, b: jnp.dot(a, b), signature="(n),(n)->()")
print(dot(jnp.ones((3, 4)), jnp.arange(4.)))
print(jnp.vectorize(lambda v: v ** 2)(jnp.arange(6.).reshape(2, 3)))
print(jax.grad(lambda v, i: v * i, allow_int=True)(2., 3))

print(lax.conv_dimension_numbers((1, 1, 5, 5), (1, 1, 3, 3), ("NCHW", "OIHW", "NCHW")))
print(lax.conv_dimension_numbers((1, 5, 5, 1), (3, 3, 1, 2), ("NHWC", "HWIO", "NHWC")))

q, r = jnp.linalg.qr(jnp.eye(2))
print(r, jnp.allclose(q @ r, jnp.eye(2)))
q, r = jnp.linalg.qr(jnp.array([[2., 1.], [0., -3.]]))
print(r)

print(repr(lax.fori_loop(0, 4, lambda i, c: c + i, 0)))
print(repr(lax.fori_loop(0, 4, lambda i, c: c + i, 0.5)))
print(repr(lax.fori_loop(0, 3, lambda i, c: c + i, jnp.int32(1))))

import numpy as np
import optax
bits = np.unpackbits(np.array([[2, 255], [7, 128]], dtype=np.uint8), axis=-1)
print(bits.shape, bits[1], np.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1])))
print(jnp.unpackbits(jnp.array([3], dtype=jnp.uint8), bitorder="little"))
state = optax.inject_hyperparams(optax.adam)(learning_rate=0.1, b1=0.9).init({"w": jnp.ones(2)})
print(list(state.hyperparams))
params = {"w": jnp.array([0.1, 0.3])}
opt = optax.adam(0.05)
st = opt.init(params)
for _ in range(3):
    updates, st = opt.update(params, st, params)
print(updates["w"])
