# Without jax_enable_x64, JAX's arrays are never 64-bit: dtypes asked for are
# truncated (with a warning on stderr), NumPy's float64 arrays come in as
# float32, and mixed promotions to 64 bits stay 32-bit. With it, they are kept.
import warnings

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.array([1, 2, 3], dtype=jnp.float64)
print(repr(x))
print(jnp.arange(3, dtype=jnp.int64).dtype, jnp.zeros(2, jnp.float64).dtype)
print(jnp.ones((2,), dtype="float64").dtype, jnp.full(2, 3, dtype=np.int64).dtype)
print(jnp.linspace(0, 1, 3, dtype=jnp.float64))
a = np.array([0.5, 1.5], dtype=np.float64)
print(a.dtype, repr(jnp.asarray(a)), jnp.sum(a).dtype, jnp.sin(a).dtype)
print(repr(jnp.asarray(a) * a), (jnp.ones(2) + np.float64(1)).dtype)
print(repr(jnp.int32(1) + jnp.uint32(1)))
print(jnp.array([1.5, 2.5]).astype(jnp.float64).dtype, x.astype(np.int64).dtype)
print(jax.random.uniform(jax.random.key(0), (2,), dtype=jnp.float64).dtype)
print(jax.jit(lambda v: v * 2)(a).dtype)
print(np.ones(2, dtype=np.float64).dtype, (a + a).dtype)
warnings.simplefilter("ignore")
print(jnp.zeros(1, dtype=jnp.int64).dtype)

jax.config.update("jax_enable_x64", True)
print(jnp.zeros(2, jnp.float64).dtype, jnp.arange(3, dtype=jnp.int64).dtype)
print(jnp.asarray(a).dtype, (jnp.int32(1) + jnp.uint32(1)).dtype)
