import jax
import jax.numpy as jnp
import optax

w = jnp.array([1.0, -2.0, 3.0])
target = jnp.array([0.5, 0.5, 0.5])


def loss(w, scale):
    return jnp.sum((w * scale - target) ** 2)


opt = optax.MultiSteps(optax.sgd(learning_rate=0.1, momentum=0.9), every_k_schedule=3)
state = opt.init(w)
for i in range(9):
    g = jax.grad(loss)(w, 1.0 + 0.1 * i)
    updates, state = opt.update(g, state, w)
    w = optax.apply_updates(w, updates)
    print(i, w, bool(opt.has_updated(state)), int(state.mini_step), int(state.gradient_step))

lr = optax.piecewise_constant_schedule(0.1, {3: 0.5, 6: 0.1})
print([round(float(lr(i)), 4) for i in range(8)])
decay = optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5, staircase=True)
print([round(float(decay(i)), 4) for i in range(6)])
adam = optax.inject_hyperparams(optax.adam)(learning_rate=0.01)
s = adam.init(w)
s.hyperparams["learning_rate"] = 0.001
u, s = adam.update(jax.grad(loss)(w, 1.0), s)
print(u, s.hyperparams["learning_rate"])
print(optax.l2_loss(jnp.array([1.0, 2.0]), jnp.array([0.0, 0.0])))
print(optax.sigmoid_binary_cross_entropy(jnp.array([0.0, 2.0]), jnp.array([1.0, 0.0])))
