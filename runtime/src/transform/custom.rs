//! `custom_jvp` and `custom_vjp`: functions that bring their own derivative.
//!
//! A call looks at the innermost trace among its arguments. Under forward
//! mode it runs the user's rule instead of differentiating the function;
//! under `vmap` it calls itself again on the unbatched values with
//! batched versions of the function and the rule (so a differentiation
//! outside the `vmap` still finds the rule); eagerly or while recording a
//! graph it just runs the function.
//!
//! `custom_vjp`'s backward function is traced into a graph when the
//! function is called under differentiation, and held by the `custom_vjp`
//! primitive, whose transpose runs it; all that primitive's rules are at
//! the end of this file. A `custom_vjp` function called while such a
//! backward function is traced is recorded whole (`custom_vjp_call`: its
//! function, forward and backward graphs), so that differentiating the
//! backward pass again still runs its rule.

use super::batch;
use super::graph::{self, Graph, GraphRef};
use super::jvp::{self, Tangents};
use super::linear::LinIn;
use super::ops::*;
use super::{TraceKind, STACK};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::Interp;
use crate::jit::partition::{Local, Spmd};
use crate::prim::{bind, type_str, Aval, Avals, Outs, Prim};
use crate::tensor::Tensor;
use std::cell::Cell;
use std::rc::Rc;

thread_local! {
    /// While a `custom_vjp` backward function is traced: how many levels of
    /// custom_vjp calls inside it may still be recorded with their rules
    /// (`record_custom_vjp`); 0 elsewhere (a call then runs its function).
    static RECORD_BUDGET: Cell<usize> = const { Cell::new(0) };
}

/// The budget a backward pass starts with: a recorded call's function,
/// forward and backward passes are traced when it is (JAX traces them
/// lazily), each with one level less, so a rule that calls its own
/// function ends, and third derivatives still see every rule.
const RECORDED_LEVELS: usize = 4;

/// Run `f` with the recording budget set to `levels`.
fn with_budget<R>(levels: usize, f: impl FnOnce() -> R) -> R {
    let before = RECORD_BUDGET.with(|d| d.replace(levels));
    let r = f();
    RECORD_BUDGET.with(|d| d.set(before));
    r
}

/// Trace a custom_vjp's backward function `bwd` over (residuals, output
/// cotangents), checking one cotangent of each primal's type.
fn trace_bwd(
    interp: &mut Interp,
    bwd: &BwdFun,
    res: &[Aval],
    outs: &[Aval],
    primals: &[Aval],
) -> Result<graph::ClosedGraph> {
    let mut avals: Vec<Aval> = res.to_vec();
    avals.extend(outs.iter().cloned());
    let n_res = res.len();
    graph::trace(&avals, true, |xs| {
        let cts = bwd(interp, xs[..n_res].to_vec(), xs[n_res..].to_vec())?;
        if cts.len() != primals.len() {
            return Err(Error::type_error(format!(
                "custom_vjp: bwd must return one cotangent per argument ({}), got {}",
                primals.len(),
                cts.len()
            )));
        }
        cts.iter()
            .zip(primals)
            .map(|(c, p)| {
                if c.shape() != &p.shape[..] {
                    return Err(Error::shape_error(format!(
                        "custom_vjp: bwd returned a cotangent of type {} for an argument of type {}",
                        type_str(c.shape(), c.dtype()),
                        type_str(&p.shape, p.dtype)
                    )));
                }
                convert(c, p.dtype)
            })
            .collect()
    })
}

