# Explicit sharding odds and ends: initializers with out_sharding (also through
# functools.partial), NamedSharding.is_equivalent_to, a product with
# out_sharding= inside a scan body, vmap's spmd_axis_name.
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P, NamedSharding, AxisType

mesh = jax.make_mesh((2, 4), ('data', 'model'), axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(mesh):
    init = jax.nn.initializers.lecun_normal()
    k = jax.random.key(0)
    print(jax.typeof(init(k, (16, 8), out_sharding=P(None, 'model'))))
    placed = partial(init, out_sharding=P('model', None))
    w = placed(k, (16, 8), jnp.float32)
    print(jax.typeof(w), jnp.allclose(w, init(k, (16, 8))))
    print(jax.typeof(jax.nn.initializers.zeros(k, (8, 4), out_sharding=P('data'))))
    print(jax.typeof(jax.nn.initializers.normal(0.5)(k, (4, 8), out_sharding=P(None, 'model'))))

    w1 = jax.device_put(jnp.arange(2 * 16 * 16, dtype=jnp.float32).reshape(2, 16, 16) / 500, P(None, None, 'model'))
    w2 = jax.device_put(jnp.ones((2, 16, 16)) / 16, P(None, 'model', None))
    x = jax.device_put(jnp.ones((8, 16)), P('data', None))

    def layer(x, ws):
        a, b = ws
        y = jax.nn.relu(x @ a)
        return jnp.dot(y, b, out_sharding=P('data', None)), None

    y, _ = jax.lax.scan(layer, x, (w1, w2))
    print(jnp.sum(y), jnp.max(y))
    print(jax.vmap(lambda v: v * 2, spmd_axis_name=None)(jnp.arange(4.0)))

s1 = NamedSharding(mesh, P('data', None))
print(s1.is_equivalent_to(NamedSharding(mesh, P('data')), 2), s1.is_equivalent_to(NamedSharding(mesh, P(None, 'data')), 2))
print(NamedSharding(mesh, P()).is_equivalent_to(NamedSharding(mesh, P(None, None)), 2))
m8 = jax.make_mesh((8,), ('x',))
print(NamedSharding(m8, P('x')).is_equivalent_to(NamedSharding(mesh, P(('data', 'model'))), 1))

# A scan keeps its operands' shardings inside the body and in its results.
with jax.set_mesh(mesh):
    def body(c, w):
        print("in body", jax.typeof(c), jax.typeof(w))
        return jax.sharding.reshard(jnp.tanh(c @ w), P('data', None)), c.sum()
    c, s = jax.lax.scan(body, jax.device_put(jnp.ones((8, 16)), P('data', None)), jax.device_put(jnp.ones((3, 16, 16)) / 16, P(None, None, 'model')))
    print(jax.typeof(c), jax.typeof(s))

# An abstract mesh inside jit, and set_mesh's context object as JAX prints it.
@jax.jit
def on_abstract(v):
    abstract_mesh = jax.sharding.AbstractMesh((8,), ('A',), (jax.sharding.AxisType.Explicit,))
    with jax.sharding.use_abstract_mesh(abstract_mesh):
        return jax.reshard(v, jax.P('A', None)) * 2
with jax.set_mesh(mesh):
    print(jax.typeof(on_abstract(jnp.arange(32.).reshape(8, 4))))
print(jax.set_mesh(mesh))
