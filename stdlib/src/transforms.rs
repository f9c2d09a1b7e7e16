//! The transformations as arr functions: `grad`, `value_and_grad`, `jvp`,
//! `vjp`, `linearize`, `jacfwd`/`jacrev`/`jacobian`, `hessian`, `vmap`,
//! `make_jaxpr`, `stop_gradient`, the control-flow functions (`cond`,
//! `switch`, `while_loop`, `fori_loop`, `scan`) and `check_grads`.
//!
//! This layer only deals with pytrees and arguments: it flattens them to
//! tensors, runs the runtime's transformation (`arr_runtime::transform`) on
//! a closure that rebuilds the pytrees and calls the user's function, and
//! rebuilds the results.

use crate::args::*;
use crate::tree::{leaves, map_leaves};
use crate::Registry;
use arr_kernels::DType;
use arr_runtime::prim::type_str;
use arr_runtime::transform::{batch, control, custom, graph, jvp, linear, ops};
use arr_runtime::{display, numpy};
use arr_runtime::{Error, ErrorKind, Interp, NativeClosure, Result, Tensor, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

type Kwargs = Vec<(Rc<str>, Value)>;

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=())",
        "The gradient of fun (which returns a scalar) with respect to argument argnums \
         (an int, or a tuple of ints for a tuple of gradients). With has_aux, fun returns \
         (value, aux) and the gradient function returns (grad, aux). With holomorphic, \
         fun maps complex inputs to a complex output and grad is its complex derivative. \
         allow_int and reduce_axes are accepted; integer arguments still have no gradient.",
        |_, a| make_grad(a, false),
    );
    r.func(
        "value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=())",
        "Like grad, but the function returns (value, grad) (or ((value, aux), grad) with has_aux).",
        |_, a| make_grad(a, true),
    );
    r.func(
        "jvp(fun, primals, tangents)",
        "Forward mode: (fun(*primals), the derivative of fun at primals along tangents).",
        jvp_,
    );
    r.func(
        "vjp(fun, *primals, has_aux=False)",
        "Reverse mode: (fun(*primals), vjp_fun), where vjp_fun(cotangent) returns a tuple \
         of cotangents, one per primal.",
        vjp_,
    );
    r.func(
        "saved_residuals(f, *args, **kwargs)",
        "What reverse mode keeps from fun(*args) for the backward pass, as \
         jax.ad_checkpoint.saved_residuals: a list of (type, description), each an array \
         of an argument or one computed in the forward pass. arr keeps every residual \
         (checkpoint policies do not rematerialise), so this lists them all.",
        saved_residuals,
    );
    r.func(
        "linearize(fun, *primals)",
        "(fun(*primals), f_jvp), where f_jvp(*tangents) applies the derivative at primals.",
        linearize_,
    );
    r.func(
        "jacfwd(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False)",
        "The Jacobian of fun by forward mode (a jvp per input element, batched by vmap).",
        |_, a| make_jacobian(a, Mode::Fwd),
    );
    r.func(
        "jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False)",
        "The Jacobian of fun by reverse mode (a vjp per output element, batched by vmap).",
        |_, a| make_jacobian(a, Mode::Rev),
    );
    r.func(
        "jacobian(fun, argnums=0)",
        "The Jacobian of fun (reverse mode, as jacrev).",
        |_, a| make_jacobian(a, Mode::Rev),
    );
    r.func(
        "hessian(fun, argnums=0)",
        "The Hessian of a scalar function: jacfwd(jacrev(fun)).",
        |_, a| {
            let inner = make_jacobian(a.clone(), Mode::Rev)?;
            make_jacobian(vec![inner, a[1].clone()], Mode::Fwd)
        },
    );
    r.func(
        "vmap(fun, in_axes=0, out_axes=0, axis_size=None, axis_name=None, spmd_axis_name=None)",
        "Vectorise fun over an axis of its arguments: in_axes gives the mapped axis of each \
         argument (an int, None for an argument shared by all examples, or a tuple with one \
         entry per argument, each of which may be a pytree of axes); out_axes places the \
         mapped axis in the outputs. With axis_name, collectives (psum, all_gather...) \
         inside fun can name the mapped axis. (spmd_axis_name is accepted: the mapped axis \
         keeps the layout its operands give it.)",
        make_vmap,
    );
    r.func(
        "eval_shape(fun, *args, **kwargs)",
        "fun's outputs as ShapeDtypeStructs, from the arguments' shapes and dtypes alone \
         (arrays or ShapeDtypeStructs): nothing is computed.",
        eval_shape,
    );
    r.func(
        "make_jaxpr(fun)",
        "A function returning the IR that fun's computation traces to, for arguments like the given ones (a ClosedJaxpr: its text, with str's methods).",
        make_jaxpr,
    );
    r.func(
        "stop_gradient(x)",
        "x, treated as a constant by differentiation (its tangent is zero).",
        |_, a| {
            map_leaves(&a[0], &mut |leaf| match leaf {
                Value::Array(t) => Ok(Value::Array(jvp::stop_gradient(t))),
                other => Ok(other.clone()),
            })
        },
    );
    r.func(
        "custom_jvp(fun=None, nondiff_argnums=())",
        "fun with a derivative rule of your own: decorate the rule with @f.defjvp; it \
         receives (primals, tangents) tuples and returns (primal_out, tangent_out), linear in \
         the tangents. Used under jvp, grad, vmap and their compositions. The arguments at \
         nondiff_argnums (functions, Python values) come first to the rule, outside the tuples.",
        custom_jvp_,
    );
    r.func(
        "custom_vjp(fun=None, nondiff_argnums=())",
        "fun with a reverse-mode rule of your own: f.defvjp(fwd, bwd), where fwd(*args) \
         returns (out, residuals) and bwd(residuals, cotangent) returns a tuple with one \
         cotangent per argument. The arguments at nondiff_argnums come first to bwd and get \
         no cotangent.",
        custom_vjp_,
    );
    r.func(
        "cond(pred, true_fun, false_fun, *operands)",
        "true_fun(*operands) if pred else false_fun(*operands), where pred may be traced: \
         both branches are traced and must return the same types.",
        cond_,
    );
    r.func(
        "switch(index, branches, *operands)",
        "branches[index](*operands), with index clamped to the valid range; index may be traced.",
        switch_,
    );
    r.func(
        "while_loop(cond_fun, body_fun, init_val)",
        "Repeat val = body_fun(val) while cond_fun(val); val is a pytree whose types stay fixed. \
         Differentiable in forward mode only.",
        while_loop_,
    );
    r.func(
        "fori_loop(lower, upper, body_fun, init_val, unroll=None)",
        "Repeat val = body_fun(i, val) for i in range(lower, upper). With Python int bounds it \
         is a scan, so reverse-mode differentiable. unroll is accepted (speed only).",
        fori_loop_,
    );
    r.func(
        "scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False)",
        "Loop carry, y = f(carry, x) over the leading axis of xs (a pytree); returns \
         (final carry, stacked ys). unroll (steps per iteration of the compiled loop) is \
         accepted for JAX's programs: it changes speed only, and arr's compiler decides that.",
        scan_,
    );
    r.func(
        "check_grads(f, args, order=2, modes=('fwd', 'rev'), eps=0.0001, atol=0.001, rtol=0.001)",
        "Check f's derivatives up to `order` against finite differences (forward mode) and \
         against the forward mode (reverse mode), in float64. Raises AssertionError on a mismatch.",
        check_grads_,
    );
}

// ---------------------------------------------------------------------------
// Pytrees of tensors

/// The leaves of a pytree as tensors (numbers and nested lists of numbers
/// are leaves too, converted as `array` would).
fn flatten(v: &Value) -> Result<Vec<Tensor>> {
    leaves(v)?
        .iter()
        .map(|leaf| {
            // An array per leaf: millions of leaves must not exhaust memory unseen.
            arr_runtime::prim::check_interrupt()?;
            numpy::to_tensor(leaf)
        })
        .collect()
}

pub(crate) fn flatten_tree(v: &Value) -> Result<Vec<Tensor>> {
    flatten(v)
}

pub(crate) fn unflatten_tree(template: &Value, ts: &[Tensor]) -> Result<Value> {
    unflatten(template, ts)
}

/// `template` with its leaves replaced, in order, by `ts`.
fn unflatten(template: &Value, ts: &[Tensor]) -> Result<Value> {
    let mut it = ts.iter();
    map_leaves(template, &mut |_| {
        Ok(Value::Array(
            it.next()
                .ok_or_else(|| Error::value_error("pytree has fewer leaves than expected"))?
                .clone(),
        ))
    })
}

/// argnums as a list, and whether it was a single int.
fn parse_argnums(v: &Value) -> Result<(Vec<usize>, bool)> {
    match v {
        Value::Tuple(_) | Value::List(_) => {
            let items = numpy::sequence_items(v)?;
            let nums = items
                .iter()
                .map(|x| int_arg("argnums", x).map(|i| i as usize))
                .collect::<Result<Vec<_>>>()?;
            Ok((nums, false))
        }
        other => Ok((vec![int_arg("argnums", other)? as usize], true)),
    }
}

fn check_argnums(argnums: &[usize], n: usize, what: &str) -> Result<()> {
    // JAX: a TypeError, as a call with too few arguments is.
    if let Some(&bad) = argnums.iter().find(|&&i| i >= n) {
        return Err(Error::type_error(format!(
            "{what}: argnums {bad} is out of range for a function called with {n} positional arguments"
        )));
    }
    Ok(())
}

