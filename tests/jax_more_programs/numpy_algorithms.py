# NumPy's and jax.numpy's own algorithms where their last bits differ:
# arange's fill, det's cofactor and slogdet forms, histogram's counts.
import numpy as np
import jax
import jax.numpy as jnp

print(np.arange(0, 1, 0.1).tolist())
print(np.arange(0.5, 3.2, 0.3).tolist())
print(jnp.arange(0.5, 3.2, 0.3).tolist())
print(np.arange(1.0, -1.0, -0.25), np.arange(0, 5, 1.5, dtype=np.float32))
print(len(np.arange(0.1, 0.4, 0.1)), len(jnp.arange(0.1, 0.4, 0.1)))

x = np.array([[1.0, 2.0], [3.0, 4.0]])
print(np.linalg.det(x), jnp.linalg.det(x), np.linalg.inv(x))
m = np.array([[2.0, 1.0, 0.5, 0.1], [1.0, 3.0, 0.2, 0.0], [0.5, 0.2, 4.0, 1.0], [0.1, 0.0, 1.0, 5.0]])
print(np.linalg.det(m), np.linalg.det(m[:3, :3]), np.linalg.det(m[:2, :2]))
print(jnp.linalg.det(m), jnp.linalg.det(m[:3, :3]), jnp.linalg.det(m[:2, :2]))
print(jax.grad(jnp.linalg.det)(jnp.asarray(m[:3, :3])))
print(jax.grad(jnp.linalg.det)(jnp.asarray(m)))
print(jnp.linalg.det(jnp.zeros((4, 4))), np.linalg.det(np.zeros((3, 3))), np.linalg.det(np.eye(5) * 2))
print(jnp.linalg.det(jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])))
print(np.linalg.slogdet(m), jnp.linalg.slogdet(jnp.zeros((4, 4))))

print(np.histogram(np.array([1.0, 2.0, 2.5, 4.0]), bins=3))
print(jnp.histogram(jnp.array([1.0, 2.0, 2.5, 4.0]), bins=3))
print(np.histogram(np.arange(10), bins=4, density=True))
print(np.linspace(1, 4, 4), jnp.linspace(1, 4, 4))
