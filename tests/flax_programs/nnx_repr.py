# Printing modules, variables and states as Flax does: counts and bytes by
# variable type, arrays by shape inside modules, values in states.
import jax, jax.numpy as jnp
from flax import nnx
class MLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)
        self.count = nnx.Variable(jnp.array(0))
model = MLP(2, 300, 5, rngs=nnx.Rngs(0))
print(model)
nnx.display(model.bn)
print(nnx.state(model, nnx.BatchStat))
print(nnx.Linear(3, 2, rngs=nnx.Rngs(0)).kernel)
print(nnx.Conv(2, 4, kernel_size=3, rngs=nnx.Rngs(0)))
print(nnx.LayerNorm(4, rngs=nnx.Rngs(0)), nnx.Embed(10, 3, rngs=nnx.Rngs(0)))
