# Linear algebra of complex matrices, and the holomorphic gradient of the autodiff cookbook.
import jax.numpy as jnp
from jax import grad

A = jnp.array([[5.,    2.+3j,    5j],
               [2.-3j,   7.,  1.+7j],
               [-5j,  1.-7j,    12.]])
L = jnp.linalg.cholesky(A)
print(L)
print(jnp.allclose(L @ L.conj().T, A, atol=1e-5))
print(jnp.linalg.cholesky(A, upper=True))


def f(X):
    L = jnp.linalg.cholesky(X)
    return jnp.sum((L - jnp.sin(L))**2)


print(grad(f, holomorphic=True)(A))
print(jnp.allclose(jnp.linalg.inv(A) @ A, jnp.eye(3), atol=1e-5))
print(jnp.round(jnp.linalg.det(A).real, 3), jnp.abs(jnp.linalg.det(A).imag) < 1e-3)
b = jnp.array([1. + 1j, 2., -1j])
print(jnp.allclose(A @ jnp.linalg.solve(A, b), b, atol=1e-5))
