//! The transformation rules, one primitive at a time: `check_grads` (forward
//! mode against finite differences, reverse mode against forward mode, to
//! second order) for every differentiable primitive, `vmap` against a loop
//! for every batching rule (collectives under named vmaps against array
//! references), and the messages of the transformations' errors.
//! `every_primitive_is_in_the_tables` records which rules the tables run and
//! fails when a primitive variant or an op is reached by no gradient or no
//! batching table and is not marked with the reason it cannot be.
//!
//! Primitives that no builtin exposes on their own (pad, cummax/cummin,
//! scatter-add) are reached through small native functions registered here.

use arr_kernels::{ScanOp, ScatterMode};
use arr_runtime::prim::coverage::{self, Rule};
use arr_runtime::prim::{bind1, Prim};
use arr_runtime::transform::ops::convert;
use arr_runtime::{ErrorKind, NativeClosure, Result, Session, Value};
use arr_stdlib::{array_arg, int_arg};
use std::collections::BTreeSet;

fn ints(v: &Value) -> Result<Vec<usize>> {
    arr_runtime::numpy::sequence_items(v)?
        .iter()
        .map(|x| int_arg("axes", x).map(|i| i as usize))
        .collect()
}

/// A global `name(*arrays, *params)` that binds the primitive `f(params)`
/// to its first `n_arrays` arguments, float ones in the first one's dtype
/// (so that `lax_pad(x, 0.0, ...)` pads a float64 `x` with a float64 zero).
fn native(
    s: &mut Session,
    name: &str,
    f: impl Fn(&[Value]) -> Result<Prim> + 'static,
    n_arrays: usize,
) {
    s.set(
        name,
        NativeClosure::value(name, move |_, args, _| {
            let prim = f(&args[n_arrays..])?;
            let mut arrays = args[..n_arrays]
                .iter()
                .map(array_arg)
                .collect::<Result<Vec<_>>>()?;
            let dtype = arrays[0].dtype();
            for a in &mut arrays[1..] {
                if a.dtype().is_float() {
                    *a = convert(a, dtype)?;
                }
            }
            Ok(Value::Array(bind1(&prim, arrays)?))
        }),
    );
}

/// Arr code shared by the checks: data, and the reference loop for `vmap`.
const PRELUDE: &str = r#"
x3 = array([0.3, 0.7, 1.2])
u3 = array([0.2, -0.4, 0.6])
m23 = array([[0.3, 1.1, -0.2], [0.8, -0.6, 0.45]])
m34 = array([[0.5, -1.2, 0.3, 0.9], [1.4, 0.2, -0.7, 0.1], [-0.3, 0.8, 0.6, -1.1]])
a234 = reshape(arange(24.0), (2, 3, 4)) / 10.0 - 1.0
b243 = reshape(arange(24.0), (2, 4, 3)) / 7.0 - 1.5

# Functional update, as a function (lambdas cannot assign).
def setitem(a, i, v):
    a[i] = v
    return a

def setcol(a, i, v):
    a[:, i] = v
    return a

def sethead(a, v):
    a[:2] = v
    return a

def slices(a, ax, n):
    return [a if ax is None else moveaxis(a, ax, 0)[i] for i in range(n)]

def vcheck(f, in_axes, *args):
    got = vmap(f, in_axes=in_axes)(*args)
    n = [moveaxis(a, ax, 0).shape[0] for a, ax in zip(args, in_axes) if ax is not None][0]
    per = [slices(a, ax, n) for a, ax in zip(args, in_axes)]
    want = stack([f(*[p[i] for p in per]) for i in range(n)])
    assert got.shape == want.shape, f"vmap gave shape {got.shape}, the loop {want.shape}"
    assert got.dtype == want.dtype, f"vmap gave {got.dtype}, the loop {want.dtype}"
    same = allclose(got.astype(float64), want.astype(float64), rtol=1e-5, atol=1e-6)
    assert same, f"vmap gave\n{got}\nthe loop\n{want}"

# A named vmap (the devices of a collective) against a reference.
def ncheck(f, ref, *args):
    got = vmap(f, axis_name='i')(*args)
    want = ref(*args)
    assert got.shape == want.shape, f"vmap gave shape {got.shape}, the reference {want.shape}"
    same = allclose(got.astype(float64), want.astype(float64), rtol=1e-5, atol=1e-6)
    assert same, f"vmap gave\n{got}\nthe reference\n{want}"
"#;

/// A session with the stdlib, the natives above, and `PRELUDE`.
fn session() -> Session {
    let mut s = arr_stdlib::session();
    // lax_pad(x, value, lo, hi, interior)
    native(
        &mut s,
        "lax_pad",
        |a| {
            Ok(Prim::Pad {
                lo: ints(&a[0])?,
                hi: ints(&a[1])?,
                interior: ints(&a[2])?,
            })
        },
        2,
    );
    for (name, op) in [("cummax", ScanOp::Max), ("cummin", ScanOp::Min)] {
        // cummax(x, axis, reverse)
        native(
            &mut s,
            name,
            move |a| {
                Ok(Prim::Cumulative {
                    op,
                    axis: int_arg("axis", &a[0])? as usize,
                    reverse: matches!(a[1], Value::Bool(true)),
                })
            },
            1,
        );
    }
    // scatter_add(x, indices, updates, axis)
    native(
        &mut s,
        "scatter_add",
        |a| {
            Ok(Prim::Scatter {
                axis: int_arg("axis", &a[0])? as usize,
                mode: ScatterMode::Add,
                batch: 0,
            })
        },
        3,
    );
    // The same with shared leading dimensions: rows(x, indices, [updates,]
    // axis, batch, mode) (`take_along_axis`'s primitive and its transpose).
    native(
        &mut s,
        "gather_rows",
        |a| {
            Ok(Prim::Gather {
                axis: int_arg("axis", &a[0])? as usize,
                batch: int_arg("batch", &a[1])? as usize,
            })
        },
        2,
    );
    for (name, mode) in [
        ("scatter_add_rows", ScatterMode::Add),
        ("scatter_set_rows", ScatterMode::Set),
    ] {
        native(
            &mut s,
            name,
            move |a| {
                Ok(Prim::Scatter {
                    axis: int_arg("axis", &a[0])? as usize,
                    mode,
                    batch: int_arg("batch", &a[1])? as usize,
                })
            },
            3,
        );
    }
    if let Err(e) = s.run_script("prelude.arr", PRELUDE) {
        panic!("the test prelude failed:\n{}", e.render());
    }
    s
}

/// A table of cases: the arr code its cases need first, and its rows.
type Table = arr_testkit::Table;

/// `check_grads(f, args, order=2)` for each row `name | f | args`; `args`
/// may carry keyword arguments after the tuple (`(x,), modes=('fwd',)`).
fn grads(setup: &str, table: &str) {
    arr_testkit::check_rows(session(), setup, table, "check_grads", 2, ", order=2");
}

/// `vcheck(f, in_axes, *args)` for each row `name | f | in_axes | args`.
fn vmaps(setup: &str, table: &str) {
    arr_testkit::check_rows(session(), setup, table, "vcheck", 3, "");
}

/// `ncheck(f, reference, *args)` for each row `name | f | reference | args`.
fn named_vmaps(setup: &str, table: &str) {
    arr_testkit::check_rows(session(), setup, table, "ncheck", 3, "");
}

/// The rendered error of `src`, which must fail with `kind`.
fn error(src: &str, kind: ErrorKind) -> String {
    arr_testkit::rendered_error(session(), src, kind)
}

fn assert_mentions(text: &str, words: &[&str]) {
    for w in words {
        assert!(text.contains(w), "{w:?} is missing from:\n{text}");
    }
}

