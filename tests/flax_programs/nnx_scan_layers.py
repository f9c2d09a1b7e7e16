# Flax NNX's lifted transforms: a stack of blocks made with nnx.vmap under
# nnx.split_rngs (parameters with a leading layer axis), run with nnx.scan
# over the layers; an ensemble evaluated with nnx.vmap; trained with optax.
import jax
import jax.numpy as jnp
from flax import nnx
import optax


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.bn = nnx.BatchNorm(3, rngs=rngs)

    def __call__(self, x: jax.Array):
        return nnx.gelu(self.bn(self.linear(x)))


@nnx.split_rngs(splits=5)
@nnx.vmap(in_axes=(0,), out_axes=0)
def create_model(rngs: nnx.Rngs):
    return Block(rngs)


model = create_model(nnx.Rngs(0))
print(model.linear.kernel.shape, model.bn.mean.shape)
print(jnp.round(model.linear.kernel[...][:2, 0], 4))


@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
def forward(x, model):
    x = model(x)
    return x


x = jnp.arange(12.0).reshape(4, 3) / 6
y = forward(x, model)
print(y.shape, jnp.round(y[0], 4))
print(jnp.round(model.bn.mean[...][:, 0], 5))

ensemble = nnx.split_rngs(splits=3)(nnx.vmap(lambda rngs: nnx.Linear(3, 2, rngs=rngs), in_axes=0, out_axes=0))(nnx.Rngs(1))
outs = nnx.vmap(lambda m, x: m(x), in_axes=(0, None), out_axes=0)(ensemble, x)
print(outs.shape, jnp.round(outs[:, 0], 4))

optimizer = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean(forward(x, m) ** 2))(model)
    optimizer.update(model, grads)
    return loss


for step in range(3):
    print(step, train_step(model, optimizer, x))
