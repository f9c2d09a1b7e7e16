//! Control flow as primitives holding graphs: `cond`, `while_loop`, `scan`
//! (and `fori_loop`, which is one of the loops). All their rules live
//! here — shapes, evaluation, JVP, transpose, batching, partitioning — with
//! the constructors the stdlib calls.
//!
//! Reverse mode needs the JVP rules to keep primal and tangent work apart:
//! the JVP of a body is traced into a graph and split by partial
//! evaluation into a *known* part (primal outputs and residuals), bound on
//! the primals now, and an *unknown* part (linear in the tangents), bound on
//! the residuals and tangents. Only the second reaches the linearization
//! graph; its transpose is traced from the backward pass of the body.

use super::batch::{self, Bdims};
use super::graph::{self, partial_eval, Atom, ClosedGraph, Graph, GraphRef};
use super::jvp::{self, Tangents};
use super::linear::{backward_pass, LinIn};
use super::ops::*;
use crate::error::{Error, ErrorKind, Result};
use crate::jit::partition::{Local, Spmd};
use crate::prim::{bind, type_str, Args, Aval, Avals, Outs, Prim};
use crate::tensor::Tensor;
use arr_kernels::{BinaryOp, DType, ReduceOp};
use std::sync::Arc;

/// A long `while_loop` or `scan` stops at Ctrl-C like an arr loop does, on
/// the session's thread and on device workers alike.
fn check_interrupt() -> Result<()> {
    if arr_kernels::interrupt::requested() {
        return Err(Error::interrupted());
    }
    Ok(())
}

fn ty(a: &Aval) -> String {
    type_str(&a.shape, a.dtype)
}

fn types(avals: &[Aval]) -> String {
    let t: Vec<String> = avals.iter().map(ty).collect();
    format!("({})", t.join(", "))
}

fn mismatch(what: &str, expected: &[Aval], got: &[Aval]) -> Error {
    Error::type_error(format!(
        "{what}: expected {}, got {}",
        types(expected),
        types(got)
    ))
}

pub fn shape_cond(branches: &[GraphRef], args: &[Aval]) -> Result<Avals> {
    let Some((index, ops)) = args.split_first() else {
        return Err(Error::type_error("cond needs an index operand"));
    };
    if !index.shape.is_empty() || !(index.dtype.is_int() || index.dtype == DType::Bool) {
        return Err(Error::type_error(format!(
            "cond: the branch index must be an integer or bool scalar, got {}",
            ty(index)
        )));
    }
    let first = branches
        .first()
        .ok_or_else(|| Error::value_error("cond needs at least one branch"))?;
    let outs = first.out_avals();
    for (i, b) in branches.iter().enumerate() {
        if b.in_avals() != ops {
            return Err(mismatch(
                &format!("cond: branch {i} operands"),
                &b.in_avals(),
                ops,
            ));
        }
        if b.out_avals() != outs {
            return Err(mismatch(
                &format!("cond: every branch must return the same types; branch {i}"),
                &outs,
                &b.out_avals(),
            ));
        }
    }
    Ok(outs.into())
}

pub fn shape_while(
    cond: &Graph,
    body: &Graph,
    n_cond: usize,
    n_body: usize,
    args: &[Aval],
) -> Result<Avals> {
    if args.len() < n_cond + n_body {
        return Err(Error::type_error("while_loop: too few operands"));
    }
    let carry = &args[n_cond + n_body..];
    let mut cin = args[..n_cond].to_vec();
    cin.extend_from_slice(carry);
    if cond.in_avals() != cin {
        return Err(mismatch(
            "while_loop: cond_fun operands",
            &cond.in_avals(),
            &cin,
        ));
    }
    let pred = cond.out_avals();
    if pred.len() != 1 || !pred[0].shape.is_empty() || pred[0].dtype != DType::Bool {
        return Err(Error::type_error(format!(
            "while_loop: cond_fun must return a bool scalar, got {}",
            types(&pred)
        )));
    }
    let mut bin = args[n_cond..n_cond + n_body].to_vec();
    bin.extend_from_slice(carry);
    if body.in_avals() != bin {
        return Err(mismatch(
            "while_loop: body_fun operands",
            &body.in_avals(),
            &bin,
        ));
    }
    if body.out_avals() != carry {
        return Err(mismatch(
            "while_loop: body_fun must return the carry's types",
            carry,
            &body.out_avals(),
        ));
    }
    Ok(carry.iter().cloned().collect())
}

pub fn shape_scan(
    body: &Graph,
    n_consts: usize,
    n_carry: usize,
    length: usize,
    args: &[Aval],
) -> Result<Avals> {
    if args.len() < n_consts + n_carry {
        return Err(Error::type_error("scan: too few operands"));
    }
    let mut ins = args[..n_consts + n_carry].to_vec();
    for x in &args[n_consts + n_carry..] {
        if x.shape.first() != Some(&length) {
            return Err(Error::shape_error(format!(
                "scan: every scanned array needs a leading axis of length {length}, got {}",
                ty(x)
            )));
        }
        ins.push(Aval {
            shape: x.shape[1..].into(),
            dtype: x.dtype,
        });
    }
    if body.in_avals() != ins {
        return Err(mismatch("scan: body operands", &body.in_avals(), &ins));
    }
    let outs = body.out_avals();
    let carry = &args[n_consts..n_consts + n_carry];
    if outs.len() < n_carry || outs[..n_carry] != *carry {
        return Err(mismatch(
            "scan: the body must return the carry's types first",
            carry,
            &outs[..n_carry.min(outs.len())],
        ));
    }
    let mut result: Avals = carry.iter().cloned().collect();
    for y in &outs[n_carry..] {
        let mut shape = y.shape.clone();
        shape.insert(0, length);
        result.push(Aval {
            shape,
            dtype: y.dtype,
        });
    }
    Ok(result)
}

fn scalar_index(t: &Tensor, n: usize) -> Result<usize> {
    let i = t.concrete()?.get_i64(0)?;
    Ok(i.clamp(0, n as i64 - 1) as usize)
}