// ---------------------------------------------------------------------------
// Derivatives

fn grads_unary_table() -> Table {
    (
        "",
        r#"
neg          | lambda x: -x           | (u3,)
abs          | abs                    | (u3,)
exp          | exp                    | (u3,)
expm1        | expm1                  | (u3,)
exp2         | exp2                   | (u3,)
cbrt         | cbrt                   | (x3,)
log          | log                    | (x3,)
log1p        | log1p                  | (x3,)
sqrt         | sqrt                   | (x3,)
rsqrt        | rsqrt                  | (x3,)
pow_neg_half | lambda x: x ** -0.5    | (x3,)
sin          | sin                    | (u3,)
cos          | cos                    | (u3,)
tan          | tan                    | (u3,)
arcsin       | arcsin                 | (u3,)
arccos       | arccos                 | (u3,)
arctan       | arctan                 | (u3 * 3.0,)
sinh         | sinh                   | (u3,)
cosh         | cosh                   | (u3,)
tanh         | tanh                   | (u3,)
arcsinh      | arcsinh                | (u3 * 3.0,)
arccosh      | arccosh                | (x3 + 1.5,)
arctanh      | arctanh                | (u3,)
logistic     | logistic               | (u3 * 3.0,)
sigmoid      | sigmoid                | (u3,)
erf          | erf                    | (u3,)
erfinv       | erfinv                 | (u3,)
log2         | log2                   | (x3,)
log10        | log10                  | (x3,)
exp2         | exp2                   | (u3,)
square       | square                 | (u3,)
reciprocal   | reciprocal             | (x3,)
# Complex intermediates (JAX's conventions: re/im transpose without conjugates).
real         | lambda x: real(x * (1 + 2j)) * x                 | (u3,)
imag         | lambda x: imag(exp(x * 1j)) ** 2                 | (u3,)
conj         | lambda x: real(conj(x * (1 + 2j)) * (2 - 1j) * x) | (u3,)
complex_abs  | lambda x: abs(x * (1 + 2j) + 0.5j)               | (u3,)
complex_fns  | lambda x: real(sqrt(x + 2j) * log(x + 1j) / sin(x + 0.5j)) | (u3,)
# Integer-valued results: the derivative is zero.
floor        | lambda x: floor(x) * x | (x3 * 3.0,)
ceil         | lambda x: ceil(x) * x  | (x3 * 3.0,)
round        | lambda x: round(x) * x | (x3 * 3.0,)
sign         | lambda x: sign(x) * x  | (u3,)
# Bool results: no derivative of their own.
isfinite     | lambda x: where(isfinite(x), x, 0.0) * x | (u3,)
isnan        | lambda x: where(isnan(x), 0.0, x) * x    | (u3,)
"#
        .to_string(),
    )
}

#[test]
fn grads_unary() {
    let (setup, rows) = grads_unary_table();
    grads(setup, &rows);
}