/// Record a custom_vjp call inside a backward function being traced: its
/// function, forward pass and backward pass as graphs (`custom_vjp_call`).
fn record_custom_vjp(
    interp: &mut Interp,
    f: Fun,
    fwd: FwdFun,
    bwd: BwdFun,
    args: Vec<Tensor>,
) -> Result<Vec<Tensor>> {
    let avals: Vec<Aval> = args.iter().map(Tensor::aval).collect();
    // Calls inside the three graphs are recorded too (an outer derivative
    // may differentiate any of them), with one level less.
    let levels = RECORD_BUDGET.with(Cell::get) - 1;
    let f_graph = with_budget(levels, || graph::trace(&avals, true, |xs| f(interp, xs)))?;
    let n_out = f_graph.graph.outvars.len();
    let fwd_graph = with_budget(levels, || {
        graph::trace(&avals, true, |xs| {
            let (mut outs, res) = fwd(interp, xs)?;
            outs.extend(res);
            Ok(outs)
        })
    })?;
    let fwd_outs = fwd_graph.graph.out_avals();
    if fwd_outs.len() < n_out || fwd_outs[..n_out] != f_graph.graph.out_avals()[..] {
        return Err(Error::type_error(
            "custom_vjp: fwd must return (outputs, residuals) with the function's output types",
        ));
    }
    let bwd_graph = with_budget(levels, || {
        trace_bwd(interp, &bwd, &fwd_outs[n_out..], &fwd_outs[..n_out], &avals)
    })?;
    let n_consts = [
        f_graph.consts.len(),
        fwd_graph.consts.len(),
        bwd_graph.consts.len(),
    ];
    let mut operands = f_graph.consts;
    operands.extend(fwd_graph.consts);
    operands.extend(bwd_graph.consts);
    operands.extend(args);
    Ok(bind(
        &Prim::CustomVjpCall {
            f: GraphRef(f_graph.graph),
            fwd: GraphRef(fwd_graph.graph),
            bwd: GraphRef(bwd_graph.graph),
            n_consts,
        },
        operands,
    )?
    .into_vec())
}

/// A function over flat tensors.
pub type Fun = Rc<dyn Fn(&mut Interp, Vec<Tensor>) -> Result<Vec<Tensor>>>;
/// A JVP rule: (primals, tangents) → (outputs, output tangents).
pub type JvpFun =
    Rc<dyn Fn(&mut Interp, Vec<Tensor>, Vec<Tensor>) -> Result<(Vec<Tensor>, Vec<Tensor>)>>;
/// A custom_vjp forward pass: primals → (outputs, residuals).
pub type FwdFun = Rc<dyn Fn(&mut Interp, Vec<Tensor>) -> Result<(Vec<Tensor>, Vec<Tensor>)>>;
/// A custom_vjp backward pass: (residuals, output cotangents) → input cotangents.
pub type BwdFun = Rc<dyn Fn(&mut Interp, Vec<Tensor>, Vec<Tensor>) -> Result<Vec<Tensor>>>;

/// The innermost trace that owns one of these values.
fn top(args: &[Tensor]) -> Result<Option<(usize, u64, TraceKind)>> {
    let Some(level) = super::top_level(args)? else {
        return Ok(None);
    };
    Ok(STACK.with(|s| {
        let s = s.borrow();
        let e = &s[level - 1];
        Some((level, e.id, e.kind.clone()))
    }))
}

fn check_tangents(what: &str, outs: &[Tensor], touts: &[Tensor]) -> Result<()> {
    let bad =
        outs.len() != touts.len() || outs.iter().zip(touts).any(|(o, t)| o.shape() != t.shape());
    if bad {
        let show = |ts: &[Tensor]| {
            let v: Vec<String> = ts.iter().map(|t| type_str(t.shape(), t.dtype())).collect();
            format!("({})", v.join(", "))
        };
        return Err(Error::type_error(format!(
            "{what}: the rule's tangent outputs {} do not match the primal outputs {}",
            show(touts),
            show(outs)
        )));
    }
    Ok(())
}

/// Primals and (instantiated) tangents of the arguments at a JVP level;
/// no tangents when all are zero.
fn split_jvp_args(args: &[Tensor], level: usize) -> Result<(Vec<Tensor>, Option<Vec<Tensor>>)> {
    let (ps, ts): (Vec<Tensor>, Tangents) = args.iter().map(|a| jvp::split(a, level)).unzip();
    if ts.iter().all(Option::is_none) {
        return Ok((ps, None));
    }
    let ts = ps
        .iter()
        .zip(&ts)
        .map(|(p, t)| jvp::instantiate(t, p))
        .collect::<Result<Vec<_>>>()?;
    Ok((ps, Some(ts)))
}

