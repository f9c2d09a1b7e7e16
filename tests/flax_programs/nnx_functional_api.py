# Flax NNX's functional API: split a model into a GraphDef and States by
# filter (a custom Variable type among them), transform the states with
# jax.jit and jax.tree.map, merge back; nnx.update; nnx.clone.
import jax
import jax.numpy as jnp
from flax import nnx


class Count(nnx.Variable):
    pass


class Model(nnx.Module):
    def __init__(self, din, dout, *, rngs: nnx.Rngs):
        super().__init__()
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.count = Count(jnp.array(0))

    def __call__(self, x):
        return self.linear(x)

    def tick(self):
        self.count[...] += 1


model = Model(2, 3, rngs=nnx.Rngs(0))
graphdef, params, counts = nnx.split(model, nnx.Param, Count)
print(jax.tree.map(jnp.shape, params))
print(counts)


@jax.jit
def train_step(graphdef, params, counts, x, y):
    def loss_fn(params):
        model = nnx.merge(graphdef, params, counts)
        return jnp.mean((model(x) - y) ** 2)

    grads = jax.grad(loss_fn)(params)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    model = nnx.merge(graphdef, params, counts)
    model.tick()
    _, params, counts = nnx.split(model, nnx.Param, Count)
    return params, counts


x = jnp.ones((4, 2))
y = jnp.full((4, 3), 0.5)
for _ in range(3):
    params, counts = train_step(graphdef, params, counts, x, y)
print(counts['count'][...], jnp.round(params['linear']['kernel'][...], 4))
nnx.update(model, params, counts)
print(model.count[...], jnp.round(model(x)[0], 4))
twin = nnx.clone(model)
twin.linear.kernel[...] = jnp.zeros((2, 3))
print(jnp.sum(model.linear.kernel[...]) != 0, twin(x)[0])
print(len(jax.tree.leaves(nnx.state(model))), nnx.graphdef(model) is not None)
abstract = nnx.eval_shape(lambda: Model(2, 3, rngs=nnx.Rngs(0)))
print(abstract.linear.kernel.shape)
