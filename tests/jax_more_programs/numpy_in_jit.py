# NumPy inside and around jit, as the tracing guide shows: float64 NumPy arguments enter as
# float32, NumPy's functions compute at once on static values (np.prod(x.shape)).
from jax import jit, make_jaxpr
import jax.numpy as jnp
import numpy as np

np.random.seed(0)


@jit
def f(x, y):
    print("Running f():")
    print(f"  x = {x}")
    print(f"  y = {y}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result


x = np.random.randn(3, 4)
y = np.random.randn(4)
print(f(x, y))
print(f(x, y).dtype)
print(make_jaxpr(lambda x, y: x + y)(x[0], y))


@jit
def g(x):
    return x.reshape((np.prod(x.shape),))


print(g(jnp.ones((2, 3))))
print(jit(lambda x: np.sum(np.arange(4)) + x)(1.0))
print(jit(lambda x: x * np.float32(2.5))(np.arange(3)))