/// Batch dims of values moved to the front, as vmap in_axes.
fn front_all(vals: &mut [Tensor], dims: &[Option<usize>]) -> Result<Vec<Option<usize>>> {
    for (v, d) in vals.iter_mut().zip(dims) {
        if let Some(d) = d {
            *v = moveaxis(v, *d, 0)?;
        }
    }
    Ok(dims.iter().map(|d| d.map(|_| 0)).collect())
}

fn vmap_fun(f: Fun, in_axes: Vec<Option<usize>>, size: usize) -> Fun {
    Rc::new(move |interp, xs| batch::vmap(|w| f(interp, w), xs, &in_axes, size, |_| Some(0)))
}

pub fn custom_jvp_call(
    interp: &mut Interp,
    f: Fun,
    rule: JvpFun,
    args: Vec<Tensor>,
) -> Result<Vec<Tensor>> {
    match top(&args)? {
        None | Some((_, _, TraceKind::Graph(_))) => f(interp, args),
        // checkify records checks only: the rules apply on the trace below.
        Some((level, _, TraceKind::Checkify(_))) => {
            let _below = super::below(level);
            custom_jvp_call(interp, f, rule, args)
        }
        Some((level, id, TraceKind::Jvp)) => {
            let (ps, ts) = match split_jvp_args(&args, level)? {
                (ps, Some(ts)) => (ps, ts),
                (ps, None) => return f(interp, ps),
            };
            let (outs, touts) = rule(interp, ps, ts)?;
            check_tangents("custom_jvp", &outs, &touts)?;
            Ok(outs
                .into_iter()
                .zip(touts)
                .map(|(o, t)| {
                    let t = convert(&t, o.dtype())?;
                    Ok(jvp::wrap(level, id, o, Some(t)))
                })
                .collect::<Result<_>>()?)
        }
        Some((level, id, TraceKind::Batch { size, .. })) => {
            let (mut vals, dims): (Vec<Tensor>, Vec<Option<usize>>) =
                args.iter().map(|a| batch::split(a, level)).unzip();
            let in_axes = front_all(&mut vals, &dims)?;
            let f2 = vmap_fun(f, in_axes.clone(), size);
            let n = vals.len();
            let axes2: Vec<Option<usize>> = in_axes.iter().chain(&in_axes).copied().collect();
            let rule2: JvpFun = Rc::new(move |interp, ps, ts| {
                let mut xs = ps;
                xs.extend(ts);
                let mut n_out = 0;
                let outs = batch::vmap(
                    |w| {
                        let (o, t) = rule(interp, w[..n].to_vec(), w[n..].to_vec())?;
                        n_out = o.len();
                        let mut all = o;
                        all.extend(t);
                        Ok(all)
                    },
                    xs,
                    &axes2,
                    size,
                    |_| Some(0),
                )?;
                let mut outs = outs;
                let t = outs.split_off(n_out);
                Ok((outs, t))
            });
            let outs = custom_jvp_call(interp, f2, rule2, vals)?;
            Ok(outs
                .into_iter()
                .map(|o| batch::wrap(level, id, o, Some(0)))
                .collect())
        }
    }
}

