# A mixture-of-experts block in Flax NNX: a top-k router with capacity,
# experts as one batched parameter (heads of an "expert" axis), a
# load-balancing loss; trained a few steps with optax.
import jax
import jax.numpy as jnp
from flax import nnx
import optax


class MoE(nnx.Module):
    def __init__(self, d, hidden, experts, k=2, capacity_factor=1.5, *, rngs: nnx.Rngs):
        init = nnx.initializers.lecun_normal()
        self.router = nnx.Linear(d, experts, use_bias=False, rngs=rngs)
        self.w_in = nnx.Param(init(rngs.params(), (experts, d, hidden)))
        self.w_out = nnx.Param(init(rngs.params(), (experts, hidden, d)))
        self.experts, self.k, self.capacity_factor = experts, k, capacity_factor

    def __call__(self, x):                                   # x: (tokens, d)
        n = x.shape[0]
        capacity = int(self.capacity_factor * n * self.k / self.experts)
        probs = jax.nn.softmax(self.router(x), axis=-1)      # (tokens, experts)
        gate, expert = jax.lax.top_k(probs, self.k)          # (tokens, k)
        onehot = jax.nn.one_hot(expert, self.experts)        # (tokens, k, experts)
        position = jnp.cumsum(onehot.reshape(-1, self.experts), axis=0).reshape(onehot.shape) - 1
        keep = onehot * (position < capacity)
        slot = jax.nn.one_hot(jnp.sum(position * keep, axis=-1).astype(jnp.int32), capacity)
        dispatch = jnp.einsum('tke,tkc->tec', keep, slot)    # (tokens, experts, capacity)
        combine = jnp.einsum('tk,tke,tkc->tec', gate, keep, slot)
        xs = jnp.einsum('tec,td->ecd', dispatch, x)          # each expert's tokens
        h = nnx.gelu(jnp.einsum('ecd,edh->ech', xs, self.w_in[...]))
        ys = jnp.einsum('ech,ehd->ecd', h, self.w_out[...])
        fraction = jnp.mean(onehot[:, 0, :], axis=0)         # load balancing (Switch)
        self.aux_loss = nnx.Intermediate(self.experts * jnp.sum(fraction * jnp.mean(probs, axis=0)))
        return jnp.einsum('tec,ecd->td', combine, ys)


model = MoE(8, 16, experts=4, rngs=nnx.Rngs(0))
x = jax.random.normal(jax.random.key(1), (12, 8))
y = model(x)
print(y.shape, jnp.round(y[:2, :4], 4), jnp.round(model.aux_loss[...], 4))

target = jnp.tanh(x[:, ::-1])
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer):
    def loss_fn(model):
        out = model(x)
        return jnp.mean((out - target) ** 2) + 0.01 * model.aux_loss[...]
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


for step in range(5):
    print(step, train_step(model, optimizer))
print(jnp.round(model.w_out[...][0, 0, :4], 4))
