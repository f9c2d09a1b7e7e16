//! `vmap`: the batching trace (its rules, one per primitive, are in the
//! primitives' families, reached through `prim::batch`).
//!
//! A batched value carries the batch axis somewhere (`bdim`); a rule gets
//! each operand with its batch axis (`None`: the operand is the same for
//! every example) and returns the outputs with theirs. Most rules move the
//! batch axis to the front and shift the primitive's axis parameters by one.

use super::ops::*;
use super::{owned_by, push, TraceKind};
use crate::error::{Error, Result};
use crate::prim::{bind, Args, Outs, Prim};
use crate::tensor::{Tensor, Tracer, TracerKind};
use std::rc::Rc;

pub type Bdims = Vec<Option<usize>>;

pub fn process(
    level: usize,
    id: u64,
    size: usize,
    name: Option<&str>,
    prim: &Prim,
    args: Args,
) -> Result<Outs> {
    let mut vals = Vec::with_capacity(args.len());
    let mut dims = Vec::with_capacity(args.len());
    for a in args {
        let (v, d) = split(&a, level);
        vals.push(v);
        dims.push(d);
    }
    // A collective over this trace's own axis is array code over the batch
    // axis, batched operands or not (`psum(1.0, 'i')` is the axis size), so
    // its rule runs even when no operand is batched.
    let named = matches!(prim, Prim::Collective(c) if name == Some(&*c.axis));
    if !named && dims.iter().all(Option::is_none) {
        return bind(prim, vals);
    }
    let (outs, out_dims) = crate::prim::batch(prim, size, name, &vals, &dims)?;
    Ok(outs
        .into_iter()
        .zip(out_dims)
        .map(|(v, d)| wrap(level, id, v, d))
        .collect())
}

/// The (value, batch axis) of a tensor as seen by the batch trace at `level`.
pub fn split(a: &Tensor, level: usize) -> (Tensor, Option<usize>) {
    if owned_by(a, level) {
        if let Tensor::Traced(t) = a {
            if let TracerKind::Batch { val, bdim } = &t.kind {
                return (val.clone(), Some(*bdim));
            }
        }
    }
    (a.clone(), None)
}

pub fn wrap(level: usize, id: u64, val: Tensor, bdim: Option<usize>) -> Tensor {
    match bdim {
        None => val,
        Some(bdim) => {
            let mut aval = val.aval();
            aval.shape.remove(bdim);
            let (key, weak) = (val.is_key(), val.is_weak());
            Tensor::Traced(Rc::new(Tracer {
                level,
                trace_id: id,
                aval,
                kind: TracerKind::Batch { val, bdim },
                placement: None,
                key,
                weak,
            }))
        }
    }
}

/// `vmap` over already-flattened arguments: `in_axes[i]` is the batch axis of
/// argument `i` (`None`: not batched); outputs get their batch axis at
/// `out_axes[i]` (`None`: the output must not depend on the batch).
pub fn vmap(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    args: Vec<Tensor>,
    in_axes: &[Option<usize>],
    size: usize,
    out_axes: impl Fn(usize) -> Option<usize>,
) -> Result<Vec<Tensor>> {
    vmap_named(f, args, in_axes, size, out_axes, None)
}

/// `vmap` whose batch axis is also the named axis `name` of collectives.
pub fn vmap_named(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    args: Vec<Tensor>,
    in_axes: &[Option<usize>],
    size: usize,
    out_axes: impl Fn(usize) -> Option<usize>,
    name: Option<std::sync::Arc<str>>,
) -> Result<Vec<Tensor>> {
    vmap_as(f, args, in_axes, size, out_axes, name, false)
}

/// `vmap` over a mesh axis of a traced `shard_map` (named after it).
pub fn vmap_mesh_axis(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    args: Vec<Tensor>,
    in_axes: &[Option<usize>],
    size: usize,
    out_axes: impl Fn(usize) -> Option<usize>,
    name: std::sync::Arc<str>,
) -> Result<Vec<Tensor>> {
    vmap_as(f, args, in_axes, size, out_axes, Some(name), true)
}

fn vmap_as(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    args: Vec<Tensor>,
    in_axes: &[Option<usize>],
    size: usize,
    out_axes: impl Fn(usize) -> Option<usize>,
    name: Option<std::sync::Arc<str>>,
    mesh_axis: bool,
) -> Result<Vec<Tensor>> {
    let guard = push(
        TraceKind::Batch {
            size,
            name,
            mesh_axis,
        },
        false,
    );
    let wrapped = args
        .into_iter()
        .zip(in_axes)
        .map(|(a, &d)| wrap(guard.level, guard.id, a, d))
        .collect();
    let outs = f(wrapped)?;
    let mut result = Vec::with_capacity(outs.len());
    for (i, o) in outs.iter().enumerate() {
        let (v, d) = split(o, guard.level);
        let out = match (d, out_axes(i)) {
            (Some(d), Some(to)) => moveaxis(&v, d, to)?,
            (None, Some(to)) => {
                // Not batched: the same for every example.
                let mut shape = v.shape().to_vec();
                shape.insert(to, size);
                let dims: Vec<usize> = (0..shape.len()).filter(|&a| a != to).collect();
                bind(&Prim::BroadcastInDim { shape, dims }, [v])?.swap_remove(0)
            }
            (None, None) => v,
            (Some(_), None) => {
                return Err(Error::value_error(format!(
                    "vmap: output {i} has out_axes None but depends on the batched inputs"
                )))
            }
        };
        // Typed keys stay typed keys, batched or not.
        result.push(if o.is_key() { out.keyed(true) } else { out });
    }
    drop(guard);
    Ok(result)
}

/// A mapped output axis as an axis of the output (negative counts from the
/// end), for `out_axes` of vmap and pmap.
pub fn out_axis(a: i64, rank: usize) -> usize {
    if a < 0 {
        (a + rank as i64).max(0) as usize
    } else {
        a as usize
    }
}

/// Move the batch axis to the front (materialising it for unbatched values).
pub fn to_front(v: &Tensor, d: Option<usize>, size: usize) -> Result<Tensor> {
    match d {
        Some(d) => moveaxis(v, d, 0),
        None => {
            let mut shape = vec![size];
            shape.extend_from_slice(v.shape());
            broadcast_to(v, &shape)
        }
    }
}
