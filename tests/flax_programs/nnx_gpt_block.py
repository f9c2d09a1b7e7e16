# A GPT block and a tiny GPT in Flax NNX: causal multi-head attention, an MLP,
# pre-norm residuals, tied embeddings; a few training steps with optax.
import jax
import jax.numpy as jnp
from flax import nnx
import optax


class Block(nnx.Module):
    def __init__(self, d, heads, *, rngs: nnx.Rngs):
        self.ln1 = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
        self.ln2 = nnx.RMSNorm(d, rngs=rngs)
        self.up = nnx.Linear(d, 4 * d, rngs=rngs)
        self.down = nnx.Linear(4 * d, d, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x), is_causal=True)
        return x + self.down(nnx.gelu(self.up(self.ln2(x))))


class GPT(nnx.Module):
    def __init__(self, vocab, d, heads, layers, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, d, rngs=rngs)
        self.blocks = nnx.List([Block(d, heads, rngs=rngs) for _ in range(layers)])
        self.ln = nnx.LayerNorm(d, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.embed.attend(self.ln(x))


model = GPT(vocab=11, d=16, heads=4, layers=2, rngs=nnx.Rngs(params=0))
tokens = jnp.arange(2 * 8).reshape(2, 8) % 11
logits = model(tokens)
print(logits.shape, logits[0, :2, :4])

optimizer = nnx.Optimizer(model, optax.adamw(3e-3, weight_decay=0.01), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, tokens):
    def loss_fn(model):
        logits = model(tokens[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


for step in range(6):
    print(step, train_step(model, optimizer, tokens))

params = nnx.state(model, nnx.Param)
print(sum(x.size for x in jax.tree.leaves(params)))
print(model.blocks[1].attn.query.kernel.shape, model.blocks[1].attn.out.kernel.shape)
print(jnp.round(model(tokens)[1, -1, :5], 4))
