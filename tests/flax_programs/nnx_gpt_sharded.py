# A small GPT in Flax NNX with logical axis annotations, laid out over a
# (2, 4) mesh by rules (tensor parallel over 'model', data parallel over
# 'data'), trained with optax under nnx.jit; checkpointed with Orbax and
# restored onto a (4, 2) mesh with the same values.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import tempfile

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from flax import nnx
import optax
import orbax.checkpoint as ocp

RULES = [("batch", "data"), ("embed", None), ("mlp", "model"), ("heads", "model"), ("vocab", None)]
init = nnx.initializers.lecun_normal()


class Block(nnx.Module):
    def __init__(self, d, rngs):
        self.ln = nnx.LayerNorm(d, rngs=rngs)
        self.up = nnx.Linear(d, 4 * d, kernel_init=nnx.with_partitioning(init, ("embed", "mlp")), rngs=rngs)
        self.down = nnx.Linear(4 * d, d, kernel_init=nnx.with_partitioning(init, ("mlp", "embed")), rngs=rngs)

    def __call__(self, x):
        return x + self.down(nnx.gelu(self.up(self.ln(x))))


class GPT(nnx.Module):
    def __init__(self, vocab, d, layers, rngs):
        self.embed = nnx.Embed(vocab, d, embedding_init=nnx.with_partitioning(nnx.initializers.normal(0.02), ("vocab", "embed")), rngs=rngs)
        self.blocks = nnx.List([Block(d, rngs) for _ in range(layers)])

    def __call__(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.embed.attend(x)


mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
with jax.set_mesh(mesh), nnx.logical_axis_rules(RULES):
    model = GPT(16, 32, 2, rngs=nnx.Rngs(0))
    print(model.blocks[0].up.kernel.sharding.spec, model.blocks[1].down.kernel.sharding.spec)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, tokens):
        def loss_fn(model):
            logits = model(tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    tokens = jax.device_put((jnp.arange(8 * 9).reshape(8, 9) * 7) % 16, NamedSharding(mesh, P("data", None)))
    for step in range(4):
        print(step, train_step(model, optimizer, tokens))
    print(model.blocks[0].up.kernel.sharding.spec)

ckpt = ocp.test_utils.erase_and_create_empty(os.path.join(tempfile.mkdtemp(), "gpt"))
checkpointer = ocp.StandardCheckpointer()
checkpointer.save(ckpt / "state", nnx.state(model))

other = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
with jax.set_mesh(other), nnx.logical_axis_rules(RULES):
    abstract = nnx.eval_shape(lambda: GPT(16, 32, 2, rngs=nnx.Rngs(0)))
    graphdef, abstract_state = nnx.split(abstract)
    shardings = nnx.get_named_sharding(abstract_state, other)
    target = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract_state, shardings)
    restored = checkpointer.restore(ckpt / "state", target)
    again = nnx.merge(graphdef, restored)
    print(again.blocks[0].up.kernel.sharding.spec, dict(again.blocks[0].up.kernel[...].sharding.mesh.shape))
    same = jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), nnx.state(model), nnx.state(again))
    print(all(jax.tree.leaves(same)))
    print(jnp.round(again(tokens[:2, :4])[0, 0, :4], 4))
