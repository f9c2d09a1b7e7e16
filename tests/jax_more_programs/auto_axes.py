# jax.sharding.auto_axes and explicit_axes, as the explicit-sharding guide uses them.
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import auto_axes, explicit_axes
jax.set_mesh(jax.make_mesh((2, 4), ('X', 'Y')))
x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", None))
y = jax.device_put(np.arange(16).reshape(4, 4), jax.P(None, "X"))
try:
  x + y
except Exception as e:
  print("ERROR!")

@auto_axes
def add2(x, y):
  print("mesh:", jax.sharding.get_abstract_mesh())
  return x + y

result = add2(x, y, out_sharding=jax.P("X", None))
print(f"Result type: {jax.typeof(result)}")
print(result)

@auto_axes(out_sharding=jax.P(None, "Y"))
def mul(x, y):
  return x * y
r = mul(x, y)
print(jax.typeof(r), r.sum())

@explicit_axes(in_sharding=(jax.P("X", None), jax.P("X", None)))
def add3(a, b):
  return a + b
print(jax.typeof(add3(x, y)))
@jax.jit
def g(x, y):
  return add2(x, y, out_sharding=jax.P(None, "X")) * 2
print(jax.typeof(g(x, y)))