fn slice_at(x: &Tensor, i: usize) -> Result<Tensor> {
    let n = x.ndim();
    let mut start = vec![0; n];
    let mut limit = x.shape().to_vec();
    start[0] = i;
    limit[0] = i + 1;
    let s = bind(
        &Prim::Slice {
            start,
            limit,
            stride: vec![1; n],
        },
        [x.clone()],
    )?
    .swap_remove(0);
    reshape(&s, &x.shape()[1..])
}

/// Stack per-step values along a new leading axis.
fn stack(items: Vec<Tensor>, aval: &Aval) -> Result<Tensor> {
    if items.is_empty() {
        let mut shape = vec![0];
        shape.extend_from_slice(&aval.shape);
        return zeros(&shape, aval.dtype);
    }
    let rows = items
        .iter()
        .map(|t| expand_dims(t, 0))
        .collect::<Result<Vec<_>>>()?;
    bind(&Prim::Concatenate { axis: 0 }, rows).map(|mut o| o.swap_remove(0))
}

/// Run a control-flow primitive (its operands may be tracers of outer
/// traces only through `bind`, so here they are concrete).
pub fn eval_cond(branches: &[GraphRef], args: Args) -> Result<Outs> {
    let i = scalar_index(&args[0], branches.len())?;
    Ok(graph::eval(&branches[i], &args[1..])?.into())
}

pub fn eval_while(
    cond: &Graph,
    body: &Graph,
    n_cond: usize,
    n_body: usize,
    args: Args,
) -> Result<Outs> {
    let (cc, rest) = args.split_at(n_cond);
    let (bc, carry) = rest.split_at(n_body);
    let mut carry = carry.to_vec();
    loop {
        check_interrupt()?;
        let mut cin = cc.to_vec();
        cin.extend(carry.iter().cloned());
        let pred = graph::eval(cond, &cin)?.swap_remove(0);
        if pred.concrete()?.get_f64(0)? == 0.0 {
            break;
        }
        let mut bin = bc.to_vec();
        bin.extend(carry);
        carry = graph::eval(body, &bin)?;
    }
    Ok(carry.into())
}

pub fn eval_scan(
    body: &Graph,
    n_consts: usize,
    n_carry: usize,
    length: usize,
    reverse: bool,
    args: Args,
) -> Result<Outs> {
    let (consts, rest) = args.split_at(n_consts);
    let (carry, xs) = rest.split_at(n_carry);
    let mut carry = carry.to_vec();
    let y_avals = body.out_avals()[n_carry..].to_vec();
    // The stacked outputs must fit before the loop starts, and per-step
    // results are kept as they come (a scan with no outputs keeps nothing).
    let mut ys: Vec<Vec<Tensor>> = Vec::with_capacity(y_avals.len());
    for aval in &y_avals {
        let mut stacked = vec![length];
        stacked.extend_from_slice(&aval.shape);
        crate::prim::check_alloc(&stacked, aval.dtype)?;
        crate::value::check_len("scan output", "steps", &[length], 256)?;
        ys.push(Vec::with_capacity(length));
    }
    for step in 0..length {
        check_interrupt()?;
        let i = if reverse { length - 1 - step } else { step };
        let mut ins = consts.to_vec();
        ins.extend(carry);
        for x in xs {
            ins.push(slice_at(x, i)?);
        }
        let mut outs = graph::eval(body, &ins)?;
        let y = outs.split_off(n_carry);
        carry = outs;
        for (acc, y) in ys.iter_mut().zip(y) {
            acc.push(y);
        }
    }
    let mut result: Outs = carry.into();
    for (mut acc, aval) in ys.into_iter().zip(&y_avals) {
        if reverse {
            acc.reverse();
        }
        result.push(stack(acc, aval)?);
    }
    Ok(result)
}

// ---------------------------------------------------------------------------
// Building graphs for the rules