/// Point an error about what `f` returned at its `return` (or definition);
/// the call site follows in the traceback.
fn at_def(e: Error, f: &Value) -> Error {
    match f {
        Value::Function(func) => e.at(|| arr_runtime::error::Loc {
            file: func.code.file.clone(),
            span: func.code.result_span(),
            func: func.code.name.clone(),
        }),
        _ => e,
    }
}

pub(crate) fn func_name(f: &Value) -> String {
    match f {
        Value::Function(func) => func.code.name.to_string(),
        Value::Builtin(b) => b.name.to_string(),
        Value::Native(n) => n.name.clone(),
        _ => "function".into(),
    }
}

/// The positional arguments, with those in `argnums` flattened to tensors.
struct DiffArgs {
    args: Vec<Value>,
    argnums: Vec<usize>,
    counts: Vec<usize>,
    primals: Vec<Tensor>,
}

impl DiffArgs {
    fn new(args: Vec<Value>, argnums: Vec<usize>, what: &str) -> Result<DiffArgs> {
        check_argnums(&argnums, args.len(), what)?;
        let mut counts = Vec::new();
        let mut primals = Vec::new();
        for &i in &argnums {
            let mut ts = flatten(&args[i])?;
            // A JAX program without x64 differentiates NumPy's float64
            // arrays as float32 ones, as JAX's canonical dtypes (and jit).
            if numpy::jax_32bit() {
                ts = ts
                    .into_iter()
                    .map(crate::jit::canonical)
                    .collect::<Result<_>>()?;
            }
            counts.push(ts.len());
            primals.extend(ts);
        }
        Ok(DiffArgs {
            args,
            argnums,
            counts,
            primals,
        })
    }

    /// The arguments with the differentiated ones rebuilt from `ts`.
    fn with(&self, ts: &[Tensor]) -> Result<Vec<Value>> {
        let mut args = self.args.clone();
        let mut offset = 0;
        for (&i, &n) in self.argnums.iter().zip(&self.counts) {
            args[i] = unflatten(&self.args[i], &ts[offset..offset + n])?;
            offset += n;
        }
        Ok(args)
    }

    /// Per differentiated argument, its pytree rebuilt from `ts`.
    fn split(&self, ts: &[Tensor]) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut offset = 0;
        for (&i, &n) in self.argnums.iter().zip(&self.counts) {
            out.push(unflatten(&self.args[i], &ts[offset..offset + n])?);
            offset += n;
        }
        Ok(out)
    }
}

/// Call `f` and flatten its output; the output's structure goes to `shape`.
fn call_flat(
    interp: &mut Interp,
    f: &Value,
    args: Vec<Value>,
    kwargs: Kwargs,
    shape: &RefCell<Value>,
) -> Result<Vec<Tensor>> {
    let out = interp.call(f, args, kwargs)?;
    let ts = flatten(&out)?;
    *shape.borrow_mut() = out;
    Ok(ts)
}

// ---------------------------------------------------------------------------
// grad and value_and_grad

fn make_grad(a: Vec<Value>, with_value: bool) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let (argnums, single) = parse_argnums(&a[1])?;
    let has_aux = a[2].truthy()?;
    let holomorphic = a[3].truthy()?;
    let name = format!(
        "{}({})",
        if with_value { "value_and_grad" } else { "grad" },
        func_name(&f)
    );
    let key = format!(
        "{}(argnums={}, has_aux={has_aux}, holomorphic={holomorphic})",
        if with_value { "value_and_grad" } else { "grad" },
        display::repr(&a[1])
    );
    Ok(NativeClosure::transformed(
        name,
        key,
        f.clone(),
        move |interp, args, kwargs| {
            let how = GradHow {
                has_aux,
                with_value,
                holomorphic,
            };
            grad_call(interp, &f, &argnums, single, how, args, kwargs)
        },
    ))
}

/// The options of one `grad` or `value_and_grad`.
#[derive(Clone, Copy)]
struct GradHow {
    has_aux: bool,
    with_value: bool,
    holomorphic: bool,
}

/// JAX's check of `holomorphic=True`: every input leaf is complex.
fn check_holomorphic(what: &str, primals: &[Tensor]) -> Result<()> {
    if let Some(p) = primals.iter().find(|p| !p.dtype().is_complex()) {
        return Err(Error::type_error(format!(
            "{what} with holomorphic=True requires inputs with complex dtype, but got {}",
            type_str(p.shape(), p.dtype())
        )));
    }
    Ok(())
}

fn grad_call(
    interp: &mut Interp,
    f: &Value,
    argnums: &[usize],
    single: bool,
    how: GradHow,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    let GradHow {
        has_aux,
        with_value,
        holomorphic,
    } = how;
    let what = if with_value { "value_and_grad" } else { "grad" };
    let d = DiffArgs::new(args, argnums.to_vec(), what)?;
    if holomorphic {
        check_holomorphic(what, &d.primals)?;
    }
    for (k, p) in d.primals.iter().enumerate() {
        if !p.dtype().is_inexact() {
            let arg = argnums[d
                .counts
                .iter()
                .scan(0, |s, &c| {
                    *s += c;
                    Some(*s)
                })
                .position(|end| k < end)
                .unwrap_or(0)];
            return Err(Error::type_error(format!(
                "{what} requires float inputs, but argument {arg} has a leaf of type {} \
                 (differentiate with respect to float arrays; convert with x.astype(float32))",
                type_str(p.shape(), p.dtype())
            )));
        }
    }
    let shape = RefCell::new(Value::None);
    let aux_shape = RefCell::new(Value::None);
    let n_out = RefCell::new(0);
    let (outs, lin) = linear::linearize(
        |ts| {
            let out = interp.call(f, d.with(&ts)?, kwargs)?;
            let (main, aux) = if has_aux {
                match &out {
                    Value::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                    other => {
                        return Err(Error::type_error(format!(
                        "{what} with has_aux=True needs fun to return a pair (output, aux), got {}",
                        other.type_name()
                    )))
                    }
                }
            } else {
                (out, Value::None)
            };
            let mut flat = flatten(&main)?;
            *n_out.borrow_mut() = flat.len();
            flat.extend(flatten(&aux)?);
            *shape.borrow_mut() = main;
            *aux_shape.borrow_mut() = aux;
            Ok(flat)
        },
        d.primals.clone(),
    )?;
    let n_out = n_out.into_inner();
    if n_out != 1 || !outs[0].shape().is_empty() || !outs[0].dtype().is_inexact() {
        let got = if n_out == 1 {
            type_str(outs[0].shape(), outs[0].dtype())
        } else {
            format!("a pytree with {n_out} leaves")
        };
        let e = Error::type_error(format!(
            "{what} requires fun to return a float scalar (use vjp or jacrev otherwise), got {got}"
        ));
        return Err(at_def(e, f));
    }
    if outs[0].dtype().is_complex() && !holomorphic {
        let e = Error::type_error(format!(
            "{what} requires real-valued outputs (output dtype that is a sub-dtype of \
             np.floating), but got {}. For holomorphic differentiation, pass \
             holomorphic=True. For differentiation of non-holomorphic functions involving \
             complex outputs, use jax.vjp directly.",
            outs[0].dtype()
        ));
        return Err(at_def(e, f));
    }
    if holomorphic && !outs[0].dtype().is_complex() {
        let e = Error::type_error(format!(
            "{what} with holomorphic=True requires outputs with complex dtype, but got {}",
            outs[0].dtype()
        ));
        return Err(at_def(e, f));
    }
    let mut cts = vec![Some(ops::lit(1.0, &outs[0]))];
    cts.extend(std::iter::repeat_n(None, outs.len() - 1));
    let grads = lin.transpose(&cts)?;
    let per_arg = d.split(&grads)?;
    let g = if single {
        per_arg.into_iter().next().expect("one argnum")
    } else {
        Value::tuple(per_arg)
    };
    let value = Value::Array(outs[0].clone());
    let aux = unflatten(&aux_shape.into_inner(), &outs[1..])?;
    Ok(match (with_value, has_aux) {
        (false, false) => g,
        (false, true) => Value::tuple(vec![g, aux]),
        (true, false) => Value::tuple(vec![value, g]),
        (true, true) => Value::tuple(vec![Value::tuple(vec![value, aux]), g]),
    })
}

// ---------------------------------------------------------------------------
// jvp, vjp, linearize

fn pytree_items(v: &Value, what: &str) -> Result<Vec<Value>> {
    match v {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v),
        other => Err(Error::type_error(format!(
            "{what} must be a tuple or list (one entry per argument), got {}",
            other.type_name()
        ))),
    }
}

fn check_same_types(what: &str, a: &[Tensor], b: &[Tensor]) -> Result<()> {
    if a.len() != b.len() {
        return Err(Error::value_error(format!(
            "{what}: the structures differ ({} leaves and {} leaves)",
            a.len(),
            b.len()
        )));
    }
    for (x, y) in a.iter().zip(b) {
        if x.shape() != y.shape() {
            return Err(Error::shape_error(format!(
                "{what}: shapes differ: {} and {}",
                type_str(x.shape(), x.dtype()),
                type_str(y.shape(), y.dtype())
            )));
        }
    }
    Ok(())
}