pub fn custom_vjp_call(
    interp: &mut Interp,
    f: Fun,
    fwd: FwdFun,
    bwd: BwdFun,
    args: Vec<Tensor>,
) -> Result<Vec<Tensor>> {
    match top(&args)? {
        Some((_, _, TraceKind::Graph(_))) if RECORD_BUDGET.with(Cell::get) > 0 => {
            record_custom_vjp(interp, f, fwd, bwd, args)
        }
        None | Some((_, _, TraceKind::Graph(_))) => f(interp, args),
        // checkify records checks only: the rules apply on the trace below.
        Some((level, _, TraceKind::Checkify(_))) => {
            let _below = super::below(level);
            custom_vjp_call(interp, f, fwd, bwd, args)
        }
        Some((level, id, TraceKind::Jvp)) => {
            let (ps, ts) = match split_jvp_args(&args, level)? {
                (ps, Some(ts)) => (ps, ts),
                (ps, None) => return f(interp, ps),
            };
            let (outs, res) = fwd(interp, ps.clone())?;
            // The backward pass as a graph over (residuals, output cotangents).
            let avals = |ts: &[Tensor]| ts.iter().map(Tensor::aval).collect::<Vec<_>>();
            let n_res = res.len();
            let closed = with_budget(RECORDED_LEVELS, || {
                trace_bwd(interp, &bwd, &avals(&res), &avals(&outs), &avals(&ps))
            })?;
            let k = closed.consts.len();
            let mut operands = closed.consts;
            operands.extend(res);
            operands.extend(ts);
            let touts = bind(
                &Prim::CustomVjp {
                    bwd: GraphRef(closed.graph),
                    n_res: k + n_res,
                },
                operands,
            )?;
            Ok(outs
                .into_iter()
                .zip(touts)
                .map(|(o, t)| jvp::wrap(level, id, o, Some(t)))
                .collect())
        }
        Some((level, id, TraceKind::Batch { size, .. })) => {
            let (mut vals, dims): (Vec<Tensor>, Vec<Option<usize>>) =
                args.iter().map(|a| batch::split(a, level)).unzip();
            let in_axes = front_all(&mut vals, &dims)?;
            let f2 = vmap_fun(f, in_axes.clone(), size);
            let fwd2: FwdFun = Rc::new(move |interp, xs| {
                let mut n = 0;
                let mut all = batch::vmap(
                    |w| {
                        let (o, r) = fwd(interp, w)?;
                        n = o.len();
                        let mut all = o;
                        all.extend(r);
                        Ok(all)
                    },
                    xs,
                    &in_axes,
                    size,
                    |_| Some(0),
                )?;
                let res = all.split_off(n);
                Ok((all, res))
            });
            let bwd2: BwdFun = Rc::new(move |interp, res, cts| {
                let n_res = res.len();
                let mut xs = res;
                xs.extend(cts);
                let axes = vec![Some(0); xs.len()];
                batch::vmap(
                    |w| bwd(interp, w[..n_res].to_vec(), w[n_res..].to_vec()),
                    xs,
                    &axes,
                    size,
                    |_| Some(0),
                )
            });
            let outs = custom_vjp_call(interp, f2, fwd2, bwd2, vals)?;
            Ok(outs
                .into_iter()
                .map(|o| batch::wrap(level, id, o, Some(0)))
                .collect())
        }
    }
}

// ---------------------------------------------------------------------------
// The custom_vjp primitive's rules

pub fn shape_custom_vjp(bwd: &Graph, n_res: usize, args: &[Aval]) -> Result<Avals> {
    let ins = bwd.in_avals();
    let outs = bwd.out_avals();
    if args.len() != n_res + outs.len()
        || args[..n_res] != ins[..n_res]
        || args[n_res..] != outs[..]
    {
        return Err(Error::type_error(
            "custom_vjp: operands do not match the backward graph",
        ));
    }
    Ok(ins[n_res..].iter().cloned().collect())
}

fn forward_error() -> Error {
    Error::new(
        ErrorKind::TransformError,
        "forward-mode differentiation (jvp, jacfwd) of a custom_vjp function is not supported; \
         define it with custom_jvp instead",
    )
}

/// The primitive stands for a tangent, so only forward mode could run it.
pub fn eval_custom_vjp() -> Result<Outs> {
    Err(forward_error())
}

pub fn jvp_custom_vjp() -> Result<(Outs, Tangents)> {
    Err(forward_error())
}

/// Runs `bwd` on the residuals and the outputs' cotangents.
pub fn transpose_custom_vjp(
    bwd: &Graph,
    n_res: usize,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let mut args = Vec::new();
    for x in &ins[..n_res] {
        match x {
            LinIn::Known(t) => args.push(t.clone()),
            LinIn::Linear(_) => {
                return Err(Error::new(
                    ErrorKind::TransformError,
                    "custom_vjp: a residual is not known",
                ))
            }
        }
    }
    let out_avals: Vec<Aval> = bwd.in_avals()[n_res..].to_vec();
    for (c, a) in cts.iter().zip(&out_avals) {
        args.push(match c {
            Some(c) => c.clone(),
            None => zeros(&a.shape, a.dtype)?,
        });
    }
    let in_cts = graph::eval(bwd, &args)?;
    let mut out: Vec<Option<Tensor>> = vec![None; n_res];
    out.extend(
        in_cts
            .into_iter()
            .zip(&ins[n_res..])
            .map(|(c, x)| matches!(x, LinIn::Linear(_)).then_some(c)),
    );
    Ok(out)
}

