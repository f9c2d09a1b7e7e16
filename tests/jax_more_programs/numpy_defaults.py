# NumPy's own 64-bit defaults beside JAX's 32-bit ones in one program.
import numpy as np
import jax
import jax.numpy as jnp

a = np.array([0.1, 0.2]) / 3
print(a, a.dtype)
print(np.zeros(3).dtype, np.arange(5).dtype, np.arange(5.0).dtype, np.ones((2,)).dtype)
print(np.full(2, 1.5).dtype, np.eye(2).dtype, np.empty(2).dtype, np.identity(2).dtype)
print(np.array([1, 2]).dtype, np.array([True]).dtype, np.array([1, 2.5]).dtype)
print(np.sqrt(2.0), np.exp(np.array([1.0])), np.pi / 3)
print(np.array([0.1]).tolist(), np.mean(np.array([1.0, 2.0, 4.0])) / 7)

x = np.arange(4)
print((x / 3).dtype, x.mean().dtype, (x * 0.5).dtype, np.sum(x > 1).dtype)
print(x / 3)
y = np.arange(3.0)
print(y.std(), np.var(y), y.mean(), np.std(y).dtype)

print(np.linspace(0, 1, 4), np.linspace(0, 1, 4).dtype)
print(np.linspace(-3, 7, 11, endpoint=False))
print(np.linspace(0.1, 2.7, 7).tolist())
print(np.linspace(2, 3, 5, retstep=True)[0])
print(np.linspace(0, 10, 5, dtype=int))
print(np.linspace([0, 1], [2, 3], 3))
print(np.linspace(0, 1, 1), np.linspace(0, 1, 0))

# JAX without x64 takes NumPy's float64 arrays as float32 ones.
f = lambda v: jnp.sum(v ** 2) * 1.5
g = jax.grad(f)(y)
print(g, g.dtype)
print(jax.value_and_grad(f)(y))
print(jax.vmap(lambda v: v * 2)(y).dtype, jax.jit(lambda v: v * 2)(y).dtype)
print(jnp.asarray(a).dtype, (jnp.ones(2) + a).dtype, jnp.linspace(0, 1, 4).dtype)
print(np.asarray(jnp.arange(3.0)).dtype, np.asarray(jnp.arange(3.0)) / 3)
