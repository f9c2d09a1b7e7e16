//! Transformations as interpreters: the stack of active traces, and how
//! `bind` hands a primitive to the trace that owns its operands.
//!
//! Each transformation pushes a trace (a level on a per-thread stack); the
//! values it creates are tracers tagged with that level. `bind` runs a
//! primitive in the highest trace among its operands (values of lower levels
//! are constants there), so nested transformations compose: an inner `grad`
//! inside an outer `vmap` sees the outer tracers as constants, and the outer
//! trace then sees the inner rules' primitives. Level 0 is eager evaluation.
//!
//! The rules they apply, one per primitive and interpretation, live with
//! the primitives (`prim::jvp`, `prim::transpose`, `prim::batch`).
//!
//! * `jvp` — forward mode: (primal, tangent) pairs.
//! * `graph` — recording a `Graph` (the IR): `make_jaxpr`, control-flow
//!   bodies, and the linear part of `linearize`.
//! * `linear` — `linearize`/`vjp`/`grad`: `jvp` whose tangents are recorded
//!   into a graph (the primal work runs now: partial evaluation by level),
//!   then the graph is transposed, one transpose rule per linear primitive.
//! * `batch` — `vmap`: values with a batch axis.
//! * `control` — `cond`, `while_loop`, `scan`: primitives holding graphs,
//!   with all their rules.
//! * `custom` — `custom_jvp`/`custom_vjp`, and the rules of the primitive
//!   `custom_vjp` leaves in reverse mode.
//! * `collective` — collectives over named axes and sharding constraints,
//!   with all their rules, and where axis names are bound.
//! * `checkify` — `checkify`: a trace that records `check`s as values
//!   (and adds automatic NaN, division and index checks).
//! * `ops` — small tensor operations over `bind` that rules are written in.

pub mod batch;
pub mod callback;
pub mod checkify;
pub mod collective;
pub mod control;
pub mod custom;
pub mod graph;
pub mod jvp;
pub mod linear;
pub mod ops;

use crate::error::{Error, ErrorKind, Result};
use crate::prim::{Args, Outs, Prim};
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// What a trace on the stack does with the primitives it receives.
#[derive(Clone)]
pub enum TraceKind {
    Jvp,
    /// `vmap`; `name` is its axis name, bound for collectives.
    Batch {
        size: usize,
        name: Option<std::sync::Arc<str>>,
        /// A mesh axis of a traced `shard_map` (its values print as the
        /// per-device values they stand for).
        mesh_axis: bool,
    },
    Graph(Rc<RefCell<graph::Builder>>),
    /// `checkify`: the checks met so far (see `checkify`).
    Checkify(Rc<RefCell<checkify::Frame>>),
}

impl TraceKind {
    pub fn name(&self) -> &'static str {
        match self {
            TraceKind::Jvp => "jvp",
            TraceKind::Batch { .. } => "vmap",
            TraceKind::Graph(_) => "a traced graph",
            TraceKind::Checkify(_) => "checkify",
        }
    }
}

pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) kind: TraceKind,
    /// A dynamic trace also receives primitives whose operands are all
    /// constants (so a traced graph records `zeros(3)` too).
    dynamic: bool,
}

thread_local! {
    pub(super) static STACK: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    /// The level of the innermost dynamic trace, 0 when none: read on every bind.
    static DYNAMIC: Cell<usize> = const { Cell::new(0) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// An active trace. Dropping it pops the trace, also on errors and Ctrl-C.
pub struct TraceGuard {
    pub level: usize,
    pub id: u64,
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            s.truncate(self.level - 1);
            let dynamic = s
                .iter()
                .enumerate()
                .rev()
                .find(|(_, e)| e.dynamic)
                .map_or(0, |(i, _)| i + 1);
            DYNAMIC.with(|d| d.set(dynamic));
        });
    }
}

/// Push a new trace; its level is one above the current top.
pub fn push(kind: TraceKind, dynamic: bool) -> TraceGuard {
    let id = NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    let level = STACK.with(|s| {
        let mut s = s.borrow_mut();
        s.push(Entry { id, kind, dynamic });
        s.len()
    });
    if dynamic {
        DYNAMIC.with(|d| d.set(level));
    }
    TraceGuard { level, id }
}