/// Trace `f` into a graph whose constants come first, ready to be held by
/// a primitive that passes them as operands.
fn trace(
    in_avals: &[Aval],
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<ClosedGraph> {
    graph::trace(in_avals, true, f)
}

/// Give several closed graphs (taking the same arguments) one shared list of
/// constants: each graph takes all constants, then the arguments.
fn unify_consts(closed: Vec<ClosedGraph>) -> (Vec<Arc<Graph>>, Vec<Tensor>) {
    let mut consts: Vec<Tensor> = Vec::new();
    let mut graphs = Vec::new();
    let total: usize = closed.iter().map(|c| c.consts.len()).sum();
    let mut offset = 0;
    for c in &closed {
        let mut gr = (*c.graph).clone();
        let k = c.consts.len();
        let (own, args) = gr.invars.split_at(k);
        let (own, args) = (own.to_vec(), args.to_vec());
        let mut invars = Vec::with_capacity(total + args.len());
        for j in 0..total {
            if j >= offset && j < offset + k {
                invars.push(own[j - offset]);
            } else {
                // Another graph's constant: an unused input here.
                let aval = closed
                    .iter()
                    .flat_map(|c| c.consts.iter())
                    .nth(j)
                    .expect("counted")
                    .aval();
                gr.types.push(aval);
                invars.push(gr.types.len() - 1);
            }
        }
        invars.extend(args);
        gr.invars = invars;
        debug_assert!(graph::typecheck(&gr).is_ok(), "{:?}", graph::typecheck(&gr));
        graphs.push(Arc::new(gr));
        offset += k;
    }
    for c in closed {
        consts.extend(c.consts);
    }
    (graphs, consts)
}

/// Bind a `while` over traced graphs: `cond` takes its constants, then
/// `cond_ops`, then the carry; `body` likewise with `body_ops`.
fn bind_while(
    cond: ClosedGraph,
    cond_ops: &[Tensor],
    body: ClosedGraph,
    body_ops: &[Tensor],
    carry: &[Tensor],
) -> Result<Outs> {
    let mut ops = cond.consts.clone();
    ops.extend_from_slice(cond_ops);
    ops.extend(body.consts.iter().cloned());
    ops.extend_from_slice(body_ops);
    ops.extend_from_slice(carry);
    bind(
        &Prim::While {
            n_cond: cond.consts.len() + cond_ops.len(),
            n_body: body.consts.len() + body_ops.len(),
            cond: GraphRef(cond.graph),
            body: GraphRef(body.graph),
        },
        ops,
    )
}

/// Bind a `cond` over traced branches: their constants become operands
/// after the index, before `operands`.
fn bind_cond(index: Tensor, closed: Vec<ClosedGraph>, operands: Vec<Tensor>) -> Result<Outs> {
    let (gs, consts) = unify_consts(closed);
    let mut ops = vec![index];
    ops.extend(consts);
    ops.extend(operands);
    bind(
        &Prim::Cond {
            branches: gs.into_iter().map(GraphRef).collect(),
        },
        ops,
    )
}

/// The JVP of a graph as a graph: (primals, tangents of the float inputs)
/// → (primal outputs, tangents of the float outputs, zeros where needed).
fn jvp_graph(gr: &Graph) -> Result<ClosedGraph> {
    let in_avals = gr.in_avals();
    let mut avals = in_avals.clone();
    avals.extend(in_avals.iter().filter(|a| a.dtype.is_inexact()).cloned());
    let n = in_avals.len();
    trace(&avals, |xs| {
        let (primals, ts) = xs.split_at(n);
        let mut ts = ts.iter();
        let tangents: Tangents = primals
            .iter()
            .map(|p| {
                if p.dtype().is_inexact() {
                    ts.next().cloned()
                } else {
                    None
                }
            })
            .collect();
        let (outs, touts) = jvp::jvp(|a| graph::eval(gr, &a), primals.to_vec(), tangents)?;
        let mut result = outs.clone();
        for (o, t) in outs.iter().zip(&touts) {
            if o.dtype().is_inexact() {
                result.push(jvp::instantiate(t, o)?);
            }
        }
        Ok(result)
    })
}

/// A JVP graph split into the part computable from primals and the part
/// needing tangents. `known`: (primals) → (primal outputs, residuals);
/// `unknown`: (residuals, tangents) → (tangent outputs).
struct JvpSplit {
    known: Graph,
    unknown: Graph,
    n_res: usize,
}

fn split_jvp(j: &Graph, n_primal_in: usize, n_primal_out: usize) -> JvpSplit {
    let unknown_in: Vec<bool> = (0..j.invars.len()).map(|i| i >= n_primal_in).collect();
    let split = partial_eval(j, &unknown_in);
    let mut known = split.known;
    let mut unknown = split.unknown;
    let mut n_res = split.n_residuals;
    // Known outputs, in order; residuals follow them in `known.outvars`.
    let n_known_out = split.out_unknown.iter().filter(|u| !**u).count();
    let residuals: Vec<Atom> = known.outvars.split_off(n_known_out);
    let known_outs = std::mem::take(&mut known.outvars);
    let mut known_iter = known_outs.into_iter();
    let mut unknown_iter = std::mem::take(&mut unknown.outvars).into_iter();
    let mut primal_outs = Vec::new();
    let mut tangent_outs = Vec::new();
    let mut extra_res = Vec::new();
    for (i, &u) in split.out_unknown.iter().enumerate() {
        let atom = if u {
            unknown_iter.next().expect("unknown output")
        } else {
            known_iter.next().expect("known output")
        };
        if i < n_primal_out {
            debug_assert!(!u, "a primal output depends on a tangent");
            primal_outs.push(atom);
        } else if u {
            tangent_outs.push(atom);
        } else {
            // A tangent known without the tangents (a zero): pass it through
            // as one more residual.
            extra_res.push(atom.clone());
            tangent_outs.push(atom);
        }
    }
    // The unknown graph reads the extra residuals as inputs: literals stay
    // literals, variables become new residual inputs.
    for atom in extra_res {
        if let Atom::Var(v) = atom {
            if !unknown.invars[..n_res].contains(&v) {
                unknown.invars.insert(n_res, v);
                n_res += 1;
                known.outvars.push(Atom::Var(v));
            }
        }
    }
    // Residual order: the split's residuals, then the extra ones (appended above).
    let extra_outs = std::mem::take(&mut known.outvars);
    let mut outs = primal_outs;
    outs.extend(residuals);
    outs.extend(extra_outs);
    known.outvars = outs;
    unknown.outvars = tangent_outs;
    debug_assert!(
        graph::typecheck(&known).is_ok(),
        "{:?}",
        graph::typecheck(&known)
    );
    debug_assert!(
        graph::typecheck(&unknown).is_ok(),
        "{:?}",
        graph::typecheck(&unknown)
    );
    JvpSplit {
        known,
        unknown,
        n_res,
    }
}

/// Batch a graph: inputs batched at axis 0 where `batched[i]`, every output
/// batched at axis 0.
fn batch_graph(gr: &Graph, batched: &[bool], size: usize) -> Result<ClosedGraph> {
    let avals: Vec<Aval> = gr
        .in_avals()
        .into_iter()
        .zip(batched)
        .map(|(mut a, &b)| {
            if b {
                a.shape.insert(0, size);
            }
            a
        })
        .collect();
    let in_axes: Vec<Option<usize>> = batched.iter().map(|&b| b.then_some(0)).collect();
    trace(&avals, |xs| {
        batch::vmap(|a| graph::eval(gr, &a), xs, &in_axes, size, |_| Some(0))
    })
}

fn float_tangents(p: &[Tensor], t: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
    p.iter()
        .zip(t)
        .filter(|(p, _)| p.dtype().is_inexact())
        .map(|(p, t)| jvp::instantiate(t, p))
        .collect()
}

/// Put tangents back beside their primals (`None` for non-floats).
fn tangents_for(outs: &[Tensor], touts: Vec<Tensor>) -> Tangents {
    let mut it = touts.into_iter();
    outs.iter()
        .map(|o| {
            if o.dtype().is_inexact() {
                it.next()
            } else {
                None
            }
        })
        .collect()
}

pub fn jvp_cond(
    branches: &[GraphRef],
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let ops = &p[1..];
    let tops = float_tangents(ops, &t[1..])?;
    split_cond_jvp(&p[0], ops, &tops, branches, branches[0].outvars.len())
}

/// Forward mode only: reverse mode through a loop of unknown trip count
/// is an error (`transpose_while`).
#[allow(clippy::too_many_arguments)]
pub fn jvp_while(
    prim: &Prim,
    cond: &Graph,
    body: &Graph,
    n_cond: usize,
    n_body: usize,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    // Forward mode only. The primal loop runs on its own so that its
    // outputs stay primal values (under `grad` they must not enter
    // the tangent graph); the tangent loop runs beside it.
    if t.iter().flatten().any(super::is_reverse_tangent) {
        return Err(while_reverse_error());
    }
    let primal_outs = bind(prim, p.to_vec())?;
    let (cc, rest) = p.split_at(n_cond);
    let (bc, carry) = rest.split_at(n_body);
    let t_bc = float_tangents(bc, &t[n_cond..n_cond + n_body])?;
    let t_carry = float_tangents(carry, &t[n_cond + n_body..])?;
    let jb = jvp_graph(body)?;
    let n_bc = bc.len();
    let n_carry = carry.len();
    // New carry: (carry, t_carry). New body consts: jb's consts, bc, t_bc.
    let mut carry_avals: Vec<Aval> = carry.iter().map(Tensor::aval).collect();
    carry_avals.extend(t_carry.iter().map(Tensor::aval));
    let mut body_in: Vec<Aval> = bc.iter().map(Tensor::aval).collect();
    body_in.extend(t_bc.iter().map(Tensor::aval));
    body_in.extend(carry_avals.iter().cloned());
    let n_tbc = t_bc.len();
    let new_body = trace(&body_in, |xs| {
        let (bc, rest) = xs.split_at(n_bc);
        let (tbc, rest) = rest.split_at(n_tbc);
        let (c, tc) = rest.split_at(n_carry);
        let mut ins = bc.to_vec();
        ins.extend_from_slice(c);
        ins.extend_from_slice(tbc);
        ins.extend_from_slice(tc);
        jb.call(&ins)
    })?;
    let mut cond_in: Vec<Aval> = cc.iter().map(Tensor::aval).collect();
    cond_in.extend(carry_avals.iter().cloned());
    let n_cc = cc.len();
    let new_cond = trace(&cond_in, |xs| {
        let mut ins = xs[..n_cc].to_vec();
        ins.extend_from_slice(&xs[n_cc..n_cc + n_carry]);
        graph::eval(cond, &ins)
    })?;
    let mut body_ops = bc.to_vec();
    body_ops.extend(t_bc);
    let mut loop_carry = carry.to_vec();
    loop_carry.extend(t_carry);
    let looped = bind_while(new_cond, cc, new_body, &body_ops, &loop_carry)?;
    let touts = looped[n_carry..].to_vec();
    let tangents = tangents_for(&primal_outs, touts);
    Ok((primal_outs, tangents))
}

/// The JVP of a cond as two conds over the same index: one on the primals
/// (outputs and every branch's residuals), one linear in the tangents.
fn split_cond_jvp(
    index: &Tensor,
    ops: &[Tensor],
    tops: &[Tensor],
    branches: &[GraphRef],
    n_out: usize,
) -> Result<(Outs, Tangents)> {
    // Split each branch's JVP, then give all branches one residual list:
    // each known branch outputs every branch's residuals (zeros for the others').
    let mut knowns = Vec::new();
    let mut unknowns = Vec::new();
    let mut res_avals: Vec<Vec<Aval>> = Vec::new();
    for b in branches {
        let jg = jvp_graph(b)?;
        let n_c = jg.consts.len();
        // Make the JVP graph's constants ordinary primal inputs.
        let s = split_jvp(&jg.graph, n_c + ops.len(), n_out);
        let r: Vec<Aval> = s.known.out_avals()[n_out..].to_vec();
        res_avals.push(r);
        knowns.push((jg.consts.clone(), s.known));
        unknowns.push(s.unknown);
    }
    let all_res: Vec<Aval> = res_avals.iter().flatten().cloned().collect();
    let op_avals: Vec<Aval> = ops.iter().map(Tensor::aval).collect();
    let mut known_branches = Vec::new();
    let mut offset = 0;
    for (i, (consts, known)) in knowns.iter().enumerate() {
        let mine = res_avals[i].len();
        let before = offset;
        known_branches.push(trace(&op_avals, |xs| {
            let mut ins = consts.clone();
            ins.extend(xs);
            let outs = graph::eval(known, &ins)?;
            let mut result = outs[..n_out].to_vec();
            for (j, a) in all_res.iter().enumerate() {
                if j >= before && j < before + mine {
                    result.push(outs[n_out + j - before].clone());
                } else {
                    result.push(zeros(&a.shape, a.dtype)?);
                }
            }
            Ok(result)
        })?);
        offset += mine;
    }
    let known_out = bind_cond(index.clone(), known_branches, ops.to_vec())?;
    let primal_outs: Outs = known_out[..n_out].iter().cloned().collect();
    let residuals = known_out[n_out..].to_vec();
    // The tangent cond: (all residuals, tangents) → tangent outputs.
    let mut t_avals = all_res.clone();
    t_avals.extend(tops.iter().map(Tensor::aval));
    let mut tangent_branches = Vec::new();
    let mut offset = 0;
    for (i, u) in unknowns.iter().enumerate() {
        let mine = res_avals[i].len();
        let before = offset;
        let n_all = all_res.len();
        tangent_branches.push(trace(&t_avals, |xs| {
            let mut ins = xs[before..before + mine].to_vec();
            ins.extend_from_slice(&xs[n_all..]);
            graph::eval(u, &ins)
        })?);
        offset += mine;
    }
    let mut t_ops = residuals;
    t_ops.extend_from_slice(tops);
    let touts = bind_cond(index.clone(), tangent_branches, t_ops)?;
    let tangents = tangents_for(&primal_outs, touts.into_vec());
    Ok((primal_outs, tangents))
}

#[allow(clippy::too_many_arguments)]
pub fn jvp_scan(
    body: &Graph,
    n_consts: usize,
    n_carry: usize,
    length: usize,
    reverse: bool,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let (consts, rest) = p.split_at(n_consts);
    let (carry, xs) = rest.split_at(n_carry);
    let t_consts = float_tangents(consts, &t[..n_consts])?;
    let t_carry = float_tangents(carry, &t[n_consts..n_consts + n_carry])?;
    let t_xs = float_tangents(xs, &t[n_consts + n_carry..])?;
    let jg = jvp_graph(body)?;
    let n_c = jg.consts.len();
    let n_body_in = body.invars.len();
    let n_body_out = body.outvars.len();
    let s = split_jvp(&jg.graph, n_c + n_body_in, n_body_out);
    // Known scan: (jg consts + consts, carry, xs) → (carry, ys, residuals
    // per step); jg's constants lead, as the scan's constants do.
    let known = s.known;
    let mut kops: Vec<Tensor> = jg.consts.clone();
    kops.extend_from_slice(consts);
    kops.extend_from_slice(carry);
    kops.extend_from_slice(xs);
    let known_out = bind(
        &Prim::Scan {
            body: GraphRef(Arc::new(known)),
            n_consts: n_c + n_consts,
            n_carry,
            length,
            reverse,
        },
        kops,
    )?;
    let primal_outs: Outs = known_out[..n_body_out].iter().cloned().collect();
    let res_stacked = known_out[n_body_out..].to_vec();
    // Tangent scan. The unknown graph's inputs are (residuals, tangents of
    // jg's inputs in order: consts, carry, xs); as a scan: tangent consts,
    // tangent carry, then residuals and tangent xs as scanned arrays.
    let mut unknown = s.unknown;
    let n_res = s.n_res;
    let (res_vars, tvars) = unknown.invars.split_at(n_res);
    let (res_vars, tvars) = (res_vars.to_vec(), tvars.to_vec());
    let n_tc = t_consts.len();
    let n_tcarry = t_carry.len();
    let mut invars = tvars[..n_tc].to_vec();
    invars.extend_from_slice(&tvars[n_tc..n_tc + n_tcarry]);
    invars.extend(res_vars);
    invars.extend_from_slice(&tvars[n_tc + n_tcarry..]);
    unknown.invars = invars;
    let mut tops = t_consts;
    tops.extend(t_carry);
    tops.extend(res_stacked);
    tops.extend(t_xs);
    let touts = bind(
        &Prim::Scan {
            body: GraphRef(Arc::new(unknown)),
            n_consts: n_tc,
            n_carry: n_tcarry,
            length,
            reverse,
        },
        tops,
    )?;
    let tangents = tangents_for(&primal_outs, touts.into_vec());
    Ok((primal_outs, tangents))
}

// ---------------------------------------------------------------------------
// Transpose

fn while_reverse_error() -> Error {
    Error::new(
        ErrorKind::TransformError,
        "reverse-mode differentiation does not work through while_loop: its trip count is \
         not known in advance. Use scan, or fori_loop with Python int bounds",
    )
}

/// A loop whose trip count is known only when it runs has no transpose
/// (its JVP fails earlier, at the line of the loop, under reverse mode).
pub fn transpose_while() -> Result<Vec<Option<Tensor>>> {
    Err(while_reverse_error())
}

fn is_linear(x: &LinIn) -> bool {
    matches!(x, LinIn::Linear(_))
}

fn lin_aval(x: &LinIn) -> Aval {
    match x {
        LinIn::Linear(a) => a.clone(),
        LinIn::Known(t) => t.aval(),
    }
}

pub fn transpose_cond(
    branches: &[GraphRef],
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let LinIn::Known(index) = &ins[0] else {
        return Err(Error::new(
            ErrorKind::TransformError,
            "cond: the index is not linear",
        ));
    };
    let ops = &ins[1..];
    let known: Vec<Option<Tensor>> = ops
        .iter()
        .map(|x| match x {
            LinIn::Known(t) => Some(t.clone()),
            LinIn::Linear(_) => None,
        })
        .collect();
    let out_avals = branches[0].out_avals();
    let cts: Vec<Tensor> = cts
        .iter()
        .zip(&out_avals)
        .map(|(c, a)| match c {
            Some(c) => Ok(c.clone()),
            None => zeros(&a.shape, a.dtype),
        })
        .collect::<Result<_>>()?;
    let linear_avals: Vec<Aval> = ops.iter().filter(|x| is_linear(x)).map(lin_aval).collect();
    let back = |b: &Graph, known: &[Option<Tensor>], cts: &[Tensor]| -> Result<Vec<Tensor>> {
        let cts: Vec<Option<Tensor>> = cts.iter().cloned().map(Some).collect();
        let in_cts = backward_pass(b, known, &cts)?;
        in_cts
            .into_iter()
            .zip(known)
            .filter(|(_, k)| k.is_none())
            .zip(&linear_avals)
            .map(|((c, _), a)| match c {
                Some(c) => Ok(c),
                None => zeros(&a.shape, a.dtype),
            })
            .collect()
    };
    let result = if let Tensor::Concrete(_) = index {
        let i = scalar_index(index, branches.len())?;
        back(&branches[i], &known, &cts)?
    } else {
        // A traced index: a cond over the transposed branches.
        let known_vals: Vec<Tensor> = known.iter().flatten().cloned().collect();
        let mut avals: Vec<Aval> = known_vals.iter().map(Tensor::aval).collect();
        avals.extend(out_avals.iter().cloned());
        let nk = known_vals.len();
        let closed = branches
            .iter()
            .map(|b| {
                trace(&avals, |xs| {
                    let mut kv = xs[..nk].iter();
                    let known: Vec<Option<Tensor>> = known
                        .iter()
                        .map(|k| k.as_ref().map(|_| kv.next().expect("known").clone()))
                        .collect();
                    back(b, &known, &xs[nk..])
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut operands = known_vals;
        operands.extend(cts);
        bind_cond(index.clone(), closed, operands)?.into_vec()
    };
    let mut it = result.into_iter();
    let mut out = vec![None];
    out.extend(
        ops.iter()
            .map(|x| if is_linear(x) { it.next() } else { None }),
    );
    Ok(out)
}

/// The transpose of a scan that is linear in its constants, carry and
/// some scanned arrays (the others are residuals): a scan running the
/// other way whose body is the backward pass of this one's.
#[allow(clippy::too_many_arguments)]
pub fn transpose_scan(
    body: &Graph,
    n_consts: usize,
    n_carry: usize,
    length: usize,
    reverse: bool,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let (c_in, rest) = ins.split_at(n_consts);
    let x_in = &rest[n_carry..];
    // Linear constants' cotangents are accumulated in the carry. A carry is
    // always linear here (a constant carry of a linear scan is a zero).
    let lin_consts: Vec<usize> = (0..n_consts).filter(|&i| is_linear(&c_in[i])).collect();
    let known_consts: Vec<Tensor> = c_in
        .iter()
        .filter_map(|x| match x {
            LinIn::Known(t) => Some(t.clone()),
            LinIn::Linear(_) => None,
        })
        .collect();
    let lin_xs: Vec<usize> = (0..x_in.len()).filter(|&i| is_linear(&x_in[i])).collect();
    let known_xs: Vec<Tensor> = x_in
        .iter()
        .filter_map(|x| match x {
            LinIn::Known(t) => Some(t.clone()),
            LinIn::Linear(_) => None,
        })
        .collect();
    let out_avals = body.out_avals();
    let inst = |c: &Option<Tensor>, a: &Aval| -> Result<Tensor> {
        match c {
            Some(c) => Ok(c.clone()),
            None => zeros(&a.shape, a.dtype),
        }
    };
    let body_in = body.in_avals();
    let ct_consts0: Vec<Tensor> = lin_consts
        .iter()
        .map(|&i| zeros(&body_in[i].shape, body_in[i].dtype))
        .collect::<Result<_>>()?;
    let ct_carry0: Vec<Tensor> = (0..n_carry)
        .map(|i| inst(&cts[i], &out_avals[i]))
        .collect::<Result<_>>()?;
    let n_y = out_avals.len() - n_carry;
    let ct_ys: Vec<Tensor> = (0..n_y)
        .map(|j| {
            let mut a = out_avals[n_carry + j].clone();
            a.shape.insert(0, length);
            inst(&cts[n_carry + j], &a)
        })
        .collect::<Result<_>>()?;
    // Transposed body: consts = known consts; carry = (ct consts acc, ct
    // carry); xs = (known xs slices, ct y slices); ys = ct of linear xs.
    let mut avals: Vec<Aval> = known_consts.iter().map(Tensor::aval).collect();
    avals.extend(ct_consts0.iter().map(Tensor::aval));
    avals.extend(ct_carry0.iter().map(Tensor::aval));
    let slice_aval = |t: &Tensor| Aval {
        shape: t.shape()[1..].into(),
        dtype: t.dtype(),
    };
    avals.extend(known_xs.iter().map(slice_aval));
    avals.extend(ct_ys.iter().map(slice_aval));
    let (nkc, nlc, nkx) = (known_consts.len(), lin_consts.len(), known_xs.len());
    let closed = trace(&avals, |v| {
        let (kc, rest) = v.split_at(nkc);
        let (acc, rest) = rest.split_at(nlc);
        let (ct_carry, rest) = rest.split_at(n_carry);
        let (kx, ct_y) = rest.split_at(nkx);
        let (mut kc, mut kx) = (kc.iter(), kx.iter());
        let mut known: Vec<Option<Tensor>> = Vec::new();
        for x in c_in {
            known.push(match x {
                LinIn::Known(_) => Some(kc.next().expect("known const").clone()),
                LinIn::Linear(_) => None,
            });
        }
        known.extend(std::iter::repeat_n(None, n_carry));
        for x in x_in {
            known.push(match x {
                LinIn::Known(_) => Some(kx.next().expect("known x").clone()),
                LinIn::Linear(_) => None,
            });
        }
        let mut out_cts: Vec<Option<Tensor>> = ct_carry.iter().cloned().map(Some).collect();
        out_cts.extend(ct_y.iter().cloned().map(Some));
        let in_cts = backward_pass(body, &known, &out_cts)?;
        let get = |i: usize| -> Result<Tensor> { inst(&in_cts[i], &body_in[i]) };
        let mut result = Vec::new();
        for (k, &i) in lin_consts.iter().enumerate() {
            result.push(add(&acc[k], &get(i)?)?);
        }
        for i in 0..n_carry {
            result.push(get(n_consts + i)?);
        }
        for &i in &lin_xs {
            result.push(get(n_consts + n_carry + i)?);
        }
        Ok(result)
    })?;
    let n_closed = closed.consts.len();
    let mut ops = closed.consts.clone();
    ops.extend(known_consts);
    ops.extend(ct_consts0);
    ops.extend(ct_carry0);
    ops.extend(known_xs);
    ops.extend(ct_ys);
    let outs = bind(
        &Prim::Scan {
            body: GraphRef(closed.graph),
            n_consts: n_closed + nkc,
            n_carry: nlc + n_carry,
            length,
            reverse: !reverse,
        },
        ops,
    )?;
    let (acc, rest) = outs.split_at(nlc);
    let (ct_carry, ct_xs) = rest.split_at(n_carry);
    let mut result = Vec::with_capacity(ins.len());
    let mut acc = acc.iter();
    for x in c_in {
        result.push(is_linear(x).then(|| acc.next().expect("acc").clone()));
    }
    result.extend(ct_carry.iter().cloned().map(Some));
    let mut ct_xs = ct_xs.iter();
    for x in x_in {
        result.push(is_linear(x).then(|| ct_xs.next().expect("ct x").clone()));
    }
    Ok(result)
}

// ---------------------------------------------------------------------------
// Batching

pub fn batch_cond(
    branches: &[GraphRef],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let ops = &v[1..];
    if d[0].is_some() {
        // A batched index: run every branch, then select per example.
        let idx = batch::to_front(&v[0], d[0], size)?;
        let idx = convert(&idx, DType::I32)?;
        let all: Vec<bool> = vec![true; ops.len()];
        let moved = ops
            .iter()
            .zip(&d[1..])
            .map(|(x, &di)| batch::to_front(x, di, size))
            .collect::<Result<Vec<_>>>()?;
        let mut result: Option<Vec<Tensor>> = None;
        for (i, b) in branches.iter().enumerate() {
            let outs = batch_graph(b, &all, size)?.call(&moved)?;
            result = Some(match result {
                None => outs,
                Some(prev) => {
                    let is_i = binary(BinaryOp::Eq, &idx, &scalar(i as f64, DType::I32))?;
                    // Clamp: an index past the end picks the last branch.
                    let is_i = if i + 1 == branches.len() {
                        binary(BinaryOp::Ge, &idx, &scalar(i as f64, DType::I32))?
                    } else {
                        is_i
                    };
                    prev.iter()
                        .zip(outs)
                        .map(|(p, o)| {
                            let mut shape = vec![size];
                            shape.extend(std::iter::repeat_n(1, o.ndim() - 1));
                            let c = reshape(&is_i, &shape)?;
                            let c = broadcast_to(&c, o.shape())?;
                            select(&c, &o, p)
                        })
                        .collect::<Result<Vec<_>>>()?
                }
            });
        }
        let outs = result.unwrap_or_default();
        let n = outs.len();
        return Ok((outs.into(), vec![Some(0); n]));
    }
    let batched: Vec<bool> = d[1..].iter().map(Option::is_some).collect();
    let moved = ops
        .iter()
        .zip(&d[1..])
        .map(|(x, &di)| match di {
            Some(di) => moveaxis(x, di, 0),
            None => Ok(x.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let closed = branches
        .iter()
        .map(|b| batch_graph(b, &batched, size))
        .collect::<Result<Vec<_>>>()?;
    let outs = bind_cond(v[0].clone(), closed, moved)?;
    let n = outs.len();
    Ok((outs, vec![Some(0); n]))
}

#[allow(clippy::too_many_arguments)]
pub fn batch_while(
    cond: &Graph,
    body: &Graph,
    n_cond: usize,
    n_body: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    // Every carry batched; consts as they come.
    let front = |i: usize| -> Result<Tensor> {
        match d[i] {
            Some(di) => moveaxis(&v[i], di, 0),
            None => Ok(v[i].clone()),
        }
    };
    let n_c = n_cond + n_body;
    let n_carry = v.len() - n_c;
    let mut ops = Vec::new();
    for i in 0..n_c {
        ops.push(front(i)?);
    }
    for i in n_c..v.len() {
        ops.push(batch::to_front(&v[i], d[i], size)?);
    }
    let mut cond_b: Vec<bool> = d[..n_cond].iter().map(Option::is_some).collect();
    cond_b.extend(std::iter::repeat_n(true, n_carry));
    let mut body_b: Vec<bool> = d[n_cond..n_c].iter().map(Option::is_some).collect();
    body_b.extend(std::iter::repeat_n(true, n_carry));
    let bcond = batch_graph(cond, &cond_b, size)?;
    let bbody = batch_graph(body, &body_b, size)?;
    let carry_avals: Vec<Aval> = ops[n_c..].iter().map(Tensor::aval).collect();
    let cc_avals: Vec<Aval> = ops[..n_cond].iter().map(Tensor::aval).collect();
    let bc_avals: Vec<Aval> = ops[n_cond..n_c].iter().map(Tensor::aval).collect();
    // The loop runs while any example's predicate holds; finished
    // examples keep their carry.
    let mut cin = cc_avals.clone();
    cin.extend(carry_avals.iter().cloned());
    let new_cond = trace(&cin, |xs| {
        let pred = bcond.call(&xs)?.swap_remove(0);
        Ok(vec![bind(
            &Prim::Reduce {
                op: ReduceOp::Any,
                axes: vec![0],
            },
            [pred],
        )?
        .swap_remove(0)])
    })?;
    let mut bin = cc_avals.clone();
    bin.extend(bc_avals);
    bin.extend(carry_avals.iter().cloned());
    let (ncc, nbc) = (n_cond, n_body);
    let new_body = trace(&bin, |xs| {
        let (cc, rest) = xs.split_at(ncc);
        let (bc, carry) = rest.split_at(nbc);
        let mut ci = cc.to_vec();
        ci.extend_from_slice(carry);
        let pred = bcond.call(&ci)?.swap_remove(0);
        let mut bi = bc.to_vec();
        bi.extend_from_slice(carry);
        let next = bbody.call(&bi)?;
        next.iter()
            .zip(carry)
            .map(|(n, c)| {
                let mut shape = vec![size];
                shape.extend(std::iter::repeat_n(1, n.ndim() - 1));
                let p = broadcast_to(&reshape(&pred, &shape)?, n.shape())?;
                select(&p, n, c)
            })
            .collect()
    })?;
    let outs = bind_while(new_cond, &ops[..ncc], new_body, &ops[..n_c], &ops[n_c..])?;
    Ok((outs, vec![Some(0); n_carry]))
}

#[allow(clippy::too_many_arguments)]
pub fn batch_scan(
    body: &Graph,
    n_consts: usize,
    n_carry: usize,
    length: usize,
    reverse: bool,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let mut ops = Vec::new();
    let mut batched = Vec::new();
    for i in 0..v.len() {
        let is_const = i < n_consts;
        let is_carry = !is_const && i < n_consts + n_carry;
        ops.push(match (d[i], is_carry) {
            (_, true) => {
                batched.push(true);
                batch::to_front(&v[i], d[i], size)?
            }
            (None, false) => {
                batched.push(false);
                v[i].clone()
            }
            (Some(di), false) => {
                batched.push(true);
                // Scanned arrays keep the scan axis first; the batch axis follows.
                moveaxis(&v[i], di, if is_const { 0 } else { 1 })?
            }
        });
    }
    let bbody = batch_graph(body, &batched, size)?;
    let mut operands = bbody.consts.clone();
    operands.extend(ops);
    let outs = bind(
        &Prim::Scan {
            body: GraphRef(bbody.graph.clone()),
            n_consts: bbody.consts.len() + n_consts,
            n_carry,
            length,
            reverse,
        },
        operands,
    )?;
    let n = outs.len();
    let dims = (0..n)
        .map(|i| Some(if i < n_carry { 0 } else { 1 }))
        .collect();
    Ok((outs, dims))
}

// ---------------------------------------------------------------------------
// Partitioning: control flow runs replicated, on whole operands (a body
// is a graph of its own, not partitioned with the graph that holds it).

pub fn partition_cond(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

pub fn partition_while(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

pub fn partition_scan(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

// ---------------------------------------------------------------------------
// Constructors (what `cond`, `while_loop`, `fori_loop` and `scan` bind)

/// One branch of `cond`, as a function of the flat operands.
pub type Branch<'a> = Box<dyn FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>> + 'a>;

/// `cond(index, branches, operands)`: each branch maps the operands to outputs.
pub fn cond(
    index: Tensor,
    branches: Vec<Branch<'_>>,
    operands: Vec<Tensor>,
) -> Result<Vec<Tensor>> {
    let avals: Vec<Aval> = operands.iter().map(Tensor::aval).collect();
    // The branches see the operands' weak types (what their outputs'
    // weak types, and so the cond's, follow from).
    let weak: Vec<bool> = operands.iter().map(Tensor::is_weak).collect();
    let closed = branches
        .into_iter()
        .map(|b| {
            trace(&avals, |ts| {
                b(crate::tensor::weakened_each(ts, &weak).collect())
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let index = if index.dtype() == DType::Bool {
        convert(&index, DType::I32)?
    } else {
        index
    };
    if !index.shape().is_empty() {
        return Err(Error::type_error(format!(
            "cond: the predicate or index must be a scalar, got {}",
            type_str(index.shape(), index.dtype())
        )));
    }
    Ok(bind_cond(index, closed, operands)?.into_vec())
}

/// `while_loop(cond_fun, body_fun, init)` over a flat carry.
pub fn while_loop(
    cond_fn: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    mut body_fn: impl FnMut(Vec<Tensor>) -> Result<Vec<Tensor>>,
    mut init: Vec<Tensor>,
    weak: &[bool],
) -> Result<Vec<Tensor>> {
    let (b, _) = trace_carry(&mut init, weak, &[], &[], &mut body_fn)?;
    let avals: Vec<Aval> = init.iter().map(Tensor::aval).collect();
    let c = trace(&avals, cond_fn)?;
    Ok(bind_while(c, &[], b, &[], &init)?.into_vec())
}

/// Trace a loop body over (carry ++ extra inputs) whose first outputs are
/// the new carry. A carry that began as a Python scalar (`weak`) takes the
/// dtype the body gives it, as JAX's weak types do: `scan(f, 0.0, xs)` over
/// float64 xs carries float64. (The body is traced again in that case.)
fn trace_carry(
    init: &mut [Tensor],
    weak: &[bool],
    extra: &[Aval],
    extra_layouts: &[Layout],
    f: &mut dyn FnMut(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<(ClosedGraph, Vec<Layout>)> {
    loop {
        let mut avals: Vec<Aval> = init.iter().map(Tensor::aval).collect();
        avals.extend_from_slice(extra);
        // The body's values carry their operands' layouts, as JAX's types do.
        let mut layouts: Vec<Layout> = init.iter().map(Tensor::placement).collect();
        layouts.extend_from_slice(extra_layouts);
        let mut out_layouts = Vec::new();
        let weak_in: Vec<bool> = init.iter().map(Tensor::is_weak).collect();
        let body = graph::trace_laid_out(&avals, &layouts, true, |ts| {
            let outs = f(crate::tensor::weakened_each(ts, &weak_in).collect())?;
            out_layouts = outs.iter().map(Tensor::placement).collect();
            Ok(outs)
        })?;
        let outs = body.graph.out_avals();
        let mut changed = false;
        for (i, c) in init.iter_mut().enumerate() {
            if let Some(o) = outs.get(i) {
                if weak.get(i) == Some(&true) && o.dtype != c.dtype() && o.shape[..] == *c.shape() {
                    *c = convert(c, o.dtype)?;
                    changed = true;
                }
                // A weak carry the body makes strong starts strong (JAX
                // promotes the initial value the same way).
                if c.is_weak() && body.graph.weak_outs.get(i) != Some(&true) {
                    *c = c.clone().weakened(false);
                    changed = true;
                }
            }
        }
        if !changed {
            return Ok((body, out_layouts));
        }
    }
}

/// A value's layout over a mesh, if it has one.
type Layout = Option<Arc<arr_kernels::sharding::Placement>>;

/// `scan(f, init, xs)` over a flat carry and flat scanned arrays: `f` maps
/// (carry ++ x slices) to (carry ++ y slices).
pub fn scan(
    mut f: impl FnMut(Vec<Tensor>) -> Result<Vec<Tensor>>,
    mut init: Vec<Tensor>,
    xs: Vec<Tensor>,
    length: usize,
    reverse: bool,
    weak: &[bool],
) -> Result<Vec<Tensor>> {
    let mut slices = Vec::new();
    let mut slice_layouts = Vec::new();
    for x in &xs {
        if x.shape().first() != Some(&length) {
            return Err(Error::shape_error(format!(
                "scan: every scanned array needs a leading axis of length {length}, got {}",
                type_str(x.shape(), x.dtype())
            )));
        }
        slices.push(Aval {
            shape: x.shape()[1..].into(),
            dtype: x.dtype(),
        });
        slice_layouts.push(x.placement().map(|p| {
            Arc::new(arr_kernels::sharding::Placement {
                mesh: p.mesh.clone(),
                spec: p.spec[1..].to_vec(),
            })
        }));
    }
    let (body, body_layouts) = trace_carry(&mut init, weak, &slices, &slice_layouts, &mut f)?;
    let n_carry = init.len();
    let mut ops = body.consts.clone();
    ops.extend(init);
    ops.extend(xs);
    let outs = bind(
        &Prim::Scan {
            n_consts: body.consts.len(),
            body: GraphRef(body.graph),
            n_carry,
            length,
            reverse,
        },
        ops,
    )?
    .into_vec();
    // The outputs have the layouts the body gave them (stacked outputs
    // unsplit along the scanned axis), as JAX's scan's types do.
    outs.into_iter()
        .enumerate()
        .map(|(i, o)| {
            let layout = match body_layouts.get(i).cloned().flatten() {
                Some(p) if i >= n_carry => {
                    let mut spec = vec![Vec::new()];
                    spec.extend(p.spec.iter().cloned());
                    Some(arr_kernels::sharding::Placement {
                        mesh: p.mesh.clone(),
                        spec,
                    })
                }
                Some(p) => Some((*p).clone()),
                None => None,
            };
            match layout {
                Some(p) if o.placement().as_deref() != Some(&p) && p.spec.len() == o.ndim() => {
                    crate::prim::bind1(&Prim::ShardingConstraint(Arc::new(p)), [o])
                }
                _ => Ok(o),
            }
        })
        .collect()
}
