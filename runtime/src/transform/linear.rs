//! Reverse mode: `linearize` (JVP with the tangent work recorded as a
//! graph), the backward pass that transposes such a graph, and one
//! transpose rule per linear primitive. `vjp` and `grad` are these two put
//! together.
//!
//! Partial evaluation happens by level: while linearizing, the primal
//! values are concrete (or belong to outer traces), so every primitive on
//! them runs at once; only primitives touching a tangent reach the graph
//! trace. The values they read from the primal computation become the
//! graph's constants: the residuals, all that reverse mode keeps alive.

use super::graph::{self, Atom, Graph};
use super::jvp;
use super::ops::*;
use crate::error::{Error, ErrorKind, Result};
use crate::prim::{bind, Aval, Prim};
use crate::tensor::Tensor;
use arr_kernels::{BinaryOp, DType, ScanOp, ScatterMode, UnaryOp};
use std::rc::Rc;

/// A linear function from the tangents of some inputs to the tangents of
/// the outputs, as a graph whose constants are the residuals.
pub struct LinearFn {
    pub graph: Rc<Graph>,
    pub consts: Vec<Tensor>,
    /// Which primal inputs have a tangent (floats do, integers do not).
    pub active: Vec<bool>,
    pub in_avals: Vec<Aval>,
    pub out_avals: Vec<Aval>,
}

/// Evaluate `f` at `primals` and return its outputs and its linearization.
pub fn linearize(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    primals: Vec<Tensor>,
) -> Result<(Vec<Tensor>, LinearFn)> {
    let active: Vec<bool> = primals.iter().map(|p| p.dtype().is_float()).collect();
    let in_avals: Vec<Aval> = primals.iter().map(Tensor::aval).collect();
    let tangent_avals: Vec<Aval> = in_avals
        .iter()
        .zip(&active)
        .filter(|(_, &a)| a)
        .map(|(a, _)| a.clone())
        .collect();
    let mut primal_outs = Vec::new();
    let closed = graph::trace(&tangent_avals, false, |ts| {
        let mut ts = ts.into_iter();
        let tangents = active
            .iter()
            .map(|&a| if a { ts.next() } else { None })
            .collect();
        let (ps, touts) = jvp::jvp(f, primals, tangents)?;
        let touts = touts
            .iter()
            .zip(&ps)
            .map(|(t, p)| jvp::instantiate(t, p))
            .collect::<Result<Vec<_>>>()?;
        primal_outs = ps;
        Ok(touts)
    })?;
    let out_avals = primal_outs.iter().map(Tensor::aval).collect();
    Ok((
        primal_outs,
        LinearFn {
            graph: closed.graph,
            consts: closed.consts,
            active,
            in_avals,
            out_avals,
        },
    ))
}

impl LinearFn {
    /// The transpose: cotangents of the outputs (`None` is zero) to
    /// cotangents of the inputs (zeros for integer inputs).
    pub fn transpose(&self, cts: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
        let mut known: Vec<Option<Tensor>> = self.consts.iter().cloned().map(Some).collect();
        known.resize(self.graph.invars.len(), None);
        let in_cts = backward_pass(&self.graph, &known, cts)?;
        let mut linear = in_cts.into_iter().skip(self.consts.len());
        self.in_avals
            .iter()
            .zip(&self.active)
            .map(|(aval, &a)| {
                let ct = if a { linear.next().flatten() } else { None };
                match ct {
                    Some(ct) => Ok(ct),
                    None => zeros(&aval.shape, aval.dtype),
                }
            })
            .collect()
    }

    /// Apply the linear function itself (forward), to tangents of the active inputs.
    pub fn apply(&self, tangents: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut args = self.consts.clone();
        for (t, &a) in tangents.iter().zip(&self.active) {
            if a {
                args.push(t.clone());
            }
        }
        graph::eval(&self.graph, &args)
    }
}

/// An operand as the backward pass sees it: linear (with its type), or known.
pub enum LinIn {
    Linear(Aval),
    Known(Tensor),
}

