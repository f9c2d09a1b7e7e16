# eval_shape keeps shardings: the arguments' layouts give the outputs', and under a
# context mesh every output has one (replicated unless split).
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P, NamedSharding
print(jax.eval_shape(lambda x: x*2, jnp.ones(4)))
mesh = jax.make_mesh((2,4), ('a','b'))
x = jax.device_put(jnp.ones((4,8)), NamedSharding(mesh, P('a','b')))
print(jax.eval_shape(lambda x: x*2, x))
print(jax.eval_shape(lambda x: x.sum(0), x))
print(jax.ShapeDtypeStruct((2,), jnp.float32, sharding=NamedSharding(mesh, P('a'))))
s = jax.ShapeDtypeStruct((4, 8), jnp.float32, sharding=NamedSharding(mesh, P(None, 'b')))
print(jax.eval_shape(lambda x: x + 1, s))
with jax.set_mesh(mesh):
    print(jax.eval_shape(lambda: jnp.ones(4)))
    print(jax.eval_shape(lambda x: x*2, x))
    print(jax.eval_shape(lambda x: x*2, jnp.ones(3)))
jax.set_mesh(jax.make_mesh((2,1), ('batch','model')))
print(jax.eval_shape(lambda: jnp.ones(4)))
