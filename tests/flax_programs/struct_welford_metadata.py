# flax.struct dataclasses as pytrees, nnx.metrics.Welford, Variable metadata
# and the delta-orthogonal initialiser, as a Flax user writes them.
import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx, struct


@struct.dataclass
class Batch:
    x: jax.Array
    y: jax.Array
    name: str = struct.field(pytree_node=False, default="train")


class Stats(struct.PyTreeNode):
    total: jax.Array
    count: int = struct.field(pytree_node=False, default=0)


b = Batch(jnp.arange(6.0).reshape(3, 2), jnp.array([1.0, 0.0, 1.0]))
print(b)
print(len(jax.tree.leaves(b)), b.replace(name="eval").name)
try:
    b.name = "x"
except dataclasses.FrozenInstanceError:
    print("frozen")
loss = jax.jit(lambda b: ((b.x.sum(axis=1) - b.y) ** 2).mean())
print(loss(b))
print(jax.grad(lambda b: (b.x ** 2).sum())(b).x)
s = Stats(jnp.zeros(2), 3)
print(jax.tree.map(lambda t: t + 1, s))

w = nnx.metrics.Welford()
print(w.compute())
for batch in [jnp.array([1.0, 2.0, 3.0, 4.0]), jnp.array([3.0, 2.0, 1.0, 0.5])]:
    w.update(values=batch)
    print(w.compute())
w.update(values=2.5)
print(w.compute())
w.reset()
print(w.compute().mean)

p = nnx.Param(jnp.ones(2), description="bias")
print(p.get_metadata())
print(p.replace(jnp.zeros(2)).get_metadata(), p.description)
q = nnx.Param(jnp.ones(2), eager_sharding=False)
print(q.get_metadata(), q.eager_sharding)
print(q)

key = jax.random.key(0)
k = nnx.initializers.delta_orthogonal()(key, (3, 3, 4, 4))
print(k.shape, jnp.abs(k[0, 0]).sum(), jnp.round(k[1, 1] @ k[1, 1].T, 4))