/// The trace that must process a primitive on these operands, or `None` for
/// eager evaluation. Fails on a tracer whose trace has ended (it escaped
/// from the function being transformed, e.g. into a global).
pub fn top_level(args: &[Tensor]) -> Result<Option<usize>> {
    let mut level = DYNAMIC.with(|d| d.get());
    for a in args {
        if let Tensor::Traced(t) = a {
            let alive = STACK.with(|s| {
                s.borrow()
                    .get(t.level - 1)
                    .is_some_and(|e| e.id == t.trace_id)
            });
            if !alive {
                return Err(Error::new(
                    ErrorKind::TransformError,
                    format!(
                        "a traced value ({}) was used after the transformation that created it \
                         ended; it escaped from the transformed function (through a global or \
                         a closure?). Return it from the function instead",
                        crate::prim::type_str(&t.aval.shape, t.aval.dtype)
                    ),
                ));
            }
            level = level.max(t.level);
        }
    }
    Ok((level > 0).then_some(level))
}

/// Whether a tracer belongs to the trace at `level` (rather than an outer one).
pub fn owned_by(t: &Tensor, level: usize) -> bool {
    matches!(t, Tensor::Traced(tr) if tr.level == level)
}

/// Whether a value is a tangent being recorded for reverse mode: a variable
/// of a graph trace that is not dynamic (only `linearize` makes those).
/// Rules that cannot be transposed use it to fail early, at the line of the
/// offending call, rather than when the graph is transposed.
pub fn is_reverse_tangent(t: &Tensor) -> bool {
    let Tensor::Traced(tr) = t else {
        return false;
    };
    matches!(tr.kind, crate::tensor::TracerKind::Graph { .. })
        && STACK.with(|s| {
            s.borrow()
                .get(tr.level - 1)
                .is_some_and(|e| e.id == tr.trace_id && !e.dynamic)
        })
}

/// Run `prim` in the trace at `level`.
pub fn process(level: usize, prim: &Prim, args: Args) -> Result<Outs> {
    let (id, kind) = STACK.with(|s| {
        let s = s.borrow();
        let e = &s[level - 1];
        (e.id, e.kind.clone())
    });
    match kind {
        TraceKind::Jvp => jvp::process(level, id, prim, args),
        TraceKind::Batch { size, name, .. } => {
            batch::process(level, id, size, name.as_deref(), prim, args)
        }
        TraceKind::Graph(builder) => graph::process(level, id, &builder, prim, args),
        TraceKind::Checkify(frame) => checkify::process(level, &frame, prim, args),
    }
}

/// Until the guard drops, operations on constants run at once even under a
/// dynamic trace (NumPy's functions inside `jit`: NumPy never traces);
/// operations on traced values still go to their traces.
pub fn eager_constants() -> EagerConstants {
    EagerConstants(DYNAMIC.with(|d| d.replace(0)))
}

pub struct EagerConstants(usize);

/// Until the guard drops, the innermost dynamic trace is the highest one
/// below `level`: a dynamic trace that does not record (checkify) runs the
/// primitives it receives there.
pub fn below(level: usize) -> EagerConstants {
    let lower = STACK.with(|s| {
        s.borrow()
            .iter()
            .take(level - 1)
            .enumerate()
            .rev()
            .find(|(_, e)| e.dynamic)
            .map_or(0, |(i, _)| i + 1)
    });
    EagerConstants(DYNAMIC.with(|d| d.replace(lower)))
}

impl Drop for EagerConstants {
    fn drop(&mut self) {
        DYNAMIC.with(|d| d.set(self.0));
    }
}

/// Whether the innermost dynamic trace is a graph being traced for `jit`.
pub fn in_dynamic_graph() -> bool {
    let level = DYNAMIC.with(|d| d.get());
    level > 0
        && STACK.with(|s| {
            s.borrow()
                .get(level - 1)
                .is_some_and(|e| matches!(e.kind, TraceKind::Graph(_)))
        })
}

/// Whether the trace at `level` is a mesh axis of a traced `shard_map`.
pub fn is_mesh_axis(level: usize) -> bool {
    STACK.with(|s| {
        s.borrow().get(level - 1).is_some_and(|e| {
            matches!(
                e.kind,
                TraceKind::Batch {
                    mesh_axis: true,
                    ..
                }
            )
        })
    })
}

/// Whether no transformation or trace is active (plain eager evaluation).
pub fn idle() -> bool {
    STACK.with(|s| s.borrow().is_empty())
}

/// The kinds of the active traces, innermost last (for messages and tests).
pub fn active() -> Vec<&'static str> {
    STACK.with(|s| s.borrow().iter().map(|e| e.kind.name()).collect())
}
