# Flax's TrainState over a plain apply function and optax's adam with
# gradient clipping, stepped under jax.jit; then a subclass's extra field
# (a count of examples seen) carried through apply_gradients.
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state


def apply(params, x):
    return jnp.tanh(x @ params["w"] + params["b"])


params = {"w": jnp.linspace(-0.5, 0.5, 6).reshape(3, 2), "b": jnp.zeros(2)}
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1))
state = train_state.TrainState.create(apply_fn=apply, params=params, tx=tx)
x = jnp.arange(12.0).reshape(4, 3) / 10
y = jnp.array([[0.5, -0.5], [0.2, 0.1], [-0.3, 0.4], [0.0, 0.9]])


@jax.jit
def step(state, x, y):
    def loss(p):
        return jnp.mean((state.apply_fn(p, x) - y) ** 2)
    l, g = jax.value_and_grad(loss)(state.params)
    return state.apply_gradients(grads=g), l


for i in range(6):
    state, l = step(state, x, y)
    print(i, l)
print(int(state.step), state.params["w"], state.params["b"])
print(len(jax.tree.leaves(state)), jax.tree.leaves(state)[0])

class CountingState(train_state.TrainState):
    seen: int


try:
    train_state.TrainState.create(apply_fn=apply, params=params, tx=optax.sgd(0.5), seen=0)
except TypeError as e:
    print("TypeError:", e)
state2 = CountingState.create(apply_fn=apply, params=params, tx=optax.sgd(0.5), seen=0)
for i in range(3):
    g = jax.grad(lambda p: jnp.mean((apply(p, x) - y) ** 2))(state2.params)
    state2 = state2.apply_gradients(grads=g, seen=state2.seen + x.shape[0])
print(int(state2.step), state2.seen, state2.params["b"])
print(state2.replace(step=10).step)
