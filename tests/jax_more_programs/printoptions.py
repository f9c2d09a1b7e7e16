# NumPy's print options: precision, suppress, threshold, edgeitems, linewidth,
# as a context and globally; they govern JAX arrays too. errstate/seterr.
import numpy as np
import jax.numpy as jnp

x = np.array([0.123456789, 1.5, -2.25, 1e-5, 3.0])
j = jnp.array([0.123456789, 1.5, -2.25, 3.0])
print(x, j)
with np.printoptions(precision=3):
    print(x)
    print(j)
    print(np.array([0.129999, 0.5]), np.array([1e-7, 1.0]))
    print(jnp.array([[1.0 / 3, 2.0 / 3], [1.0, 4.0 / 3]]))
print(np.get_printoptions()['precision'])
with np.printoptions(precision=2, suppress=True):
    print(np.array([1e-7, 1.0, 123.456]))
    print(jnp.array([1e-6, 2.5, 1000.0]))
np.set_printoptions(threshold=10, edgeitems=2)
print(np.arange(20.0))
print(jnp.arange(30).reshape(3, 10))
np.set_printoptions(threshold=1000, edgeitems=3, linewidth=40)
print(np.linspace(0, 1, 12))
np.set_printoptions(linewidth=75, precision=4)
print(np.random.default_rng(0).normal(size=(2, 3)))
print(jnp.ones(3) / 7)
np.set_printoptions(precision=8)
print(jnp.ones(3) / 7)
with np.errstate(divide='ignore', invalid='ignore'):
    print(np.array([1.0, 0.0]) / np.array([0.0, 0.0]))
print(np.geterr()['divide'])
old = np.seterr(all='ignore')
print(old['over'], np.geterr()['under'])
np.seterr(**old)