fn grads_binary_table() -> Table {
    (
        "b3 = array([0.5, 0.6, 0.9])",
        r#"
add                | lambda a, b: a + b                                   | (x3, u3)
sub                | lambda a, b: a - b                                   | (x3, u3)
mul                | lambda a, b: a * b                                   | (x3, u3)
div                | lambda a, b: a / b                                   | (u3, x3)
pow                | lambda a, b: a ** b                                  | (x3, u3)
pow_const_exponent | lambda a: a ** 3                                     | (u3,)
pow_const_base     | lambda b: 2.0 ** b                                   | (u3,)
maximum            | maximum                                              | (x3, u3)
minimum            | minimum                                              | (x3, u3)
arctan2            | arctan2                                              | (u3, x3)
mod                | lambda a, b: a % b                                   | (x3 * 3.1, b3)
remainder          | remainder                                            | (x3 * 3.1, -b3)
broadcast_row      | lambda a, b: a * b + a                               | (m23, u3)
broadcast_col      | lambda a, b: a / b                                   | (array([[0.5], [1.5]]), x3)
broadcast_both     | lambda a, b: a ** b                                  | (array([[0.5], [1.5]]), u3)
scalar_operand     | lambda a: 2.0 * a - a / 3.0                          | (u3,)
where              | lambda a, b: where(a > 0.5, a * b, b ** 2)           | (x3, u3)
where_broadcast    | lambda a, b: where(a > 0.5, a, b)                    | (x3, m23)
astype             | lambda a: sin(a.astype(float32)).astype(float64) * a | (x3,)
astype_int         | lambda a: a.astype(int32) * a                        | (x3 * 4.0,)
clip               | lambda a: clip(a, -0.3, 0.5)                         | (u3,)
floor_divide       | lambda a, b: (a // b) * a                            | (x3 * 3.1, b3)
not_equal          | lambda a, b: where(a != b, a * b, a)                 | (x3, u3)
less_equal         | lambda a, b: where(a <= b, a, b * 2.0)               | (x3, u3)
greater_equal      | lambda a, b: where(a >= b, a, b * 2.0)               | (x3, u3)
"#
            .to_string(),
    )
}

#[test]
fn grads_binary() {
    let (setup, rows) = grads_binary_table();
    grads(setup, &rows);
}

fn grads_reductions_table() -> Table {
    let mut table = String::new();
    for (ax, label) in [
        ("None", "all"),
        ("0", "axis0"),
        ("1", "axis1"),
        ("(0, 1)", "axes01"),
    ] {
        for (op, f) in [
            ("sum", "sum(a * a, axis=AX)"),
            ("prod", "prod(a, axis=AX)"),
            ("max", "max(a, axis=AX)"),
            ("min", "min(a, axis=AX)"),
            ("mean", "mean(a, axis=AX)"),
        ] {
            let f = f.replace("AX", ax);
            table += &format!("{op}_{label} | lambda a: {f} | (m34,)\n");
        }
    }
    for ax in ["0", "1"] {
        for op in ["cumsum", "cumprod"] {
            table += &format!("{op}_axis{ax} | lambda a: {op}(a, axis={ax}) | (m34,)\n");
        }
        for op in ["cummax", "cummin"] {
            for rev in ["False", "True"] {
                table += &format!(
                    "{op}_axis{ax}_reverse{rev} | lambda a: {op}(a, {ax}, {rev}) | (m34,)\n"
                );
            }
        }
    }
    table += r#"
cumsum_flat        | cumsum                       | (m34,)
# Zeros: the product of the others, computed without dividing.
prod_with_zeros    | lambda a: prod(a, axis=1)    | (z23,)
cumprod_with_zeros | lambda a: cumprod(a, axis=1) | (z23,)
logsumexp          | logsumexp                    | (m34,)
softmax            | lambda a: softmax(a, axis=1) | (m34,)
var                | lambda a: var(a, axis=0)     | (m34,)
norm               | norm                         | (m34,)
"#;
    ("z23 = array([[0.0, 1.5, 2.0], [0.5, 0.0, 0.0]])", table)
}

#[test]
fn grads_reductions() {
    let (setup, rows) = grads_reductions_table();
    grads(setup, &rows);
}

fn grads_products_table() -> Table {
    (
        "",
        r#"
matmul            | lambda a, b: a @ b                        | (m23, m34)
matmul_vec        | lambda a, b: a @ b                        | (m23, x3)
vec_matmul        | lambda a, b: a @ b                        | (u3, m34)
dot_vv            | dot                                       | (x3, u3)
vdot              | vdot                                      | (m23, m23 * 2.0)
matmul_batched    | lambda a, b: a @ b                        | (a234, b243)
matmul_broadcast  | lambda a, b: a @ b                        | (a234, m34.T)
einsum_batched    | lambda a, b: einsum('bij,bjk->bik', a, b) | (a234, b243)
einsum_trace_like | lambda a, b: einsum('ij,kj->ik', a, b)    | (m23, m23)
einsum_outer      | lambda a, b: einsum('i,j->ij', a, b)      | (x3, u3)
einsum_contract2  | lambda a, b: einsum('bij,bji->b', a, b)   | (a234, b243)
outer             | outer                                     | (x3, u3)
"#
        .to_string(),
    )
}

#[test]
fn grads_products() {
    let (setup, rows) = grads_products_table();
    grads(setup, &rows);
}

fn grads_movement_table() -> Table {
    (
        "",
        r#"
transpose         | lambda a: a.T * a.T                                     | (m34,)
transpose_perm    | lambda a: sin(transpose(a, (2, 0, 1)))                  | (a234,)
reshape           | lambda a: reshape(a, (4, 3)) ** 2                       | (m34,)
broadcast_to      | lambda a: broadcast_to(a, (2, 3)) * m23                 | (u3,)
broadcast_to_col  | lambda a: broadcast_to(a, (3, 4)) ** 2                  | (array([[0.5], [1.0], [-0.5]]),)
expand_squeeze    | lambda a: squeeze(expand_dims(a, 1) ** 2)               | (u3,)
slice             | lambda a: a[1:, :3] ** 2                                | (m34,)
slice_step        | lambda a: a[::2, 1::2] ** 2                             | (m34,)
slice_neg_step    | lambda a: a[::-1, ::-2] ** 2                            | (m34,)
slice_neg_range   | lambda a: a[2:0:-1] ** 2                                | (m34,)
index_int         | lambda a: a[1] * a[:, 2].sum()                          | (m34,)
flip              | lambda a: flip(a, 1) * a                                | (m34,)
roll              | lambda a: roll(a, 1, axis=1) * a                        | (m34,)
pad               | lambda a: lax_pad(a, 0.0, [1, 0], [0, 2], [0, 1]) ** 2  | (m23,)
pad_value         | lambda a, v: lax_pad(a, v, [1, 2], [1, 0], [1, 0]) ** 2 | (m23, array(0.7))
concatenate       | lambda a, b: concatenate([a, b * 2.0, a], axis=0) ** 2  | (m23, m34[:2, :3])
concatenate_axis1 | lambda a, b: concatenate([a, b], axis=1) ** 2           | (m23, m34[:2])
stack             | lambda a, b: stack([a, b, a * b], axis=1) ** 2          | (x3, u3)
tile              | lambda a: tile(a, (2, 1)) ** 2                          | (m23,)
repeat            | lambda a: repeat(a, 2, axis=0) ** 2                     | (m23,)
tril              | lambda a: tril(a) ** 2                                  | (m34,)
diag              | lambda a: diag(a) ** 2                                  | (m34,)
trace             | lambda a: trace(a @ a)                                  | (m34[:, :3],)
# Complex numbers are complex64 even for float64 inputs: the outputs are kept
# small so that finite differences of complex64 values stay within tolerance.
fft               | lambda a: real(fft(a * (1 - 1j))) * imag(fft(a + 0.5j)) * 0.02 | (m34,)
ifft              | lambda a: imag(ifft(a * (1 + 1j), axis=0)) ** 2 * 0.1          | (m34,)
rfft              | lambda a: real(rfft(a)) * imag(rfft(a * a)) * 0.02             | (m34,)
irfft             | lambda a: irfft(rfft(a) * (1 + 0.5j), 4) ** 2 * 0.1            | (m34,)
irfft_odd         | lambda a: irfft(fft(a * 1j)[:, :2], 3) ** 2 * 0.1              | (m23,)
"#
            .to_string(),
    )
}

#[test]
fn grads_movement() {
    let (setup, rows) = grads_movement_table();
    grads(setup, &rows);
}

fn grads_indexing_table() -> Table {
    (
        "i4 = array([2, 0, 2, 1])\ni22 = array([[1, 0], [2, 2]])",
        r#"
gather                    | lambda a: a[i4] ** 2                                          | (x3,)
gather_2d_indices         | lambda a: a[i22] ** 2                                         | (x3,)
gather_rows               | lambda a: a[i4] * 2.0                                         | (m34,)
gather_axis1              | lambda a: a[:, i4] ** 2                                       | (m34,)
gather_negative           | lambda a: a[array([-1, 0])] ** 2                              | (x3,)
take                      | lambda a: take(a, i4, axis=1) ** 2                            | (m34,)
take_along_axis           | lambda a: take_along_axis(a, argsort(a, axis=1), axis=1) ** 2 | (m34,)
gather_pairs              | lambda a: a[i4[:3], array([0, 2, 1])] ** 2                    | (m34,)
scatter_set               | lambda a, v: setitem(a, 1, v)                                 | (x3, array(0.4))
scatter_set_slice         | lambda a, v: sethead(a, v) ** 2                               | (x3, array([0.4, -0.2]))
scatter_set_rows          | lambda a, v: setitem(a, array([2, 0]), v) ** 2                | (m34, m34[:2] * 0.5)
scatter_add               | lambda a, v: scatter_add(a, i4, v, 0) ** 2                    | (x3, array([0.1, 0.2, 0.3, 0.4]))
scatter_add_axis1         | lambda a, v: scatter_add(a, i4[:2], v, 1) ** 2                | (m34, m34[:, :2])
# Gather clamps out-of-range indices (take wraps -7 to -4, then
# clamps it to 0): the cotangent goes back to the element read.
take_out_of_range         | lambda a: take(a, array([5, -7, 1])) ** 2                     | (x3,)
# Scatter drops out-of-range indices, and with set the last of
# repeated indices wins: the others' updates get no cotangent.
scatter_add_out_of_range  | lambda a, v: scatter_add(a, array([3, -1, 1]), v, 0) ** 2     | (x3, u3)
gather_rows               | lambda a: gather_rows(a, array([[3, 0], [1, 1], [2, 9]]), 1, 1) ** 2 | (m34,)
scatter_add_rows          | lambda a, v: scatter_add_rows(a, array([[3, 3], [1, -1], [0, 2]]), v, 1, 1) ** 2 | (m34, m34[:, :2])
scatter_set_rows          | lambda a, v: scatter_set_rows(a, array([[3, 3], [1, -1], [0, 2]]), v, 1, 1) ** 2 | (m34, m34[:, 1:3])
scatter_set_repeated      | lambda a, v: setitem(a, array([0, 2, 0]), v) ** 2             | (x3, u3)
scatter_set_repeated_2d   | lambda a, v: setitem(a, array([[0, 2], [2, 0]]), v) ** 2      | (x3, m23[:, :2])
scatter_set_repeated_rows | lambda a, v: setcol(a, array([1, 1]), v) ** 2                 | (m23, m23[:, :2])
sort                      | lambda a: sort(a) * arange(3.0)                               | (u3,)
sort_axis0                | lambda a: sort(a, axis=0) ** 2                                | (m34,)
argsort                   | lambda a: a[argsort(a)] * arange(3.0)                         | (u3,)
argmax                    | lambda a: a[argmax(a)] * a                                    | (u3,)
argmin                    | lambda a: a[argmin(a)] * a                                    | (u3,)
"#
            .to_string(),
    )
}

#[test]
fn grads_indexing() {
    let (setup, rows) = grads_indexing_table();
    grads(setup, &rows);
}

fn grads_control_flow_table() -> Table {
    (
        r#"
def body(i, c):
    return c * sin(c) + i
def step(c, x):
    c = c * x + sin(c)
    return c, c ** 2
def tstep(c, x):
    return (c[0] * x, c[1] + c[0] * x), c[0] - x
def wbody(c):
    return (c[0] + 1, c[1] * 1.1 + sin(c[1]))
"#,
        r#"
cond_true           | lambda x: cond(x[0] > 0.0, lambda y: sin(y) * y, lambda y: y ** 3, x)                                   | (x3,)
cond_false          | lambda x: cond(x[0] > 1.0, lambda y: sin(y) * y, lambda y: y ** 3, x)                                   | (x3,)
cond_two_operands   | lambda x, y: cond(True, lambda a, b: a * b, lambda a, b: a - b, x, y)                                   | (x3, u3)
cond_closure        | lambda x, y: cond(x[1] > 0.0, lambda a: a * y, lambda a: a + y, x)                                      | (x3, u3)
switch              | lambda x: switch(1, [lambda y: y * 2.0, lambda y: exp(y), lambda y: y ** 2], x)                         | (u3,)
switch_traced_index | lambda x: switch(argmax(x), [lambda y: y * 2.0, lambda y: exp(y), lambda y: y ** 2], x)                 | (u3,)
fori_loop           | lambda x: fori_loop(0, 3, body, x)                                                                      | (u3,)
fori_loop_closure   | lambda x, y: fori_loop(0, 3, lambda i, c: c * y + 1.0, x)                                               | (u3, x3)
scan                | lambda c, xs: scan(step, c, xs)                                                                         | (u3, m34.T[:, :3] * 0.5)
scan_reverse        | lambda c, xs: scan(step, c, xs, reverse=True)                                                           | (u3, m34.T[:, :3] * 0.5)
scan_tuple_carry    | lambda c, xs: scan(tstep, (c, c), xs)                                                                   | (array(0.5), x3)
scan_no_xs          | lambda c: scan(lambda c, _: (sin(c), c * 2.0), c, None, length=3)                                       | (u3,)
while_loop          | lambda x: while_loop(lambda c: c[0] < 3, wbody, (0, x))[1]                                              | (u3,), modes=('fwd',)
while_loop_closure  | lambda x, y: while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * y), (0, x))[1]                  | (u3, x3), modes=('fwd',)
# Derivatives of the batched control-flow primitives.
vmap_cond           | lambda x: vmap(lambda r: cond(r[0] > 0.0, lambda a: sin(a), lambda a: a ** 2, r))(x)                    | (m34,)
vmap_scan           | lambda x: vmap(lambda r: scan(lambda c, y: (c * y + sin(c), c), r[0], r)[1])(x)                         | (m34,)
vmap_fori_loop      | lambda x: vmap(lambda r: fori_loop(0, 3, lambda i, c: c * sin(c), r))(x)                                | (m34,)
vmap_while_loop     | lambda x: vmap(lambda r: while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, sin(c[1])), (0, r))[1])(x) | (m34,), modes=('fwd',)
"#
            .to_string(),
    )
}

