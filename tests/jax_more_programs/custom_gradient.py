# jax.tree.broadcast and jax.custom_gradient (first and second order, under vmap and jit).
import jax
print(jax.tree.broadcast([1, {'a': 2}], [(3, 4), {'a': [5, 6]}]))
print(jax.tree.broadcast(1, {'x': [1,2], 'y': 3}))
@jax.custom_gradient
def f(x):
  return x ** 2, lambda g: (g * x,)
print(f(3.), jax.grad(f)(3.), jax.grad(jax.grad(f))(3.))
print(jax.vmap(jax.grad(f))(jax.numpy.arange(3.)))
print(jax.jit(jax.grad(f))(2.0))
@jax.custom_gradient
def clip_gradient(x):
  def grad(g):
    return (jax.numpy.clip(g, -0.5, 0.5),)
  return x, grad
print(jax.grad(lambda x: 3.0 * clip_gradient(x))(1.0))