fn jvp_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let primals = pytree_items(&a[1], "jvp: primals")?;
    let tangents = pytree_items(&a[2], "jvp: tangents")?;
    // JAX: primals and tangents of different tree structure are a TypeError.
    if primals.len() != tangents.len() {
        return Err(Error::type_error(format!(
            "jvp: {} primals but {} tangents",
            primals.len(),
            tangents.len()
        )));
    }
    let argnums: Vec<usize> = (0..primals.len()).collect();
    let d = DiffArgs::new(primals, argnums, "jvp")?;
    let mut ts = Vec::new();
    for t in &tangents {
        ts.extend(flatten(t)?);
    }
    check_same_types("jvp: primal and tangent", &d.primals, &ts)?;
    let tangents = d
        .primals
        .iter()
        .zip(ts)
        .map(|(p, t)| {
            // JAX wants a float tangent of the primal's dtype for a float primal
            // and a float0 one for an integer primal; with no float0 dtype, an
            // integer tangent stands for it (and is zero: integers do not move).
            if p.dtype().is_inexact() != t.dtype().is_inexact() {
                return Err(Error::type_error(format!(
                    "jvp: primal and tangent arguments do not match: a {} primal needs {} tangent, got {}",
                    type_str(p.shape(), p.dtype()),
                    if p.dtype().is_inexact() { "a float" } else { "an integer (float0)" },
                    type_str(t.shape(), t.dtype())
                )));
            }
            if p.dtype().is_inexact() {
                ops::convert(&t, p.dtype()).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let shape = RefCell::new(Value::None);
    let (outs, touts) = jvp::jvp(
        |xs| call_flat(interp, &f, d.with(&xs)?, Vec::new(), &shape),
        d.primals.clone(),
        tangents,
    )?;
    let touts = touts
        .iter()
        .zip(&outs)
        .map(|(t, o)| jvp::instantiate(t, o))
        .collect::<Result<Vec<_>>>()?;
    let shape = shape.into_inner();
    Ok(Value::tuple(vec![
        unflatten(&shape, &outs)?,
        unflatten(&shape, &touts)?,
    ]))
}

/// What `vjp` and `linearize` keep: the output and aux pytrees, the linear
/// map, the arguments' structure, and how many outputs are not aux.
type Linearized = (Value, Value, Rc<linear::LinearFn>, Rc<DiffArgs>, usize);

fn linearized(
    interp: &mut Interp,
    f: &Value,
    primals: Vec<Value>,
    has_aux: bool,
    what: &str,
) -> Result<Linearized> {
    let argnums: Vec<usize> = (0..primals.len()).collect();
    let d = Rc::new(DiffArgs::new(primals, argnums, what)?);
    let shape = RefCell::new(Value::None);
    let aux_shape = RefCell::new(Value::None);
    let n_main = RefCell::new(0);
    let (outs, lin) = linear::linearize(
        |ts| {
            let out = interp.call(f, d.with(&ts)?, Vec::new())?;
            let (main, aux) = match (&out, has_aux) {
                (Value::Tuple(t), true) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                (_, true) => {
                    return Err(Error::type_error(format!(
                        "{what} with has_aux=True needs fun to return a pair (output, aux)"
                    )))
                }
                _ => (out, Value::None),
            };
            let mut flat = flatten(&main)?;
            *n_main.borrow_mut() = flat.len();
            flat.extend(flatten(&aux)?);
            *shape.borrow_mut() = main;
            *aux_shape.borrow_mut() = aux;
            Ok(flat)
        },
        d.primals.clone(),
    )?;
    let n_main = n_main.into_inner();
    let out = unflatten(&shape.borrow(), &outs[..n_main])?;
    let aux = unflatten(&aux_shape.borrow(), &outs[n_main..])?;
    Ok((out, aux, Rc::new(lin), d, n_main))
}

fn vjp_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let primals = numpy::sequence_items(&a[1])?;
    let has_aux = a[2].truthy()?;
    let (out, aux, lin, d, n_main) = linearized(interp, &f, primals, has_aux, "vjp")?;
    let out_template = out.clone();
    let n_total = lin.out_avals.len();
    let pullback = NativeClosure::value(format!("vjp({})", func_name(&f)), move |_, args, _| {
        if args.len() != 1 {
            return Err(Error::type_error(format!(
                "the vjp function takes one cotangent (with the structure of the output), got {} arguments",
                args.len()
            )));
        }
        let cts = flatten(&args[0])?;
        let outs = flatten(&out_template)?;
        check_same_types("vjp: cotangent and output", &outs, &cts)?;
        let mut cts: Vec<Option<Tensor>> = cts
            .iter()
            .zip(&outs)
            .map(|(c, o)| ops::convert(c, o.dtype()).map(Some))
            .collect::<Result<_>>()?;
        cts.extend(std::iter::repeat_n(None, n_total - n_main));
        let in_cts = lin.transpose(&cts)?;
        Ok(Value::tuple(d.split(&in_cts)?))
    });
    Ok(if has_aux {
        Value::tuple(vec![out, pullback, aux])
    } else {
        Value::tuple(vec![out, pullback])
    })
}

fn saved_residuals(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let primals = numpy::sequence_items(&a[1])?;
    let names: Vec<Rc<str>> = match &f {
        Value::Function(func) => func.code.params.iter().map(|p| p.name.clone()).collect(),
        _ => Vec::new(),
    };
    let (_, _, lin, d, _) = linearized(interp, &f, primals, false, "saved_residuals")?;
    // Each flat primal leaf: its argument, and its place among that argument's leaves.
    let mut owners = Vec::new();
    for (i, &n) in d.counts.iter().enumerate() {
        owners.extend((0..n).map(|k| (i, k, n)));
    }
    // JAX lists the arguments first, each once and as it was passed (arr
    // may keep a reshaped view of one), then what the forward pass computed.
    let mut from_args = Vec::new();
    let mut computed = Vec::new();
    for c in &lin.consts {
        let arg = match c {
            Tensor::Concrete(x) => d
                .primals
                .iter()
                .position(|p| matches!(p, Tensor::Concrete(y) if y.same_buffer(x))),
            Tensor::Traced(_) => None,
        };
        match arg {
            Some(j) if !from_args.contains(&j) => from_args.push(j),
            Some(_) => {}
            None => computed.push(type_str(c.shape(), c.dtype())),
        }
    }
    from_args.sort_unstable();
    let row = |ty: String, what: String| Value::tuple(vec![Value::str(&ty), Value::str(&what)]);
    let mut rows: Vec<Value> = from_args
        .into_iter()
        .map(|j| {
            let (i, k, n) = owners[j];
            let name = names
                .get(i)
                .map_or_else(|| format!("argument {i}"), |n| n.to_string());
            let leaf = if n > 1 {
                format!(" (leaf {k})")
            } else {
                String::new()
            };
            let p = &d.primals[j];
            row(
                type_str(p.shape(), p.dtype()),
                format!("from the argument {name}{leaf}"),
            )
        })
        .collect();
    rows.extend(
        computed
            .into_iter()
            .map(|ty| row(ty, "computed in the forward pass".into())),
    );
    Ok(Value::list(rows))
}

fn linearize_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let primals = numpy::sequence_items(&a[1])?;
    let (out, _, lin, d, _) = linearized(interp, &f, primals, false, "linearize")?;
    let out_template = out.clone();
    let f_jvp = NativeClosure::value(
        format!("linearize({})", func_name(&f)),
        move |_, args, _| {
            let mut ts = Vec::new();
            for t in &args {
                ts.extend(flatten(t)?);
            }
            check_same_types("linearize: tangent and primal", &d.primals, &ts)?;
            let outs = lin.apply(&ts)?;
            unflatten(&out_template, &outs)
        },
    );
    Ok(Value::tuple(vec![out, f_jvp]))
}

// ---------------------------------------------------------------------------
// Jacobians

#[derive(Clone, Copy)]
enum Mode {
    Fwd,
    Rev,
}

fn make_jacobian(a: Vec<Value>, mode: Mode) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let (argnums, single) = parse_argnums(&a[1])?;
    // hessian passes (fun, argnums) alone.
    let flag = |i: usize| a.get(i).map_or(Ok(false), Value::truthy);
    if flag(2)? {
        return Err(Error::type_error(
            "jacfwd/jacrev with has_aux=True are not supported yet; return the auxiliary \
             value from a separate call",
        ));
    }
    let holomorphic = flag(3)?;
    let name = format!(
        "{}({})",
        match mode {
            Mode::Fwd => "jacfwd",
            Mode::Rev => "jacrev",
        },
        func_name(&f)
    );
    let key = format!("{name}(argnums={})", display::repr(&a[1]));
    Ok(NativeClosure::transformed(
        name,
        key,
        f.clone(),
        move |interp, args, kwargs| {
            jacobian_call(
                interp,
                &f,
                &argnums,
                (single, holomorphic),
                mode,
                args,
                kwargs,
            )
        },
    ))
}

/// An identity basis for tensors of these types: `size` rows, one per
/// element in total, each tensor of shape [size, *shape].
fn basis(like: &[Tensor], dtype_of: impl Fn(&Tensor) -> DType) -> Result<(usize, Vec<Tensor>)> {
    let total: usize = like.iter().map(Tensor::len).sum();
    let mut offset = 0;
    let mut out = Vec::new();
    for t in like {
        let n = t.len();
        // eye(total)[:, offset:offset+n] reshaped to [total, *shape].
        let rows = ops::iota(DType::I32, &[total, n], 0)?;
        let cols = ops::iota(DType::I32, &[total, n], 1)?;
        let shifted = ops::add(&cols, &ops::scalar(offset as f64, DType::I32))?;
        let eq = ops::binary(arr_kernels::BinaryOp::Eq, &rows, &shifted)?;
        let e = ops::convert(&eq, dtype_of(t))?;
        let mut shape = vec![total];
        shape.extend_from_slice(t.shape());
        out.push(ops::reshape(&e, &shape)?);
        offset += n;
    }
    Ok((total, out))
}

