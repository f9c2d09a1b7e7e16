# JAX's sharp bits as its documentation shows them: immutable arrays, no lists
# where arrays go, lax.pad's (low, high, interior) config, formatting 0-d
# arrays, small-int sums; and a program's globals never reach the library.
import warnings
warnings.filterwarnings("ignore", category=DeprecationWarning)
import jax
import jax.numpy as jnp
from jax import lax

shape = (28, 28, 1)   # globals named like the library's own functions
dtype = jnp.bfloat16
sum = 0.0
where = None

jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
try:
    jax_array[1, :] = 1.0
except Exception as e:
    print("Exception {}".format(e))
updated_array = jax_array.at[1, :].set(1.0)
print("original array unchanged:\n", jax_array)
print("updated array:\n", updated_array)

try:
    jnp.sum([1, 2, 3])
except TypeError as e:
    print(f"TypeError: {e}")
try:
    jnp.add(jnp.ones(3), [1, 2, 3])
except TypeError as e:
    print(f"TypeError: {e}")
x = [1, 2, 3]
print(jnp.sum(jnp.array(x)), jnp.stack([jnp.ones(2), jnp.zeros(2)]).shape, jnp.reshape(jnp.arange(6), [2, 3]).shape)

print(lax.pad(jnp.arange(3.), 0., [(1, 2, 1)]))
print(lax.pad(jnp.arange(3.), -1., ((1, 1, 0),)))
print(lax.pad(jnp.arange(6.).reshape(2, 3), 9., ((-1, 1, 0), (0, -1, 2))))
print(jax.grad(lambda v: lax.pad(v, 0., [(1, 1, 1)]).sum() * 2)(jnp.ones(3)))

loss = jnp.float32(2.2458810806274414)
print(f"loss: {loss}", "{}".format(loss), format(loss), f"{loss:.4f}", str(loss))
print(f"{jnp.array(3)} {jnp.array(True)} {jnp.array([0.5, 0.25])}")
jax.debug.print("debug: {}", loss)

print(repr(jnp.sum(jnp.arange(4, dtype=jnp.int8))), repr(jnp.prod(jnp.ones(3, dtype=jnp.uint8))))
print(repr(jnp.cumsum(jnp.ones(3, dtype=jnp.int16))), repr(jnp.cumsum(jnp.array([True, True]))))
print(jnp.convolve(jnp.array([1, 2, 1]), jnp.array([1, 1, 1])))
print(jnp.arange(3).at[1].divide(2))
print(jax.grad(jnp.abs)(0.), jax.grad(jnp.abs)(-2.), jax.grad(lambda v: jnp.abs(v).sum())(jnp.array([-1., 0., 1.])))

print(jax.nn.softmax(jnp.arange(3.)), jnp.linspace(0, 1, 3), jnp.mean(jnp.arange(4.)))
class Model:
    pass
print(Model.__module__, isinstance(jnp.ones(2).dtype, jnp.dtype))
try:
    raise UserWarning("careful")
except Warning as w:
    print(type(w).__name__, w, isinstance(w, Exception))