/// Transpose a graph that is linear in the inputs whose `known` entry is
/// `None`: given the outputs' cotangents, return each input's cotangent
/// (`None` for known inputs and for zeros). Equations whose inputs are all
/// known run forward first.
pub fn backward_pass(
    graph: &Graph,
    known: &[Option<Tensor>],
    cts_out: &[Option<Tensor>],
) -> Result<Vec<Option<Tensor>>> {
    let n = graph.types.len();
    let mut values: Vec<Option<Tensor>> = vec![None; n];
    let mut linear = vec![false; n];
    for (&v, k) in graph.invars.iter().zip(known) {
        match k {
            Some(t) => values[v] = Some(t.clone()),
            None => linear[v] = true,
        }
    }
    let is_linear = |linear: &[bool], a: &Atom| matches!(a, Atom::Var(v) if linear[*v]);
    let read = |values: &[Option<Tensor>], a: &Atom| -> Tensor {
        match a {
            Atom::Var(v) => values[*v].clone().expect("known value"),
            Atom::Lit(x) => Tensor::Concrete(x.clone()),
        }
    };
    let mut linear_eqns = Vec::new();
    for (i, eqn) in graph.eqns.iter().enumerate() {
        if eqn.inputs.iter().any(|a| is_linear(&linear, a)) {
            for &o in &eqn.outputs {
                linear[o] = true;
            }
            linear_eqns.push(i);
        } else {
            let ins: Vec<Tensor> = eqn.inputs.iter().map(|a| read(&values, a)).collect();
            for (&o, t) in eqn.outputs.iter().zip(bind(&eqn.prim, ins)?) {
                values[o] = Some(t);
            }
        }
    }
    let mut cts: Vec<Option<Tensor>> = vec![None; n];
    let accumulate = |cts: &mut Vec<Option<Tensor>>, v: usize, ct: Tensor| -> Result<()> {
        cts[v] = Some(match cts[v].take() {
            Some(old) => add(&old, &ct)?,
            None => ct,
        });
        Ok(())
    };
    for (a, ct) in graph.outvars.iter().zip(cts_out) {
        if let (Atom::Var(v), Some(ct)) = (a, ct) {
            if linear[*v] {
                accumulate(&mut cts, *v, ct.clone())?;
            }
        }
    }
    for &i in linear_eqns.iter().rev() {
        let eqn = &graph.eqns[i];
        let out_cts: Vec<Option<Tensor>> = eqn.outputs.iter().map(|&o| cts[o].take()).collect();
        if out_cts.iter().all(Option::is_none) {
            continue;
        }
        let ins: Vec<LinIn> = eqn
            .inputs
            .iter()
            .map(|a| match a {
                Atom::Var(v) if linear[*v] => LinIn::Linear(graph.types[*v].clone()),
                a => LinIn::Known(read(&values, a)),
            })
            .collect();
        let in_cts = transpose_rule(&eqn.prim, &out_cts, &ins)?;
        for (a, ct) in eqn.inputs.iter().zip(in_cts) {
            if let (Atom::Var(v), Some(ct)) = (a, ct) {
                if linear[*v] {
                    accumulate(&mut cts, *v, ct)?;
                }
            }
        }
    }
    Ok(graph
        .invars
        .iter()
        .map(|&v| if linear[v] { cts[v].take() } else { None })
        .collect())
}

fn not_linear(prim: &Prim) -> Error {
    Error::new(
        ErrorKind::TransformError,
        format!(
            "reverse-mode differentiation: no transpose rule for {} applied to a tangent",
            prim.ir_name()
        ),
    )
}

impl LinIn {
    fn shape(&self) -> &[usize] {
        match self {
            LinIn::Linear(a) => &a.shape,
            LinIn::Known(t) => t.shape(),
        }
    }

    fn is_linear(&self) -> bool {
        matches!(self, LinIn::Linear(_))
    }

    fn known(&self) -> Result<&Tensor> {
        match self {
            LinIn::Known(t) => Ok(t),
            LinIn::Linear(_) => Err(Error::new(
                ErrorKind::TransformError,
                "reverse-mode differentiation: a product of two tangents is not linear",
            )),
        }
    }
}