fn jacobian_call(
    interp: &mut Interp,
    f: &Value,
    argnums: &[usize],
    (single, holomorphic): (bool, bool),
    mode: Mode,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    let d = DiffArgs::new(args, argnums.to_vec(), "jacobian")?;
    if holomorphic {
        let what = match mode {
            Mode::Fwd => "jacfwd",
            Mode::Rev => "jacrev",
        };
        check_holomorphic(what, &d.primals)?;
    }
    for p in &d.primals {
        if !p.dtype().is_inexact() {
            return Err(Error::type_error(format!(
                "jacobian requires float inputs, got {}",
                type_str(p.shape(), p.dtype())
            )));
        }
    }
    let shape = RefCell::new(Value::None);
    // blocks[o][i]: the Jacobian block of output leaf o by input leaf i,
    // with shape out.shape + in.shape.
    let (outs, blocks) = match mode {
        Mode::Fwd => {
            let (n, basis) = basis(&d.primals, Tensor::dtype)?;
            let mut outs = Vec::new();
            let cols = batch::vmap(
                |vs| {
                    let tangents = vs.into_iter().map(Some).collect();
                    let (o, ts) = jvp::jvp(
                        |xs| call_flat(interp, f, d.with(&xs)?, kwargs.clone(), &shape),
                        d.primals.clone(),
                        tangents,
                    )?;
                    let ts = ts
                        .iter()
                        .zip(&o)
                        .map(|(t, o)| jvp::instantiate(t, o))
                        .collect::<Result<Vec<_>>>()?;
                    outs = o;
                    Ok(ts)
                },
                basis,
                &vec![Some(0); d.primals.len()],
                n,
                |_| Some(0),
            )?;
            // cols[o]: [n, *out_shape] → per input leaf, out_shape + in_shape.
            let mut blocks = Vec::new();
            for c in &cols {
                let moved = ops::moveaxis(c, 0, c.ndim() - 1)?;
                let mut row = Vec::new();
                let mut offset = 0;
                for p in &d.primals {
                    let part = slice_last(&moved, offset, offset + p.len())?;
                    let mut s = moved.shape()[..moved.ndim() - 1].to_vec();
                    s.extend_from_slice(p.shape());
                    row.push(ops::reshape(&part, &s)?);
                    offset += p.len();
                }
                blocks.push(row);
            }
            (outs, blocks)
        }
        Mode::Rev => {
            let (outs, lin) = linear::linearize(
                |xs| call_flat(interp, f, d.with(&xs)?, kwargs.clone(), &shape),
                d.primals.clone(),
            )?;
            let (m, basis) = basis(&outs, |o| {
                if o.dtype().is_inexact() {
                    o.dtype()
                } else {
                    DType::F32
                }
            })?;
            let rows = batch::vmap(
                |cs| lin.transpose(&cs.into_iter().map(Some).collect::<Vec<_>>()),
                basis,
                &vec![Some(0); outs.len()],
                m,
                |_| Some(0),
            )?;
            // rows[i]: [m, *in_shape] → per output leaf, out_shape + in_shape.
            let mut blocks = vec![Vec::new(); outs.len()];
            for (r, p) in rows.iter().zip(&d.primals) {
                let mut offset = 0;
                for (k, o) in outs.iter().enumerate() {
                    let mut start = vec![0; r.ndim()];
                    let mut limit = r.shape().to_vec();
                    start[0] = offset;
                    limit[0] = offset + o.len();
                    let part = arr_runtime::prim::bind1(
                        &arr_runtime::prim::Prim::Slice {
                            start,
                            limit,
                            stride: vec![1; r.ndim()],
                        },
                        [r.clone()],
                    )?;
                    let mut s = o.shape().to_vec();
                    s.extend_from_slice(p.shape());
                    blocks[k].push(ops::reshape(&part, &s)?);
                    offset += o.len();
                }
            }
            (outs, blocks)
        }
    };
    let out_shape = shape.into_inner();
    let _ = outs;
    // Output structure: the output pytree, each leaf holding the input
    // structure (one pytree, or a tuple of them for several argnums).
    let mut k = 0;
    map_leaves(&out_shape, &mut |_| {
        let row = &blocks[k];
        k += 1;
        let per_arg = d.split(row)?;
        Ok(if single {
            per_arg.into_iter().next().expect("one argnum")
        } else {
            Value::tuple(per_arg)
        })
    })
}

fn slice_last(t: &Tensor, from: usize, to: usize) -> Result<Tensor> {
    let n = t.ndim();
    let mut start = vec![0; n];
    let mut limit = t.shape().to_vec();
    start[n - 1] = from;
    limit[n - 1] = to;
    arr_runtime::prim::bind1(
        &arr_runtime::prim::Prim::Slice {
            start,
            limit,
            stride: vec![1; n],
        },
        [t.clone()],
    )
}

// ---------------------------------------------------------------------------
// vmap

/// Per leaf of `tree`, the axis from `spec`: an int or None applies to the
/// whole subtree; a container matches the tree's container.
pub(crate) fn axes_for(spec: &Value, tree: &Value, out: &mut Vec<Option<i64>>) -> Result<()> {
    match (spec, tree) {
        (Value::None, _) => {
            out.extend(std::iter::repeat_n(None, leaves(tree)?.len()));
            Ok(())
        }
        (Value::Int(_) | Value::Bool(_), _) => {
            let a = spec.as_int();
            out.extend(std::iter::repeat_n(a, leaves(tree)?.len()));
            Ok(())
        }
        (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_)) => {
            let s = numpy::sequence_items(spec)?;
            let t = numpy::sequence_items(tree)?;
            if s.len() != t.len() {
                return Err(Error::value_error(format!(
                    "vmap: in_axes has {} entries for a container of {}",
                    s.len(),
                    t.len()
                )));
            }
            for (s, t) in s.iter().zip(&t) {
                axes_for(s, t, out)?;
            }
            Ok(())
        }
        (Value::Dict(s), Value::Dict(t)) => {
            let mut keys: Vec<_> = t.borrow().keys().cloned().collect();
            keys.sort();
            for k in keys {
                let sv = s.borrow().get(&k).cloned().ok_or_else(|| {
                    Error::value_error("vmap: in_axes dict is missing a key of the argument")
                })?;
                let tv = t.borrow()[&k].clone();
                axes_for(&sv, &tv, out)?;
            }
            Ok(())
        }
        _ => Err(Error::value_error(format!(
            "vmap: the axes spec {} does not match an argument of type {}",
            arr_runtime::display::repr(spec),
            tree.type_name()
        ))),
    }
}

fn make_vmap(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let (in_axes, out_axes, axis_size) = (a[1].clone(), a[2].clone(), a[3].clone());
    let axis_name: Option<Arc<str>> = match &a[4] {
        Value::None => None,
        Value::Str(s) => Some(Arc::from(s.as_str())),
        other => {
            return Err(Error::type_error(format!(
                "vmap: axis_name must be a string, not {}",
                other.type_name()
            )))
        }
    };
    let name = format!("vmap({})", func_name(&f));
    let key = format!(
        "vmap(in_axes={}, out_axes={}, axis_size={}, axis_name={})",
        display::repr(&in_axes),
        display::repr(&out_axes),
        display::repr(&axis_size),
        display::repr(&a[4])
    );
    Ok(NativeClosure::transformed(
        name,
        key,
        f.clone(),
        move |interp, args, kwargs| {
            let spec = MapSpec {
                in_axes: &in_axes,
                out_axes: &out_axes,
                axis_size: &axis_size,
                what: "vmap",
            };
            vmap_call(interp, &f, &spec, args, kwargs, axis_name.clone())
        },
    ))
}

/// How a mapped call (`vmap`, `pmap`) maps its arguments and results.
pub(crate) struct MapSpec<'a> {
    pub in_axes: &'a Value,
    pub out_axes: &'a Value,
    pub axis_size: &'a Value,
    /// The transformation's name, for messages.
    pub what: &'static str,
}

/// The arguments of a mapped call, flattened: the argument tree, its
/// leaves, each leaf's mapped axis, and the mapped size.
pub(crate) type Mapped = (Value, Vec<Tensor>, Vec<Option<usize>>, usize);

pub(crate) fn map_args(spec: &MapSpec, args: &[Value]) -> Result<Mapped> {
    let (in_axes, axis_size, what) = (spec.in_axes, spec.axis_size, spec.what);
    let args_tree = Value::tuple(args.to_vec());
    let spec = match in_axes {
        Value::Tuple(_) | Value::List(_) => in_axes.clone(),
        other => Value::tuple(vec![other.clone(); args.len()]),
    };
    if let Value::Tuple(_) | Value::List(_) = in_axes {
        let n = numpy::sequence_items(in_axes)?.len();
        if n != args.len() {
            return Err(Error::value_error(format!(
                "{what}: in_axes has {n} entries but the function was called with {} arguments",
                args.len()
            )));
        }
    }
    let mut axes = Vec::new();
    axes_for(&spec, &args_tree, &mut axes)?;
    let flat = flatten(&args_tree)?;
    let mut size: Option<(usize, String)> = None;
    let mut dims = Vec::new();
    for (k, (t, ax)) in flat.iter().zip(&axes).enumerate() {
        let d = match ax {
            None => None,
            Some(a) => {
                let d = numpy::normalize_axis(*a, t.ndim()).map_err(|_| {
                    Error::value_error(format!(
                        "{what}: in_axes {a} is out of range for an argument of type {}",
                        type_str(t.shape(), t.dtype())
                    ))
                })?;
                let n = t.shape()[d];
                let desc = format!(
                    "argument leaf {k} ({}) has size {n} at axis {d}",
                    type_str(t.shape(), t.dtype())
                );
                match &size {
                    None => size = Some((n, desc)),
                    Some((m, first)) if *m != n => {
                        return Err(Error::value_error(format!(
                            "{what} got inconsistent sizes for the mapped axis: {first}, but {desc}"
                        )))
                    }
                    _ => {}
                }
                Some(d)
            }
        };
        dims.push(d);
    }
    let size = match (size, axis_size) {
        (Some((n, _)), _) => n,
        (None, Value::None) => {
            return Err(Error::value_error(format!(
                "{what}: no argument is mapped (all in_axes are None); give axis_size"
            )))
        }
        (None, v) => int_arg("axis_size", v)? as usize,
    };
    Ok((args_tree, flat, dims, size))
}

