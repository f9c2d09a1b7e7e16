import jax
import jax.numpy as jnp
from jax.experimental import checkify

def f(x, i):
  checkify.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
  y = x[i]
  z = jnp.sin(y)
  return z

jittable_f = checkify.checkify(f)
err, z = jax.jit(jittable_f)(jnp.ones((5,)), -2)
print(type(err).__name__)
print(err.get())
err, z = jittable_f(jnp.ones((5,)), jnp.array(3))
print(err.get(), z)

errors = checkify.user_checks | checkify.index_checks | checkify.float_checks
checked_f = checkify.checkify(f, errors=errors)
err, z = checked_f(jnp.ones((5,)), jnp.array(100))
print(err.get())
err, z = checked_f(jnp.ones((5,)), jnp.array(-1))
print(err.get())
err, z = checked_f(jnp.array([jnp.inf, 1]), jnp.array(0))
print(err.get())
err, z = checked_f(jnp.array([5, 1]), jnp.array(0))
err.throw()
print("no error:", err)
try:
    checked_f(jnp.array([jnp.inf, 1]), jnp.array(0))[0].throw()
except checkify.JaxRuntimeError as e:
    print("raised:", e, isinstance(e, ValueError))

def g(x):
  checkify.check(x > 0., "{} must be positive!", x)
  return jnp.log(x)
err, x = jax.jit(checkify.checkify(g))(-1.)
print(err.get())
try:
    jax.jit(g)(1.0)
except ValueError as e:
    print("jit without checkify:", str(e)[:60])
try:
    g(jnp.array(-2.0))
except ValueError as e:
    print("eager:", type(e).__name__, e)

def h(x, i):
  checkify.check(i >= 0, "index needs to be non-negative!")
  return x[i]
checked_h = checkify.checkify(h, errors=checkify.all_checks)
errs, out = jax.vmap(checked_h)(jnp.ones((3, 5)), jnp.array([-1, 2, 100]))
print(errs.get())
try:
    errs.throw()
except ValueError as e:
    print("throw:", e)

err, out = checkify.checkify(jax.vmap(h), errors=checkify.all_checks)(jnp.ones((3, 5)), jnp.array([1, -2, 100]))
print(err.get())

def f2(x, i):
  return x[i]
checkify_of_jit = checkify.checkify(jax.jit(f2), errors=checkify.index_checks)
jit_of_checkify = jax.jit(checkify.checkify(f2, errors=checkify.index_checks))
err, _ = checkify_of_jit(jnp.ones((5,)), 100)
print(err.get())
err, _ = jit_of_checkify(jnp.ones((5,)), 100)
print(err.get())

def d(x, y):
  return x // y
err, out = checkify.checkify(d, errors=checkify.div_checks)(jnp.arange(4), jnp.array([1, 0, 2, 1]))
print(err.get())
err, out = checkify.checkify(d, errors=checkify.div_checks)(jnp.arange(4), jnp.array([1, 3, 2, 1]))
print(err.get(), out)

def gr(x):
  checkify.check(x > 0, "x must be positive, got {x}", x=x)
  return jnp.sin(x) * x
err, g_ = checkify.checkify(jax.grad(gr))(-0.5)
print(err.get(), g_)
err, g_ = checkify.checkify(jax.grad(gr))(0.5)
print(err.get(), g_)
print(checkify.checkify(lambda x: jnp.log(x), errors=checkify.nan_checks)(-1.0)[0].get())
e2, _ = checkify.checkify(lambda x: x)(1.0)
print(e2.get(), str(e2))

# pmap of a checkified function: one error per device
err, out = jax.pmap(checked_h)(jnp.ones((2, 5)), jnp.array([3, -4]))
print(err.get())

# check_error turns an Error back into a check; debug_check only under checkify
def k(x):
  checkify.debug_check(x < 10, "x too big: {}", x)
  e, y = checkify.checkify(g)(x)
  checkify.check_error(e)
  return y
print(k(jnp.array(20.0)))
err, y = checkify.checkify(k)(jnp.array(-3.0))
print(err.get())
err, y = jax.jit(checkify.checkify(k))(jnp.array(30.0))
print(err.get())
try:
  checkify.check_error(err)
except checkify.JaxRuntimeError as e:
  print("check_error:", e)

# A user's exception class, caught by its base
class NegativeInput(ValueError):
  """Raised for inputs below zero."""

def safe_log(x):
  if x < 0:
    raise NegativeInput(f"log of {x}")
  return jnp.log(x)
try:
  safe_log(-1.0)
except ValueError as e:
  print(type(e).__name__, e, isinstance(e, NegativeInput))
