# Meshes over some of the devices (device grids sliced as NumPy arrays), committed arrays, reversed device orders.
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding
full = jax.make_mesh((8,), ('x',))
mesh_a = jax.make_mesh((4,), ('x',), devices=full.devices[:4])
mesh_b = jax.make_mesh((4,), ('x',), devices=full.devices[4:])
print(mesh_b.devices)
x = jnp.arange(4.0)
print(x.committed)
data = np.arange(8.0)
xa = jax.device_put(data, NamedSharding(mesh_a, jax.P('x')))
print(xa.committed, jax.typeof(xa))
mesh_rev = jax.make_mesh((8,), ('x',), devices=full.devices[::-1])
x = jax.device_put(np.arange(8.0), NamedSharding(full, jax.P('x')))
y = jax.device_put(x, NamedSharding(mesh_rev, jax.P('x')))
def data_by_device(arr):
  return [float(s.data[0]) for s in sorted(arr.addressable_shards, key=lambda s: s.device.id)]
print(data_by_device(x))
print(data_by_device(y))
g = jax.make_mesh((2, 4), ('a', 'b'))
print(g.devices[:, 0], g.devices[1, ::2], g.devices[-1, -1])
