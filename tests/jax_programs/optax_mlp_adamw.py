import jax
import jax.numpy as jnp
import optax

k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
x = jax.random.normal(k1, (64, 3))
y = (x[:, 0] - 2 * x[:, 1] + 0.5 * x[:, 2] > 0).astype(jnp.int32)
params = {"w1": jax.random.normal(k2, (3, 16)) * 0.5, "b1": jnp.zeros(16),
          "w2": jax.random.normal(k3, (16, 2)) * 0.5, "b2": jnp.zeros(2)}

def loss_fn(params, x, y):
    logits = jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

schedule = optax.warmup_cosine_decay_schedule(0.0, 0.05, warmup_steps=5, decay_steps=40)
decay_mask = lambda p: {k: v.ndim > 1 for k, v in p.items()}
optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=1e-3, mask=decay_mask))
opt_state = optimizer.init(params)

@jax.jit
def step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

for i in range(40):
    params, opt_state, loss = step(params, opt_state, x, y)
    if i % 10 == 0:
        print(i, round(float(loss), 4), round(float(schedule(i)), 5))
print("count", opt_state[1][0].count, opt_state[1][0].count.dtype, "loss", round(float(loss_fn(params, x, y)), 4))
print("norm", round(float(optax.global_norm(params)), 4), jax.tree.structure(opt_state[1][1]).num_leaves)
