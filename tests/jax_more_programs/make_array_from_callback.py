# jax.make_array_from_callback: the index each device's block is asked with, a replicated layout asked once, dtypes and their errors; shard indices with slice(None) for whole dimensions.
import math
import numpy as np
import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
input_shape = (8, 8)
global_input_data = np.arange(math.prod(input_shape)).reshape(input_shape)
global_mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ('x', 'y'))
inp_sharding = jax.sharding.NamedSharding(global_mesh, P('x', 'y'))
def cb(index):
    print(index)
    return global_input_data[index]
arr = jax.make_array_from_callback(input_shape, inp_sharding, cb)
print(arr.addressable_data(0).shape, arr.dtype, arr.sharding.spec)
print(arr)
r = jax.make_array_from_callback((4,), NamedSharding(global_mesh, P()), lambda i: (print("rep", i), np.ones(4, np.float32))[1])
print(r, r.dtype)
s = jax.make_array_from_callback((8, 8), NamedSharding(global_mesh, P(None, "y")), lambda i: global_input_data[i].astype(np.float32), dtype=jax.numpy.float32)
print(s.dtype, s.addressable_shards[1].index)
try:
    jax.make_array_from_callback((8, 8), inp_sharding, lambda i: np.zeros((3, 3)))
except ValueError as e:
    print("ValueError")
try:
    jax.make_array_from_callback((8, 8), inp_sharding, lambda i: global_input_data[i], dtype=jax.numpy.float32)
except ValueError as e:
    print(e)
