# nnx.vmap with StateAxes (parameters broadcast, a counter or the random
# streams mapped), nnx.vmap making stacked modules, classes as dict keys,
# traced seeds: as the Flax transforms guide writes them.
from flax import nnx
import jax
import jax.numpy as jnp
from jax import random

class Count(nnx.Variable):
    pass

class Weights(nnx.Module):
    def __init__(self, kernel, bias, count):
        self.kernel, self.bias = nnx.Param(kernel), nnx.Param(bias)
        self.count = Count(count)

weights = Weights(
    kernel=random.uniform(random.key(0), (2, 3)),
    bias=jnp.zeros((3,)),
    count=jnp.arange(10),
)
x = random.normal(random.key(1), (10, 2))
state_axes = nnx.StateAxes({nnx.Param: None, Count: 0})
print(state_axes)

def stateful_vector_dot(weights, x):
    weights.count[...] += 1
    return x @ weights.kernel + weights.bias

y = nnx.vmap(stateful_vector_dot, in_axes=(state_axes, 0))(weights, x)
print(y)
print(weights.count[...])

def create_weights(seed):
    return Weights(kernel=random.uniform(random.key(seed), (2, 3)), bias=jnp.zeros((3,)),
                   count=jnp.array(0))

stack = nnx.vmap(create_weights)(jnp.arange(4))
print(stack.kernel.shape, stack.count[...], [k for k in vars(stack) if not k.startswith("_")])
print(stack.kernel[...][2])

g, s = nnx.split(weights)
merged = nnx.merge(g, s)
print([k for k in vars(merged) if not k.startswith("_")])
