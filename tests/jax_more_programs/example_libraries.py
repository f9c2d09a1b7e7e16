# jax.example_libraries: a stax MLP (same key, same parameters as JAX) trained
# with optimizers.adam and optimizers.sgd under jit, a small conv net's
# forward pass, the combinators, schedules, gradient clipping and packing.
import jax
import jax.numpy as jnp
from jax import random
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, Relu, LogSoftmax

init_fun, apply_fun = stax.serial(Dense(16), Relu, Dense(16), stax.Tanh, Dense(3), LogSoftmax)
out_shape, params = init_fun(random.PRNGKey(0), (-1, 4))
print(out_shape, params[0][0][0, :4], params[4][1])
x = random.normal(random.PRNGKey(1), (32, 4))
y = jax.nn.one_hot(jnp.argmax(x[:, :3] + 0.5 * x[:, 3:], axis=1), 3)
loss = lambda p: -jnp.mean(jnp.sum(apply_fun(p, x) * y, axis=1))

for name, opt in [("adam", optimizers.adam(1e-2)), ("sgd", optimizers.sgd(optimizers.exponential_decay(0.5, 10, 0.5)))]:
    opt_init, opt_update, get_params = opt
    @jax.jit
    def step(i, opt_state):
        value, grads = jax.value_and_grad(loss)(get_params(opt_state))
        return value, opt_update(i, optimizers.clip_grads(grads, 1.0), opt_state)
    opt_state = opt_init(params)
    for i in range(5):
        value, opt_state = step(i, opt_state)
        print(name, i, value)
    print(name, get_params(opt_state)[2][1][:4], optimizers.l2_norm(get_params(opt_state)))

conv_init, conv_apply = stax.serial(stax.Conv(4, (3, 3), padding='SAME'), stax.BatchNorm(), stax.Relu,
                                    stax.MaxPool((2, 2), strides=(2, 2)), stax.Conv(2, (2, 2)), stax.Elu,
                                    stax.AvgPool((2, 2), padding='SAME'), stax.Flatten, Dense(3), stax.Softmax)
shape, conv_params = conv_init(random.PRNGKey(2), (2, 8, 8, 1))
print(tuple(int(d) for d in shape), conv_params[0][0][:, :, 0, 0])
print(conv_apply(conv_params, random.normal(random.PRNGKey(3), (2, 8, 8, 1))))

res_init, res_apply = stax.serial(stax.FanOut(2), stax.parallel(Dense(4), stax.Identity), stax.FanInSum, stax.Dropout(0.8))
shape, res_params = res_init(random.PRNGKey(4), (5, 4))
print(shape, res_apply(res_params, x[:5], rng=random.PRNGKey(5)))

schedules = [optimizers.polynomial_decay(1.0, 4, 0.1), optimizers.inverse_time_decay(1.0, 2, 0.5, staircase=True),
             optimizers.piecewise_constant([2, 4], [1.0, 0.5, 0.1]), optimizers.exponential_decay(1.0, 2, 0.5)]
print([[float(s(i)) for i in range(6)] for s in schedules])
packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(opt_state))
print(jax.tree.structure(packed) == jax.tree.structure(opt_state), len(jax.tree.leaves(packed)))
