# custom_jvp / custom_vjp with nondiff_argnums, as the custom-derivatives guide uses them.
from functools import partial
import jax
import jax.numpy as jnp
from jax import custom_jvp, custom_vjp, grad, jvp, vmap


@partial(custom_jvp, nondiff_argnums=(0,))
def app(f, x):
    return f(x)


@app.defjvp
def app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2. * x_dot


print(app(lambda x: x ** 3, 3.))
print(grad(app, 1)(lambda x: x ** 3, 3.))
print(jvp(lambda x: app(jnp.sin, x), (1.0,), (0.5,)))


@partial(custom_vjp, nondiff_argnums=(0,))
def app2(f, x):
    return f(x)


def app2_fwd(f, x):
    return f(x), x


def app2_bwd(f, x, g):
    return (5 * g * x,)


app2.defvjp(app2_fwd, app2_bwd)
print(app2(lambda x: x ** 2, 4.))
print(grad(app2, 1)(lambda x: x ** 2, 4.))
print(vmap(grad(lambda x: app2(jnp.cos, x)))(jnp.arange(3.)))


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def clip_gradient(x, hi):
    return x


def clip_fwd(x, hi):
    return x, None


def clip_bwd(hi, _, g):
    return (jnp.clip(g, -hi, hi),)


clip_gradient.defvjp(clip_fwd, clip_bwd)
print(grad(lambda x: 10. * clip_gradient(x, 1.))(2.))
print(jax.jit(grad(lambda x: jnp.sum(3. * clip_gradient(x, 2.))))(jnp.ones(3)))


# The fixed-point example: the function is a non-differentiated argument.
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
    _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)
    return fixed_point(update, a, a)


print(newton_sqrt(2.))
print(grad(newton_sqrt)(2.))
print(jax.jit(grad(newton_sqrt))(3.))