#[test]
fn grads_control_flow() {
    let (setup, rows) = grads_control_flow_table();
    grads(setup, &rows);
}

/// Collectives differentiate inside the named vmap that binds their axis
/// (outside it, that vmap has already made them array code); a sharding
/// constraint anywhere.
fn grads_collectives_table() -> Table {
    (
        r#"
ring3 = [(0, 1), (1, 2), (2, 0)]
per_device = lambda f: vmap(grad(f), axis_name='i')
m = mesh((2, 4), ("data", "model"))
"#,
        r#"
psum                | lambda x: per_device(lambda r: sum(psum(sin(r), 'i') * r))(x)            | (m34,)
pmax                | lambda x: per_device(lambda r: sum(pmax(r, 'i') * sin(r)))(x)            | (m34,)
pmin                | lambda x: per_device(lambda r: sum(pmin(r, 'i') * sin(r)))(x)            | (m34,)
all_gather          | lambda x: per_device(lambda r: sum(all_gather(sin(r), 'i') * m34))(x)    | (m34,)
psum_scatter        | lambda x: per_device(lambda r: sum(psum_scatter(sin(r), 'i') * r))(x)    | (m34[:, :3],)
all_to_all          | lambda x: per_device(lambda r: sum(all_to_all(sin(r), 'i', 0, 0) * r))(x) | (m34[:, :3],)
ppermute            | lambda x: per_device(lambda r: sum(ppermute(sin(r), 'i', ring3) * r))(x) | (m34,)
sharding_constraint | lambda a: with_sharding_constraint(a * 2.0, NamedSharding(m, P(None, 'model'))) ** 2 | (m34,)
"#
        .to_string(),
    )
}

#[test]
fn grads_collectives() {
    let (setup, rows) = grads_collectives_table();
    grads(setup, &rows);
}

// ---------------------------------------------------------------------------
// Batching

fn vmap_elementwise_table() -> Table {
    (
        "b34 = m34 * 0.5 + 0.1",
        r#"
unary_axis0             | sin                                  | (0,)         | m34
unary_axis1             | exp                                  | (1,)         | m34
convert                 | lambda a: a.astype(int32)            | (1,)         | m34 * 3.0
binary_both             | lambda a, b: a * b                   | (0, 0)       | m34, b34
binary_both_axes_differ | lambda a, b: a - b                   | (0, 1)       | m34, b34.T
binary_lhs              | lambda a, b: a * b                   | (0, None)    | m34, b34[0]
binary_rhs              | lambda a, b: a / b                   | (None, 1)    | m34[:, 0], b34
binary_broadcast        | lambda a, b: a + b                   | (0, None)    | m34, m23[:, :1] @ ones((1, 4))
binary_rank_differs     | lambda a, b: a[:, None] * b          | (1, None)    | m34, a234
binary_scalar_example   | lambda a, b: a * b                   | (0, None)    | x3, m23
pow                     | lambda a, b: abs(a) ** b             | (0, 1)       | m34, b34.T
compare                 | lambda a, b: a > b                   | (0, 0)       | m34, b34
select                  | lambda c, a, b: where(c > 0.0, a, b) | (0, None, 1) | m34, b34[0], b34.T
select_pred_only        | lambda c: where(c > 0.0, 1.0, -1.0)  | (1,)         | m34
maximum                 | maximum                              | (0, None)    | m34, b34[1]
arctan2                 | arctan2                              | (1, 1)       | m34, b34
mod                     | lambda a, b: a % b                   | (0, 1)       | m34, b34.T
floor_divide            | lambda a, b: a // b                  | (1, None)    | m34, b34[:, 0]
less_equal              | lambda a, b: a <= b                  | (0, 0)       | m34, b34
not_equal               | lambda a, b: a != b                  | (1, 0)       | m34, b34.T
left_shift              | left_shift                           | (0, None)    | reshape(arange(12), (3, 4)), array([1, 2, 0, 3])
logical_or              | lambda a, b: logical_or(a > 0.0, b > 0.0) | (0, 1)     | m34, b34.T
complex_parts           | lambda a: real(a * 1j) + imag(conj(a + 2j)) | (1,)      | m34
fft                     | lambda a: fft(a * 1j)                | (1,)         | m34
ifft                    | lambda a: ifft(a + 1j)               | (0,)         | m34
rfft                    | rfft                                 | (1,)         | m34
irfft                   | lambda a: irfft(a + 0.5j, 5)         | (0,)         | m34
"#
            .to_string(),
    )
}

#[test]
fn vmap_elementwise() {
    let (setup, rows) = vmap_elementwise_table();
    vmaps(setup, &rows);
}

