# The fixed_point example of JAX's custom derivative rules: a custom_vjp function whose
# backward pass calls custom_vjp functions again, differentiated up to three times.
import jax, jax.numpy as jnp
from jax import custom_vjp, vjp, grad
from functools import partial


@partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
  def cond_fun(carry):
    x_prev, x = carry
    return jnp.abs(x_prev - x) > 1e-6
  def body_fun(carry):
    _, x = carry
    return x, f(a, x)
  _, x_star = jax.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
  return x_star

def fixed_point_fwd(f, a, x_init):
  x_star = fixed_point(f, a, x_init)
  return x_star, (a, x_star)

def fixed_point_rev(f, res, x_star_bar):
  a, x_star = res
  _, vjp_a = vjp(lambda a: f(a, x_star), a)
  a_bar, = vjp_a(fixed_point(partial(rev_iter, f),
                             (a, x_star, x_star_bar),
                             x_star_bar))
  return a_bar, jnp.zeros_like(x_star)

def rev_iter(f, packed, u):
  a, x_star, x_star_bar = packed
  _, vjp_x = vjp(lambda x: f(a, x), x_star)
  return x_star_bar + vjp_x(u)[0]

fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

def newton_sqrt(a):
  update = lambda a, x: 0.5 * (x + a / x)
  return fixed_point(update, a, a)

print(newton_sqrt(2.))
print(grad(newton_sqrt)(2.))
print(grad(grad(newton_sqrt))(2.))
print(jax.vmap(grad(newton_sqrt))(jnp.array([2., 4.])))
print(jax.jit(grad(newton_sqrt))(2.), jax.jit(grad(grad(newton_sqrt)))(2.))
print(jax.grad(grad(grad(newton_sqrt)))(2.))


@jax.custom_vjp
def cube(x):
  return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.))[1]
cube.defvjp(lambda x: (cube(x), x), lambda x, g: (g * 3 * cube(x) / x,))
print(jax.grad(cube)(2.), jax.grad(jax.grad(cube))(2.))