/// Of `custom_vjp_call`'s operands (or their batch dims), the function's
/// own: its constants, then the arguments.
fn f_operands<T: Clone>(n_consts: &[usize; 3], args: &[T]) -> Vec<T> {
    let skip: usize = n_consts.iter().sum();
    let mut xs = args[..n_consts[0]].to_vec();
    xs.extend_from_slice(&args[skip..]);
    xs
}

pub fn shape_custom_vjp_call(f: &Graph, n_consts: &[usize; 3], args: &[Aval]) -> Result<Avals> {
    let skip: usize = n_consts.iter().sum();
    let ins = f.in_avals();
    if args.len() < skip
        || args.len() - skip + n_consts[0] != ins.len()
        || args[skip..] != ins[n_consts[0]..]
    {
        return Err(Error::type_error(
            "custom_vjp_call: operands do not match the function's graph",
        ));
    }
    Ok(f.out_avals().into_iter().collect())
}

pub fn eval_custom_vjp_call(f: &Graph, n_consts: &[usize; 3], args: &[Tensor]) -> Result<Outs> {
    Ok(graph::eval(f, &f_operands(n_consts, args))?.into())
}

/// Forward mode of a recorded custom_vjp call: its forward pass on the
/// primals, and the `custom_vjp` primitive (its backward pass) on the tangents.
pub fn jvp_custom_vjp_call(
    f: &Graph,
    fwd: &GraphRef,
    bwd: &GraphRef,
    n_consts: &[usize; 3],
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let skip: usize = n_consts.iter().sum();
    if t[..skip].iter().any(Option::is_some) {
        return Err(Error::new(
            ErrorKind::TransformError,
            "custom_vjp: the function closes over a value being differentiated; pass it as \
             an argument instead (as jax.closure_convert does)",
        ));
    }
    let (fc, wc) = (n_consts[0], n_consts[1]);
    let mut fwd_in = p[fc..fc + wc].to_vec();
    fwd_in.extend_from_slice(&p[skip..]);
    let mut outs = graph::eval(fwd, &fwd_in)?;
    let res = outs.split_off(f.outvars.len());
    let mut operands = p[fc + wc..skip].to_vec();
    let n_res = operands.len() + res.len();
    operands.extend(res);
    for (x, tx) in p[skip..].iter().zip(&t[skip..]) {
        operands.push(jvp::instantiate(tx, x)?);
    }
    let touts = bind(
        &Prim::CustomVjp {
            bwd: bwd.clone(),
            n_res,
        },
        operands,
    )?;
    Ok((outs.into(), touts.into_iter().map(Some).collect()))
}

pub fn transpose_custom_vjp_call() -> Result<Vec<Option<Tensor>>> {
    Err(Error::new(
        ErrorKind::TransformError,
        "custom_vjp_call is not linear: only its tangent (custom_vjp) is transposed",
    ))
}

/// Under `vmap`, the recorded function runs batched (its rule is not kept).
pub fn batch_custom_vjp_call(
    f: &Graph,
    n_consts: &[usize; 3],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, batch::Bdims)> {
    let mut vals = f_operands(n_consts, v);
    let dims = f_operands(n_consts, d);
    let in_axes = front_all(&mut vals, &dims)?;
    let outs = batch::vmap(|w| graph::eval(f, &w), vals, &in_axes, size, |_| Some(0))?;
    let n = outs.len();
    Ok((outs.into(), vec![Some(0); n]))
}

pub fn batch_custom_vjp() -> Result<(Outs, batch::Bdims)> {
    Err(Error::new(
        ErrorKind::TransformError,
        "vmap of the tangent of a custom_vjp function is not supported here; apply vmap outside grad",
    ))
}

/// Runs replicated, on whole operands.
pub fn partition_custom_vjp(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}