/// The unary ops share one batching rule; each is checked all the same,
/// on operands in its domain.
fn vmap_unary_table() -> Table {
    (
        "",
        r#"
sign        | sign        | (0,) | m34
floor       | floor       | (1,) | m34 * 3.0
ceil        | ceil        | (0,) | m34 * 3.0
round       | round       | (1,) | m34 * 3.0
expm1       | expm1       | (0,) | m34
exp2        | exp2        | (1,) | m34
cbrt        | cbrt        | (0,) | m34
log         | log         | (1,) | abs(m34) + 0.1
log1p       | log1p       | (0,) | abs(m34)
sqrt        | sqrt        | (1,) | abs(m34)
rsqrt       | rsqrt       | (0,) | abs(m34) + 0.1
tan         | tan         | (1,) | m34
arcsin      | arcsin      | (0,) | m34 * 0.5
arccos      | arccos      | (1,) | m34 * 0.5
arctan      | arctan      | (0,) | m34
sinh        | sinh        | (1,) | m34
cosh        | cosh        | (0,) | m34
tanh        | tanh        | (1,) | m34
arcsinh     | arcsinh     | (0,) | m34
arccosh     | arccosh     | (1,) | abs(m34) + 1.5
arctanh     | arctanh     | (0,) | m34 * 0.5
logistic    | logistic    | (1,) | m34
erf         | erf         | (0,) | m34
isfinite    | isfinite    | (1,) | m34 / (m34 - 0.5)
isnan       | isnan       | (0,) | log(m34)
logical_not | logical_not | (1,) | m34 > 0.0
"#
        .to_string(),
    )
}

#[test]
fn vmap_unary() {
    let (setup, rows) = vmap_unary_table();
    vmaps(setup, &rows);
}

fn vmap_reductions_table() -> Table {
    (
        "",
        r#"
sum_all        | sum                             | (0,) | m34
sum_axis       | lambda a: sum(a, axis=0)        | (1,) | m34
prod           | lambda a: prod(a, axis=-1)      | (0,) | m34
max            | max                             | (1,) | m34
min_keepdims   | lambda a: min(a, keepdims=True) | (0,) | m34
all_axis       | lambda a: all(a > 0.0, axis=0)  | (1,) | m34
any            | lambda a: any(a > 0.5)          | (0,) | m34
argmax         | argmax                          | (0,) | m34
argmax_axis1   | argmax                          | (1,) | m34
argmin_2d      | lambda a: argmin(a, axis=1)     | (0,) | stack([m34, m34[::-1]])
cumsum         | cumsum                          | (0,) | m34
cumsum_axis1   | cumsum                          | (1,) | m34
cumprod        | cumprod                         | (1,) | m34
cummax         | lambda a: cummax(a, 0, False)   | (0,) | m34
cummin_reverse | lambda a: cummin(a, 0, True)    | (1,) | m34
sort           | sort                            | (0,) | m34
sort_axis1     | sort                            | (1,) | m34
argsort        | argsort                         | (0,) | m34
argsort_axis1  | argsort                         | (1,) | m34
"#
        .to_string(),
    )
}

#[test]
fn vmap_reductions() {
    let (setup, rows) = vmap_reductions_table();
    vmaps(setup, &rows);
}

fn vmap_products_table() -> Table {
    (
        "",
        r#"
matvec_lhs              | lambda a, b: a @ b                        | (0, None) | a234, m34[0]
matvec_rhs              | lambda a, b: a @ b                        | (None, 0) | m23, m34.T
matvec_both             | lambda a, b: a @ b                        | (0, 0)    | a234, m34[:2]
matmul_lhs_axis1        | lambda a, b: a @ b                        | (1, None) | a234, m34.T
matmul_rhs_axis2        | lambda a, b: a @ b                        | (None, 2) | m23, transpose(b243, (2, 1, 0))
matmul_both             | lambda a, b: a @ b                        | (0, 0)    | a234, b243
matmul_both_axes_differ | lambda a, b: a @ b                        | (0, 2)    | a234, transpose(b243, (1, 2, 0))
dot                     | dot                                       | (0, 1)    | m34[:, :3], m34[:3, :3]
einsum_batched_lhs      | lambda a, b: einsum('bij,bjk->bik', a, b) | (0, None) | stack([a234, a234 * 2.0]), b243
einsum_batched_rhs      | lambda a, b: einsum('bij,bjk->bik', a, b) | (None, 1) | a234, stack([b243, -b243], axis=1)
einsum_batched_both     | lambda a, b: einsum('bij,bjk->bik', a, b) | (3, 0)    | stack([a234, a234 * 2.0], axis=3), stack([b243, -b243])
"#
            .to_string(),
    )
}

#[test]
fn vmap_products() {
    let (setup, rows) = vmap_products_table();
    vmaps(setup, &rows);
}

fn vmap_movement_table() -> Table {
    (
        "",
        r#"
transpose              | lambda a: a.T                                     | (0,)      | a234
transpose_axis2        | lambda a: a.T                                     | (2,)      | a234
reshape                | lambda a: reshape(a, (-1,))                       | (1,)      | a234
reshape_split          | lambda a: reshape(a, (2, 2))                      | (0,)      | a234[0]
broadcast_to           | lambda a: broadcast_to(a, (2, 4))                 | (0,)      | m34
broadcast_to_axis1     | lambda a: broadcast_to(a[:, None], (3, 5))        | (1,)      | m34
expand_dims            | lambda a: expand_dims(a, 0)                       | (1,)      | m34
slice                  | lambda a: a[1:3]                                  | (0,)      | m34
slice_step             | lambda a: a[::2]                                  | (1,)      | m34
slice_neg_step         | lambda a: a[::-2]                                 | (1,)      | m34
flip                   | flip                                              | (0,)      | a234
roll                   | lambda a: roll(a, 1)                              | (0,)      | m34
pad                    | lambda a: lax_pad(a, 0.0, [1], [2], [1])          | (0,)      | m34
pad_axis1              | lambda a: lax_pad(a, 9.0, [0, 1], [1, 0], [0, 0]) | (1,)      | a234
pad_batched_value      | lambda a, v: lax_pad(a, v, [1], [1], [1])         | (0, 0)    | m34, x3
pad_only_value_batched | lambda a, v: lax_pad(a, v, [1], [1], [0])         | (None, 0) | x3, u3
concatenate_both       | lambda a, b: concatenate([a, b])                  | (0, 1)    | m34, m34.T
concatenate_one        | lambda a, b: concatenate([a, b, a])               | (0, None) | m34, x3
concatenate_axis1      | lambda a, b: concatenate([a, b], axis=1)          | (None, 2) | m23, a234
stack                  | lambda a, b: stack([a, b])                        | (1, None) | m34, x3
"#
        .to_string(),
    )
}

#[test]
fn vmap_movement() {
    let (setup, rows) = vmap_movement_table();
    vmaps(setup, &rows);
}

