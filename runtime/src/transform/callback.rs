//! Host callbacks (`jax.pure_callback`, `io_callback`): an arr function
//! called with the runtime values of its operands, under each
//! interpretation. Eagerly it runs at once; under `vmap` it runs once per
//! example (`sequential`) or once on the batch (`expand_dims`,
//! `broadcast_all`), as JAX's `vmap_method` says; under JVP it is an error,
//! as in JAX (a callback has no derivative: wrap it in `custom_jvp`).
//!
//! A callback has no primitive: its function lives in the interpreter and
//! must run when the values exist. A `jit` that meets one while tracing
//! (the error [`OP_BY_OP`]) runs its function op by op from then on, as it
//! does for refs, so the callback runs at every call with that call's
//! values. Inside the bodies of `lax.scan`, `while_loop` or `cond`, which
//! are traced whole, a callback cannot run yet.

use super::{batch, ops, top_level, TraceKind, STACK};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::Interp;
use crate::prim::Prim;
use crate::tensor::Tensor;
use std::rc::Rc;

/// The message of the error a callback raises while a function is traced;
/// `jit` catches it and runs the function op by op.
pub const OP_BY_OP: &str = "a host callback (pure_callback, io_callback) runs while a function is \
    traced: jit runs such a function op by op; inside the body of lax.scan, while_loop or cond, \
    or under make_jaxpr, a callback cannot run yet";

/// How a callback meets `vmap` (JAX's `vmap_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmapMethod {
    /// Once per example (`sequential`, `sequential_unrolled`).
    Sequential,
    /// Once, with a leading batch axis on the batched operands and a size-1
    /// one on the others (`expand_dims`, `legacy_vectorized`).
    ExpandDims,
    /// Once, with every operand broadcast along the batch (`broadcast_all`).
    BroadcastAll,
    /// Not given: `vmap` of the callback is an error, as in JAX.
    Unset,
}

impl VmapMethod {
    pub fn parse(name: Option<&str>) -> Result<VmapMethod> {
        Ok(match name {
            None => VmapMethod::Unset,
            Some("sequential" | "sequential_unrolled") => VmapMethod::Sequential,
            Some("expand_dims" | "legacy_vectorized") => VmapMethod::ExpandDims,
            Some("broadcast_all") => VmapMethod::BroadcastAll,
            Some(other) => {
                return Err(Error::value_error(format!(
                    "vmap_method must be one of 'sequential', 'sequential_unrolled', \
                     'expand_dims', 'broadcast_all' or 'legacy_vectorized', not {other:?}"
                )))
            }
        })
    }
}

/// The host function: concrete operands and the batch axes in front of its
/// results (outermost first; empty but under a vectorised `vmap`) → its
/// results, each of the declared shape with those axes in front.
pub type HostFun = Rc<dyn Fn(&mut Interp, Vec<Tensor>, &[usize]) -> Result<Vec<Tensor>>>;

/// Call `f` on `args` under whatever interprets them.
pub fn host_call(
    interp: &mut Interp,
    f: &HostFun,
    args: Vec<Tensor>,
    method: VmapMethod,
    batch_sizes: &[usize],
) -> Result<Vec<Tensor>> {
    let Some(level) = top_level(&args)? else {
        return f(interp, args, batch_sizes);
    };
    let (id, kind) = STACK.with(|s| {
        let s = s.borrow();
        let e = &s[level - 1];
        (e.id, e.kind.clone())
    });
    match kind {
        // checkify records checks only: the callback runs on the trace below.
        TraceKind::Checkify(_) => {
            let _below = super::below(level);
            host_call(interp, f, args, method, batch_sizes)
        }
        TraceKind::Graph(_) => Err(Error::new(ErrorKind::TransformError, OP_BY_OP)),
        TraceKind::Jvp => Err(Error::value_error(
            "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks \
             while taking gradients.",
        )),
        TraceKind::Batch { size, .. } => {
            let (vals, dims): (Vec<Tensor>, Vec<Option<usize>>) =
                args.iter().map(|a| batch::split(a, level)).unzip();
            let outs =
                match method {
                    VmapMethod::Unset => return Err(Error::new(
                        ErrorKind::TransformError,
                        "vmap is only supported for the pure_callback primitive when vmap_method \
                         is one of 'sequential', 'sequential_unrolled', 'expand_dims', \
                         'broadcast_all', or 'legacy_vectorized'. Got vmap_method=None.",
                    )
                    .as_class("NotImplementedError")),
                    VmapMethod::Sequential if size == 0 => return Err(Error::value_error(
                        "vmap of a host callback over an empty batch: it has no example to call",
                    )),
                    VmapMethod::Sequential => {
                        let mut per_example: Vec<Vec<Tensor>> = Vec::new();
                        for i in 0..size {
                            let example = vals
                                .iter()
                                .zip(&dims)
                                .map(|(v, d)| match d {
                                    Some(d) => ops::index_along(v, *d, i),
                                    None => Ok(v.clone()),
                                })
                                .collect::<Result<Vec<_>>>()?;
                            per_example.push(host_call(interp, f, example, method, batch_sizes)?);
                        }
                        stack(per_example)?
                    }
                    VmapMethod::ExpandDims | VmapMethod::BroadcastAll => {
                        let front = vals
                            .iter()
                            .zip(&dims)
                            .map(|(v, d)| match (d, method) {
                                (Some(d), _) => ops::moveaxis(v, *d, 0),
                                (None, VmapMethod::BroadcastAll) => {
                                    let mut shape = vec![size];
                                    shape.extend_from_slice(v.shape());
                                    ops::broadcast_to(&ops::expand_dims(v, 0)?, &shape)
                                }
                                (None, _) => ops::expand_dims(v, 0),
                            })
                            .collect::<Result<Vec<_>>>()?;
                        let mut sizes = vec![size];
                        sizes.extend_from_slice(batch_sizes);
                        host_call(interp, f, front, method, &sizes)?
                    }
                };
            Ok(outs
                .into_iter()
                .map(|o| batch::wrap(level, id, o, Some(0)))
                .collect())
        }
    }
}

/// The examples' results stacked along a new leading axis, result by result.
fn stack(per_example: Vec<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    let n = per_example.first().map_or(0, Vec::len);
    (0..n)
        .map(|k| {
            let parts = per_example
                .iter()
                .map(|outs| ops::expand_dims(&outs[k], 0))
                .collect::<Result<Vec<_>>>()?;
            crate::prim::bind1(&Prim::Concatenate { axis: 0 }, parts)
        })
        .collect()
}
