# jax.scipy.optimize.minimize (BFGS and L-BFGS) and jax.scipy.linalg's LU factorisation.
import jax
import jax.numpy as jnp
from jax.scipy.optimize import minimize
from jax.scipy.linalg import lu, lu_factor, lu_solve


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def quadratic(x, A, b):
    return 0.5 * x @ A @ x - b @ x


def logistic_loss(w, X, y):
    z = X @ w
    return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 0.01 * jnp.sum(w ** 2)


A = jnp.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
b = jnp.array([1.0, -2.0, 0.5])
res = minimize(quadratic, jnp.zeros(3), args=(A, b), method="BFGS")
print(res)
print("exact:", jnp.linalg.solve(A, b), "inverse:", jnp.linalg.inv(A)[0])
res = minimize(rosenbrock, jnp.array([2.0, 2.0]), method="BFGS")
print(res.x, res.fun, res.success, res.status, res.nit, res.nfev, res.njev)

X = jax.random.normal(jax.random.key(0), (32, 3))
y = (X @ jnp.array([1.0, -2.0, 0.5]) > 0).astype(jnp.float32)
fit = jax.jit(lambda w0: minimize(logistic_loss, w0, args=(X, y), method="BFGS"))
res = fit(jnp.zeros(3))
print(res.x, res.fun, res.success, res.status, res.nit, res.nfev)
short = minimize(logistic_loss, jnp.zeros(3), args=(X, y), method="BFGS", options={"maxiter": 2})
print(short.x, short.fun, short.success, short.status, short.nit, short.nfev)
lb = minimize(quadratic, jnp.zeros(3), args=(A, b), method="l-bfgs-experimental-do-not-rely-on-this")
print(lb.x, lb.fun, lb.success, lb.nit, lb.nfev, lb.hess_inv)

M = jnp.array([[1.0, 2.0, 3.0], [5.0, 4.0, 2.0], [3.0, 2.0, 1.0]])
P, L, U = lu(M)
print(P, L, U, jnp.allclose(P @ L @ U, M), sep="\n")
PL, U = lu(M[:, :2], permute_l=True)
print(PL, U, sep="\n")
lu_piv = lu_factor(M)
print(lu_piv)
rhs = jnp.array([1.0, 0.0, -1.0])
print(lu_solve(lu_piv, rhs), lu_solve(lu_piv, rhs, trans=1))
batch = jnp.stack([M, M.T + jnp.eye(3), jnp.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])])
lu_b, piv_b = jax.jit(lu_factor)(batch)
print(piv_b)
print(lu_solve((lu_b, piv_b), jnp.ones((3, 3, 2))))