fn vmap_indexing_table() -> Table {
    (
        "i4 = array([2, 0, 2, 1])\ni34 = array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, -1, -4]])",
        r#"
gather_operand                | lambda a: a[i4[:2]]                                    | (0,)         | m34
gather_operand_axis1          | lambda a: a[i4]                                        | (1,)         | m34
gather_2d_operand             | lambda a: a[:, array([1, 0])]                          | (0,)         | stack([m34, -m34])
gather_indices                | lambda i: x3[i]                                        | (0,)         | i34[:, :2] % 3
gather_indices_axis1          | lambda i: m34[i]                                       | (1,)         | i34[:2, :] % 3
gather_indices_of_axis1       | lambda i: m34[:, i]                                    | (0,)         | i34
gather_both                   | lambda a, i: a[i]                                      | (0, 0)       | m34, i34
gather_both_axes_differ       | lambda a, i: a[i]                                      | (1, 0)       | m34, i34.T[:, :3] % 3
gather_both_inner_axis        | lambda a, i: a[:, i]                                   | (0, 0)       | stack([m34, -m34, 2.0 * m34]), i34[:, :3]
take_along_axis               | lambda a: take_along_axis(a, argsort(a), 0)            | (0,)         | m34
scatter_operand               | lambda a: setitem(a, 1, 0.0)                           | (0,)         | m34
scatter_operand_axis1         | lambda a: setitem(a, array([0, 2]), array([5.0, 6.0])) | (1,)         | m34
scatter_index                 | lambda i: setitem(x3, i, 9.0)                          | (0,)         | array([0, 2, 1, -1])
scatter_update                | lambda v: setitem(x3, 1, v)                            | (0,)         | u3
scatter_update_rows           | lambda v: setitem(m34, array([2, 0]), v)               | (1,)         | stack([m34[:2], -m34[:2]], axis=1)
scatter_all                   | lambda a, i, v: setitem(a, i, v)                       | (0, 0, 0)    | m34, i4[:3], x3 * 10.0
scatter_all_axes_differ       | lambda a, i, v: setitem(a, i, v)                       | (1, 0, None) | m34.T, array([0, 2, 1]), array(7.0)
scatter_inner_axis            | lambda a, i, v: setcol(a, i, v)                        | (0, 0, 0)    | stack([m23, -m23]), array([1, 2]), array([[1.0, 2.0], [3.0, 4.0]])
scatter_add                   | lambda a, i, v: scatter_add(a, i, v, 0)                | (0, None, 0) | m34, array([1, 1, 0]), m34[:, :3] * 10.0
scatter_add_indices           | lambda i: scatter_add(x3, i, u3, 0)                    | (0,)         | i34[:, :3] % 3
# Indices keep the primitive's meaning within each example and
# never reach a neighbour: gather clamps, scatter drops.
gather_both_out_of_range      | lambda a, i: take(a, i)                                | (0, 0)       | m34, array([[5, -7, 1], [3, 4, -9], [0, 9, -1]])
scatter_add_both_out_of_range | lambda a, i, v: scatter_add(a, i, v, 0)                | (0, 0, 0)    | m34, array([[4, -1, 1], [3, 9, 0], [-5, 2, 2]]), m34[:, :3]
gather_rows                   | lambda a, i: gather_rows(a, i, 1, 1)                   | (0, 0)       | m34.reshape(3, 2, 2), array([[[1], [0]], [[0], [1]], [[1], [5]]])
gather_rows_operand           | lambda a: gather_rows(a, array([[1], [0]]), 1, 1)      | (0,)         | m34.reshape(3, 2, 2)
gather_rows_indices           | lambda i: gather_rows(m34[:2], i, 1, 1)                | (1,)         | array([[[1, 3], [0, 2]], [[2, 2], [3, -1]]])
scatter_set_rows              | lambda a, i, v: scatter_set_rows(a, i, v, 1, 1)        | (0, None, 0) | m34.reshape(3, 2, 2), array([[1, 1], [0, 7]]), m34.reshape(3, 2, 2)
scatter_set_both_repeated     | lambda a, i, v: setitem(a, i, v)                       | (0, 0, 0)    | m34, array([[1, 1, 0], [3, 0, 3], [2, 2, 2]]), m34[:, :3] * 10.0
"#
            .to_string(),
    )
}

#[test]
fn vmap_indexing() {
    let (setup, rows) = vmap_indexing_table();
    vmaps(setup, &rows);
}

fn vmap_random_and_control_flow_table() -> Table {
    (
        r#"
key = random.key(0)
keys = random.split(key, 4)
def wbody(c):
    return (c[0] + 1, c[1] * 2.0)
"#,
        r#"
threefry_normal           | lambda k: random.normal(k, (3,))                                                       | (0,)      | keys
threefry_uniform_axis1    | lambda k: random.uniform(k, (2, 2))                                                    | (1,)      | keys.T
threefry_split_index      | lambda i: random.normal(random.split(key, 4)[i], (2,))                                 | (0,)      | arange(4)
threefry_split            | lambda k: random.key_data(random.split(k, 3))                                          | (0,)      | keys
threefry_fold_in          | lambda k, d: random.bits(random.fold_in(k, d), (2,))                                   | (None, 0) | key, arange(3)
cond_batched_pred         | lambda x: cond(x[0] > 0.0, lambda y: sin(y), lambda y: y * 10.0, x)                    | (0,)      | m34
cond_unbatched_pred       | lambda x, p: cond(p > 0.0, lambda y: sin(y), lambda y: y * 10.0, x)                    | (0, None) | m34, array(1.0)
cond_batched_operand_only | lambda x, y: cond(y[0] > 0.0, lambda a: a * y, lambda a: a - y, x)                     | (None, 1) | x3, m34
switch_batched_index      | lambda i, x: switch(i, [lambda y: y + 1.0, lambda y: y * 2.0, lambda y: -y], x)        | (0, 0)    | array([2, 0, 1]), m34
while_batched_pred        | lambda n, x: while_loop(lambda c: c[0] < n, wbody, (0, x))[1]                          | (0, None) | array([0, 3, 1, 2]), x3
while_batched_carry       | lambda x: while_loop(lambda c: c[0] < 3, wbody, (0, x))[1]                             | (1,)      | m34
while_batched_both        | lambda x: while_loop(lambda c: c[1][0] < 10.0, wbody, (0, x))[1]                       | (0,)      | abs(m34) + 0.5
fori_loop_batched         | lambda x: fori_loop(0, 3, lambda i, c: c * 2.0 + i, x)                                 | (0,)      | m34
scan_batched_xs           | lambda xs: scan(lambda c, x: (c + x, c * x), 0.0, xs)[1]                               | (0,)      | m34
scan_batched_xs_axis1     | lambda xs: scan(lambda c, x: (c + x, c * x), zeros(2), xs)[1]                          | (1,)      | reshape(arange(24.0), (3, 4, 2))
scan_batched_init         | lambda c: scan(lambda c, x: (c * x, c + x), c, x3)[0]                                  | (0,)      | m34[:, 0]
scan_batched_both         | lambda c, xs: scan(lambda c, x: (c * x + 1.0, c), c, xs)[1]                            | (0, 1)    | u3, m34.T
switch_index_clamped      | lambda i, x: switch(i, [lambda y: y + 1.0, lambda y: y * 2.0], x)                      | (0, 0)    | array([-3, 0, 7]), m34
cond_int_output           | lambda p, x: cond(p > 0.0, lambda a: argmax(a), lambda a: argmin(a), x)                | (0, 0)    | x3 - 0.5, m34
scan_reverse              | lambda xs: scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=True)[1]                 | (1,)      | m34
nested_vmap_scan          | lambda x: vmap(lambda r: scan(lambda c, y: (c + y * r[0], c), 0.0, r)[1])(x)           | (0,)      | stack([m34, -m34])
nested_vmap_cond          | lambda x: vmap(lambda r: cond(r[0] > 0.0, lambda a: a, lambda a: -a, r), in_axes=1)(x) | (2,)      | stack([m34, -m34], axis=2)
"#
            .to_string(),
    )
}

#[test]
fn vmap_random_and_control_flow() {
    let (setup, rows) = vmap_random_and_control_flow_table();
    vmaps(setup, &rows);
}

