import jax
import jax.numpy as jnp
from flax import nnx
import optax

class MLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.bn = nnx.LayerNorm(dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)

model = MLP(4, 16, 3, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average('loss'), accuracy=nnx.metrics.Accuracy())

x = jax.random.normal(jax.random.key(1), (32, 4))
labels = (x.sum(axis=1) > 0).astype(jnp.int32) + (x[:, 0] > 1).astype(jnp.int32)

@nnx.jit
def train_step(model, optimizer, metrics, x, labels):
    def loss_fn(model):
        logits = model(x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        return loss, logits
    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    metrics.update(loss=loss, logits=logits, labels=labels)
    optimizer.update(model, grads)
    return loss

for step in range(20):
    loss = train_step(model, optimizer, metrics, x, labels)
    if step % 5 == 4:
        m = metrics.compute()
        print(step, round(float(loss), 4), round(float(m['loss']), 4), round(float(m['accuracy']), 4))
        metrics.reset()

model.eval()
logits = model(x)
print(logits[:2])
print(optimizer.step[...])
print(model.bn.scale[...][:4])
print(model.dropout.rngs.count[...])
params = nnx.state(model, nnx.Param)
print(jax.tree.map(jnp.shape, params))
print(sum(p.size for p in jax.tree.leaves(params)))
graphdef, state = nnx.split(model)
m2 = nnx.merge(graphdef, state)
print(jnp.allclose(m2(x), logits))
