# Host callbacks: jax.pure_callback eagerly, under jit (each call), vmap (each
# vmap_method), pytrees of results, custom_jvp around a callback, and
# jax.experimental.io_callback for effects.
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback


def host_sin(x):
    print("host_sin", x.dtype, x.shape, type(x).__name__)
    return np.sin(x)


def f(x):
    return jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


x = jnp.arange(3.0)
print(f(x))
jf = jax.jit(f)
print(jf(x))
print(jf(x + 1))
print(jax.jit(lambda x: f(x) * 2 + 1)(x))

for method in ["sequential", "expand_dims", "broadcast_all"]:
    def g(x, y):
        return jax.pure_callback(lambda a, b: (print(method, a.shape, b.shape), a * b)[1],
                                 jax.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)
    print(jax.vmap(g, in_axes=(0, None))(jnp.ones((2, 3)), jnp.arange(3.0)))

try:
    jax.vmap(f)(jnp.ones((2, 3)))
except NotImplementedError as e:
    print("NotImplementedError")
try:
    jax.grad(lambda x: f(x).sum())(x)
except ValueError as e:
    print("ValueError:", e)


@jax.custom_jvp
def sin_cb(x):
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")


@sin_cb.defjvp
def sin_cb_jvp(primals, tangents):
    x, = primals
    t, = tangents
    cos = jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")
    return sin_cb(x), cos * t


print(jax.grad(lambda x: sin_cb(x).sum())(x))
print(jax.vmap(jax.grad(lambda v: sin_cb(v)))(jnp.array([0.1, 0.2])))

# Pytrees in and out; keyword arguments; dtypes converted to the declared ones.
def stats(d, scale=1.0):
    v = d['v']
    return {'mean': np.mean(v) * scale, 'max': np.max(v).astype(np.float64), 'n': len(v)}


spec = {'mean': jax.ShapeDtypeStruct((), jnp.float32), 'max': jax.ShapeDtypeStruct((), jnp.float32),
        'n': jax.ShapeDtypeStruct((), jnp.int32)}
out = jax.jit(lambda v: jax.pure_callback(stats, spec, {'v': v}, scale=2.0))(jnp.array([1.0, 5.0, 3.0]))
print(out, out['mean'].dtype, out['n'].dtype)

calls = []


def log(x):
    calls.append(float(x))
    print("log", x)
    return np.asarray(x * 2, dtype=np.float32)


@jax.jit
def step(x):
    y = io_callback(log, jax.ShapeDtypeStruct((), jnp.float32), x)
    return y + 1


print(step(1.0), step(2.0), step(3.0))
print(calls)
print(jax.jit(lambda x: io_callback(lambda v: print("io", v), None, x, ordered=True))(3))
print(jax.vmap(lambda v: io_callback(lambda a: np.asarray(a + 10, dtype=np.float32), jax.ShapeDtypeStruct((), jnp.float32), v))(jnp.arange(3.0)))