/// The mapped axis of each output leaf, from `out_axes` and the output tree.
pub(crate) fn out_dims(out_axes: &Value, out_tree: &Value) -> Result<Vec<Option<i64>>> {
    let mut od = Vec::new();
    axes_for(out_axes, out_tree, &mut od)?;
    Ok(od)
}

pub(crate) fn vmap_call(
    interp: &mut Interp,
    f: &Value,
    spec: &MapSpec,
    args: Vec<Value>,
    kwargs: Kwargs,
    axis_name: Option<Arc<str>>,
) -> Result<Value> {
    let (args_tree, flat, dims, size) = map_args(spec, &args)?;
    let out_axes = spec.out_axes;
    let shape = RefCell::new(Value::None);
    let out_dims: RefCell<Vec<Option<i64>>> = RefCell::new(Vec::new());
    let out_ranks: RefCell<Vec<usize>> = RefCell::new(Vec::new());
    let outs = batch::vmap_named(
        |ts| {
            let rebuilt = unflatten(&args_tree, &ts)?;
            let args = numpy::sequence_items(&rebuilt)?;
            let out = call_flat(interp, f, args, kwargs, &shape)?;
            let dims = self::out_dims(out_axes, &shape.borrow())?;
            let ranks: Vec<usize> = out.iter().map(|t| t.ndim() + 1).collect();
            // Each output's axis counts in its rank with the mapped axis.
            for (d, &rank) in dims.iter().zip(&ranks) {
                if let Some(d) = *d {
                    if d < -(rank as i64) || d >= rank as i64 {
                        return Err(Error::value_error(format!(
                            "vmap: out_axes {d} is out of bounds for an output of rank {rank} \
                             (the mapped axis included): it must be in [-{rank}, {rank})"
                        )));
                    }
                }
            }
            *out_dims.borrow_mut() = dims;
            *out_ranks.borrow_mut() = ranks;
            Ok(out)
        },
        flat,
        &dims,
        size,
        |i| {
            let od = out_dims.borrow();
            let rank = out_ranks.borrow().get(i).copied().unwrap_or(1);
            // Counted in the output's rank (the mapped axis included).
            od.get(i)
                .copied()
                .flatten()
                .map(|a| batch::out_axis(a, rank))
        },
        axis_name,
    )?;
    unflatten(&shape.into_inner(), &outs)
}

// ---------------------------------------------------------------------------
// make_jaxpr

/// `eval_shape(fun, *args, **kwargs)`: fun traced on the arguments' types
/// alone (arrays, numbers, or ShapeDtypeStructs, which have no values), its
/// outputs as ShapeDtypeStructs: nothing is computed or allocated.
fn eval_shape(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let tree = a[1].clone();
    let mut avals = Vec::new();
    // The arguments' layouts travel with their tracers, so the outputs'
    // shardings are what the computation gives (JAX's sharding-in-types).
    let mut layouts = Vec::new();
    for leaf in leaves(&tree)? {
        match &leaf {
            Value::Instance(_) => {
                let shape = numpy::parse_shape(&interp.attr(&leaf, "shape")?)?;
                let dtype = dtype_arg(&interp.attr(&leaf, "dtype")?)?
                    .ok_or_else(|| Error::type_error("eval_shape: a leaf's dtype is None"))?;
                let sharding = interp.attr(&leaf, "sharding").unwrap_or(Value::None);
                layouts.push(
                    match arr_runtime::sharding::resolve(&sharding, "eval_shape")? {
                        Some((mesh, spec)) => Some(Arc::new(spec.placement(&mesh, shape.len())?)),
                        None => None,
                    },
                );
                avals.push(arr_runtime::prim::Aval {
                    shape: shape.into(),
                    dtype,
                });
            }
            other => {
                let t = numpy::to_tensor(other)?;
                layouts.push(t.placement());
                avals.push(t.aval());
            }
        }
    }
    let kwargs = kwargs_of(&a[2]);
    let out = RefCell::new(Value::None);
    let out_layouts = RefCell::new(Vec::new());
    let closed = graph::trace_laid_out(&avals, &layouts, true, |ts| {
        let args = numpy::sequence_items(&unflatten(&tree, &ts)?)?;
        let outs = call_flat(interp, &f, args, kwargs, &out)?;
        *out_layouts.borrow_mut() = outs.iter().map(Tensor::placement).collect();
        Ok(outs)
    })?;
    let g = &closed.graph;
    let out_avals: Vec<arr_runtime::prim::Aval> = g
        .outvars
        .iter()
        .map(|o| match o {
            graph::Atom::Var(v) => g.types[*v].clone(),
            graph::Atom::Lit(l) => arr_runtime::prim::Aval::of(l),
        })
        .collect();
    let make = crate::builtin_named(interp, "ShapeDtypeStruct")?;
    let mut it = out_avals.into_iter().zip(out_layouts.into_inner());
    let template = out.borrow().clone();
    let context = arr_runtime::sharding::context_mesh();
    map_leaves(&template, &mut |_| {
        let (av, layout) = it
            .next()
            .ok_or_else(|| Error::value_error("eval_shape: fewer outputs than leaves"))?;
        let shape = Value::tuple(av.shape.iter().map(|&d| Value::Int(d as i64)).collect());
        // Under a context mesh every output has a sharding (replicated
        // unless the computation split it), as JAX's do.
        let layout = layout.or_else(|| {
            let mesh = context.clone()?;
            Some(Arc::new(arr_kernels::sharding::Placement {
                mesh,
                spec: vec![Vec::new(); av.shape.len()],
            }))
        });
        let kwargs = match layout {
            Some(p) => vec![(
                Rc::from("sharding"),
                arr_runtime::sharding::sharding_value(Some(p)),
            )],
            None => Vec::new(),
        };
        interp.call(&make, vec![shape, Value::DType(av.dtype)], kwargs)
    })
}

fn make_jaxpr(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    Ok(NativeClosure::value(
        format!("make_jaxpr({})", func_name(&f)),
        move |interp, args, kwargs| {
            let text = jaxpr_text(interp, &f, args, kwargs)?;
            // JAX's ClosedJaxpr: shown as its text, unquoted (`surface.arr`).
            match interp.get_global("_jaxpr_ClosedJaxpr") {
                Some(class) => interp.call(&class, vec![Value::str(&text)], Vec::new()),
                None => Ok(Value::str(&text)),
            }
        },
    ))
}

