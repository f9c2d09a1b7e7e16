# Intermediates captured with nnx.capture: sow into capture buffers, method
# outputs, typed buffers, and gradients of intermediates through perturb.
from flax import nnx
import jax
import jax.numpy as jnp


class Foo(nnx.Module):
    def __init__(self, *, rngs):
        self.dense1 = nnx.Linear(8, 32, rngs=rngs)
        self.dense2 = nnx.Linear(32, 1, rngs=rngs)

    def features(self, x):
        feature = nnx.relu(self.dense1(x))
        self.sow(nnx.Intermediate, 'features', feature)
        return feature

    def loss(self, a, b):
        return jnp.sum((a - b) ** 2)

    def __call__(self, x, y):
        return self.loss(self.features(x), self.features(y))


rngs = nnx.Rngs(0)
model = Foo(rngs=rngs)
x, y = rngs.normal((2, 8))
result, intms = nnx.capture(model, nnx.Intermediate)(x, y)
print(result)
print(jax.tree.map(lambda a: a.shape, intms))
print(intms['features'][0][:4], intms['features'][1][:4])
print(hasattr(model, '__captures__'), 'features' in vars(model))

# A bound method, and a plain function whose first argument is the module.
r2, i2 = nnx.capture(model.features, nnx.Intermediate)(x)
print(r2.sum(), len(i2['features']))
@nnx.capture(nnx.Intermediate)
def run(m, x):
    return m.features(x).mean()
r3, i3 = run(model, y)
print(r3, jax.tree.map(lambda a: a.shape, i3))
print(nnx.capture(model)(x, y))


# Only the requested types are kept; sow returns whether it stored.
class Metric1(nnx.Intermediate):
    pass


class Metric2(nnx.Intermediate):
    pass


@nnx.capture(Metric1)
def get_captures(m):
    print(m.sow(Metric1, 'kept', jnp.ones(2)), m.sow(Metric2, 'ignored', jnp.ones(2)))
    m.sow(Metric1, 'total', jnp.ones(3), init_fn=lambda: 0, reduce_fn=lambda a, b: a + b)
    m.sow(Metric1, 'total', jnp.ones(3), init_fn=lambda: 0, reduce_fn=lambda a, b: a + b)
_, got = get_captures(nnx.Module())
print(jax.tree.map(lambda a: a.shape, got), got['total'])

# Two types at once: one State each.
@nnx.capture(Metric1, Metric2)
def both(m):
    m.sow(Metric1, 'a', jnp.ones(2))
    m.sow(Metric2, 'b', jnp.zeros(3))
_, s1, s2 = both(nnx.Module())
print(jax.tree.map(lambda a: a.shape, s1), jax.tree.map(lambda a: a.shape, s2))


# Every method's output.
class Bar(nnx.Module):
    def __init__(self, rngs):
        self.dense1 = nnx.Linear(8, 4, rngs=rngs)
        self.inner = Inner(rngs)

    def features(self, x):
        return nnx.relu(self.dense1(x))

    def __call__(self, x):
        return self.inner(self.features(x)).sum()


class Inner(nnx.Module):
    def __init__(self, rngs):
        self.dense = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x):
        return self.dense(x)


bar = Bar(nnx.Rngs(1))
res, outs = nnx.capture(bar, nnx.Intermediate, method_outputs=nnx.Intermediate)(x)
print(res, jax.tree.map(lambda a: a.shape, outs))
print(bar(x))


# Gradients of intermediate values through perturb.
class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.array([1.0, 2.0, 3.0]))

    def __call__(self, x):
        x2 = self.perturb('grad_of_x', x * self.w)
        self.sow(nnx.Intermediate, 'activations', x2)
        return jnp.sum(jnp.sin(x2))


m = Model()


def train_step(model, x):
    _, perturbations = nnx.capture(model, nnx.Perturbation)(x)
    def loss(model, perturbations, x):
        return nnx.capture(model, nnx.Intermediate, init=perturbations)(x)
    (grads, perturb_grads), sowed = nnx.grad(loss, argnums=(0, 1), has_aux=True)(model, perturbations, x)
    return grads, nnx.merge_state(perturb_grads, sowed)


grads, metrics = train_step(m, 0.5)
print(grads['w'][...])
print(metrics['grad_of_x'][...], metrics['activations'][0])
print(m(0.5))