/// The cotangent for each linear input, `None` for known ones.
fn for_linear(
    ins: &[LinIn],
    mut f: impl FnMut(usize) -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    (0..ins.len())
        .map(|i| {
            if ins[i].is_linear() {
                f(i).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect()
}

/// The transpose rule of each linear primitive.
pub fn transpose_rule(
    prim: &Prim,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    if let Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. } =
        prim
    {
        return super::control::transpose(prim, cts, ins);
    }
    let ct = cts[0].clone().expect("a cotangent");
    let one_op = |p: Prim, x: Tensor| bind(&p, [x]).map(|mut o| o.swap_remove(0));
    match prim {
        Prim::Unary(UnaryOp::Neg) => for_linear(ins, |_| neg(&ct)),
        Prim::Binary(op) => match op {
            BinaryOp::Add => for_linear(ins, |i| unbroadcast(&ct, ins[i].shape())),
            BinaryOp::Sub => for_linear(ins, |i| {
                let c = if i == 0 { ct.clone() } else { neg(&ct)? };
                unbroadcast(&c, ins[i].shape())
            }),
            BinaryOp::Mul => for_linear(ins, |i| {
                let other = ins[1 - i].known()?;
                unbroadcast(&mul(&ct, other)?, ins[i].shape())
            }),
            BinaryOp::Div if !ins[1].is_linear() => for_linear(ins, |i| {
                unbroadcast(&div(&ct, ins[1].known()?)?, ins[i].shape())
            }),
            _ => Err(not_linear(prim)),
        },
        Prim::Select => {
            let c = ins[0].known()?;
            let zero = lit(0.0, &ct);
            for_linear(ins, |i| {
                let picked = if i == 1 {
                    select(c, &ct, &zero)?
                } else {
                    select(c, &zero, &ct)?
                };
                unbroadcast(&broadcast_to(&picked, ct.shape())?, ins[i].shape())
            })
        }
        Prim::Convert(_) => for_linear(ins, |i| match &ins[i] {
            LinIn::Linear(a) => convert(&ct, a.dtype),
            LinIn::Known(_) => unreachable!(),
        }),
        Prim::Reduce {
            op: arr_kernels::ReduceOp::Sum,
            axes,
        } => for_linear(ins, |i| {
            let mut kept = ins[i].shape().to_vec();
            for &a in axes {
                kept[a] = 1;
            }
            broadcast_to(&reshape(&ct, &kept)?, ins[i].shape())
        }),
        Prim::Cumulative {
            op: ScanOp::Sum,
            axis,
            reverse,
        } => for_linear(ins, |_| {
            one_op(
                Prim::Cumulative {
                    op: ScanOp::Sum,
                    axis: *axis,
                    reverse: !reverse,
                },
                ct.clone(),
            )
        }),
        Prim::DotGeneral(d) => for_linear(ins, |i| {
            let shape = ins[i].shape();
            let (other, mine_batch, mine_contract, other_batch, other_contract) = if i == 0 {
                (
                    ins[1].known()?,
                    &d.lhs_batch,
                    &d.lhs_contract,
                    &d.rhs_batch,
                    &d.rhs_contract,
                )
            } else {
                (
                    ins[0].known()?,
                    &d.rhs_batch,
                    &d.rhs_contract,
                    &d.lhs_batch,
                    &d.lhs_contract,
                )
            };
            let free = |n: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
                (0..n)
                    .filter(|a| !batch.contains(a) && !contract.contains(a))
                    .collect()
            };
            let nb = d.lhs_batch.len();
            let lhs_free = free(
                if i == 0 { shape.len() } else { other.ndim() },
                &d.lhs_batch,
                &d.lhs_contract,
            );
            let mine_free = free(shape.len(), mine_batch, mine_contract);
            let other_free = free(other.ndim(), other_batch, other_contract);
            // ct's axes: batch, lhs free, rhs free. Contract ct's "other free"
            // axes with the other operand's free axes.
            let ct_other_free: Vec<usize> = if i == 0 {
                (nb + lhs_free.len()..ct.ndim()).collect()
            } else {
                (nb..nb + lhs_free.len()).collect()
            };
            let dims = arr_kernels::DotDims {
                lhs_batch: (0..nb).collect(),
                rhs_batch: other_batch.clone(),
                lhs_contract: ct_other_free,
                rhs_contract: other_free,
            };
            let r = bind(&Prim::DotGeneral(dims), [ct.clone(), other.clone()])?.swap_remove(0);
            // r's axes: batch, my free axes, then the other's remaining (its
            // contracted) axes in increasing order, each paired with one of mine.
            let mut pairs: Vec<(usize, usize)> = other_contract
                .iter()
                .zip(mine_contract)
                .map(|(&o, &m)| (o, m))
                .collect();
            pairs.sort();
            let mut src: Vec<usize> = mine_batch.clone();
            src.extend(&mine_free);
            src.extend(pairs.iter().map(|&(_, m)| m));
            let perm: Vec<usize> = (0..shape.len())
                .map(|ax| src.iter().position(|&s| s == ax).expect("every axis"))
                .collect();
            transpose(&r, &perm)
        }),
        Prim::Transpose(perm) => for_linear(ins, |_| {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            transpose(&ct, &inv)
        }),
        Prim::BroadcastInDim { shape, dims } => for_linear(ins, |i| {
            let in_shape = ins[i].shape();
            let axes: Vec<usize> = (0..shape.len())
                .filter(|a| match dims.iter().position(|d| d == a) {
                    None => true,
                    Some(k) => in_shape[k] == 1 && shape[*a] != 1,
                })
                .collect();
            reshape(&reduce_sum(&ct, &axes)?, in_shape)
        }),
        Prim::Reshape(_) => for_linear(ins, |i| reshape(&ct, ins[i].shape())),
        Prim::Slice { start, stride, .. } => for_linear(ins, |i| {
            let in_shape = ins[i].shape();
            if ct.is_empty() {
                return zeros(in_shape, ct.dtype());
            }
            let n = in_shape.len();
            let interior: Vec<usize> = stride.iter().map(|s| s - 1).collect();
            let hi: Vec<usize> = (0..n)
                .map(|k| in_shape[k] - start[k] - ((ct.shape()[k] - 1) * stride[k] + 1))
                .collect();
            bind(
                &Prim::Pad {
                    lo: start.clone(),
                    hi,
                    interior,
                },
                [ct.clone(), lit(0.0, &ct)],
            )
            .map(|mut o| o.swap_remove(0))
        }),
        Prim::Rev(axes) => for_linear(ins, |_| one_op(Prim::Rev(axes.clone()), ct.clone())),
        Prim::Pad { lo, interior, .. } => {
            let operand_ct = |shape: &[usize]| -> Result<Tensor> {
                let n = shape.len();
                let stride: Vec<usize> = interior.iter().map(|i| i + 1).collect();
                let limit: Vec<usize> = (0..n)
                    .map(|k| {
                        if shape[k] == 0 {
                            lo[k]
                        } else {
                            lo[k] + (shape[k] - 1) * stride[k] + 1
                        }
                    })
                    .collect();
                one_op(
                    Prim::Slice {
                        start: lo.clone(),
                        limit,
                        stride,
                    },
                    ct.clone(),
                )
            };
            for_linear(ins, |i| {
                if i == 0 {
                    operand_ct(ins[0].shape())
                } else {
                    // The padding value's cotangent: everything not from the operand.
                    let all: Vec<usize> = (0..ct.ndim()).collect();
                    let inner = operand_ct(ins[0].shape())?;
                    let inner_axes: Vec<usize> = (0..inner.ndim()).collect();
                    sub(&reduce_sum(&ct, &all)?, &reduce_sum(&inner, &inner_axes)?)
                }
            })
        }
        Prim::Concatenate { axis } => {
            let mut offset = 0;
            let mut out = Vec::new();
            for a in ins {
                let shape = a.shape();
                if a.is_linear() {
                    let mut start = vec![0; shape.len()];
                    let mut limit = ct.shape().to_vec();
                    start[*axis] = offset;
                    limit[*axis] = offset + shape[*axis];
                    out.push(Some(one_op(
                        Prim::Slice {
                            start,
                            limit,
                            stride: vec![1; shape.len()],
                        },
                        ct.clone(),
                    )?));
                } else {
                    out.push(None);
                }
                offset += shape[*axis];
            }
            Ok(out)
        }
        Prim::Gather { axis } => {
            let idx = ins[1].known()?;
            for_linear(ins, |i| {
                let shape = ins[i].shape();
                // Gather clamps its indices, and scatter drops those out of
                // range: clamp them here, so each cotangent goes back to the
                // element that was read.
                let idx = clamp_indices(idx, shape[*axis])?;
                let z = zeros(shape, ct.dtype())?;
                bind(
                    &Prim::Scatter {
                        axis: *axis,
                        mode: ScatterMode::Add,
                    },
                    [z, idx, ct.clone()],
                )
                .map(|mut o| o.swap_remove(0))
            })
        }
        Prim::Scatter { axis, mode } => {
            let idx = ins[1].known()?;
            for_linear(ins, |i| {
                if i == 0 {
                    match mode {
                        ScatterMode::Add => Ok(ct.clone()),
                        ScatterMode::Set => {
                            let z = zeros(ins[2].shape(), ct.dtype())?;
                            bind(prim, [ct.clone(), idx.clone(), z]).map(|mut o| o.swap_remove(0))
                        }
                    }
                } else {
                    // An update reaches the output only if its index is in
                    // range and, with Set, no later update has the same index.
                    let n = ins[0].shape()[*axis];
                    let kept = scatter_kept(idx, n, *mode)?;
                    let upd_shape = ins[2].shape();
                    let kept = bind(
                        &Prim::BroadcastInDim {
                            shape: upd_shape.to_vec(),
                            dims: (*axis..*axis + idx.ndim()).collect(),
                        },
                        [kept],
                    )?
                    .swap_remove(0);
                    let g = bind(&Prim::Gather { axis: *axis }, [ct.clone(), idx.clone()])?
                        .swap_remove(0);
                    select(&kept, &g, &lit(0.0, &g))
                }
            })
        }
        _ => Err(not_linear(prim)),
    }
}

/// Indices limited to `0..n`, as gather reads them.
fn clamp_indices(idx: &Tensor, n: usize) -> Result<Tensor> {
    let lo = scalar(0.0, idx.dtype());
    let hi = scalar(n.saturating_sub(1) as f64, idx.dtype());
    binary(BinaryOp::Min, &binary(BinaryOp::Max, idx, &lo)?, &hi)
}

/// Which entries of `idx` a scatter into an axis of length `n` writes: those
/// in range, and with `Set` only the last of each repeated index (a scatter
/// of the update positions finds the one that wins).
fn scatter_kept(idx: &Tensor, n: usize, mode: ScatterMode) -> Result<Tensor> {
    let lo = scalar(0.0, idx.dtype());
    let hi = scalar(n as f64, idx.dtype());
    let in_range = binary(
        BinaryOp::And,
        &binary(BinaryOp::Ge, idx, &lo)?,
        &binary(BinaryOp::Lt, idx, &hi)?,
    )?;
    match mode {
        ScatterMode::Add => Ok(in_range),
        ScatterMode::Set => {
            let pos = reshape(&iota(DType::I32, &[idx.len()], 0)?, idx.shape())?;
            let none = full(&[n], -1.0, DType::I32)?;
            let winner = bind(
                &Prim::Scatter {
                    axis: 0,
                    mode: ScatterMode::Set,
                },
                [none, idx.clone(), pos.clone()],
            )?
            .swap_remove(0);
            let read = bind(&Prim::Gather { axis: 0 }, [winner, idx.clone()])?.swap_remove(0);
            binary(
                BinaryOp::And,
                &in_range,
                &binary(BinaryOp::Eq, &read, &pos)?,
            )
        }
    }
}