/// The IR text of `f` applied to arguments like `args`.
pub fn jaxpr_text(
    interp: &mut Interp,
    f: &Value,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<String> {
    let tree = Value::tuple(args);
    let flat = flatten(&tree)?
        .into_iter()
        .map(crate::jit::canonical)
        .collect::<Result<Vec<_>>>()?;
    let avals: Vec<_> = flat.iter().map(Tensor::aval).collect();
    let shape = RefCell::new(Value::None);
    let closed = graph::trace(&avals, true, |ts| {
        let args = numpy::sequence_items(&unflatten(&tree, &ts)?)?;
        call_flat(interp, f, args, kwargs, &shape)
    })?;
    // Unused work (the value under grad, say) is left out, as a compiler would.
    let closed = graph::ClosedGraph {
        graph: Arc::new(graph::dce(&closed.graph)),
        consts: closed.consts,
    };
    graph::typecheck(&closed.graph)?;
    Ok(closed.to_string())
}

// ---------------------------------------------------------------------------
// custom_jvp and custom_vjp

/// The output structure of a custom function, set by whichever of the
/// function or its rules ran.
type Template = Rc<RefCell<Value>>;

/// A user function over the flattened arguments (structure `args`),
/// flattening its output into `template`.
fn flat_fun(f: Value, args: Value, template: Template) -> custom::Fun {
    Rc::new(move |interp, ts| {
        let a = numpy::sequence_items(&unflatten(&args, &ts)?)?;
        let out = interp.call(&f, a, Vec::new())?;
        let flat = flatten(&out)?;
        *template.borrow_mut() = out;
        Ok(flat)
    })
}

fn pair(v: Value, what: &str) -> Result<(Value, Value)> {
    match &v {
        Value::Tuple(t) if t.len() == 2 => Ok((t[0].clone(), t[1].clone())),
        other => Err(Error::type_error(format!(
            "{what} must return a pair, got {}",
            other.type_name()
        ))),
    }
}

/// The arguments at nondiff_argnums, with their positions.
type Nondiff = Vec<(usize, Value)>;

/// `nondiff_argnums`: the arguments at those positions, taken out of
/// `args` (which keeps the others, in order).
fn split_nondiff(positions: &[i64], args: Vec<Value>) -> Result<(Nondiff, Vec<Value>)> {
    let n = args.len() as i64;
    let mut at = Vec::new();
    for &i in positions {
        let j = if i < 0 { i + n } else { i };
        if !(0..n).contains(&j) {
            return Err(Error::value_error(format!(
                "nondiff_argnums: position {i} is out of range for {n} arguments"
            )));
        }
        at.push(j as usize);
    }
    at.sort_unstable();
    at.dedup();
    let (mut nondiff, mut rest) = (Vec::new(), Vec::new());
    for (k, a) in args.into_iter().enumerate() {
        if at.contains(&k) {
            nondiff.push((k, a));
        } else {
            rest.push(a);
        }
    }
    Ok((nondiff, rest))
}

/// `f` as a function of the differentiated arguments only: the others are
/// put back at their positions.
fn over_diff_args(f: Value, nondiff: Rc<Nondiff>) -> Value {
    NativeClosure::value(func_name(&f), move |interp, diff, kwargs| {
        let mut all = diff;
        for (k, v) in nondiff.iter() {
            all.insert((*k).min(all.len()), v.clone());
        }
        interp.call(&f, all, kwargs)
    })
}

/// A rule that takes the non-differentiated arguments first (JAX's jvp and
/// bwd rules with nondiff_argnums).
fn nondiff_first(rule: Value, nondiff: Rc<Nondiff>) -> Value {
    NativeClosure::value(func_name(&rule), move |interp, rest, kwargs| {
        let mut all: Vec<Value> = nondiff.iter().map(|(_, v)| v.clone()).collect();
        all.extend(rest);
        interp.call(&rule, all, kwargs)
    })
}

/// `custom_jvp(nondiff_argnums=...)` used as a decorator factory.
fn decorator_factory(make: arr_runtime::NativeFn, a: Vec<Value>) -> Result<Value> {
    Ok(NativeClosure::value("decorator", move |interp, args, _| {
        let mut with_f = a.clone();
        with_f[0] = args
            .into_iter()
            .next()
            .ok_or_else(|| Error::type_error("the decorator takes the function"))?;
        make(interp, with_f)
    }))
}

fn custom_jvp_(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if matches!(a[0], Value::None) {
        return decorator_factory(custom_jvp_, a);
    }
    let f = a[0].clone();
    let nondiff_argnums = crate::jit::int_list(&a[1], "nondiff_argnums")?;
    let rule: Rc<RefCell<Option<Value>>> = Rc::new(RefCell::new(None));
    let (r, f0) = (rule.clone(), f.clone());
    let name = func_name(&f);
    let value = NativeClosure::value(name.clone(), move |interp, args, kwargs| {
        if !kwargs.is_empty() {
            return Err(Error::type_error(
                "custom_jvp functions take positional arguments only",
            ));
        }
        let (nondiff, args) = split_nondiff(&nondiff_argnums, args)?;
        let nondiff = Rc::new(nondiff);
        let f = &match nondiff.is_empty() {
            true => f0.clone(),
            false => over_diff_args(f0.clone(), nondiff.clone()),
        };
        let tree = Value::tuple(args);
        let flat = flatten(&tree)?;
        let template: Template = Rc::new(RefCell::new(Value::None));
        let fun = flat_fun(f.clone(), tree.clone(), template.clone());
        let Some(jvp_fn) = r.borrow().clone() else {
            return unflatten(&template.borrow(), &fun(interp, flat)?);
        };
        let jvp_fn = match nondiff.is_empty() {
            true => jvp_fn,
            false => nondiff_first(jvp_fn, nondiff.clone()),
        };
        let (t2, tree2) = (template.clone(), tree.clone());
        let rule: custom::JvpFun = Rc::new(move |interp, ps, ts| {
            let primals = unflatten(&tree2, &ps)?;
            let tangents = unflatten(&tree2, &ts)?;
            let out = interp.call(&jvp_fn, vec![primals, tangents], Vec::new())?;
            let (po, to) = pair(out, "a custom_jvp rule")?;
            let (pf, tf) = (flatten(&po)?, flatten(&to)?);
            *t2.borrow_mut() = po;
            Ok((pf, tf))
        });
        let outs = custom::custom_jvp_call(interp, fun, rule, flat)?;
        let t = template.borrow().clone();
        unflatten(&t, &outs)
    });
    if let Value::Native(n) = &value {
        let one = rule.clone();
        n.attrs.borrow_mut().push((
            "defjvp".into(),
            NativeClosure::value(format!("{name}.defjvp"), move |_, args, _| {
                let jvp_fn = args
                    .into_iter()
                    .next()
                    .ok_or_else(|| Error::type_error("defjvp takes the rule function"))?;
                *one.borrow_mut() = Some(jvp_fn.clone());
                Ok(jvp_fn)
            }),
        ));
        // `f.defjvps(jvp_0, jvp_1, ...)`: one rule per argument,
        // `jvp_i(t_i, ans, *primals)`, whose tangents add up (None: the
        // argument contributes nothing).
        let (rule, f) = (rule.clone(), f.clone());
        n.attrs.borrow_mut().push((
            "defjvps".into(),
            NativeClosure::value(format!("{name}.defjvps"), move |_, per_arg, _| {
                let f = f.clone();
                let combined = NativeClosure::value("defjvps rule", move |interp, a, _| {
                    let [primals, tangents] = <[Value; 2]>::try_from(a)
                        .map_err(|_| Error::type_error("a jvp rule takes primals and tangents"))?;
                    let primals = numpy::sequence_items(&primals)?;
                    let tangents = numpy::sequence_items(&tangents)?;
                    let ans = interp.call(&f, primals.clone(), Vec::new())?;
                    let mut total: Option<Vec<Tensor>> = None;
                    for (rule, t) in per_arg.iter().zip(tangents) {
                        if matches!(rule, Value::None) {
                            continue;
                        }
                        let mut args = vec![t, ans.clone()];
                        args.extend(primals.iter().cloned());
                        let part = flatten(&interp.call(rule, args, Vec::new())?)?;
                        total = Some(match total {
                            None => part,
                            Some(sum) => sum
                                .iter()
                                .zip(&part)
                                .map(|(a, b)| ops::add(a, b))
                                .collect::<Result<_>>()?,
                        });
                    }
                    let ans_leaves = flatten(&ans)?;
                    let total = match total {
                        Some(t) => t,
                        None => ans_leaves
                            .iter()
                            .map(ops::zeros_like)
                            .collect::<Result<_>>()?,
                    };
                    Ok(Value::tuple(vec![ans.clone(), unflatten(&ans, &total)?]))
                });
                *rule.borrow_mut() = Some(combined);
                Ok(Value::None)
            }),
        ));
    }
    Ok(value)
}

fn custom_vjp_(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if matches!(a[0], Value::None) {
        return decorator_factory(custom_vjp_, a);
    }
    let f0 = a[0].clone();
    let nondiff_argnums = crate::jit::int_list(&a[1], "nondiff_argnums")?;
    type Rules = Rc<RefCell<Option<(Value, Value)>>>;
    let rules: Rules = Rc::new(RefCell::new(None));
    let r = rules.clone();
    let name = func_name(&f0);
    let value = NativeClosure::value(name.clone(), move |interp, args, kwargs| {
        if !kwargs.is_empty() {
            return Err(Error::type_error(
                "custom_vjp functions take positional arguments only",
            ));
        }
        let (nondiff, args) = split_nondiff(&nondiff_argnums, args)?;
        let nondiff = Rc::new(nondiff);
        let f = match nondiff.is_empty() {
            true => f0.clone(),
            false => over_diff_args(f0.clone(), nondiff.clone()),
        };
        let tree = Value::tuple(args);
        let flat = flatten(&tree)?;
        let template: Template = Rc::new(RefCell::new(Value::None));
        let fun = flat_fun(f.clone(), tree.clone(), template.clone());
        let Some((fwd_fn, bwd_fn)) = r.borrow().clone() else {
            return unflatten(&template.borrow(), &fun(interp, flat)?);
        };
        let (fwd_fn, bwd_fn) = match nondiff.is_empty() {
            true => (fwd_fn, bwd_fn),
            false => (
                over_diff_args(fwd_fn, nondiff.clone()),
                nondiff_first(bwd_fn, nondiff.clone()),
            ),
        };
        let res_template: Template = Rc::new(RefCell::new(Value::None));
        let (t2, tree2, rt) = (template.clone(), tree.clone(), res_template.clone());
        let fwd: custom::FwdFun = Rc::new(move |interp, ps| {
            let a = numpy::sequence_items(&unflatten(&tree2, &ps)?)?;
            let out = interp.call(&fwd_fn, a, Vec::new())?;
            let (o, res) = pair(out, "custom_vjp fwd")?;
            let (of, rf) = (flatten(&o)?, flatten(&res)?);
            *t2.borrow_mut() = o;
            *rt.borrow_mut() = res;
            Ok((of, rf))
        });
        let (t3, tree3, rt3) = (template.clone(), tree.clone(), res_template.clone());
        let bwd: custom::BwdFun = Rc::new(move |interp, res, cts| {
            let res = unflatten(&rt3.borrow(), &res)?;
            let ct = unflatten(&t3.borrow(), &cts)?;
            let out = interp.call(&bwd_fn, vec![res, ct], Vec::new())?;
            // One cotangent per argument, as a tuple with the arguments'
            // structure; None stands for zeros (an argument without a
            // gradient, such as a clipping limit), as in JAX.
            let args = numpy::sequence_items(&tree3)?;
            let out = match &out {
                Value::Tuple(cts) if cts.len() == args.len() => Value::tuple(
                    cts.iter()
                        .zip(&args)
                        .map(|(ct, arg)| match ct {
                            Value::None => map_leaves(arg, &mut |leaf| {
                                Ok(Value::Array(ops::zeros_like(&numpy::to_tensor(leaf)?)?))
                            }),
                            ct => Ok(ct.clone()),
                        })
                        .collect::<Result<Vec<_>>>()?,
                ),
                _ => out,
            };
            let want = crate::tree::structure(&tree3)?;
            let got = crate::tree::structure(&out)?;
            if want != got {
                return Err(Error::type_error(format!(
                    "custom_vjp bwd must return a tuple of cotangents with the arguments' structure {want}, got {got}"
                )));
            }
            flatten(&out)
        });
        let outs = custom::custom_vjp_call(interp, fun, fwd, bwd, flat)?;
        let t = template.borrow().clone();
        unflatten(&t, &outs)
    });
    if let Value::Native(n) = &value {
        let rules = rules.clone();
        n.attrs.borrow_mut().push((
            "defvjp".into(),
            NativeClosure::value(format!("{name}.defvjp"), move |_, args, _| {
                if args.len() != 2 {
                    return Err(Error::type_error("defvjp takes fwd and bwd"));
                }
                *rules.borrow_mut() = Some((args[0].clone(), args[1].clone()));
                Ok(Value::None)
            }),
        ));
    }
    Ok(value)
}

// ---------------------------------------------------------------------------
// Control flow

/// Call `f` on operands rebuilt from tensors; flatten the result, checking
/// that every branch or iteration gives the same structure.
fn call_on(
    interp: &mut Interp,
    f: &Value,
    template: &Value,
    ts: &[Tensor],
    shape: &RefCell<Option<(Value, String)>>,
    what: &str,
) -> Result<Vec<Tensor>> {
    let args = numpy::sequence_items(&unflatten(template, ts)?)?;
    let out = interp.call(f, args, Vec::new())?;
    let flat = flatten(&out)?;
    let structure = crate::tree::structure(&out)?;
    let mut s = shape.borrow_mut();
    match &*s {
        Some((_, prev)) if *prev != structure => {
            return Err(Error::type_error(format!(
                "{what}: the functions must return the same structure, got {prev} and {structure}"
            )))
        }
        Some(_) => {}
        None => *s = Some((out, structure)),
    }
    Ok(flat)
}

fn branches_call(
    interp: &mut Interp,
    index: Tensor,
    fs: Vec<Value>,
    operands: Value,
    what: &str,
) -> Result<Value> {
    let flat = flatten(&operands)?;
    let shape = RefCell::new(None);
    let interp = RefCell::new(interp);
    let branches: Vec<control::Branch<'_>> = fs
        .iter()
        .map(|f| {
            let (shape, interp, operands) = (&shape, &interp, &operands);
            Box::new(move |ts: Vec<Tensor>| {
                call_on(&mut interp.borrow_mut(), f, operands, &ts, shape, what)
            }) as control::Branch<'_>
        })
        .collect();
    let outs = control::cond(index, branches, flat)?;
    let template = shape.into_inner().map(|(v, _)| v).unwrap_or(Value::None);
    unflatten(&template, &outs)
}

fn cond_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let pred = numpy::to_tensor(&a[0])?;
    if !pred.shape().is_empty() {
        return Err(Error::type_error(format!(
            "cond: the predicate must be a scalar, got {}",
            type_str(pred.shape(), pred.dtype())
        )));
    }
    let pred = if pred.dtype() == DType::Bool {
        pred
    } else {
        ops::binary(arr_kernels::BinaryOp::Ne, &pred, &ops::lit(0.0, &pred))?
    };
    // Branch 0 is taken when the predicate is false.
    branches_call(
        interp,
        pred,
        vec![a[2].clone(), a[1].clone()],
        a[3].clone(),
        "cond",
    )
}

