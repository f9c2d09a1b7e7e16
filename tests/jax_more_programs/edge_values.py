# Integer division by zero as jnp computes it, and jax.debug.print's view of
# Python numbers in its arguments (arrays, as JAX's callbacks see them).
import jax
import jax.numpy as jnp

x = jnp.array([-7, -1, 0, 1, 7])
print(x // 0)
print(x % 0)
print(jnp.floor_divide(x, jnp.zeros_like(x)))
print(jnp.array([5, 250, 0], dtype=jnp.uint8) // 0)
print(jnp.array([-3, 0, 3], dtype=jnp.int8) // 0)
print(jax.jit(lambda a, b: a // b)(x, jnp.zeros_like(x)))
u = jnp.array([5, 250, 0, 7], dtype=jnp.uint8)
print(jax.jit(lambda a, b: (a // b, a % b))(u, jnp.array([0, 0, 0, 2], dtype=jnp.uint8)))
print(jnp.array([9, 65535], dtype=jnp.uint16) // jnp.array([0, 4], dtype=jnp.uint16))
print(x // 2, x % 3)

jax.debug.print("{} and {}", 3.5, [1, 2])
jax.debug.print("{a:.2f} {b}", a=jnp.float32(3.14159), b=(True, 2))


@jax.jit
def f(v):
    jax.debug.print("v={v}", v=v)
    return v * 2


print(f(jnp.arange(2.0)))
jax.debug.callback(lambda a: print(type(a).__name__, a.dtype, a), 4)
