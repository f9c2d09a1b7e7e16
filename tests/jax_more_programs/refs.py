# Mutable array refs (jax.new_ref), as the state guide uses them: under jit, grad, indexing.
import jax
import jax.numpy as jnp

x_ref = jax.new_ref(jnp.zeros(3))


@jax.jit
def f():
    x_ref[1] += 1.


print(x_ref)
f()
f()
print(x_ref)
print(x_ref.shape, x_ref.dtype)


def g(x):
    x_ref = jax.new_ref(0.)
    x_ref[...] = jnp.sin(x)
    return x_ref[...]


print(jax.grad(g)(1.0))

x_ref = jax.new_ref(jnp.arange(12.).reshape(3, 4))
row = x_ref[0]
x_ref[1] = row
val = x_ref[1, 2]
x_ref[2, 3] = val
col = x_ref[:, 1]
x_ref[0, :3] = col
print(x_ref)
final = jax.freeze(x_ref)
print(final)


def normalize(x):
    acc = jax.new_ref(0.0)
    acc[...] = jnp.sum(x)
    return x / acc[...]


print(jax.grad(lambda x: normalize(x).sum())(jnp.arange(1.0, 4.0)))
print(jax.jit(normalize)(jnp.arange(1.0, 4.0)))

counter = jax.new_ref(0)


@jax.jit
def step(x):
    counter[...] += 1
    return x * 2


for i in range(3):
    y = step(jnp.float32(i))
print(counter[...], y)
