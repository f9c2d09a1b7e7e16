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
//! the end of this file.

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
use std::rc::Rc;

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
            let mut avals: Vec<Aval> = res.iter().map(Tensor::aval).collect();
            avals.extend(outs.iter().map(|o| Aval {
                shape: o.shape().into(),
                dtype: o.dtype(),
            }));
            let n_res = res.len();
            let closed = graph::trace(&avals, true, |xs| {
                let cts = bwd(interp, xs[..n_res].to_vec(), xs[n_res..].to_vec())?;
                if cts.len() != ps.len() {
                    return Err(Error::type_error(format!(
                        "custom_vjp: bwd must return one cotangent per argument ({}), got {}",
                        ps.len(),
                        cts.len()
                    )));
                }
                cts.iter().zip(&ps).map(|(c, p)| {
                    if c.shape() != p.shape() {
                        return Err(Error::shape_error(format!(
                            "custom_vjp: bwd returned a cotangent of type {} for an argument of type {}",
                            type_str(c.shape(), c.dtype()),
                            type_str(p.shape(), p.dtype())
                        )));
                    }
                    convert(c, p.dtype())
                }).collect()
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
