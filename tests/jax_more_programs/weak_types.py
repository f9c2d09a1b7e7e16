# JAX's weak types: Python numbers enter as weakly typed arrays, whose dtype
# gives way to the other operand's, and reprs say `weak_type=True`.
# (tests/jax_programs.rs compares this program's output with JAX's exactly,
# weak_type included.)
import jax
import jax.numpy as jnp

show = lambda *xs: print(*[repr(x) for x in xs])

w = jnp.asarray(2.0)
show(jnp.array(1.0), w, jnp.float32(3), jnp.array(3), jnp.asarray(True))
show(jnp.array(2.0, dtype=jnp.float32), jnp.array([2.0]), w.astype(jnp.float32))
print("grad", repr(jax.grad(lambda x: x ** 2)(3.0)))
print("value_and_grad", jax.value_and_grad(lambda x: x ** 2)(3.0))
print("grad of a dict", jax.grad(lambda p: p["w"] * 2.0)({"w": 1.0}))
print("grad mixed", jax.grad(lambda x, y: x * y)(2.0, jnp.ones(())))
print("jit", jax.jit(lambda x: x * 2)(3.0), jax.jit(lambda: 1.0)(), jax.jit(lambda x: x)(2))
print("jit strong", jax.jit(lambda x: x * 2)(jnp.float32(3.0)))
print("jit outputs", jax.jit(lambda x, y: (x, y, x * y))(1.0, jnp.ones(())))
# Elementwise work keeps weakness only when every operand is weak.
show(-w, w * w, w ** 2, 2 ** w, w // 1, abs(w), jnp.sqrt(w), jnp.exp(w))
show(w > 1, jnp.isnan(w), w == w, jnp.where(w > 1, w, 0.0), jnp.where(w > 1, w, jnp.zeros(())))
show(jnp.clip(w, 0, 1), jnp.maximum(w, 1), jnp.minimum(1.0, 2.0), jnp.sin(1), jnp.add(1, 2))
show(w + jnp.ones(()), jnp.zeros(()) + w, jnp.float32(2) * 3, jnp.array(3) * jnp.float32(2))
# The lattice: a weak int and a weak float give a weak float; an int array
# and a Python float give a weak float; a weak float defers to float16.
show(jnp.array(3) + 1.5, jnp.arange(3) * 1.0, jnp.dot(jnp.ones(2), 2.0))
show(w + jnp.ones(3, jnp.float16), jnp.asarray(2) + jnp.ones(3, jnp.int8))
show(w + jnp.ones((), jnp.bfloat16))
# Movement keeps it; reductions and conversions drop it.
show(w.reshape(1), w.T, w[None], jnp.broadcast_to(w, (2,)), jnp.stack([w, w]))
show(jnp.sum(w), jnp.max(w), jnp.mean(w), jnp.cumsum(w.reshape(1)), jnp.int32(w))
show(jnp.zeros_like(w), jnp.ones_like(w), jnp.full_like(w, 3), jnp.full((), 2.0), jnp.full((2,), 2.0))
show(jnp.array(w), jnp.asarray(w), w.copy(), jax.lax.stop_gradient(w), jnp.dot(w, w))
show(jax.lax.convert_element_type(w, jnp.float32), jnp.zeros(()), jnp.linspace(0, 1, 3))
print(w.weak_type, jnp.ones(()).weak_type, jax.typeof(w), jax.typeof(jnp.ones(2)))
# Tracers show it as `~`.
jax.jit(lambda x: print(x, jax.typeof(x)))(1.0)
jax.jit(lambda x: print(x))(jnp.ones(()))
# Loops carry it while the body keeps it.
show(jax.lax.fori_loop(0, 3, lambda i, c: c + 1.0, 0.0))
show(jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.ones(()), 0.0))
show(jax.lax.scan(lambda c, x: (c + x, x), 0.0, jnp.ones(2))[0])
print(jax.tree.map(lambda x: x * 2, {"a": 1.0, "b": jnp.ones(())}))
show(jax.vmap(lambda x: x * 2)(jnp.arange(3.0)))
show(jax.random.uniform(jax.random.key(0)) * 2.0)
# A cond's output is weak where every branch gives it weak.
show(jax.lax.cond(True, lambda: 1.0, lambda: 2.0), jax.lax.cond(True, lambda x: x, lambda x: x * 2, 3.0))
show(jax.lax.cond(True, lambda x: x, lambda x: jnp.ones(()), 3.0), jax.lax.switch(1, [lambda x: x, lambda x: x + 1], 3.0))
show(jax.lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0))
