# Flax 0.12's object-graph semantics: nnx.merge shares the states'
# variables with the merged module (copy=True and nnx.clone copy them),
# GraphDefs compare by structure, nnx.Optimizer keeps its optax state in
# variables (OptArray, OptVariable) that nnx.state / nnx.split see,
# nnx.iter_modules / nnx.iter_graph yield children before their parents,
# and arrays a module holds outside variables (nnx.data) are part of its
# state; nnx.Dict prints as Flax prints it.
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs, tied=True):
        self.l1 = nnx.Linear(2, 3, rngs=rngs)
        self.bn = nnx.BatchNorm(3, rngs=rngs)
        self.l2 = nnx.Linear(3, 1, rngs=rngs)
        if tied:
            self.tied = self.l1

    def __call__(self, x):
        return self.l2(nnx.relu(self.bn(self.l1(x))))


# ---- merge shares variables; copy=True and clone copy them ----
m = MLP(nnx.Rngs(0))
g, s = nnx.split(m)
m2 = nnx.merge(g, s)
print(m2.l1.kernel is m.l1.kernel, m2.tied is m2.l1, m2.bn.mean is m.bn.mean, s["l2"]["bias"] is m.l2.bias)
m2.l2.bias[...] = jnp.array([0.5])
print(m.l2.bias[...])
m3 = nnx.merge(g, s, copy=True)
m3.l2.bias[...] = jnp.array([2.0])
print(m3.l1.kernel is m.l1.kernel, m3.tied is m3.l1, m.l2.bias[...], m3.l2.bias[...])
c = nnx.clone(m)
print(c.l1.kernel is m.l1.kernel, c.tied is c.l1)
g2, params, rest = nnx.split(m, nnx.Param, ...)
m4 = nnx.merge(g2, params, rest)
print(m4.l2.kernel is m.l2.kernel, m4.bn.var is m.bn.var)

# ---- GraphDefs compare by structure ----
print(nnx.graphdef(m) == nnx.graphdef(m), g == g2, nnx.graphdef(m) == nnx.graphdef(MLP(nnx.Rngs(1))))
print(g == nnx.graphdef(nnx.Linear(2, 3, rngs=nnx.Rngs(0))), hash(g) == hash(nnx.graphdef(m)))


@jax.jit
def forward(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    return model(x), nnx.state(model)


x = jax.random.normal(jax.random.key(1), (8, 2))
y, new_state = forward(g, s, x)
nnx.update(m, new_state)
print(y[:3, 0], m.bn.mean[...])

# ---- the optimizer's state lives in variables ----
model = MLP(nnx.Rngs(0), tied=False)
optimizer = nnx.Optimizer(model, optax.adam(0.01), wrt=nnx.Param)
print(type(optimizer.opt_state[0].count).__name__, type(optimizer.opt_state[0].mu).__name__,
      type(optimizer.opt_state[0].mu["l2"]["kernel"]).__name__)
print(nnx.state(optimizer, nnx.OptState)["opt_state"][0]["count"])
print(jax.tree.map(jnp.shape, nnx.state(optimizer, nnx.OptState)))
targets = jnp.sin(x[:, :1])


def loss_fn(model):
    return ((model(x) - targets) ** 2).mean()


@nnx.jit
def train_step(model, optimizer):
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


for _ in range(5):
    print(train_step(model, optimizer))
print(optimizer.step[...], optimizer.opt_state[0].count[...])
print(optimizer.opt_state[0].mu["l2"]["kernel"][...].T, optimizer.opt_state[0].nu["l2"]["bias"][...])
opt_graphdef, opt_state = nnx.split(optimizer)
print(len(jax.tree.leaves(opt_state)), sum(float(jnp.abs(v).sum()) for v in jax.tree.leaves(opt_state)))

# the state restored into a fresh optimizer gives the same next step
model_b = MLP(nnx.Rngs(0), tied=False)
nnx.update(model_b, nnx.state(model))
optimizer_b = nnx.Optimizer(model_b, optax.adam(0.01), wrt=nnx.Param)
nnx.update(optimizer_b, nnx.state(optimizer))
print(optimizer_b.opt_state[0].count[...], train_step(model_b, optimizer_b), train_step(model, optimizer))
sgd = nnx.Optimizer(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
print(nnx.state(sgd))
print(sgd)

# ---- nnx.jit keeps what its arguments share: tied layers, a model its
# optimizer holds too ----
tied = MLP(nnx.Rngs(0))
tied_opt = nnx.Optimizer(tied, optax.sgd(0.1), wrt=nnx.Param)


@nnx.jit
def tied_step(model, optimizer):
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


for _ in range(3):
    print(tied_step(tied, tied_opt))
print(tied.tied is tied.l1, tied.l1.kernel[...][0])
both = MLP(nnx.Rngs(2), tied=False)
both_opt = nnx.ModelAndOptimizer(both, optax.adam(0.05))


@nnx.jit
def both_step(model, optimizer):
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(grads)
    return loss


for _ in range(3):
    print(both_step(both, both_opt))
print(both_opt.model is both, both_opt.step[...])

# ---- iteration order: children before their parents ----
seq = nnx.Sequential(nnx.Linear(1, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 1, rngs=nnx.Rngs(1)))
for path, module in nnx.iter_modules(seq):
    print(path, type(module).__name__)
for path, value in nnx.iter_graph(seq):
    if not any(str(k).startswith("_pytree") for k in path) and isinstance(value, (nnx.Variable, nnx.Module, int)):
        print(path, type(value).__name__)

# ---- arrays held outside variables are state; nnx.Dict ----
class Holder(nnx.Module):
    def __init__(self):
        self.table = nnx.data(jnp.arange(3))
        self.offset = jnp.ones(2)
        self.scale = nnx.data(2)
        self.parts = nnx.Dict(w=nnx.Param(jnp.ones(1)), b=jnp.zeros(2), act=nnx.relu)
        self.items = nnx.List([nnx.Param(jnp.full((1,), 3.0)), jnp.zeros(2), 7])


h = Holder()
print(nnx.state(h))
print(h.parts)
print(h.parts["w"], h.parts.b, len(h.parts), list(h.parts.keys()), "w" in h.parts)
hg, hs = nnx.split(h)
hs["table"] = hs["table"] + 10
h2 = nnx.merge(hg, hs)
print(h2.table, h2.offset, h2.scale, h2.parts.w is h.parts.w)
print(h)