fn switch_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let index = numpy::to_tensor(&a[0])?;
    if !index.dtype().is_int() || !index.shape().is_empty() {
        return Err(Error::type_error(format!(
            "switch: the index must be an integer scalar, got {}",
            type_str(index.shape(), index.dtype())
        )));
    }
    let fs = numpy::sequence_items(&a[1])?;
    if fs.is_empty() {
        return Err(Error::value_error("switch needs at least one branch"));
    }
    let index = ops::convert(&index, DType::I32)?;
    branches_call(interp, index, fs, a[2].clone(), "switch")
}

fn while_loop_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (cond_fun, body_fun, init) = (&a[0], &a[1], &a[2]);
    let template = Value::tuple(vec![init.clone()]);
    let flat = flatten(init)?;
    let cshape = RefCell::new(None);
    let bshape = RefCell::new(None);
    let interp = RefCell::new(interp);
    let outs = control::while_loop(
        |ts| {
            call_on(
                &mut interp.borrow_mut(),
                cond_fun,
                &template,
                &ts,
                &cshape,
                "while_loop cond_fun",
            )
        },
        |ts| {
            let out = call_on(
                &mut interp.borrow_mut(),
                body_fun,
                &template,
                &ts,
                &bshape,
                "while_loop body_fun",
            )?;
            check_structure("while_loop: body_fun", init, &bshape)?;
            Ok(out)
        },
        flat,
        &weak_leaves(init)?,
    )?;
    unflatten(init, &outs)
}

/// Which leaves of a loop's initial value are Python scalars (weakly typed).
fn weak_leaves(init: &Value) -> Result<Vec<bool>> {
    Ok(leaves(init)?
        .iter()
        .map(|v| matches!(v, Value::Int(_) | Value::Float(_)))
        .collect())
}

fn check_structure(what: &str, init: &Value, got: &RefCell<Option<(Value, String)>>) -> Result<()> {
    let want = crate::tree::structure(init)?;
    if let Some((_, s)) = &*got.borrow() {
        if *s != want {
            return Err(Error::type_error(format!(
                "{what} must return the carry's structure {want}, got {s}"
            )));
        }
    }
    Ok(())
}

/// The loop index is an int32, as in JAX.
fn int32_bound(which: &str, v: i64) -> Error {
    Error::new(
        arr_runtime::ErrorKind::OverflowError,
        format!("fori_loop: {which} bound {v} does not fit the int32 loop index"),
    )
}

fn fori_loop_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (lower, upper, body, init) = (&a[0], &a[1], a[2].clone(), &a[3]);
    // As JAX: the bounds are integers (a float bound is a mistake, not a
    // loop of rounded length).
    for (which, v) in [("lower", lower), ("upper", upper)] {
        let integral = match v {
            Value::Int(_) => true,
            Value::Array(t) => t.dtype().is_int(),
            _ => false,
        };
        if !integral {
            return Err(Error::type_error(format!(
                "fori_loop: the {which} bound must be an integer, got {}",
                match v {
                    Value::Array(t) => arr_runtime::prim::type_str(t.shape(), t.dtype()),
                    other => other.type_name(),
                }
            )));
        }
    }
    let static_bounds = matches!(lower, Value::Int(_)) && matches!(upper, Value::Int(_));
    if static_bounds {
        // A scan of length upper - lower carrying i (reverse-mode
        // differentiable, as JAX's is): the indices are never materialised.
        let (lo, hi) = (lower.as_int().unwrap_or(0), upper.as_int().unwrap_or(0));
        let lo32 = i32::try_from(lo).map_err(|_| int32_bound("lower", lo))?;
        i32::try_from(hi).map_err(|_| int32_bound("upper", hi))?;
        let n = (hi - lo).max(0) as usize;
        // The index is as weak as the lower bound (a Python int: weak), as JAX's.
        let mut flat = vec![ops::scalar(lo32 as f64, DType::I32).weakened(true)];
        flat.extend(flatten(init)?);
        let template = Value::tuple(vec![Value::Int(0), init.clone()]);
        let shape = RefCell::new(None);
        let one = ops::scalar(1.0, DType::I32).weakened(true);
        let outs = control::scan(
            |ts| {
                // ts: i, then the carry's leaves.
                let mut next = vec![ops::add(&ts[0], &one)?];
                next.extend(call_on(
                    interp,
                    &body,
                    &template,
                    &ts,
                    &shape,
                    "fori_loop body_fun",
                )?);
                Ok(next)
            },
            flat,
            Vec::new(),
            n,
            false,
            &[vec![true], weak_leaves(init)?].concat(),
        )?;
        check_structure("fori_loop: body_fun", init, &shape)?;
        return unflatten(init, &outs[1..]);
    }
    // Traced bounds: a while loop over (i, upper, val).
    let lower = numpy::to_tensor(lower)?;
    let lower_weak = lower.is_weak();
    let lo = ops::convert(&lower, DType::I32)?.weakened(lower_weak);
    let hi = ops::convert(&numpy::to_tensor(upper)?, DType::I32)?;
    let mut flat = vec![lo, hi];
    flat.extend(flatten(init)?);
    let template = Value::tuple(vec![Value::Int(0), init.clone()]);
    let shape = RefCell::new(None);
    let interp = RefCell::new(interp);
    let outs = control::while_loop(
        |ts| {
            Ok(vec![ops::binary(
                arr_kernels::BinaryOp::Lt,
                &ts[0],
                &ts[1],
            )?])
        },
        |ts| {
            let mut ordered = vec![ts[0].clone()];
            ordered.extend_from_slice(&ts[2..]);
            let val = call_on(
                &mut interp.borrow_mut(),
                &body,
                &template,
                &ordered,
                &shape,
                "fori_loop body_fun",
            )?;
            let mut out = vec![
                ops::add(&ts[0], &ops::scalar(1.0, DType::I32).weakened(true))?,
                ts[1].clone(),
            ];
            out.extend(val);
            Ok(out)
        },
        flat,
        &[vec![lower_weak, false], weak_leaves(init)?].concat(),
    )?;
    check_structure("fori_loop: body_fun", init, &shape)?;
    unflatten(init, &outs[2..])
}

