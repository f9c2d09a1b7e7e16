# Abstract models: nnx.eval_shape under a mesh, nnx.get_abstract_model with
# logical sharding annotations, nnx.as_abstract; nnx.cached_partial of a step.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
from flax import nnx
import jax
import jax.numpy as jnp
import optax
from jax.sharding import PartitionSpec as P


class Block(nnx.Module):
    def __init__(self, d, rngs):
        init = nnx.initializers.lecun_normal()
        self.dot1 = nnx.Linear(d, 2 * d, use_bias=False, rngs=rngs,
                               kernel_init=nnx.with_partitioning(init, (None, 'model')))
        self.dot2 = nnx.Linear(2 * d, d, use_bias=False, rngs=rngs,
                               kernel_init=nnx.with_partitioning(init, ('model', None)))

    def __call__(self, x):
        return self.dot2(nnx.relu(self.dot1(x)))


mesh = jax.make_mesh((2, 4), ('data', 'model'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
abs_model = nnx.eval_shape(lambda: nnx.Linear(4, 8, rngs=nnx.Rngs(0)))
print(abs_model.kernel.shape, abs_model.kernel.get_value().sharding is None)
gdef, abs_state = nnx.get_abstract_model(lambda: Block(8, nnx.Rngs(0)), mesh)
print(abs_state['dot1']['kernel'].get_value().shape, abs_state['dot1']['kernel'].get_value().sharding.spec)
print(abs_state['dot2']['kernel'].get_value().sharding.spec, abs_state['dot2']['kernel'].get_value().sharding.mesh.shape)

with jax.set_mesh(mesh):
    abs2 = nnx.eval_shape(lambda: nnx.Linear(4, 8, rngs=nnx.Rngs(0),
                                             kernel_metadata={'out_sharding': (None, 'model')}))
    abs2 = nnx.as_abstract(abs2)
    print(abs2.kernel.get_value().sharding.spec, abs2.bias.get_value().shape)

with jax.set_mesh(mesh):
    model = Block(8, nnx.Rngs(1))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


step = nnx.cached_partial(train_step, model, optimizer)
x = jnp.linspace(-1, 1, 32).reshape(4, 8)
with jax.set_mesh(mesh):
    for i in range(3):
        print(step(x, jnp.sin(x)))
print(model.dot1.kernel[0, :3])
