//! The NumPy / JAX function surface: `x.at[...]` updates, jax.numpy
//! functions, linalg, jax.lax, jax.nn (activations, initializers), jax.random
//! samplers, pytrees (structures, paths, is_leaf, transpose) and NumPy's
//! legacy random stream. Expected texts are what JAX 0.10 / NumPy 2.4 print
//! for the same programs (checked against them; the NumPy stream also
//! differentially when a Python with numpy is at hand).

use arr_testkit::check_output as check;
use expect_test::expect;

#[test]
fn at_updates() {
    check(
        r#"
board = zeros((3, 4), dtype=int32)
board = board.at[0, 1].set(5)
board = board.at[1].add(2)
board = board.at[:, 3].set(array([7, 8, 9]))
print(board.at[1, 1:].mul(3)[1], board.at[:, 0].min(1)[:, 0], board.at[0].max(6)[0])
labels = array([2, 0, 2, 3, 2, 0])
w = array([0.5, 1.0, 0.25, 2.0, 0.25, 1.0])
print(zeros(5, dtype=int32).at[labels].add(1), full(4, 9.0).at[labels].min(w))
print(ones(4).at[labels].multiply(2.0), full(4, 8.0).at[labels].divide(2.0))
print(arange(5).at[array([1, 7, -1])].set(50, mode="drop"), arange(5).at[array([1, 7])].set(50, mode="clip"))
print(arange(5.0).at[array([0, 9])].get(mode="fill", fill_value=-1.0), arange(3).at[1:].apply(lambda v: v * 10))
print(jit(lambda b, i, v: b.at[i + arange(2)].set(v))(zeros(5), 2, array([1.0, 2.0])))
print(grad(lambda x: sum(x.at[0].set(0.0).at[1:].mul(2.0) ** 2))(array([3.0, 1.0, -2.0])))
print(vmap(lambda row, i: row.at[i].set(-1.0))(ones((2, 3)), arange(2)))
"#,
        expect![[r#"
            [ 2  6  6 24] [0 1 0] [6 6 6 7]
            [2 0 3 1 0] [1.   9.   0.25 2.  ]
            [4. 1. 8. 2.] [2. 8. 1. 4.]
            [ 0 50  2  3 50] [ 0 50  2  3 50]
            [ 0. -1.] [ 0 10 20]
            [0. 0. 1. 2. 0.]
            [  0.   8. -16.]
            [[-1.  1.  1.]
             [ 1. -1.  1.]]
        "#]],
    );
}

#[test]
fn at_errors_name_the_problem() {
    check(
        r#"x = arange(4.0)
x.at[0].set(1.0, mode="wrap")
"#,
        expect![[r#"
            ValueError: at[...].set: mode must be 'clip', 'drop', 'fill' or 'promise_in_bounds', got 'wrap' at test.arr:2:1
              |
            2 | x.at[0].set(1.0, mode="wrap")
              | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        "arange(4.0).at[1:3].set(ones(3))\n",
        expect![[r#"
            ShapeError: at[...]: cannot update a selection of shape [2] of f32[4] with f32[3] at test.arr:1:1
              |
            1 | arange(4.0).at[1:3].set(ones(3))
              | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

#[test]
fn jnp_functions() {
    check(
        r#"
sig = array([1.0, 2.0, 3.0, 4.0])
print(pad(sig, 2, mode="reflect"), pad(sig, (0, 3), mode="symmetric"), pad(sig, 2, mode="wrap"))
print(pad(arange(6).reshape(2, 3), 1, mode="edge")[0], pad(sig, (2, 1), mode="linear_ramp", end_values=(0.0, 10.0)))
y = array([1, 4, 9, 16, 25])
print(diff(y), diff(y, n=2), diff(y, prepend=0), ediff1d(y))
gx, gy = meshgrid(arange(3), arange(2))
print(gx.shape, gy[1], meshgrid(arange(3), arange(2), indexing="ij")[0].shape)
data = array([0.5, 1.5, 1.7, 2.2, 3.9, 4.0, 0.1, 2.5])
print(histogram(data, bins=4, range=(0.0, 4.0)), bincount(array([0, 1, 1, 3]), length=5))
print(searchsorted(array([0.0, 1.0, 2.0]), array([-1.0, 1.0, 5.0]), side="right"), interp(array([-1.0, 0.5, 2.0]), array([0.0, 1.0, 3.0]), array([10.0, 20.0, 0.0])))
x = linspace(-2.0, 2.0, 5)
print(piecewise(x, [x < 0], [0.0, lambda v: v * 10]), select([x < -1, x < 1], [zeros_like(x), ones_like(x)], default=2.0))
print(where(x > 0.5), where(x > 0.5, size=3, fill_value=-1)[0], argwhere(array([[0, 3], [4, 0]])))
print(unique(array([3, 1, 3, 2, 1]), return_counts=True), jit(lambda v: unique(v, size=4, fill_value=-1))(array([3, 1, 3, 3])))
print(median(array([3.0, 1.0, 2.0, 8.0])), percentile(arange(5.0), 30), quantile(arange(6.0).reshape(2, 3), array([0.5, 1.0]), axis=1))
print(tensordot(arange(6.0).reshape(2, 3), arange(6.0).reshape(3, 2), axes=1), kron(eye(2), array([[1, 2]])), cross(array([1.0, 0.0, 0.0]), array([0.0, 1.0, 0.0])))
sq = array([[1.0, 2.0], [3.0, 4.0]])
print(einsum("ii", sq), einsum("ii->i", sq), einsum("...ij,...jk->...ik", ones((2, 1, 2, 2)), sq).shape, einsum(sq, [0, 1], sq, [1, 2], [0, 2])[1])
print(argsort(array([2.0, 1.0, 2.0, 0.5]), descending=True), lexsort((arange(4), array([2.0, 1.0, 2.0, 0.5]))), top_k(array([2.0, 1.0, 2.0, 0.5]), 2))
print(round(array([1.23456, 2.5]), decimals=2), array_equal(sq, sq), array_equal(sq, ones(3)), copy(sq) is sq)
"#,
        expect![[r#"
            [3. 2. 1. 2. 3. 4. 3. 2.] [1. 2. 3. 4. 4. 3. 2.] [3. 4. 1. 2. 3. 4. 1. 2.]
            [0 0 1 2 2] [ 0.   0.5  1.   2.   3.   4.  10. ]
            [3 5 7 9] [2 2 2] [1 3 5 7 9] [3 5 7 9]
            (2, 3) [1 1 1] (3, 2)
            (Array([2., 2., 2., 2.], dtype=float32), Array([0., 1., 2., 3., 4.], dtype=float32)) [1 2 0 1 0]
            [0 2 3] [10. 15. 10.]
            [ 0.  0.  0. 10. 20.] [0. 1. 1. 2. 2.]
            (Array([3, 4], dtype=int32),) [ 3  4 -1] [[0 1]
             [1 0]]
            (Array([1, 2, 3], dtype=int32), Array([2, 1, 2], dtype=int32)) [ 1  3 -1 -1]
            2.5 1.2 [[1. 4.]
             [2. 5.]]
            [[10. 13.]
             [28. 40.]] [[1. 2. 0. 0.]
             [0. 0. 1. 2.]] [0. 0. 1.]
            5.0 [1. 4.] (2, 1, 2, 2) [15. 22.]
            [0 2 1 3] [3 1 0 2] [Array([2., 2.], dtype=float32), Array([0, 2], dtype=int32)]
            [1.23 2.5 ] True False False
        "#]],
    );
}

#[test]
fn linalg() {
    check(
        r#"
A = array([[4.0, 2.0, 0.6], [2.0, 5.0, 1.0], [0.6, 1.0, 3.0]])
b = array([1.0, -2.0, 0.5])
print(round(cholesky(A), 5))
print(round(inv(A), 5), round(solve(A, b), 5))
print(round(det(A), 4), round(slogdet(A)[1], 5), matrix_rank(A), round(det(stack([A, 2 * A])), 3))
print(round(grad(det)(A), 4))
w, V = eigh(array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]))
print(round(w, 5), round(abs(V[:, 0]), 5))
M = array([[3.0, 1.0], [1.0, 3.0], [0.0, 2.0]])
U, s, Vt = svd(M, full_matrices=False)
print(U.shape, Vt.shape, round(s, 5), allclose((U * s) @ Vt, M, atol=1e-5), svd(M)[0].shape)
Q, R = qr(M)
print(Q.shape, R.shape, allclose(Q @ R, M, atol=1e-5), round(abs(diag(R)), 5), qr(M, mode="complete")[0].shape)
print(round(pinv(M) @ M, 5), round(lstsq(M, array([1.0, 2.0, 3.0]))[0], 5))
print(norm(array([3.0, -4.0])), norm(array([3.0, -4.0]), ord=1), round(norm(A, ord=2), 4), round(norm(A, axis=0), 5))
"#,
        expect![[r#"
            [[2.         0.         0.        ]
             [1.         2.         0.        ]
             [0.29999998 0.35       1.66958   ]]
            [[ 0.3139  -0.12108 -0.02242]
             [-0.12108  0.26099 -0.06278]
             [-0.02242 -0.06278  0.35874]] [ 0.54484    -0.67443997  0.28250998]
            44.6 3.79773 3 [ 44.600002 356.80002 ]
            [[14.       -5.4      -1.      ]
             [-5.4      11.639999 -2.8     ]
             [-1.       -2.8      16.      ]]
            [1.2679499 3.        4.73205  ] [0.78867996 0.57734996 0.21132   ]
            (3, 2) (2, 2) [4.2807198 2.38232  ] True (3, 3)
            (3, 2) (2, 2) True [3.1622798 3.2249   ] (3, 3)
            [[ 1.  0.]
             [-0.  1.]] [-0.07692  0.96154]
            5.0 7.0 6.9049997 [4.51221 5.47723 3.2187 ]
        "#]],
    );
}

#[test]
fn lax_functions() {
    check(
        r#"
signal = arange(10.0)
print(_lax_select(signal > 4.0, signal, -signal)[3:7], dynamic_slice(signal, (8,), (4,)), dynamic_index_in_dim(arange(12).reshape(3, 4), 2, keepdims=False))
print(dynamic_update_slice(zeros((3, 4)), ones((2, 2)) * 7, (2, 3)).sum(axis=0), jit(lambda x, s: dynamic_slice_in_dim(x, s, 3).sum())(signal, 4))
print(vmap(lambda s: dynamic_slice(signal, (s,), (2,)))(array([0, 5, 9])))
x = array([0.25, 1.0, 4.0])
print(integer_pow(x, 3), integer_pow(x, -1), grad(lambda v: integer_pow(v, 4))(2.0))
ints = array([7, -7, 12])
print(_lax_div(ints, 2), _lax_rem(ints, 5), reduce_max(ints, axes=(0,)), _lax_argmax(x, 0, int32))
"#,
        expect![[r#"
            [-3. -4.  5.  6.] [6. 7. 8. 9.] [ 8  9 10 11]
            [ 0.  0. 14. 14.] 15.0
            [[0. 1.]
             [5. 6.]
             [8. 9.]]
            [1.5625e-02 1.0000e+00 6.4000e+01] [4.   1.   0.25] 32.0
            [ 3 -3  6] [ 2 -2  2] 12 2
        "#]],
    );
}

#[test]
fn nn_functions() {
    check(
        r#"
z = array([-3.0, -0.1, 0.0, 1.0])
print(round(silu(z), 5), round(elu(z), 5), leaky_relu(z, negative_slope=0.1), relu6(z * 3))
print(round(selu(z), 5), round(celu(z), 5), round(log_sigmoid(z), 5), hard_tanh(z * 2), round(glu(z), 5))
print(vmap(grad(relu))(z), round(standardize(array([1.0, 2.0, 3.0, 4.0])), 5))
k1, k2, k3 = random.split(random.key(0), 3)
print(round(glorot_normal()(k1, (4, 3)), 5))
print(round(he_uniform()(k2, (2, 2)), 5), _init_normal(stddev=0.1)(k2, (2,)), _init_constant(0.5)(k3, (2,)))
print(round(_init_variance_scaling(2.0, "fan_in", "truncated_normal")(k3, (3, 2)), 5), _init_zeros(k1, (2,), int32).dtype)
q = random.normal(k1, (1, 3, 2, 4))
out = dot_product_attention(q, q, q, is_causal=True)
print(out.shape, allclose(out[0, 0], q[0, 0], atol=1e-6))
"#,
        expect![[r#"
            [-0.14228    -0.0475      0.          0.73105997] [-0.95021 -0.09516  0.       1.     ] [-0.3  -0.01  0.    1.  ] [0. 0. 0. 3.]
            [-1.67057 -0.16731  0.       1.0507 ] [-0.95021 -0.09516  0.       1.     ] [-3.04859    -0.74439996 -0.69315    -0.31326   ] [-1.  -0.2  0.   1. ] [-1.5     -0.07311]
            [0. 0. 0. 1.] [-1.34164    -0.44720998  0.44720998  1.34164   ]
            [[ 0.57203    -0.51834    -0.42999998]
             [-0.66200995 -0.49887     0.33968   ]
             [ 0.41632998 -0.58379     0.90204996]
             [-0.99526995 -0.72328997  0.07747   ]]
            [[-1.70678    -1.65968   ]
             [ 0.28206998 -0.47860998]] [-0.24424557 -0.20356806] [0.5 0.5]
            [[ 1.1101   1.15615]
             [-0.36198 -0.67721]
             [ 0.33677  0.01674]] int32
            (1, 3, 2, 4) True
        "#]],
    );
}

#[test]
fn random_samplers() {
    check(
        r#"
k1, k2, k3, k4, k5 = random.split(random.key(7), 5)
print(random.categorical(k1, log(array([0.1, 0.6, 0.3])), shape=(8,)), random.categorical(k2, array([[0.0, 5.0], [5.0, 0.0]])))
items = array([10, 20, 30, 40, 50])
print(random.choice(k3, items, (4,), p=array([0.1, 0.1, 0.1, 0.1, 0.6])), random.choice(k3, items, (3,), replace=False))
print(random.permutation(k5, arange(12).reshape(4, 3), axis=1, independent=True))
print(random.exponential(k2, (3,)), random.gumbel(k3, (2,)), random.laplace(k4, (2,)), random.logistic(k4, (2,)))
print(random.truncated_normal(k4, -1.0, 1.0, (3,)), random.rademacher(k1, (5,)), random.key_data(random.key(42)))
"#,
        expect![[r#"
            [1 1 2 2 2 1 1 2] [1 0]
            [50 50 50 10] [50 40 30]
            [[ 1  0  2]
             [ 5  4  3]
             [ 8  7  6]
             [10  9 11]]
            [1.1243412  1.7497144  0.50085336] [-0.45735464 -0.30238834] [0.77074504 0.45716026] [-1.2007935  -0.76972127]
            [-0.477271   -0.3192898   0.52180445] [-1 -1  1  1 -1] [ 0 42]
        "#]],
    );
}

#[test]
fn pytrees() {
    check(
        r#"
config = {"zeta": 3, "alpha": 1.5, "mid": {"k": 5, "b": (6, 7)}}
leaves, treedef = tree_flatten(config)
print(leaves, treedef, treedef.num_leaves, treedef.num_nodes)
print(tree_unflatten(treedef, [x * 10 for x in leaves]), list(tree_map(lambda x: x, config)))
print(tree_structure(config) == treedef, tree_structure([1, 2]) == treedef, treedef.unflatten(range(5))["zeta"])
points = [(1.0, 2.0), (3.0, 4.0)]
print(tree_leaves(points, is_leaf=lambda n: isinstance(n, tuple)), tree_leaves({"x": None, "y": 1}, is_leaf=lambda v: v is None))
print(tree_map(lambda p, q: p + q[0], [1, 2], [(10, 0), (20, 0)]))
flat, _ = tree_flatten_with_path({"enc": {"w": 1, "b": 2}, "heads": [3]})
print(flat, [keystr(p) for p, _ in flat], keystr(flat[0][0], simple=True, separator="/"), flat[2][0][1].idx)
print(tree_map_with_path(lambda p, v: keystr(p), {"a": [0, 0]}))
records = [{"loss": 0.5, "acc": 0.8}, {"loss": 0.25, "acc": 0.9}]
print(tree_transpose(tree_structure([0, 0]), tree_structure({"loss": 0, "acc": 0}), records))
print(tree_reduce(lambda a, b: a + b, [1, (2, 3)]), tree_reduce(lambda a, b: a * b, [2, 3], 10), tree_all([True, (False,)]), tree_all({}))
tree_map(lambda a, b: a + b, {"a": 1}, {"a": 1, "b": 2})
"#,
        expect![[r#"
            [1.5, 6, 7, 5, 3] PyTreeDef({'alpha': *, 'mid': {'b': (*, *), 'k': *}, 'zeta': *}) 5 8
            {'alpha': 15.0, 'mid': {'b': (60, 70), 'k': 50}, 'zeta': 30} ['alpha', 'mid', 'zeta']
            True False 4
            [(1.0, 2.0), (3.0, 4.0)] [None, 1]
            [11, 22]
            [((DictKey(key='enc'), DictKey(key='b')), 2), ((DictKey(key='enc'), DictKey(key='w')), 1), ((DictKey(key='heads'), SequenceKey(idx=0)), 3)] ["['enc']['b']", "['enc']['w']", "['heads'][0]"] enc/b 0
            {'a': ["['a'][0]", "['a'][1]"]}
            {'acc': [0.8, 0.9], 'loss': [0.5, 0.25]}
            6 60 False True
            ValueError: tree_map: the trees have different structures: {'a': *} and {'a': *, 'b': *} at test.arr:16:1
               |
            16 | tree_map(lambda a, b: a + b, {"a": 1}, {"a": 1, "b": 2})
               | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

/// NumPy's legacy global stream, seeded: the same numbers as NumPy's.
const LEGACY_RANDOM: &str = r#"
_np_random.seed(0)
print(_np_random.uniform(size=4), _np_random.normal(loc=1.0, scale=2.0, size=3), _np_random.randint(0, 10, size=5))
_np_random.seed(42)
print(_np_random.randn(2, 3), _np_random.rand(2), _np_random.choice(5, 3, replace=False))
print(_np_random.permutation(10), _np_random.choice(7, size=(2, 3)), _np_random.randint(5), _np_random.random())
print(_np_random.standard_normal(3), _np_random.randint(-5, 2**40, size=2))
"#;

#[test]
fn numpy_legacy_random() {
    check(
        LEGACY_RANDOM,
        expect![[r#"
            [0.5488135  0.71518937 0.60276338 0.54488318] [ 4.73511598 -0.95455576  2.90017684] [8 1 6 7 7]
            [[ 0.49671415 -0.1382643   0.64768854]
             [ 1.52302986 -0.23415337 -0.23413696]] [0.05808361 0.86617615] [0 1 2]
            [9 2 0 6 8 5 3 7 1 4] [[3 1 5]
             [4 3 0]] 0 0.5247746602583891
            [-0.53181741 -0.1174755   0.2220789 ] [1046221454138  576258013199]
        "#]],
    );
}

/// The same program under the real NumPy prints the same text.
#[test]
fn numpy_legacy_random_against_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the legacy random differential test") else {
        return;
    };
    let program = format!(
        "import numpy as np\n{}",
        LEGACY_RANDOM.replace("_np_random.", "np.random.")
    );
    let out = std::process::Command::new(python)
        .args(["-c", &program])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        arr_testkit::script_output(LEGACY_RANDOM),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Ahead-of-time stages (`jit(f).lower(x).compile()`, static arguments left
/// out of the compiled call), eval_shape on ShapeDtypeStructs, defjvps and
/// None cotangents of custom rules, devices as dict keys, device grids
/// indexed, jnp.dtype. The numbers are JAX 0.10.2's for the same program.
#[test]
fn stages_eval_shape_custom_rules_and_devices() {
    check(
        r#"
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from functools import partial

def f(x, n):
    return jnp.sin(x) * n

x = jnp.arange(4.0)
lowered = jax.jit(f, static_argnums=1).lower(x, 3)
compiled = lowered.compile()
print(compiled(x), compiled(x + 1))
print(jax.jit(f, static_argnames="n").lower(x, n=2).compile()(x))
s = jax.eval_shape(lambda a, b: {"y": a @ b, "n": a.sum()}, jax.ShapeDtypeStruct((3, 4), jnp.float32), jnp.ones((4, 2)))
print(s["y"].shape, s["y"].dtype, s["n"].shape, s["n"].ndim)

@jax.custom_jvp
def clipped(x):
    return jnp.clip(x, -1.0, 1.0)
clipped.defjvps(lambda t, ans, x: t * 0.5)
print(jax.grad(clipped)(3.0), jax.jvp(clipped, (0.5,), (2.0,)))

@jax.custom_jvp
def mul(a, b):
    return a * b
mul.defjvps(lambda ta, ans, a, b: ta * b, None)
print(jax.grad(mul, argnums=(0, 1))(2.0, 5.0))

@jax.custom_vjp
def scale(x, s):
    return x * s
scale.defvjp(lambda x, s: (x * s, s), lambda s, g: (g * s, None))
print(jax.grad(lambda x, s: scale(x, s).sum(), argnums=(0, 1))(jnp.ones(2), 3.0))
d = {dev: i for i, dev in enumerate(jax.devices()[:3])}
print(d[jax.devices()[1]], len(d), jax.devices()[2] in d, jax.devices()[5] in d)
mesh = jax.make_mesh((2, 4), ("a", "b"))
print(len(mesh.devices), mesh.devices[1, 2].id, mesh.devices[-1][0].id, mesh.devices[0].shape)
print(jnp.dtype("float32") == jnp.float32, jnp.dtype(jnp.int32), jnp.dtype(x))
"#,
        expect![[r#"
            [0.        2.5244129 2.7278922 0.42336  ] [ 2.5244129  2.7278922  0.42336   -2.2704074]
            [0.        1.6829419 1.8185948 0.28224  ]
            (3, 2) float32 () 0
            0.5 (Array(0.5, dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
            (Array(5., dtype=float32, weak_type=True), Array(0., dtype=float32, weak_type=True))
            (Array([3., 3.], dtype=float32), Array(0., dtype=float32, weak_type=True))
            1 3 True False
            2 6 4 (4,)
            True int32 float32
        "#]],
    );
}

#[test]
fn jnp_elementwise_rounding_signs_and_nan_handling() {
    check(
        r#"
import jax.numpy as jnp
x = jnp.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.7])
print(jnp.trunc(x), jnp.rint(x))
print(jnp.rint(jnp.array([1, 2])), jnp.positive(jnp.array([1, -2])))
print(jnp.signbit(x), jnp.signbit(jnp.array([-1, 0, 3])), jnp.signbit(jnp.array([-jnp.inf, jnp.nan])))
print(jnp.deg2rad(jnp.array([0, 90, 180])), jnp.rad2deg(jnp.pi), jnp.rad2deg(jnp.array([1.0, -0.5])))
print(jnp.fmod(jnp.array([-7, 7, 5, -3]), jnp.array([3, -3, 0, 2])), jnp.fmod(jnp.array([-7.5, 7.5, 1.0]), 2.0))
print(jnp.fmod(jnp.array([1.0, -1.0]), 0.0))
n = jnp.nan
print(jnp.fmax(jnp.array([1.0, n, 3.0, n]), jnp.array([2.0, 1.0, n, n])), jnp.fmin(jnp.array([1.0, n, 3.0, n]), jnp.array([2.0, 1.0, n, n])))
print(jnp.fmax(jnp.array([1, 5]), 3), jnp.fmin(jnp.array([[1], [4]]), jnp.array([2.5, 3.5])))
print(jnp.float_power(2, jnp.array([3, -1])), jnp.float_power(jnp.array([1.5, 2.0]), 2))
print(jnp.heaviside(jnp.array([-1.5, 0.0, 2.0]), 0.5), jnp.heaviside(jnp.array([-1, 0, 3]), jnp.array([7, 8, 9])))
print(jnp.sinc(jnp.array([0.0, 0.5, 1.0, -1.5, 2.25])), jnp.sinc(0))
print(jnp.logaddexp2(jnp.array([1.0, -jnp.inf, 100.0, jnp.inf]), jnp.array([1.0, -jnp.inf, 99.0, jnp.inf])), jnp.logaddexp2(3, 3))
print(jnp.isposinf(jnp.array([jnp.inf, -jnp.inf, 1.0, n])), jnp.isneginf(jnp.array([jnp.inf, -jnp.inf, 1.0, n])), jnp.isposinf(jnp.array([1, 2])))
print(jnp.nan_to_num(jnp.array([n, jnp.inf, -jnp.inf, 1.5])), jnp.nan_to_num(jnp.array([n, jnp.inf, -jnp.inf]), nan=-1.0, posinf=9.0, neginf=-9.0), jnp.nan_to_num(jnp.array([1, 2])))
print(jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]])), jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 3]])))
"#,
        expect![[r#"
            [-2. -1. -0. -0.  0.  0.  1.  2.] [-2. -2. -0. -0.  0.  0.  2.  3.]
            [1. 2.] [ 1 -2]
            [ True  True  True  True False False False False] [ True False False] [ True False]
            [0.        1.5707964 3.1415927] 180.0 [ 57.29578 -28.64789]
            [-1  1  0 -1] [-1.5  1.5  1. ]
            [nan nan]
            [ 2.  1.  3. nan] [ 1.  1.  3. nan]
            [3 5] [[1.  1. ]
             [2.5 3.5]]
            [8.  0.5] [2.25 4.  ]
            [0.  0.5 1. ] [0. 8. 1.]
            [ 1.00000000e+00  6.36619747e-01 -2.78275341e-08 -2.12206587e-01
              1.00035146e-01] 1.0
            [  2.           -inf 100.58496       inf] 4.0
            [ True False False False] [False  True False False] [False False]
            [ 0.0000000e+00  3.4028235e+38 -3.4028235e+38  1.5000000e+00] [-1.  9. -9.] [1 2]
            True False
        "#]],
    );
}

#[test]
fn jnp_dtype_queries() {
    check(
        r#"
import jax.numpy as jnp
print(jnp.finfo(jnp.float32).eps, jnp.finfo(jnp.float16).max, jnp.finfo(jnp.float16).tiny, jnp.finfo('float32').dtype, jnp.finfo(jnp.float32).bits, repr(jnp.finfo(jnp.float32)), jnp.iinfo(jnp.uint32).max, jnp.iinfo(jnp.int64).min, repr(jnp.iinfo(jnp.int32)))
print(jnp.issubdtype(jnp.float32, jnp.floating), jnp.issubdtype(jnp.int32, jnp.floating),jnp.issubdtype(jnp.bool_, jnp.number),jnp.issubdtype(jnp.bool_, jnp.generic), jnp.issubdtype(jnp.uint32, jnp.signedinteger), jnp.issubdtype(jnp.floating, jnp.inexact), jnp.issubdtype(jnp.bfloat16, jnp.floating), jnp.issubdtype(float, jnp.floating), jnp.issubdtype(jnp.float32, jnp.float32), jnp.issubdtype(jnp.float32, 'float32'))
print(jnp.finfo(jnp.array([1.0])).max, jnp.iinfo(jnp.array([1])).bits, jnp.finfo(jnp.float32).resolution, jnp.finfo(jnp.float64).eps, jnp.finfo(jnp.bfloat16).eps)
print(jnp.promote_types(jnp.int32, jnp.bfloat16), jnp.promote_types(jnp.uint32, jnp.int64), jnp.promote_types(jnp.int64, jnp.float16), jnp.promote_types('float32', 'int32'))
print(jnp.result_type(jnp.array([1,2]), 2.0), jnp.result_type(True, 1), jnp.result_type(True, False), jnp.result_type(jnp.float16, 1.0), jnp.result_type(jnp.int32, jnp.float32, 1))
print(jnp.can_cast(jnp.int32, jnp.float32), jnp.can_cast(jnp.int32, jnp.float64), jnp.can_cast(jnp.float32, jnp.float16, casting="same_kind"), jnp.can_cast(jnp.int32, jnp.uint32, "same_kind"), jnp.can_cast(jnp.uint32, jnp.int32, "same_kind"), jnp.can_cast(jnp.float32, jnp.int32, "same_kind"))
print(jnp.issubdtype(jnp.zeros(2).dtype, jnp.integer), jnp.issubdtype(jnp.uint32, jnp.unsignedinteger), jnp.issubdtype(jnp.signedinteger, jnp.number))
"#,
        expect![[r#"
            1.1920929e-07 6.55e+04 6.104e-05 float32 32 finfo(resolution=1e-06, min=-3.4028235e+38, max=3.4028235e+38, dtype=float32) 4294967295 -9223372036854775808 iinfo(min=-2147483648, max=2147483647, dtype=int32)
            True False False True False True True True True True
            3.4028235e+38 32 1e-06 2.220446049250313e-16 0.0078125
            bfloat16 int64 float16 float32
            float32 int32 bool float16 float32
            False True True False True False
            False True True
        "#]],
    );
}

#[test]
fn jnp_shapes_stacking_and_splitting() {
    check(
        r#"
import jax.numpy as jnp
print(jnp.atleast_1d(3.0), jnp.atleast_2d(jnp.arange(3)).shape, [a.shape for a in jnp.atleast_3d(1, jnp.arange(2), jnp.ones((2, 3)), jnp.ones((1, 2, 3, 4)))])
print(jnp.atleast_1d(1, jnp.array([2, 3])), jnp.atleast_2d(5))
a, b = jnp.broadcast_arrays(jnp.arange(3), jnp.array([[1.0], [2.0]]))
print(a, b)
print(jnp.append(jnp.array([[1, 2], [3, 4]]), jnp.array([5, 6])), jnp.append(jnp.array([[1, 2], [3, 4]]), jnp.array([[5, 6]]), axis=0))
print(jnp.column_stack((jnp.array([1, 2]), jnp.array([3, 4]))), jnp.column_stack([jnp.ones((2, 2)), jnp.array([7.0, 8.0])]))
print(jnp.dstack((jnp.array([1, 2]), jnp.array([3, 4]))), jnp.dstack([jnp.ones((2, 2)), jnp.zeros((2, 2))]).shape)
print(jnp.array_split(jnp.arange(7), 3), jnp.array_split(jnp.arange(12).reshape(3, 4), 3, axis=1))
print(jnp.hsplit(jnp.arange(16.0).reshape(4, 4), 2), jnp.vsplit(jnp.arange(16.0).reshape(4, 4), jnp.array([3])), jnp.hsplit(jnp.arange(6), 3))
print(jnp.fliplr(jnp.arange(6).reshape(2, 3)), jnp.flipud(jnp.arange(6).reshape(2, 3)))
m = jnp.arange(6).reshape(2, 3)
print(jnp.rot90(m), jnp.rot90(m, 2), jnp.rot90(m, -1), jnp.rot90(jnp.arange(8).reshape(2, 2, 2), 1, (1, 2)))
x = jnp.arange(24).reshape(2, 3, 4)
print(jnp.diagonal(x), jnp.diagonal(x, offset=1, axis1=1, axis2=2), jnp.diagonal(m, -1), jnp.diagonal(m, 5))
print(jnp.diagflat(jnp.array([[1, 2], [3, 4]])), jnp.diagflat(jnp.array([1, 2]), k=-1))
print(jnp.tri(3), jnp.tri(2, 4, k=1, dtype=jnp.int32))
print(jnp.indices((2, 3)), jnp.indices((2, 3), sparse=True))
print(jnp.resize(jnp.array([[0, 1], [2, 3]]), (2, 3)), jnp.resize(jnp.array([1, 2, 3]), 7))
print(jnp.trim_zeros(jnp.array([0, 0, 1, 0, 2, 0])), jnp.trim_zeros(jnp.array([0, 0, 1, 0, 2, 0]), trim="b"))
"#,
        expect![[r#"
            [3.] (1, 3) [(1, 1, 1), (1, 2, 1), (2, 3, 1), (1, 2, 3, 4)]
            [Array([1], dtype=int32, weak_type=True), Array([2, 3], dtype=int32)] [[5]]
            [[0 1 2]
             [0 1 2]] [[1. 1. 1.]
             [2. 2. 2.]]
            [1 2 3 4 5 6] [[1 2]
             [3 4]
             [5 6]]
            [[1 3]
             [2 4]] [[1. 1. 7.]
             [1. 1. 8.]]
            [[[1 3]
              [2 4]]] (2, 2, 2)
            [Array([0, 1, 2], dtype=int32), Array([3, 4], dtype=int32), Array([5, 6], dtype=int32)] [Array([[0, 1],
                   [4, 5],
                   [8, 9]], dtype=int32), Array([[ 2],
                   [ 6],
                   [10]], dtype=int32), Array([[ 3],
                   [ 7],
                   [11]], dtype=int32)]
            [Array([[ 0.,  1.],
                   [ 4.,  5.],
                   [ 8.,  9.],
                   [12., 13.]], dtype=float32), Array([[ 2.,  3.],
                   [ 6.,  7.],
                   [10., 11.],
                   [14., 15.]], dtype=float32)] [Array([[ 0.,  1.,  2.,  3.],
                   [ 4.,  5.,  6.,  7.],
                   [ 8.,  9., 10., 11.]], dtype=float32), Array([[12., 13., 14., 15.]], dtype=float32)] [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
            [[2 1 0]
             [5 4 3]] [[3 4 5]
             [0 1 2]]
            [[2 5]
             [1 4]
             [0 3]] [[5 4 3]
             [2 1 0]] [[3 0]
             [4 1]
             [5 2]] [[[1 3]
              [0 2]]

             [[5 7]
              [4 6]]]
            [[ 0 16]
             [ 1 17]
             [ 2 18]
             [ 3 19]] [[ 1  6 11]
             [13 18 23]] [3] []
            [[1 0 0 0]
             [0 2 0 0]
             [0 0 3 0]
             [0 0 0 4]] [[0 0 0]
             [1 0 0]
             [0 2 0]]
            [[1. 0. 0.]
             [1. 1. 0.]
             [1. 1. 1.]] [[1 1 0 0]
             [1 1 1 0]]
            [[[0 0 0]
              [1 1 1]]

             [[0 1 2]
              [0 1 2]]] (Array([[0],
                   [1]], dtype=int32), Array([[0, 1, 2]], dtype=int32))
            [[0 1 2]
             [3 0 1]] [1 2 3 1 2 3 1]
            [1 0 2] [0 0 1 0 2]
        "#]],
    );
}

#[test]
fn jnp_nan_aware_and_weighted_reductions() {
    check(
        r#"
import jax.numpy as jnp
n = jnp.nan
a = jnp.array([[1.0, n, 3.0], [n, n, n], [4.0, 2.0, 0.5]])
print(jnp.inner(jnp.array([1, 2, 3]), jnp.array([0, 1, 0])), jnp.inner(jnp.arange(6.0).reshape(2, 3), jnp.arange(9.0).reshape(3, 3)), jnp.inner(2, jnp.array([1, 2])))
print(jnp.ptp(jnp.array([[4, 9, 2], [1, 7, 3]])), jnp.ptp(jnp.array([[4, 9, 2], [1, 7, 3]]), axis=1), jnp.ptp(jnp.array([[4.0, 9.0]]), axis=0, keepdims=True))
x = jnp.arange(6.0).reshape(3, 2)
print(jnp.average(x), jnp.average(x, axis=1, weights=jnp.array([1.0, 3.0])), jnp.average(x, axis=0, weights=jnp.array([1, 2, 3]), returned=True), jnp.average(jnp.array([1, 2, 3, 4]), weights=jnp.array([4, 3, 2, 1])))
print(jnp.average(x, axis=0, returned=True), jnp.average(x, weights=x, keepdims=True, axis=1))
print(jnp.nanmax(a, axis=1), jnp.nanmin(a, axis=0), jnp.nanmax(a), jnp.nanmin(a, axis=1, keepdims=True), jnp.nanmax(jnp.array([1, 5, 2])))
print(jnp.nanargmax(a, axis=1), jnp.nanargmin(a, axis=1), jnp.nanargmax(a), jnp.nanargmin(jnp.array([n, 2.0, 1.0])))
print(jnp.nanvar(a, axis=1), jnp.nanstd(a, axis=0, ddof=1), jnp.nanvar(a), jnp.nanstd(jnp.array([1, 3, 5])))
print(jnp.nancumsum(a), jnp.nancumsum(a, axis=1), jnp.nancumsum(jnp.array([[1, 2], [3, 4]]), axis=0))
print(jnp.cumulative_sum(jnp.array([1, 2, 3])), jnp.cumulative_sum(jnp.array([[1, 2], [3, 4]]), axis=1, include_initial=True), jnp.cumulative_sum(jnp.array([1.5, 2.0]), include_initial=True))
print(jnp.nanquantile(a, 0.5, axis=1), jnp.nanpercentile(a, jnp.array([25, 75]), axis=0), jnp.nanquantile(a, 0.3), jnp.nanquantile(a, 0.5, axis=1, keepdims=True), jnp.nanpercentile(jnp.array([1, 2, 3, 4]), 50))
print(jnp.nanquantile(a, 0.4, axis=1, method="lower"), jnp.nanquantile(a, 0.4, axis=1, method="nearest"), jnp.nanquantile(a, 0.5, axis=1, method="midpoint"))
"#,
        expect![[r#"
            2 [[ 5. 14. 23.]
             [14. 50. 86.]] [2 4]
            8 [7 6] [[0. 0.]]
            2.5 [0.75 2.75 4.75] (Array([2.6666667, 3.6666667], dtype=float32), Array([6., 6.], dtype=float32)) 2.0
            (Array([2., 3.], dtype=float32), Array([3., 3.], dtype=float32)) [[1.       ]
             [2.6      ]
             [4.5555553]]
            [ 3. nan  4.] [1.  2.  0.5] 4.0 [[1. ]
             [nan]
             [0.5]] 5
            [ 2 -1  0] [ 0 -1  2] 6 2
            [1.              nan 2.0555556] [2.1213202       nan 1.767767 ] 1.64 1.6329932
            [ 1.   1.   4.   4.   4.   4.   8.  10.  10.5] [[1.  1.  4. ]
             [0.  0.  0. ]
             [4.  6.  6.5]] [[1 2]
             [4 6]]
            [1 3 6] [[0 1 3]
             [0 3 7]] [0.  1.5 3.5]
            [ 2. nan  2.] [[1.75  2.    1.125]
             [3.25  2.    2.375]] 1.2 [[ 2.]
             [nan]
             [ 2.]] 2.5
            [1.  nan 0.5] [ 1. nan  2.] [ 2. nan  2.]
        "#]],
    );
}

#[test]
fn jnp_insert_delete_select_ranges_polynomials_calculus() {
    check(
        r#"
import jax.numpy as jnp
x = jnp.arange(12).reshape(3, 4)
print(jnp.delete(x, 1, axis=1), jnp.delete(x, jnp.array([0, -1])), jnp.delete(x, jnp.array([0, 2]), axis=0))
print(jnp.insert(jnp.array([1, 2, 3]), 1, 9), jnp.insert(jnp.array([1, 2, 3]), jnp.array([0, 3, 1]), jnp.array([7, 8, 9])), jnp.insert(x, 2, jnp.array([-1, -2, -3]), axis=1))
print(jnp.insert(x, jnp.array([1, 1]), 0, axis=0), jnp.insert(x, 1, jnp.array([[5, 6, 7, 8]]), axis=0), jnp.insert(jnp.array([1.5, 2.5]), jnp.array([1, 1]), jnp.array([7, 8])))
print(jnp.compress(jnp.array([True, False, True]), x, axis=0), jnp.compress(jnp.array([0, 1]), x, axis=1), jnp.compress(jnp.array([1, 0, 1]), x))
print(jnp.extract(x % 3 == 0, x), jnp.extract(x > 8, x, size=5, fill_value=-1))
print(jnp.choose(jnp.array([2, 0, 1, 1]), jnp.array([[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]])), jnp.choose(jnp.array([[0, 1], [1, 5]]), [jnp.array(-1), jnp.array([7, 8])], mode="clip"), jnp.choose(jnp.array([3, -1]), [jnp.array([0, 0]), jnp.array([1, 1])], mode="wrap"))
a = jnp.array([[10, 30, 20], [60, 40, 50]])
print(jnp.put_along_axis(a, jnp.argmax(a, axis=1, keepdims=True), 99, axis=1, inplace=False), jnp.put_along_axis(a, jnp.array([[0, 1, 0]]), jnp.array([[1, 2, 3]]), axis=0, inplace=False), jnp.put_along_axis(a, jnp.array([5]), -7, axis=None, inplace=False))
print(jnp.logspace(0, 3, 4), jnp.logspace(1, 2, 3, base=2.0, endpoint=False), jnp.logspace(jnp.array([0.0, 1.0]), 2.0, 3, axis=1))
g = jnp.geomspace(jnp.array([1.0, 2.0]), 8.0, 4, axis=1)
print(jnp.allclose(jnp.geomspace(1, 1000, 4), jnp.array([1.0, 10.0, 100.0, 1000.0])), jnp.geomspace(-1, -16, 5).round(3), g.shape, jnp.allclose(g[1], 2.0 * 4.0 ** (jnp.arange(4) / 3)))
print(jnp.polyval(jnp.array([3.0, 0.0, 1.0]), jnp.array([1.0, 2.0])), jnp.polyval(jnp.array([1, 2, 3]), 2), jnp.polyval(jnp.array([1, -2]), jnp.array([[1.5, 2.0]])))
xs = jnp.array([0.0, 1.0, 2.0, 3.0, 4.0]); ys = jnp.array([1.0, 3.1, 4.9, 7.2, 9.0])
print(jnp.polyfit(xs, ys, 1).round(4), jnp.polyfit(xs, xs ** 2 - 2 * xs + 1, 2).round(4), jnp.polyfit(xs, jnp.stack([ys, 2 * ys], axis=1), 1).round(4))
print(jnp.polyfit(xs, ys, 1, w=jnp.array([1.0, 1.0, 2.0, 1.0, 1.0])).round(4))
print(jnp.trapezoid(jnp.array([1.0, 2.0, 3.0])), jnp.trapezoid(jnp.array([1, 2, 3]), x=jnp.array([4, 6, 8])), jnp.trapezoid(jnp.arange(6.0).reshape(2, 3), axis=0), jnp.trapezoid(jnp.arange(6.0).reshape(2, 3), dx=0.5))
print(jnp.gradient(jnp.array([1.0, 2.0, 4.0, 7.0, 11.0])), jnp.gradient(jnp.array([1, 2, 4, 7, 11]), 2.0), jnp.gradient(jnp.array([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]])), jnp.gradient(jnp.array([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]]), axis=1))
"#,
        expect![[r#"
            [[ 0  2  3]
             [ 4  6  7]
             [ 8 10 11]] [ 1  2  3  4  5  6  7  8  9 10] [[4 5 6 7]]
            [1 9 2 3] [7 1 9 2 3 8] [[ 0  1 -1  2  3]
             [ 4  5 -2  6  7]
             [ 8  9 -3 10 11]]
            [[ 0  1  2  3]
             [ 0  0  0  0]
             [ 0  0  0  0]
             [ 4  5  6  7]
             [ 8  9 10 11]] [[ 0  1  2  3]
             [ 5  6  7  8]
             [ 4  5  6  7]
             [ 8  9 10 11]] [1.5 7.  8.  2.5]
            [[ 0  1  2  3]
             [ 8  9 10 11]] [[1]
             [5]
             [9]] [0 2]
            [0 3 6 9] [ 9 10 11 -1 -1]
            [20  1 12 13] [[-1  8]
             [ 7  8]] [1 1]
            [[10 99 20]
             [99 40 50]] [[ 1 30  3]
             [60  2 50]] [[10 30 20]
             [60 40 -7]]
            [   1.   10.  100. 1000.] [2.        2.519842  3.1748023] [[  1.        10.       100.      ]
             [ 10.        31.622776 100.      ]]
            True [ -1.  -2.  -4.  -8. -16.] (2, 4) True
            [ 4. 13.] 11 [[-0.5  0. ]]
            [2.01 1.02] [ 1. -2.  1.] [[2.01 4.02]
             [1.02 2.04]]
            [2.01   0.9675]
            4.0 8.0 [1.5 2.5 3.5] [1. 4.]
            [1.  1.5 2.5 3.5 4. ] [0.5  0.75 1.25 1.75 2.  ] [Array([[ 2.,  2., -1.],
                   [ 2.,  2., -1.]], dtype=float32), Array([[1. , 2.5, 4. ],
                   [1. , 1. , 1. ]], dtype=float32)] [[1.  2.5 4. ]
             [1.  1.  1. ]]
        "#]],
    );
}

#[test]
fn jnp_new_functions_reject_bad_arguments() {
    check(
        r#"
import jax.numpy as jnp
jnp.finfo(jnp.int32)
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.finfo(jnp.int32)
              <stdlib>:1138:13 in __init__
                raise ValueError(f"finfo: data type {d} not inexact")
            ValueError: finfo: data type int32 not inexact at <stdlib>:1138:13
                 |
            1138 |             raise ValueError(f"finfo: data type {d} not inexact")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.rot90(jnp.ones((2, 2)), axes=(1, 1))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.rot90(jnp.ones((2, 2)), axes=(1, 1))
              <stdlib>:1293:9 in rot90
                raise ValueError(f"rot90: the axes must differ, got {axes}")
            ValueError: rot90: the axes must differ, got (1, 1) at <stdlib>:1293:9
                 |
            1293 |         raise ValueError(f"rot90: the axes must differ, got {axes}")
                 |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.diagonal(jnp.arange(3))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.diagonal(jnp.arange(3))
              <stdlib>:1310:9 in diagonal
                raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {a.shape}")
            ValueError: diagonal requires an array of at least two dimensions, got shape (3,) at <stdlib>:1310:9
                 |
            1310 |         raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {a.shape}")
                 |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.choose(jnp.array([0, 2]), [jnp.zeros(2), jnp.ones(2)])
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.choose(jnp.array([0, 2]), [jnp.zeros(2), jnp.ones(2)])
              <stdlib>:1642:13 in choose
                raise ValueError("invalid entry in choice array")
            ValueError: invalid entry in choice array at <stdlib>:1642:13
                 |
            1642 |             raise ValueError("invalid entry in choice array")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.put_along_axis(jnp.zeros(3), jnp.array([1]), 1.0, axis=0)
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.put_along_axis(jnp.zeros(3), jnp.array([1]), 1.0, axis=0)
              <stdlib>:1652:9 in put_along_axis
                raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are immutable. Pass inplace=False to instead return a...
            ValueError: jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are immutable. Pass inplace=False to instead return an updated array. at <stdlib>:1652:9
                 |
            1652 |         raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are immutable. Pass inplace=False to instead return a...
                 |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.delete(jnp.arange(3), 5)
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.delete(jnp.arange(3), 5)
              <stdlib>:1565:13 in delete
                raise IndexError(f"delete: index {i} is out of bounds for axis {axis} with size {n}")
            IndexError: delete: index 5 is out of bounds for axis 0 with size 3 at <stdlib>:1565:13
                 |
            1565 |             raise IndexError(f"delete: index {i} is out of bounds for axis {axis} with size {n}")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.compress(jnp.array([[True]]), jnp.arange(3))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.compress(jnp.array([[True]]), jnp.arange(3))
              <stdlib>:1609:9 in compress
                raise ValueError("condition must be a 1D array")
            ValueError: condition must be a 1D array at <stdlib>:1609:9
                 |
            1609 |         raise ValueError("condition must be a 1D array")
                 |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.cumulative_sum(jnp.ones((2, 2)))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.cumulative_sum(jnp.ones((2, 2)))
              <stdlib>:1488:13 in cumulative_sum
                raise ValueError(f"cumulative_sum: axis must be given for arrays of more than one dimension, got shape {x.shape}")
            ValueError: cumulative_sum: axis must be given for arrays of more than one dimension, got shape (2, 2) at <stdlib>:1488:13
                 |
            1488 |             raise ValueError(f"cumulative_sum: axis must be given for arrays of more than one dimension, got shape {x.shape}")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.gradient(jnp.array([1.0]))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.gradient(jnp.array([1.0]))
              <stdlib>:1775:13 in gradient
                raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required.")
            ValueError: Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required. at <stdlib>:1775:13
                 |
            1775 |             raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required.")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.average(jnp.ones((2, 3)), axis=1, weights=jnp.ones(2))
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.average(jnp.ones((2, 3)), axis=1, weights=jnp.ones(2))
              <stdlib>:1411:13 in average
                raise ValueError(f"average: weights of shape {w.shape} do not match axis {axis} of an array of shape {a.shape}")
            ValueError: average: weights of shape (2,) do not match axis 1 of an array of shape (2, 3) at <stdlib>:1411:13
                 |
            1411 |             raise ValueError(f"average: weights of shape {w.shape} do not match axis {axis} of an array of shape {a.shape}")
                 |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
    check(
        r#"
import jax.numpy as jnp
jnp.can_cast(jnp.int32, jnp.float32, casting='sometimes')
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:3:1 in <module>
                jnp.can_cast(jnp.int32, jnp.float32, casting='sometimes')
              <stdlib>:1128:5 in can_cast
                raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe', got '{casting}'")
            ValueError: casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe', got 'sometimes' at <stdlib>:1128:5
                 |
            1128 |     raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe', got '{casting}'")
                 |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

/// typing's names import and annotate (never enforced); lax's short names
/// of the comparisons and inverse functions; shift_right_logical shifts
/// zeros in. The numbers are JAX 0.10.2's.
#[test]
fn typing_hints_and_lax_short_names() {
    check(
        r#"
from typing import Any, Callable, Dict, Optional, Tuple, List, Sequence, Union
import jax.lax as lax
import jax.numpy as jnp
def f(x: Dict[str, Any], g: Callable[[int], int] = None) -> Optional[Tuple[int, ...]]:
    return None
print(f.__annotations__["x"], Any, List[int], f({}) is None)
print(lax.sub(5, 2), lax.mul(2.0, 3.0), lax.eq(1, 1), lax.atan2(1.0, 1.0), lax.is_finite(jnp.inf))
x = jnp.array([-8, 8, 1], dtype=jnp.int32)
print(lax.shift_right_logical(x, 1), lax.shift_right_arithmetic(x, 1), lax.shift_right_logical(x, 0), lax.shift_right_logical(x, 32))
"#,
        expect![[r#"
            typing.Dict[<builtin str>, typing.Any] typing.Any typing.List[<builtin int>] True
            3 6.0 True 0.7853982 False
            [2147483644          4          0] [-4  4  0] [-8  8  1] [0 0 0]
        "#]],
    );
}

#[test]
fn lax_slicing_broadcasting_cumulative_and_associative_scan_match_jax() {
    // Expected: JAX 0.10.2's output for the same program.
    check(
        r#"
import jax
import jax.numpy as jnp
from jax import lax
x = jnp.arange(12.0).reshape(3, 4)
print(lax.broadcast(jnp.array([1, 2]), (2,)).shape, lax.broadcast_in_dim(jnp.array([1.0, 2.0, 3.0]), (2, 3), (1,)))
print(lax.broadcasted_iota(jnp.int32, (2, 3), 1), lax.rev(x, (0,))[0])
print(lax.slice(x, (0, 1), (2, 4), (1, 2)), lax.slice_in_dim(x, 1, 3, axis=1))
print(lax.index_in_dim(x, -1, axis=0, keepdims=False), lax.collapse(jnp.ones((2, 3, 4)), 1).shape)
print(lax.cumsum(x, axis=1), lax.cummax(jnp.array([1.0, 3.0, 2.0, 5.0]), reverse=True))
print(lax.cumprod(jnp.array([1, 2, 3, 4])), lax.cummin(jnp.array([3, 1, 2]), axis=0))
print(jnp.round(lax.cumlogsumexp(jnp.array([0.0, 1.0, 2.0])), 5), jnp.round(lax.erfc(jnp.array([0.5])), 5))
k, v = lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([10, 20, 30]))
print(k, v, lax.select_n(jnp.array([0, 1, 2]), jnp.zeros(3), jnp.ones(3), 2 * jnp.ones(3)))
print(lax.associative_scan(jnp.add, jnp.arange(1, 8)), lax.associative_scan(jnp.maximum, jnp.array([1, 5, 2, 7, 3]), reverse=True))
print(lax.associative_scan(lambda a, b: (a[0] * b[0], a[1] + b[1]), (jnp.arange(1.0, 5.0), jnp.ones(4))))
print(lax.associative_scan(jnp.add, x, axis=1))
print(jax.grad(lambda v: lax.associative_scan(jnp.multiply, v).sum())(jnp.array([1.0, 2.0, 3.0])))
"#,
        expect![[r#"
            (2, 2) [[1. 2. 3.]
             [1. 2. 3.]]
            [[0 1 2]
             [0 1 2]] [ 8.  9. 10. 11.]
            [[1. 3.]
             [5. 7.]] [[ 1.  2.]
             [ 5.  6.]
             [ 9. 10.]]
            [ 8.  9. 10. 11.] (2, 12)
            [[ 0.  1.  3.  6.]
             [ 4.  9. 15. 22.]
             [ 8. 17. 27. 38.]] [5. 5. 5. 5.]
            [ 1  2  6 24] [3 1 1]
            [0.      1.31326 2.40761] [0.4795]
            [1 2 3] [20 30 10] [0. 1. 2.]
            [ 1  3  6 10 15 21 28] [7 7 7 7 3]
            (Array([ 1.,  2.,  6., 24.], dtype=float32), Array([1., 2., 3., 4.], dtype=float32))
            [[ 0.  1.  3.  6.]
             [ 4.  9. 15. 22.]
             [ 8. 17. 27. 38.]]
            [9. 4. 2.]
        "#]],
    );
}

#[test]
fn linalg_initializers_itertools_and_small_names_match_jax() {
    // Expected: JAX 0.10.2's (and Python's) output for the same program; values
    // print through NumPy's rounding so that no machine's last bits are in it.
    check(
        r#"
import jax
import jax.numpy as jnp
import numpy as np
import math, itertools, operator, dataclasses
from jax import random
k = random.key(3)
print(np.round(np.asarray(random.orthogonal(k, 3)), 4))
print(np.round(np.asarray(random.orthogonal(k, 2, shape=(2,), m=3)), 4).shape)
w = jax.nn.initializers.orthogonal()(k, (4, 3), jnp.float32)
print(np.round(np.asarray(w), 4), jnp.allclose(w.T @ w, jnp.eye(3), atol=1e-5))
print(np.round(np.asarray(jax.nn.initializers.orthogonal(2.0, column_axis=0)(k, (2, 3, 2))), 4))
print(jax.nn.initializers.xavier_uniform()(k, (2, 2)).shape, np.round(np.asarray(jax.nn.initializers.kaiming_normal()(k, (3, 2))), 4))
print(jax.nn.sparse_plus(jnp.array([-2.0, 0.0, 0.5, 2.0])), jax.nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 0.5, 2.0])))
a = jnp.array([[2.0, 1.0], [0.0, 3.0]])
print(jnp.linalg.matrix_power(a, 3), np.round(np.asarray(jnp.linalg.matrix_power(a, -2)), 5), jnp.linalg.matrix_power(a, 0))
print(jnp.linalg.multi_dot([a, a, jnp.ones(2)]), np.linalg.matrix_power(np.eye(2) * 2, 2), jnp.linalg.trace(jnp.ones((2, 3, 3))))
np.testing.assert_array_less(jnp.zeros(2), jnp.ones(2))
try:
    np.testing.assert_array_less(jnp.ones(2), jnp.ones(2))
except AssertionError:
    print("not less")
print(math.tau, jnp.euler_gamma)
print(list(itertools.product([1, 2], "ab")), list(itertools.product(range(2), repeat=2)))
print(list(itertools.permutations([1, 2, 3], 2)), list(itertools.combinations("abcd", 2)))
print(list(itertools.chain([1], (2, 3))), list(itertools.accumulate([1, 2, 3, 4])), list(itertools.accumulate([3, 1, 4], max)))
@dataclasses.dataclass
class Pt:
    x: int
    y: tuple
print(dataclasses.astuple(Pt(1, (2, 3))), operator.attrgetter("x")(Pt(5, ())), operator.attrgetter("x", "y")(Pt(1, 2)))
with jax.named_scope("block"):
    print(jax.named_call(lambda v: v + 1, name="inc")(1))
print(jax.tree_util.Partial(jnp.add, 1)(2))
print(np.round(np.asarray(jax.nn.standardize(jnp.array([1.0, 2.0, 3.0]))), 4))
"#,
        expect![[r#"
            [[-0.5272  0.7592 -0.3817]
             [ 0.7183  0.1582 -0.6775]
             [-0.4539 -0.6314 -0.6288]]
            (2, 2, 3)
            [[-0.4871  0.7265  0.2024]
             [ 0.6637  0.1926 -0.4016]
             [-0.4194 -0.6486 -0.0575]
             [-0.3826  0.1201 -0.8913]] True
            [[[-1.2708  0.3361]
              [-0.5164 -1.0942]
              [-0.7058  0.5569]]

             [[ 0.8731  1.3978]
              [ 0.0698 -0.3625]
              [-0.8788 -0.6127]]]
            (2, 2) [[-1.2252  1.2931]
             [ 0.3381  1.5638]
             [-0.5178  0.1854]]
            [0.     0.25   0.5625 2.    ] [0.   0.5  0.75 1.  ]
            [[ 8. 19.]
             [ 0. 27.]] [[ 0.25    -0.13889]
             [ 0.       0.11111]] [[1. 0.]
             [0. 1.]]
            [9. 9.] [[4. 0.]
             [0. 4.]] [3. 3.]
            not less
            6.283185307179586 0.5772156649015329
            [(1, 'a'), (1, 'b'), (2, 'a'), (2, 'b')] [(0, 0), (0, 1), (1, 0), (1, 1)]
            [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)] [('a', 'b'), ('a', 'c'), ('a', 'd'), ('b', 'c'), ('b', 'd'), ('c', 'd')]
            [1, 2, 3] [1, 3, 6, 10] [3, 3, 4]
            (1, (2, 3)) 5 (1, 2)
            2
            3
            [-1.2247  0.      1.2247]
        "#]],
    );
}

#[test]
fn tracers_print_as_jax_prints_them_and_disable_jit_runs_op_by_op() {
    // Expected: JAX 0.10.2's output for the same program.
    check(
        r#"
import jax, jax.numpy as jnp
def f(x):
    print(x); print(repr(x)); print(f'{x}')
    return (x*2).sum()
jax.jit(f)(jnp.arange(3.0))
jax.grad(f)(jnp.arange(3.0))
jax.vmap(f)(jnp.ones((2,3)))
jax.jit(f)(jnp.int32(3))
jax.jit(jax.grad(f))(jnp.arange(2.0))

@jax.jit
def h(x):
    print("x is", x)
    return x * 2 + 1
print(h(jnp.arange(3.0)))
with jax.disable_jit():
    print(h(jnp.arange(3.0)))
print(h(jnp.arange(3.0)))
"#,
        expect![[r#"
            JitTracer(float32[3])
            JitTracer(float32[3])
            JitTracer(float32[3])
            GradTracer(primal=[0. 1. 2.], typeof(tangent)=f32[3])
            GradTracer(primal=[0. 1. 2.], typeof(tangent)=f32[3])
            GradTracer(primal=[0. 1. 2.], typeof(tangent)=f32[3])
            VmapTracer(aval=float32[3], batched=float32[2,3])
            VmapTracer(aval=float32[3], batched=float32[2,3])
            VmapTracer(aval=float32[3], batched=float32[2,3])
            JitTracer(int32[])
            JitTracer(int32[])
            JitTracer(int32[])
            GradTracer(primal=JitTracer(float32[2]), typeof(tangent)=f32[2])
            GradTracer(primal=JitTracer(float32[2]), typeof(tangent)=f32[2])
            GradTracer(primal=JitTracer(float32[2]), typeof(tangent)=f32[2])
            x is JitTracer(float32[3])
            [1. 3. 5.]
            x is [0. 1. 2.]
            [1. 3. 5.]
            [1. 3. 5.]
        "#]],
    );
}

#[test]
fn convolutions_and_windows() {
    check(
        r#"
import jax, jax.numpy as jnp
from jax import lax
x = jnp.arange(2*3*6*5, dtype=jnp.float32).reshape(2, 3, 6, 5) / 50
w = jnp.sin(jnp.arange(4*3*3*2, dtype=jnp.float32)).reshape(4, 3, 3, 2)
r = lambda a: jnp.round(a, 3)
print(lax.conv_general_dilated(x, w, (1, 1), "VALID").shape, r(lax.conv_general_dilated(x, w, (2, 1), "SAME")[0, :, 0]))
print(r(lax.conv_general_dilated(x, w, (1, 2), ((1, 0), (2, -1)), lhs_dilation=(2, 1), rhs_dilation=(1, 2))[1, 2, :3]))
xn, wn = jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(w, (2, 3, 1, 0))
print(r(lax.conv_general_dilated(xn, wn, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))[0, 1, :, 0]))
wg = jnp.cos(jnp.arange(6*1*2*2, dtype=jnp.float32)).reshape(6, 1, 2, 2)
print(r(lax.conv_general_dilated(x, wg, (1, 1), "VALID", feature_group_count=3)[0, :, 0, 0]))
print(r(jax.grad(lambda w: (lax.conv_general_dilated(x, w, (1, 1), "SAME") ** 2).sum())(w)[0, 0]))
print(r(lax.reduce_window(x, 0., lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")[0, 0]))
print(r(lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")[1, 2]))
print(lax.conv_general_dilated(jnp.arange(10.)[None, None], jnp.array([[[1., 2., 3.]]]), (1,), "SAME"))
"#,
        expect![[r#"
            (2, 4, 4, 4) [[-0.017      -0.004       0.01        0.024       0.30900002]
             [ 0.767       0.78400004  0.80100006  0.818       0.59900004]
             [ 1.0300001   1.039       1.047       1.056       0.48200002]
             [ 0.59400004  0.588       0.582       0.577       0.037     ]]
            [[ 5.788      5.676    ]
             [-4.781     -4.425    ]
             [ 6.0360003  5.9300003]]
            [-0.017      -0.004       0.01        0.024       0.30900002]
            [-0.15        0.192      -1.2360001   0.61800003  0.679      -2.1820002 ]
            [[422.924   376.51602]
             [447.24103 384.78003]
             [119.635    82.799  ]]
            [[0.24000001 0.4       ]
             [1.0400001  1.2       ]
             [1.84       2.        ]]
            [[3.2200003 3.2600002 3.2800002]
             [3.42      3.4600003 3.4800003]
             [3.5200002 3.5600002 3.5800002]]
            [[[ 3.  8. 14. 20. 26. 32. 38. 44. 50. 26.]]]
        "#]],
    );
}

#[test]
fn single_device_sharding_and_os_preamble() {
    check(
        r#"
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import SingleDeviceSharding
x = jnp.arange(4.0)
print(x.sharding, x.sharding == SingleDeviceSharding(jax.devices()[0]), jax.device_count())
jax.debug.visualize_array_sharding(x)
y = jax.device_put(x, SingleDeviceSharding(jax.devices()[0]))
print(y, os.environ["XLA_FLAGS"][-1], os.path.join("a", "b.npz"), os.path.splitext("a/b.npz"))
"#,
        expect![[r#"
            SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device) True 8
            ┌─────────┐
            │  CPU 0  │
            └─────────┘
            [0. 1. 2. 3.] 8 a/b.npz ('a/b', '.npz')
        "#]],
    );
}

#[test]
fn canonical_dtypes_tensorsolve_and_user_descriptors() {
    // The outputs are JAX's and CPython's.
    check(
        r#"
import functools
import jax.numpy as jnp, numpy as np
from jax import dtypes
print(dtypes.canonicalize_dtype(jnp.float64), dtypes.canonicalize_dtype(np.int64), dtypes.canonicalize_dtype("float32"), dtypes.canonicalize_dtype(jnp.bfloat16), dtypes.canonicalize_dtype(bool), dtypes.canonicalize_dtype(float), dtypes.canonicalize_dtype(int))
A = jnp.eye(6).reshape(2, 3, 2, 3) + 0.1 * jnp.arange(36.).reshape(2, 3, 2, 3) / 36
b = jnp.arange(6.).reshape(2, 3)
x = jnp.linalg.tensorsolve(A, b)
print(x.shape, jnp.allclose(jnp.tensordot(A, x, axes=2), b, atol=1e-5))
print(jnp.allclose(jnp.linalg.tensorsolve(A.transpose(2, 3, 0, 1), b, axes=(0, 1)), x, atol=1e-5))
class Lazy:
    def __init__(self):
        self.n = 0
    @functools.cached_property
    def big(self):
        self.n += 1
        return 42 + self.n
class Data:
    def __get__(self, inst, owner=None):
        return "data:" + str(inst.__dict__.get("v", None))
    def __set__(self, inst, v):
        inst.__dict__["v"] = v
class B:
    d = Data()
a = Lazy()
print(a.big, a.big, a.n, B().d)
from jax import lax
c, ys = lax.scan(lambda c, x: (c * 2 + x, c), 1, jnp.arange(5), unroll=2)
print(c, ys, lax.fori_loop(0, 4, lambda i, v: v + i, 0, unroll=True))
"#,
        expect![[r#"
            float32 int32 float32 bfloat16 bool float32 int32
            (2, 3) True
            True
            43 43 1 data:None
            58 [ 1  2  5 12 27] 6
        "#]],
    );
}

/// lax's bit counts, on every integer width (values computed by JAX 0.10.2).
#[test]
fn lax_bit_counts_match_jax() {
    check(
        r#"
for x in [array([0, 1, 7, -1, 255, 1 << 20, -2**31], dtype=int32), array([0, 1, 200, 255], dtype=uint8), array([-1, 3, 0, -128], dtype=int8), array([0, 1, 65535, 4096], dtype=uint16), array([0, 5, 4294967295], dtype=uint32)]:
    print(population_count(x), clz(x))
"#,
        expect![[r#"
            [ 0  1  3 32  8  1  1] [32 31 29  0 24 11  0]
            [0 1 3 8] [8 7 0 0]
            [8 2 0 1] [0 6 8 0]
            [ 0  1 16  1] [16 15  0  3]
            [ 0  2 32] [32 29  0]
        "#]],
    );
}

/// The residuals reverse mode keeps: the arguments (each once, as passed)
/// first, then what the forward pass computed. arr keeps all of them, so a
/// checkpoint policy does not shorten the list (JAX's would).
#[test]
fn saved_residuals() {
    check(
        r#"
import jax
from jax.ad_checkpoint import print_saved_residuals
def g(W, x):
    return sin(W @ x)
def f(W1, W2, x):
    return g(W2, g(W1, x)).sum()
print_saved_residuals(f, ones((5, 4)), ones((3, 5)), ones(4))
print(len(jax.ad_checkpoint.saved_residuals(lambda p: (p["a"] * p["b"]).sum(), {"a": ones(2), "b": ones(2)})))
"#,
        expect![[r#"
            f32[5,4] from the argument W1
            f32[3,5] from the argument W2
            f32[4] from the argument x
            f32[5] computed in the forward pass
            f32[5,1] computed in the forward pass
            f32[3] computed in the forward pass
            2
        "#]],
    );
}