fn scan_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (f, init, xs) = (a[0].clone(), &a[1], &a[2]);
    let reverse = a[4].truthy()?;
    let carry = flatten(init)?;
    let xs_flat = flatten(xs)?;
    let length = match (&a[3], xs_flat.first()) {
        (Value::None, Some(x)) => *x
            .shape()
            .first()
            .ok_or_else(|| Error::value_error("scan: the scanned arrays need a leading axis"))?,
        (Value::None, None) => return Err(Error::value_error("scan: give xs or length")),
        (v, _) => int_arg("length", v)? as usize,
    };
    let nc = carry.len();
    let template = Value::tuple(vec![init.clone(), xs.clone()]);
    let out_shape: RefCell<Option<(Value, String)>> = RefCell::new(None);
    let y_template = RefCell::new(Value::None);
    let outs = control::scan(
        |ts| {
            let args = numpy::sequence_items(&unflatten(&template, &ts)?)?;
            let out = interp.call(&f, args, Vec::new())?;
            let (c, y) = match &out {
                Value::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                other => {
                    return Err(Error::type_error(format!(
                        "scan: f must return a pair (carry, y), got {}",
                        other.type_name()
                    )))
                }
            };
            let s = crate::tree::structure(&c)?;
            let want = crate::tree::structure(init)?;
            if s != want {
                return Err(Error::type_error(format!(
                    "scan: f must return a carry with the structure of init {want}, got {s}"
                )));
            }
            let mut flat = flatten(&c)?;
            flat.extend(flatten(&y)?);
            *out_shape.borrow_mut() = Some((c, s));
            *y_template.borrow_mut() = y;
            Ok(flat)
        },
        carry,
        xs_flat,
        length,
        reverse,
        &weak_leaves(init)?,
    )?;
    let carry = unflatten(init, &outs[..nc])?;
    let ys = unflatten(&y_template.into_inner(), &outs[nc..])?;
    Ok(Value::tuple(vec![carry, ys]))
}

// ---------------------------------------------------------------------------
// check_grads

struct Tol {
    eps: f64,
    atol: f64,
    rtol: f64,
}

type FlatFn<'a> = dyn FnMut(Vec<Tensor>) -> Result<Vec<Tensor>> + 'a;

fn to_f64(ts: &[Tensor]) -> Result<Vec<Tensor>> {
    ts.iter()
        .map(|t| {
            if t.dtype().is_float() {
                ops::convert(t, DType::F64)
            } else {
                Ok(t.clone())
            }
        })
        .collect()
}

/// A random direction (deterministic, so failures reproduce).
fn direction(like: &[Tensor], seed: u64) -> Result<Vec<Tensor>> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    like.iter()
        .map(|t| {
            let vals: Vec<f64> = (0..t.len())
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
                })
                .collect();
            let a = arr_kernels::Array::new(t.shape(), arr_kernels::Buffer::F64(vals));
            ops::convert(&Tensor::Concrete(a), t.dtype())
        })
        .collect()
}

fn values(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.concrete()?.to_f64_vec()?)
}

fn assert_close(what: &str, got: &[Tensor], want: &[Tensor], tol: &Tol) -> Result<()> {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (values(g)?, values(w)?);
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            if (a - b).abs() > tol.atol + tol.rtol * b.abs() || a.is_nan() != b.is_nan() {
                return Err(Error::new(
                    ErrorKind::AssertionError,
                    format!("check_grads: {what}: output {k}, element {i}: got {a}, expected {b}"),
                ));
            }
        }
    }
    Ok(())
}

fn dot_all(a: &[Tensor], b: &[Tensor]) -> Result<f64> {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        for (p, q) in values(x)?.iter().zip(values(y)?) {
            s += p * q;
        }
    }
    Ok(s)
}

fn scaled_add(x: &[Tensor], v: &[Tensor], k: f64) -> Result<Vec<Tensor>> {
    x.iter()
        .zip(v)
        .map(|(x, v)| {
            if x.dtype().is_inexact() {
                ops::add(x, &ops::mul(v, &ops::lit(k, v))?)
            } else {
                Ok(x.clone())
            }
        })
        .collect()
}

fn check_jvp(f: &mut FlatFn, args: &[Tensor], tol: &Tol, seed: u64) -> Result<Vec<Tensor>> {
    let v = direction(args, seed)?;
    let tangents = args
        .iter()
        .zip(&v)
        .map(|(a, v)| a.dtype().is_inexact().then(|| v.clone()))
        .collect();
    let (outs, touts) = jvp::jvp(&mut *f, args.to_vec(), tangents)?;
    let touts = touts
        .iter()
        .zip(&outs)
        .map(|(t, o)| jvp::instantiate(t, o))
        .collect::<Result<Vec<_>>>()?;
    let plus = f(scaled_add(args, &v, tol.eps)?)?;
    let minus = f(scaled_add(args, &v, -tol.eps)?)?;
    let numeric = plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| ops::mul(&ops::sub(p, m)?, &ops::lit(0.5 / tol.eps, p)))
        .collect::<Result<Vec<_>>>()?;
    assert_close("forward mode vs finite differences", &touts, &numeric, tol)?;
    Ok(v)
}

fn check_vjp(f: &mut FlatFn, args: &[Tensor], tol: &Tol, seed: u64) -> Result<()> {
    let v = direction(args, seed)?;
    let (outs, lin) = linear::linearize(&mut *f, args.to_vec())?;
    let ct = direction(&outs, seed + 1)?;
    let in_cts = lin.transpose(&ct.iter().cloned().map(Some).collect::<Vec<_>>())?;
    let tangents = args
        .iter()
        .zip(&v)
        .map(|(a, v)| a.dtype().is_inexact().then(|| v.clone()))
        .collect();
    let (outs2, touts) = jvp::jvp(&mut *f, args.to_vec(), tangents)?;
    let touts = touts
        .iter()
        .zip(&outs2)
        .map(|(t, o)| jvp::instantiate(t, o))
        .collect::<Result<Vec<_>>>()?;
    let lhs = dot_all(&in_cts, &v)?;
    let rhs = dot_all(&ct, &touts)?;
    if (lhs - rhs).abs() > tol.atol + tol.rtol * rhs.abs() {
        return Err(Error::new(
            ErrorKind::AssertionError,
            format!("check_grads: reverse mode disagrees with forward mode: <vjp(ct), v> = {lhs} but <ct, jvp(v)> = {rhs}"),
        ));
    }
    Ok(())
}

/// The check, recursively: order 2 checks the derivative functions too.
fn check_grads_flat(
    f: &mut FlatFn,
    args: &[Tensor],
    order: usize,
    fwd: bool,
    rev: bool,
    tol: &Tol,
    seed: u64,
) -> Result<()> {
    if fwd {
        let v = check_jvp(f, args, tol, seed)?;
        if order > 1 {
            let n = args.len();
            let mut g = |xs: Vec<Tensor>| -> Result<Vec<Tensor>> {
                let tangents = xs[n..]
                    .iter()
                    .zip(&xs[..n])
                    .map(|(t, a)| a.dtype().is_inexact().then(|| t.clone()))
                    .collect();
                let (outs, touts) = jvp::jvp(&mut *f, xs[..n].to_vec(), tangents)?;
                touts
                    .iter()
                    .zip(&outs)
                    .map(|(t, o)| jvp::instantiate(t, o))
                    .collect()
            };
            let mut all = args.to_vec();
            all.extend(v);
            check_grads_flat(&mut g, &all, order - 1, fwd, rev, tol, seed + 7)?;
        }
    }
    if rev {
        check_vjp(f, args, tol, seed + 3)?;
        if order > 1 {
            let outs = f(args.to_vec())?;
            let ct = direction(&outs, seed + 5)?;
            let mut g = |xs: Vec<Tensor>| -> Result<Vec<Tensor>> {
                let (_, lin) = linear::linearize(&mut *f, xs)?;
                lin.transpose(&ct.iter().cloned().map(Some).collect::<Vec<_>>())
            };
            check_grads_flat(&mut g, args, order - 1, fwd, rev, tol, seed + 11)?;
        }
    }
    Ok(())
}

fn check_grads_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    let args = pytree_items(&a[1], "check_grads: args")?;
    let order = int_arg("order", &a[2])? as usize;
    let modes: Vec<String> = numpy::sequence_items(&a[3])?
        .iter()
        .map(|m| str_arg("modes", m).map(str::to_string))
        .collect::<Result<_>>()?;
    let tol = Tol {
        eps: f64_arg("eps", &a[4])?,
        atol: f64_arg("atol", &a[5])?,
        rtol: f64_arg("rtol", &a[6])?,
    };
    let tree = Value::tuple(args);
    let flat = to_f64(&flatten(&tree)?)?;
    let mut call = |ts: Vec<Tensor>| -> Result<Vec<Tensor>> {
        let args = numpy::sequence_items(&unflatten(&tree, &ts)?)?;
        flatten(&interp.call(&f, args, Vec::new())?)
    };
    check_grads_flat(
        &mut call,
        &flat,
        order,
        modes.iter().any(|m| m == "fwd"),
        modes.iter().any(|m| m == "rev"),
        &tol,
        1,
    )?;
    Ok(Value::None)
}
