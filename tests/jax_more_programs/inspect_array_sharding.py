# jax.debug.inspect_array_sharding: the callback gets each leaf's sharding, under jit once per trace.
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ('x',))
x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P('x')))
@jax.jit
def f(x):
    jax.debug.inspect_array_sharding(x, callback=print)
    y = x * 3
    jax.debug.inspect_array_sharding({"a": y, "b": x}, callback=lambda s: print(s.spec))
    return x * 2
f(x)
jax.debug.inspect_array_sharding(x, callback=print)
jax.debug.inspect_array_sharding(jnp.ones(3), callback=print)
print(jax.debug.inspect_array_sharding(x, callback=lambda s: 5))
