//! Reverse mode: `linearize` (JVP with the tangent work recorded as a
//! graph) and the backward pass that transposes such a graph with the
//! primitives' transpose rules (`prim::transpose`). `vjp` and `grad` are these two put
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
use crate::prim::{bind, Aval};
use crate::tensor::Tensor;
use arr_kernels::DType;
use std::sync::Arc;

/// A linear function from the tangents of some inputs to the tangents of
/// the outputs, as a graph whose constants are the residuals.
pub struct LinearFn {
    pub graph: Arc<Graph>,
    pub consts: Vec<Tensor>,
    /// Which primal inputs have a tangent (floats do, integers do not).
    pub active: Vec<bool>,
    pub in_avals: Vec<Aval>,
    pub out_avals: Vec<Aval>,
    /// Which primal inputs were weakly typed: their cotangents are too, as
    /// a cotangent has its primal's type (`grad(f)(3.0)` is weak).
    pub in_weak: Vec<bool>,
}

/// Evaluate `f` at `primals` and return its outputs and its linearization.
pub fn linearize(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    primals: Vec<Tensor>,
) -> Result<(Vec<Tensor>, LinearFn)> {
    let active: Vec<bool> = primals.iter().map(|p| p.dtype().is_inexact()).collect();
    let in_avals: Vec<Aval> = primals.iter().map(Tensor::aval).collect();
    let in_weak: Vec<bool> = primals.iter().map(Tensor::is_weak).collect();
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
            in_weak,
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
            .zip(&self.in_weak)
            .map(|((aval, &a), &weak)| {
                let ct = if a { linear.next().flatten() } else { None };
                let ct = match ct {
                    Some(ct) => ct,
                    None => zeros(&aval.shape, aval.dtype)?,
                };
                Ok(ct.weakened(weak))
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

impl LinIn {
    pub fn shape(&self) -> &[usize] {
        match self {
            LinIn::Linear(a) => &a.shape,
            LinIn::Known(t) => t.shape(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            LinIn::Linear(a) => a.dtype,
            LinIn::Known(t) => t.dtype(),
        }
    }

    pub fn is_linear(&self) -> bool {
        matches!(self, LinIn::Linear(_))
    }

    /// The value of a known operand; a linear one is an error (the
    /// primitive is linear in it only while its other operands are known).
    pub fn known(&self) -> Result<&Tensor> {
        match self {
            LinIn::Known(t) => Ok(t),
            LinIn::Linear(_) => Err(Error::new(
                ErrorKind::TransformError,
                "reverse-mode differentiation: a product of two tangents is not linear",
            )),
        }
    }
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
        let in_cts = super::graph::at_line(eqn.line.clone(), || {
            crate::prim::transpose(&eqn.prim, &out_cts, &ins)
        })?;
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
