# Views of a model (nnx.view, with_attributes, recursive_map), filters as
# predicates, Rngs methods, traverse_util, as the Flax guides use them.
from flax import nnx
import flax.traverse_util
import jax
import jax.numpy as jnp

rngs = nnx.Rngs(0)
model = nnx.Sequential(
    nnx.Linear(2, 4, rngs=rngs), nnx.BatchNorm(4, rngs=rngs), nnx.Dropout(0.5)
)
train_model = nnx.view(model, deterministic=False, use_running_average=False)
eval_model = nnx.view(model, deterministic=True, use_running_average=True)
print(train_model.layers[2].deterministic, eval_model.layers[2].deterministic)
print(train_model.layers[0].kernel is eval_model.layers[0].kernel, train_model is model)
print(nnx.view_info(model))
x = jnp.ones((3, 2))
print(eval_model(x))
print(train_model(x, rngs=nnx.Rngs(dropout=1)).shape)
try:
    nnx.view(model, no_such_flag=True)
except ValueError as e:
    print("ValueError", e)

class Noisy(nnx.Module):
    def __init__(self, din, dout, *, rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.training = None

    def __call__(self, x, rngs=None):
        x = self.linear(x)
        if self.training:
            x = x + rngs.normal(x.shape) * 0.1
        return x

seq = nnx.Sequential(Noisy(2, 3, rngs=rngs), Noisy(3, 2, rngs=rngs))
noisy = nnx.with_attributes(seq, training=True)
print(noisy.layers[0].training, seq.layers[0].training)
print(noisy(jnp.ones((1, 2)), rngs=nnx.Rngs(5)))

def show(path, node):
    if isinstance(node, nnx.Module):
        print("/".join(str(p) for p in path), type(node).__name__)
    return node
_ = nnx.recursive_map(show, seq)

is_param = nnx.filterlib.to_predicate(nnx.Param)
print(is_param, nnx.filterlib.to_predicate((nnx.Param, "dropout")), nnx.filterlib.to_predicate(...))
print(is_param((), model.layers[0].kernel), is_param((), model.layers[1].mean))
params, rest = nnx.split(model, nnx.Param, ...)[1:]
flat = flax.traverse_util.flatten_dict(nnx.to_pure_dict(params))
print(sorted(flat))
print(flax.traverse_util.flatten_dict({"a": {"b": 1, "c": {}}, "d": 2}, sep="/", keep_empty_nodes=True))
print(flax.traverse_util.unflatten_dict({("a", "b"): 1, ("a", "c"): 2, ("d",): 3}))

r = nnx.Rngs(0, params=1)
print(r.params.uniform((2,)), r.normal((2,)), r.params.count[...], r.default.count[...])
init = r.lecun_normal()
print(init((2, 2)))
