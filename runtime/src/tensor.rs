//! `Tensor`: what an arr array value is — a concrete array, or a tracer that
//! stands for one while a transformation (grad, vmap, tracing) runs.
//!
//! Everything above the kernels (the evaluator, NumPy sugar, the stdlib)
//! handles tensors, so the same code runs eagerly and under every
//! transformation; only code that must read the numbers asks for
//! `concrete()`, which fails with a clear error on a tracer.

use crate::error::{Error, ErrorKind, Result};
use crate::prim::Aval;
use arr_kernels::sharding::Placement;
use arr_kernels::{Array, DType};
use std::rc::Rc;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Tensor {
    Concrete(Array),
    Traced(Rc<Tracer>),
}

/// A value inside one transformation: which trace owns it (`level`, and the
/// trace's unique `trace_id`, to catch tracers that escape their trace), its
/// abstract type, and what the trace keeps for it.
#[derive(Debug)]
pub struct Tracer {
    pub level: usize,
    pub trace_id: u64,
    pub aval: Aval,
    pub kind: TracerKind,
    /// The sharding of the value the tracer stands for (JAX's sharding in
    /// types), when its operands had one.
    pub placement: Option<Arc<Placement>>,
    /// Whether it stands for typed PRNG keys (a concrete array's
    /// `Flavour::Key`): its last axis holds each key's words.
    pub key: bool,
    /// Whether it stands for a weakly typed value (`Array::is_weak`).
    pub weak: bool,
}

#[derive(Debug)]
pub enum TracerKind {
    /// Forward mode: a primal value and its tangent (`None` is a symbolic zero).
    Jvp {
        primal: Tensor,
        tangent: Option<Tensor>,
    },
    /// `vmap`: the batched value, whose axis `bdim` is the batch axis.
    /// `aval` is the per-example type (without that axis).
    Batch { val: Tensor, bdim: usize },
    /// A variable of the graph being recorded.
    Graph { var: usize },
}

impl From<Array> for Tensor {
    fn from(a: Array) -> Tensor {
        Tensor::Concrete(a)
    }
}

impl Tensor {
    /// Whether the tensor holds typed PRNG keys (concrete or traced).
    pub fn is_key(&self) -> bool {
        match self {
            Tensor::Concrete(a) => a.flavour() == arr_kernels::Flavour::Key,
            Tensor::Traced(t) => t.key,
        }
    }

    /// The same values marked as typed keys, or not (`key`).
    pub fn keyed(self, key: bool) -> Tensor {
        match self {
            Tensor::Concrete(a) => {
                let flavour = if key {
                    arr_kernels::Flavour::Key
                } else {
                    arr_kernels::Flavour::Jax
                };
                Tensor::Concrete(a.with_flavour(flavour))
            }
            Tensor::Traced(t) if t.key == key => Tensor::Traced(t),
            Tensor::Traced(t) => Tensor::Traced(retag(&t, key, t.weak)),
        }
    }

    /// Whether the value is weakly typed (JAX's `weak_type`), concrete or traced.
    pub fn is_weak(&self) -> bool {
        match self {
            Tensor::Concrete(a) => a.is_weak(),
            Tensor::Traced(t) => t.weak,
        }
    }

    /// The same value, weakly typed or not (`weak` is ignored for values
    /// that cannot be weak: typed keys, sharded and NumPy arrays).
    pub fn weakened(self, weak: bool) -> Tensor {
        match self {
            Tensor::Concrete(a) if a.is_weak() == weak => Tensor::Concrete(a),
            Tensor::Concrete(a) => Tensor::Concrete(a.with_weak(weak)),
            Tensor::Traced(t) if t.weak == weak || (weak && t.key) => Tensor::Traced(t),
            Tensor::Traced(t) => Tensor::Traced(retag(&t, t.key, weak)),
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Tensor::Concrete(a) => a.shape(),
            Tensor::Traced(t) => &t.aval.shape,
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Tensor::Concrete(a) => a.dtype(),
            Tensor::Traced(t) => t.aval.dtype,
        }
    }

    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn aval(&self) -> Aval {
        match self {
            Tensor::Concrete(a) => Aval::of(a),
            Tensor::Traced(t) => t.aval.clone(),
        }
    }

    /// How the value is laid out over a mesh, if it is: an array's
    /// placement, or what the trace worked out for a tracer.
    pub fn placement(&self) -> Option<Arc<Placement>> {
        match self {
            Tensor::Concrete(a) => a.placement().cloned(),
            Tensor::Traced(t) => t.placement.clone(),
        }
    }

    pub fn as_concrete(&self) -> Option<&Array> {
        match self {
            Tensor::Concrete(a) => Some(a),
            Tensor::Traced(_) => None,
        }
    }

    /// The numbers behind this value. Forward-mode tracers have them (their
    /// primal), so Python control flow works under `grad` and `jvp`, as in JAX;
    /// values inside `vmap` or a traced graph do not.
    pub fn concrete(&self) -> Result<&Array> {
        match self {
            Tensor::Concrete(a) if a.deleted().is_some() => Err(Error::deleted_array(a)),
            Tensor::Concrete(a) => Ok(a),
            Tensor::Traced(t) => match &t.kind {
                TracerKind::Jvp { primal, .. } => primal.concrete(),
                TracerKind::Batch { .. } => Err(concretization_error(&t.aval, "vmap")),
                TracerKind::Graph { .. } => Err(concretization_error(&t.aval, "a traced function")),
            },
        }
    }

    /// Whether two tensors are the same object (the `is` operator).
    pub fn same(&self, other: &Tensor) -> bool {
        match (self, other) {
            (Tensor::Concrete(a), Tensor::Concrete(b)) => {
                a.same_buffer(b) && a.shape() == b.shape()
            }
            (Tensor::Traced(a), Tensor::Traced(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// `ts`, each weakly typed or not as `flags` says (past its end: strong).
pub fn weakened_each<'a, I: IntoIterator<Item = Tensor>>(
    ts: I,
    flags: &'a [bool],
) -> impl Iterator<Item = Tensor> + 'a
where
    I::IntoIter: 'a,
{
    ts.into_iter()
        .enumerate()
        .map(|(i, t)| t.weakened(flags.get(i) == Some(&true)))
}

/// A tracer like `t` with other tags: the same trace, type and contents.
fn retag(t: &Tracer, key: bool, weak: bool) -> Rc<Tracer> {
    let kind = match &t.kind {
        TracerKind::Jvp { primal, tangent } => TracerKind::Jvp {
            primal: primal.clone(),
            tangent: tangent.clone(),
        },
        TracerKind::Batch { val, bdim } => TracerKind::Batch {
            val: val.clone(),
            bdim: *bdim,
        },
        TracerKind::Graph { var } => TracerKind::Graph { var: *var },
    };
    Rc::new(Tracer {
        level: t.level,
        trace_id: t.trace_id,
        aval: t.aval.clone(),
        kind,
        placement: t.placement.clone(),
        key,
        weak,
    })
}

fn concretization_error(aval: &Aval, inside: &str) -> Error {
    Error::new(
        ErrorKind::ConcretizationError,
        format!(
            "this needs a concrete value, but the {} value here is traced inside {inside}. \
             Use where(cond, x, y) to select values, and cond(...), while_loop(...) or \
             fori_loop(...) for control flow that depends on traced values",
            crate::prim::type_str(&aval.shape, aval.dtype)
        ),
    )
}