fn vmap_of_grad_table() -> Table {
    (
        r#"
def while_jvp(n, x):
    f = lambda y: while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, sin(c[1])), (0, y))[1]
    return jvp(f, (x,), (ones(3),))[1]
@custom_vjp
def csin(x):
    return sin(x)
@custom_vjp
def ccos(x):
    return cos(x)
csin.defvjp(lambda x: (csin(x), x), lambda x, g: (g * ccos(x),))
ccos.defvjp(lambda x: (ccos(x), x), lambda x, g: (-g * csin(x),))
"#,
        r#"
grad_sum_sin                     | grad(lambda x: sum(sin(x) * x))                                                   | (0,)      | m34
grad_grad_custom_vjp             | grad(lambda x: sum(grad(lambda y: sum(csin(y)))(x)))                              | (0,)      | m34
grad_slice_step                  | grad(lambda x: sum(x[::2] ** 2))                                                  | (1,)      | m34
grad_gather                      | grad(lambda x: sum(x[array([0, 0, 2])] ** 2))                                     | (0,)      | m34
grad_matmul                      | grad(lambda w, x: sum((x @ w) ** 2))                                              | (None, 0) | m34, stack([m23, -m23])
grad_prod                        | grad(lambda x: prod(x))                                                           | (0,)      | m34
grad_scan                        | grad(lambda x: scan(lambda c, y: (c * y, c), 1.0, x)[0])                          | (0,)      | m34
grad_scatter_repeated            | grad(lambda v: sum(setitem(x3, array([0, 0]), v) ** 2))                           | (0,)      | m34[:, :2]
grad_gather_batched_indices      | grad(lambda x, i: sum(take(x, i) ** 2))                                           | (None, 0) | x3, array([[0, 0], [2, 1], [5, -7]])
grad_scatter_batched_indices     | grad(lambda v, i: sum(setitem(x3, i, v) ** 2))                                    | (0, 0)    | m23, array([[0, 0, 1], [2, 1, 2]])
grad_scatter_add_batched_indices | grad(lambda v, i: sum(scatter_add(x3, i, v, 0) ** 2))                             | (None, 0) | u3, array([[0, 0, 1], [2, 3, -1]])
grad_pad_batched_value           | grad(lambda v, a: sum(lax_pad(a, v, [1], [1], [1]) ** 2))                         | (0, None) | x3, u3
grad_cummax                      | grad(lambda x: sum(cummax(x, 0, False) * x))                                      | (0,)      | m34
grad_cond_batched_pred           | grad(lambda x: cond(x[0] > 0.0, lambda a: sum(sin(a)), lambda a: sum(a ** 2), x)) | (0,)      | m34
grad_fori_loop                   | grad(lambda x: fori_loop(0, 3, lambda i, c: c * sin(c), x).sum())                 | (1,)      | m34
jvp_while_batched_pred           | while_jvp                                                                         | (0, None) | array([0, 2, 4]), x3
jacfwd_cumprod                   | jacfwd(cumprod)                                                                   | (0,)      | m34
jacrev_sort                      | jacrev(lambda x: sort(x) * x)                                                     | (0,)      | m34
hessian                          | hessian(lambda x: sum(x ** 3) * x[0])                                             | (0,)      | m34
"#
            .to_string(),
    )
}

#[test]
fn vmap_of_grad() {
    let (setup, rows) = vmap_of_grad_table();
    vmaps(setup, &rows);
}

/// Each collective under the named vmap that binds its axis (the batch
/// axis is the devices), and under another vmap inside that one, against
/// references written with array operations; sharding constraints under
/// vmap against a loop.
fn vmap_collectives_table() -> Table {
    (
        "ring3 = [(0, 1), (1, 2), (2, 0)]",
        r#"
psum                    | lambda r: psum(r, 'i')                                | lambda x: broadcast_to(sum(x, axis=0), x.shape)                         | m34
pmax                    | lambda r: pmax(r, 'i')                                | lambda x: broadcast_to(max(x, axis=0), x.shape)                         | m34
pmin                    | lambda r: pmin(r, 'i')                                | lambda x: broadcast_to(min(x, axis=0), x.shape)                         | m34
all_gather              | lambda r: all_gather(r, 'i')                          | lambda x: broadcast_to(x[None], (3,) + x.shape)                         | m34
psum_scatter            | lambda r: psum_scatter(r, 'i')                        | lambda x: sum(x, axis=0)                                                | m34[:, :3]
all_to_all              | lambda r: all_to_all(r, 'i', 0, 0)                    | lambda x: transpose(x, (1, 0))                                          | m34[:, :3]
ppermute                | lambda r: ppermute(r, 'i', ring3)                     | lambda x: concatenate([x[-1:], x[:-1]], axis=0)                         | m34
axis_index              | lambda r: r * 0.0 + axis_index('i')                   | lambda x: broadcast_to(arange(3.0)[:, None], x.shape)                   | m34
psum_under_vmap         | lambda r: vmap(lambda q: psum(q, 'i'))(r)             | lambda x: broadcast_to(sum(x, axis=0), x.shape)                         | m34
psum_scatter_under_vmap | lambda r: vmap(lambda q: psum_scatter(q, 'i'))(r)     | lambda x: transpose(sum(x, axis=0), (1, 0))                             | reshape(arange(18.0), (3, 2, 3))
all_gather_under_vmap   | lambda r: vmap(lambda q: all_gather(q, 'i'))(r)       | lambda x: broadcast_to(transpose(x, (1, 0, 2))[None], (2, 3, 2, 4))     | a234
"#
        .to_string(),
    )
}

#[test]
fn vmap_collectives() {
    let (setup, rows) = vmap_collectives_table();
    named_vmaps(setup, &rows);
}

fn vmap_sharding_constraint_table() -> Table {
    (
        r#"m = mesh((2, 4), ("data", "model"))"#,
        r#"
sharding_constraint | lambda a: with_sharding_constraint(a * 2.0, NamedSharding(m, P(None, 'model'))) | (0,) | stack([m34, -m34, m34 * 2.0])
"#
        .to_string(),
    )
}

#[test]
fn vmap_sharding_constraint() {
    let (setup, rows) = vmap_sharding_constraint_table();
    vmaps(setup, &rows);
}

/// Debug callbacks and checks see primal values and leave the derivative
/// alone; under vmap they run once per example and leave the values alone.
fn grads_debug_table() -> Table {
    (
        "",
        r#"
debug_print    | lambda x: (debug_print("", x), sin(x) * x)[1]                     | (x3,)
debug_callback | lambda x, y: (debug_callback(lambda a, b: None, x, b=y), x * y)[1] | (x3, u3)
check          | lambda x: (_checkify_bind("nan", "sin", x < -100.0, [x]), sin(x) * x)[1] | (x3,)
"#
        .to_string(),
    )
}

#[test]
fn grads_debug() {
    let (setup, rows) = grads_debug_table();
    grads(setup, &rows);
}

fn vmap_debug_table() -> Table {
    (
        "",
        r#"
debug_print    | lambda x: (debug_print("", x), x * 2.0)[1]                         | (1,)      | m34
debug_callback | lambda x, y: (debug_callback(lambda a, b: None, x, y), x + y)[1]   | (0, None) | m34, x3[:1]
check          | lambda x: (_checkify_bind("nan", "sin", x < -100.0, [x]), x * 2.0)[1] | (1,)      | m34
"#
        .to_string(),
    )
}

#[test]
fn vmap_debug() {
    let (setup, rows) = vmap_debug_table();
    vmaps(setup, &rows);
}

// ---------------------------------------------------------------------------
// Coverage: every primitive is in the tables

