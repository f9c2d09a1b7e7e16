//! Flax NNX (`from flax import nnx`, written in arr: `flax.arr`): modules and
//! variables as pytrees, random streams, the layers' initial values and
//! outputs, split/merge/state/update, `nnx.jit` and `nnx.grad` carrying
//! state changes back, the optimiser, metrics and sharding metadata.
//! Expected numbers are what Flax 0.12 prints for the same programs (the
//! differential test `tests/flax_differential.py` runs whole programs
//! against the real flax).

use arr_testkit::check_output as check;
use expect_test::expect;

#[test]
fn rngs_and_linear_initialise_as_flax() {
    check(
        r#"
import jax, jax.numpy as jnp
from flax import nnx
rngs = nnx.Rngs(0, dropout=1)
print(jax.random.key_data(rngs.params()), jax.random.key_data(rngs.dropout()), rngs.params.count[...])
m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
print(m.kernel[...])
print(m(jnp.ones((1, 3))), type(m.kernel).__name__, m.kernel.shape, m.bias.dtype)
print(jnp.round(nnx.Embed(5, 2, rngs=nnx.Rngs(params=0)).embedding[...], 4))
"#,
        expect![[r#"
            [1797259609 2579123966] [ 507451445 1853169794] 1
            [[ 0.6178674  -0.55987215]
             [-0.46445078 -0.71505547]
             [-0.538841    0.36689344]]
            [[-0.38542438 -0.9080342 ]] Param (3, 2) float32
            [[ 0.70989996 -0.64089996]
             [-0.529      -0.8283    ]
             [-0.6161      0.4164    ]
             [ 0.5119     -0.7252    ]
             [ 1.1748999  -1.3371999 ]]
        "#]],
    );
}

#[test]
fn modules_are_pytrees_and_state_round_trips() {
    check(
        r#"
import jax, jax.numpy as jnp
from flax import nnx
class M(nnx.Module):
    def __init__(self, rngs):
        self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs) for _ in range(2)])
        self.act = nnx.relu
        self.count = nnx.BatchStat(jnp.zeros((), jnp.int32))
    def __call__(self, x):
        self.count[...] += 1
        for layer in self.layers:
            x = self.act(layer(x))
        return x
m = M(nnx.Rngs(0))
print(len(jax.tree.leaves(m)), [l.shape for l in jax.tree.leaves(nnx.state(m, nnx.Param))])
graphdef, params, rest = nnx.split(m, nnx.Param, ...)
print(list(params.keys()), list(rest.keys()), params['layers'][1]['bias'].value)
doubled = jax.tree.map(lambda p: 2 * p, params)
m2 = nnx.merge(graphdef, doubled, rest)
print(m2.layers[0].kernel[...][0], m.layers[0].kernel[...][0])
nnx.update(m, doubled)
print(m.layers[0].kernel[...][0])
step = nnx.jit(lambda m, x: m(x))
for _ in range(3):
    y = step(m, jnp.ones((1, 2)))
print(m.count[...], y)
g = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(m)
print(type(g).__name__, m.count[...], jax.tree.map(jnp.shape, g['layers'][0]))
"#,
        expect![[r#"
            5 [(2,), (2, 2), (2,), (2, 2)]
            ['layers'] ['count'] [0. 0.]
            [ 1.5134598 -1.3714011] [ 0.7567299  -0.68570054]
            [ 1.5134598 -1.3714011]
            3 [[0.7225545  0.75252837]]
            State 4 State({
              'bias': Param(
                value=(2,)
              ),
              'kernel': Param(
                value=(2, 2)
              )
            })
        "#]],
    );
}

#[test]
fn variables_act_as_their_arrays() {
    check(
        r#"
import jax.numpy as jnp
from flax import nnx
v = nnx.Param(jnp.array([1.0, 2.0]))
print(v + 1, 2 * v, -v, v @ v, jnp.sum(v), v[1], v.shape, len(v))
v[...] = jnp.array([3.0, 4.0])
v[0] = 5.0
print(v.value, v.get_value(), isinstance(v, nnx.Variable), isinstance(v, nnx.BatchStat))
"#,
        expect![[r#"
            [2. 3.] [2. 4.] [-1. -2.] 5.0 3.0 2.0 (2,) 2
            [5. 4.] [5. 4.] True False
        "#]],
    );
}

#[test]
fn optimizer_and_metrics() {
    check(
        r#"
import jax, jax.numpy as jnp
from flax import nnx
import optax
model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average('loss'))
x = jnp.array([[1.0, 2.0], [3.0, -1.0]])
y = jnp.array([[1.0], [0.0]])
@nnx.jit
def step(model, opt, metrics):
    loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
    opt.update(model, grads)
    metrics.update(loss=loss)
    return loss
for _ in range(4):
    loss = step(model, opt, metrics)
print(opt.step[...], jnp.round(loss, 5), jnp.round(metrics.compute()['loss'], 5))
print(jnp.round(model.kernel[...], 5), jnp.round(model.bias[...], 5))
"#,
        expect![[r#"
            4 2.7714899 3.02014
            [[0.40208998]
             [1.25883   ]] [0.40359]
        "#]],
    );
}

#[test]
fn sharding_metadata_lays_out_variables() {
    check(
        r#"
import jax, jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P
init = nnx.with_partitioning(nnx.initializers.ones_init(), ("embed", "mlp"))
mesh = jax.make_mesh((2, 4), ("data", "model"))
with jax.set_mesh(mesh), nnx.logical_axis_rules([("embed", None), ("mlp", "model")]):
    layer = nnx.Linear(8, 16, kernel_init=init, rngs=nnx.Rngs(0))
    print(layer.kernel.sharding.spec, nnx.get_partition_spec(nnx.state(layer))['kernel'].value)
    jax.debug.visualize_array_sharding(layer.kernel[...])
try:
    nnx.Linear(8, 16, kernel_init=init, rngs=nnx.Rngs(0))
except ValueError as e:
    print(str(e)[:40])
"#,
        expect![[r#"
            P(None, 'model') P(None, 'model')
            ┌───────────┬───────────┬───────────┬───────────┐
            │  CPU 0,4  │  CPU 1,5  │  CPU 2,6  │  CPU 3,7  │
            └───────────┴───────────┴───────────┴───────────┘
            An auto mesh context or metadata is requ
        "#]],
    );
}

/// After nnx.jit, nnx.grad or nnx.vmap updated a module, its attributes are
/// in name order (Flax rebuilds them so; its repr shows that order), while
/// nnx.update keeps them; nnx.data / nnx.static decide what is a leaf.
#[test]
fn transforms_sort_attributes_and_marks_choose_leaves_as_flax() {
    check(
        r#"
import jax, jax.numpy as jnp
from flax import nnx
class W(nnx.Module):
    def __init__(self):
        self.z = nnx.Param(jnp.ones(2))
        self.a = nnx.Param(jnp.zeros(2))
        self.name = "w"
m = W()
print(list(vars(m)))
@nnx.jit
def f(m):
    m.z[...] += 1
f(m)
print(list(vars(m)), m.z[...])
m2 = W()
nnx.grad(lambda m: (m.z[...] ** 2).sum())(m2)
print(list(vars(m2)))
m3 = W()
nnx.update(m3, nnx.state(m3))
print(list(vars(m3)))
class P(nnx.Pytree):
    def __init__(self):
        self.x = nnx.data(1.5)
        self.y = nnx.static([1, 2])
        self.s = "static"
        self.ls = nnx.List([jnp.array(i) for i in range(11)])
leaves = jax.tree_util.tree_leaves_with_path(P())
print([jax.tree_util.keystr(p) for p, _ in leaves])
"#,
        expect![[r#"
            ['z', 'a', 'name']
            ['a', 'name', 'z'] [2. 2.]
            ['a', 'name', 'z']
            ['z', 'a', 'name']
            ['.ls[0]', '.ls[1]', '.ls[2]', '.ls[3]', '.ls[4]', '.ls[5]', '.ls[6]', '.ls[7]', '.ls[8]', '.ls[9]', '.ls[10]', '.x']
        "#]],
    );
}
