//! Forward mode: the JVP trace (its rules, one per primitive, are in the
//! primitives' families, reached through `prim::jvp`).
//!
//! A rule receives the primal operands and their tangents (`None` is a
//! symbolic zero) and returns the primal outputs and their tangents. Every
//! tangent a rule builds is linear in the input tangents, with coefficients
//! computed from the primals: this is what lets `linear` record the tangent
//! work as a graph and transpose it.

use super::ops::*;
use super::{owned_by, push, TraceKind};
use crate::error::Result;
use crate::prim::{bind, Args, Outs, Prim};
use crate::tensor::{Tensor, Tracer, TracerKind};
use arr_kernels::DType;
use std::rc::Rc;

/// Tangents: `None` is a zero of the matching primal's type.
pub type Tangents = Vec<Option<Tensor>>;

pub fn process(level: usize, id: u64, prim: &Prim, args: Args) -> Result<Outs> {
    let mut primals = Vec::with_capacity(args.len());
    let mut tangents = Vec::with_capacity(args.len());
    for a in args {
        let (p, t) = split(&a, level);
        primals.push(p);
        tangents.push(t);
    }
    if tangents.iter().all(Option::is_none) {
        return bind(prim, primals);
    }
    let (outs, touts) = crate::prim::jvp(prim, &primals, &tangents)?;
    Ok(outs
        .into_iter()
        .zip(touts)
        .map(|(p, t)| wrap(level, id, p, t))
        .collect())
}

/// The (primal, tangent) of a value as seen by the JVP trace at `level`.
pub fn split(a: &Tensor, level: usize) -> (Tensor, Option<Tensor>) {
    if owned_by(a, level) {
        if let Tensor::Traced(t) = a {
            if let TracerKind::Jvp { primal, tangent } = &t.kind {
                return (primal.clone(), tangent.clone());
            }
        }
    }
    (a.clone(), None)
}

/// A JVP tracer, or the primal itself when the tangent is zero or the
/// value is not a float (integers have no tangents).
pub fn wrap(level: usize, id: u64, primal: Tensor, tangent: Option<Tensor>) -> Tensor {
    match tangent {
        Some(t) if primal.dtype().is_inexact() => Tensor::Traced(Rc::new(Tracer {
            level,
            trace_id: id,
            aval: primal.aval(),
            placement: primal.placement(),
            key: false,
            weak: primal.is_weak(),
            kind: TracerKind::Jvp {
                primal,
                tangent: Some(t),
            },
        })),
        _ => primal,
    }
}

/// `jvp(f, primals, tangents)`: run `f` with tangents attached.
pub fn jvp(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    primals: Vec<Tensor>,
    tangents: Tangents,
) -> Result<(Vec<Tensor>, Tangents)> {
    let guard = push(TraceKind::Jvp, false);
    let args = primals
        .into_iter()
        .zip(tangents)
        .map(|(p, t)| wrap(guard.level, guard.id, p, t))
        .collect();
    let outs = f(args)?;
    let (ps, ts) = outs.iter().map(|o| split(o, guard.level)).unzip();
    drop(guard);
    Ok((ps, ts))
}

/// A tangent for a value of this shape: the given one, or zeros.
pub fn instantiate(t: &Option<Tensor>, like: &Tensor) -> Result<Tensor> {
    match t {
        Some(t) => Ok(t.clone()),
        None => zeros(like.shape(), tangent_dtype(like.dtype())),
    }
}

fn tangent_dtype(d: DType) -> DType {
    if d.is_inexact() {
        d
    } else {
        DType::F32
    }
}

/// `stop_gradient`: the value with the tangents of every forward-mode trace
/// removed (batched values keep their batch axis).
pub fn stop_gradient(t: &Tensor) -> Tensor {
    match t {
        Tensor::Concrete(_) => t.clone(),
        Tensor::Traced(tr) => match &tr.kind {
            TracerKind::Jvp { primal, .. } => stop_gradient(primal),
            TracerKind::Batch { val, bdim } => Tensor::Traced(Rc::new(Tracer {
                level: tr.level,
                trace_id: tr.trace_id,
                aval: tr.aval.clone(),
                placement: None,
                key: tr.key,
                weak: tr.weak,
                kind: TracerKind::Batch {
                    val: stop_gradient(val),
                    bdim: *bdim,
                },
            })),
            TracerKind::Graph { .. } => t.clone(),
        },
    }
}