/// Every table of gradient checks.
const GRAD_TABLES: &[fn() -> Table] = &[
    grads_unary_table,
    grads_binary_table,
    grads_reductions_table,
    grads_products_table,
    grads_movement_table,
    grads_indexing_table,
    grads_control_flow_table,
    grads_collectives_table,
    grads_debug_table,
];

/// Every table of batching checks.
const VMAP_TABLES: &[fn() -> Table] = &[
    vmap_elementwise_table,
    vmap_reductions_table,
    vmap_products_table,
    vmap_movement_table,
    vmap_indexing_table,
    vmap_random_and_control_flow_table,
    vmap_of_grad_table,
    vmap_unary_table,
    vmap_sharding_constraint_table,
    vmap_debug_table,
];

/// Every table of batching checks under named vmaps, against references.
const NAMED_VMAP_TABLES: &[fn() -> Table] = &[vmap_collectives_table];

/// Primitives (by IR name) whose JVP rule no gradient check reaches, and why.
const NOT_DIFFERENTIATED: &[(&str, &str)] = &[
    ("not", "bool and integer operands carry no tangent"),
    ("and", "bool and integer operands carry no tangent"),
    ("or", "bool and integer operands carry no tangent"),
    ("xor", "bool and integer operands carry no tangent"),
    ("shift_left", "integer operands carry no tangent"),
    ("shift_right", "integer operands carry no tangent"),
    ("reduce_all", "bool operands carry no tangent"),
    ("reduce_any", "bool operands carry no tangent"),
    ("threefry2x32", "u32 keys and counters carry no tangent"),
    ("iota", "no operands: nothing to differentiate"),
    ("axis_index", "no operands: nothing to differentiate"),
    (
        "custom_vjp",
        "reverse mode makes it (the tangent of a custom_vjp function) and only \
         transposes it; forward mode through it is an error",
    ),
    (
        "custom_vjp_call",
        "a custom_vjp function called in another's backward pass; check_grads compares \
         reverse mode with forward mode, which custom_vjp refuses (grad of grad through it \
         is checked against JAX by tests/jax_more_programs/custom_vjp_nested.py)",
    ),
    (
        "fused",
        "made by jit's fusion pass after every transformation; transforming it is an error",
    ),
    (
        "fused_matmul",
        "made by jit's fusion pass after every transformation; transforming it is an error",
    ),
];

/// Primitives (by IR name) whose batching rule no vmap check reaches, and why.
const NOT_BATCHED: &[(&str, &str)] = &[
    (
        "iota",
        "no operands: the same for every example, never batched",
    ),
    (
        "custom_vjp",
        "exists only in reverse mode's linear graphs, which are transposed, not \
         batched; vmap of it is an error (vmap applies outside grad)",
    ),
    (
        "fused",
        "made by jit's fusion pass after every transformation; batching it is an error",
    ),
    (
        "fused_matmul",
        "made by jit's fusion pass after every transformation; batching it is an error",
    ),
];

/// Each primitive's rule for `rule` ran in the tables, or the primitive is
/// in `marked` with the reason it cannot; a mark for a primitive that is
/// reached after all, or that does not exist, is stale.
fn check_covered(
    rule: Rule,
    ran: &coverage::Ran,
    marked: &[(&str, &str)],
    what: &str,
    problems: &mut Vec<String>,
) {
    let names: BTreeSet<String> = coverage::examples().iter().map(Prim::ir_name).collect();
    for name in &names {
        let reached = ran.contains(&(rule, name.clone()));
        let mark = marked.iter().find(|(m, _)| m == name);
        match (reached, mark) {
            (true, Some(_)) => problems.push(format!(
                "{name}: its {what} rule is reached by the tables, so it needs no mark"
            )),
            (false, None) => problems.push(format!(
                "{name}: no {what} table reaches its rule; add a row, or mark it with the reason"
            )),
            (true, None) | (false, Some(_)) => {}
        }
    }
    for (m, _) in marked {
        if !names.contains(*m) {
            problems.push(format!("{m}: marked, but there is no such primitive"));
        }
    }
}

/// Every primitive variant and every op (`coverage::examples`, which does
/// not compile without a new variant) has its JVP rule checked by a
/// gradient table and its batching rule by a vmap table, or is marked with
/// the reason it cannot be.
#[test]
fn every_primitive_is_in_the_tables() {
    let run = |tables: &[fn() -> Table], check: fn(&str, &str)| {
        coverage::record(|| {
            for table in tables {
                let (setup, rows) = table();
                check(setup, &rows);
            }
        })
        .1
    };
    let differentiated = run(GRAD_TABLES, grads);
    let mut batched = run(VMAP_TABLES, vmaps);
    batched.extend(run(NAMED_VMAP_TABLES, named_vmaps));
    let mut problems = Vec::new();
    check_covered(
        Rule::Jvp,
        &differentiated,
        NOT_DIFFERENTIATED,
        "gradient",
        &mut problems,
    );
    check_covered(
        Rule::Batch,
        &batched,
        NOT_BATCHED,
        "batching",
        &mut problems,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------
// Errors

#[test]
fn error_grad_of_integer_input() {
    let msg = error("grad(lambda x: x * 2)(3)", ErrorKind::TypeError);
    assert_mentions(&msg, &["grad requires float inputs", "argument 0", "i32"]);
}

#[test]
fn error_grad_of_non_scalar() {
    let msg = error("grad(lambda x: x * 2.0)(ones(3))", ErrorKind::TypeError);
    assert_mentions(
        &msg,
        &[
            "grad requires fun to return a float scalar",
            "f32[3]",
            "jacrev",
        ],
    );
}

#[test]
fn error_vmap_inconsistent_sizes() {
    let msg = error(
        "vmap(lambda a, b: a + b)(ones(3), ones(4))",
        ErrorKind::ValueError,
    );
    assert_mentions(&msg, &["vmap", "inconsistent sizes", "size 3", "size 4"]);
    let msg = error(
        "vmap(lambda a, b: a * b, in_axes=(0, 1))(ones((3, 2)), ones((3, 2)))",
        ErrorKind::ValueError,
    );
    assert_mentions(
        &msg,
        &["inconsistent sizes", "size 3 at axis 0", "size 2 at axis 1"],
    );
}

#[test]
fn error_python_if_inside_vmap() {
    let msg = error(
        r#"def f(x):
    if x > 0:
        return x
    return -x
vmap(f)(ones(3))
"#,
        ErrorKind::ConcretizationError,
    );
    assert_mentions(
        &msg,
        &[
            "TracerBoolConversionError",
            "traced inside vmap",
            "where(",
            "errors.arr:2:8",
            "if x > 0:",
        ],
    );
}

#[test]
fn error_tracer_escapes_through_global() {
    let msg = error(
        r#"leak = None
def f(x):
    global leak
    leak = x * 2.0
    return x
grad(f)(1.0)
print(leak + 1.0)
"#,
        ErrorKind::TransformError,
    );
    assert_mentions(
        &msg,
        &["traced value", "escaped", "global", "errors.arr:7:7"],
    );
}

#[test]
fn error_reverse_mode_through_while_loop() {
    let msg = error(
        r#"def f(x):
    return while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
grad(f)(1.0)
"#,
        ErrorKind::TransformError,
    );
    assert_mentions(&msg, &["reverse-mode", "while_loop", "scan", "fori_loop"]);
    // fori_loop with traced bounds is a while_loop too.
    let msg = error(
        "grad(lambda x: fori_loop(0, x.astype(int32), lambda i, c: c * 2.0, x))(3.0)",
        ErrorKind::TransformError,
    );
    assert_mentions(&msg, &["reverse-mode", "while_loop"]);
}
