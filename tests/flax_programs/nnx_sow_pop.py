# Intermediates sown during calls and popped out of the model (nnx.pop).
from flax import nnx
import jax, jax.numpy as jnp
class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 2, rngs=rngs)
    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, 'hidden', y)
        return y.sum()
class Model(nnx.Module):
    def __init__(self, rngs):
        self.block = Block(rngs)
    def __call__(self, x):
        out = self.block(x)
        self.sow(nnx.Intermediate, 'out', out)
        return out
m = Model(nnx.Rngs(0))
m(jnp.ones((1, 3)))
m(jnp.ones((1, 3)) * 2)
inter = nnx.pop(m, nnx.Intermediate)
print(inter)
print(hasattr(m.block, 'hidden'), hasattr(m, 'out'))
print(jax.tree.map(lambda a: a.shape, inter))
