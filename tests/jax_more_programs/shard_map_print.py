# print inside an eager shard_map shows each device's block, as the shard_map guide prints them.
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P, AxisType

mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)


@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f(x):
    print(x)
    return 2 * x


x = jax.device_put(jnp.arange(6.), P('i'))
print(f(x))


@jax.shard_map(in_specs=P('i'), out_specs=P())
def g(x):
    y = jax.lax.psum(x, 'i')
    print('psum:', y, 'done')
    return y


print(g(x))

mesh1d = jax.make_mesh((4,), ('i',), axis_types=(AxisType.Auto,))
jax.set_mesh(mesh1d)


@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f1(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum_scatter(x_block, 'i', tiled=True)
    print('AFTER:\n', y_block)
    return y_block


y = f1(jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2]))
print('FINAL RESULT:\n', y)

mesh2d = jax.make_mesh((2, 2), ('i', 'j'), axis_types=(AxisType.Auto, AxisType.Auto))
jax.set_mesh(mesh2d)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P(None, 'j'))
def f2(x_block):
    print('BEFORE:\n', x_block)
    y_block = jax.lax.psum(x_block, 'i')
    print('AFTER:\n', y_block)
    return y_block


y = f2(jnp.arange(16).reshape(4, 4))
print('FINAL RESULT:\n', y)


# Under jit the values are traced: print shows types, once.
@jax.jit
def h(x):
    return f2(x) + 1


print(h(jnp.arange(16).reshape(4, 4)))
