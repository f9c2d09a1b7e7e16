//! `vmap`: the batching trace and one batching rule per primitive.
//!
//! A batched value carries the batch axis somewhere (`bdim`); a rule gets
//! each operand with its batch axis (`None`: the operand is the same for
//! every example) and returns the outputs with theirs. Most rules move the
//! batch axis to the front and shift the primitive's axis parameters by one.

use super::ops::*;
use super::{owned_by, push, TraceKind};
use crate::error::{Error, Result};
use crate::prim::{bind, bind1, Args, Outs, Prim};
use crate::tensor::{Tensor, Tracer, TracerKind};
use arr_kernels::{DType, DotDims};
use std::rc::Rc;

pub type Bdims = Vec<Option<usize>>;

pub fn process(level: usize, id: u64, size: usize, prim: &Prim, args: Args) -> Result<Outs> {
    let mut vals = Vec::with_capacity(args.len());
    let mut dims = Vec::with_capacity(args.len());
    for a in args {
        let (v, d) = split(&a, level);
        vals.push(v);
        dims.push(d);
    }
    if dims.iter().all(Option::is_none) {
        return bind(prim, vals);
    }
    let (outs, out_dims) = rule(prim, size, &vals, &dims)?;
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
            Tensor::Traced(Rc::new(Tracer {
                level,
                trace_id: id,
                aval,
                kind: TracerKind::Batch { val, bdim },
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
    let guard = push(TraceKind::Batch { size }, false);
    let wrapped = args
        .into_iter()
        .zip(in_axes)
        .map(|(a, &d)| wrap(guard.level, guard.id, a, d))
        .collect();
    let outs = f(wrapped)?;
    let mut result = Vec::with_capacity(outs.len());
    for (i, o) in outs.iter().enumerate() {
        let (v, d) = split(o, guard.level);
        result.push(match (d, out_axes(i)) {
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
        });
    }
    drop(guard);
    Ok(result)
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

fn shift(axes: &[usize]) -> Vec<usize> {
    axes.iter().map(|a| a + 1).collect()
}

/// The batching rule of each primitive.
pub fn rule(prim: &Prim, size: usize, v: &[Tensor], d: &[Option<usize>]) -> Result<(Outs, Bdims)> {
    let single =
        |p: Prim, x: Tensor| -> Result<(Outs, Bdims)> { Ok((bind(&p, [x])?, vec![Some(0)])) };
    let front = |i: usize| to_front(&v[i], d[i], size);
    match prim {
        // Elementwise on one operand: the batch axis stays where it is.
        Prim::Unary(_) | Prim::Convert(_) => Ok((bind(prim, [v[0].clone()])?, vec![d[0]])),
        // Elementwise with NumPy broadcasting: batch axes to the front, and
        // batched operands padded with length-1 axes to the output's rank,
        // so that broadcasting aligns the per-example axes.
        Prim::Binary(_) | Prim::Select => {
            let rank = v
                .iter()
                .zip(d)
                .map(|(x, di)| x.ndim() - di.is_some() as usize)
                .max()
                .unwrap_or(0);
            let mut args = Vec::new();
            for (x, &di) in v.iter().zip(d) {
                args.push(match di {
                    Some(di) => {
                        let x = moveaxis(x, di, 0)?;
                        let mut shape = vec![x.shape()[0]];
                        shape.extend(std::iter::repeat_n(1, rank + 1 - x.ndim()));
                        shape.extend_from_slice(&x.shape()[1..]);
                        reshape(&x, &shape)?
                    }
                    None => x.clone(),
                });
            }
            Ok((bind(prim, args)?, vec![Some(0)]))
        }
        Prim::Reduce { op, axes } => single(
            Prim::Reduce {
                op: *op,
                axes: shift(axes),
            },
            front(0)?,
        ),
        Prim::ArgReduce { op, axis } => single(
            Prim::ArgReduce {
                op: *op,
                axis: axis + 1,
            },
            front(0)?,
        ),
        Prim::Cumulative { op, axis, reverse } => single(
            Prim::Cumulative {
                op: *op,
                axis: axis + 1,
                reverse: *reverse,
            },
            front(0)?,
        ),
        Prim::Sort { axis } => single(Prim::Sort { axis: axis + 1 }, front(0)?),
        Prim::Argsort { axis } => single(Prim::Argsort { axis: axis + 1 }, front(0)?),
        Prim::DotGeneral(dims) => {
            let (a, b) = (&v[0], &v[1]);
            match (d[0], d[1]) {
                (Some(da), Some(db)) => {
                    let a = moveaxis(a, da, 0)?;
                    let b = moveaxis(b, db, 0)?;
                    let mut nd = DotDims {
                        lhs_batch: vec![0],
                        rhs_batch: vec![0],
                        lhs_contract: shift(&dims.lhs_contract),
                        rhs_contract: shift(&dims.rhs_contract),
                    };
                    nd.lhs_batch.extend(shift(&dims.lhs_batch));
                    nd.rhs_batch.extend(shift(&dims.rhs_batch));
                    Ok((bind(&Prim::DotGeneral(nd), [a, b])?, vec![Some(0)]))
                }
                (Some(da), None) => {
                    let a = moveaxis(a, da, 0)?;
                    let nd = DotDims {
                        lhs_batch: shift(&dims.lhs_batch),
                        rhs_batch: dims.rhs_batch.clone(),
                        lhs_contract: shift(&dims.lhs_contract),
                        rhs_contract: dims.rhs_contract.clone(),
                    };
                    // The batch axis is the first free axis of the lhs.
                    let out = dims.lhs_batch.len();
                    Ok((
                        bind(&Prim::DotGeneral(nd), [a, b.clone()])?,
                        vec![Some(out)],
                    ))
                }
                (None, Some(db)) => {
                    let b = moveaxis(b, db, 0)?;
                    let nd = DotDims {
                        lhs_batch: dims.lhs_batch.clone(),
                        rhs_batch: shift(&dims.rhs_batch),
                        lhs_contract: dims.lhs_contract.clone(),
                        rhs_contract: shift(&dims.rhs_contract),
                    };
                    let lhs_free = a.ndim() - dims.lhs_batch.len() - dims.lhs_contract.len();
                    let out = dims.lhs_batch.len() + lhs_free;
                    Ok((
                        bind(&Prim::DotGeneral(nd), [a.clone(), b])?,
                        vec![Some(out)],
                    ))
                }
                (None, None) => unreachable!(),
            }
        }
        Prim::Transpose(perm) => {
            let mut p = vec![0];
            p.extend(shift(perm));
            single(Prim::Transpose(p), front(0)?)
        }
        Prim::BroadcastInDim { shape, dims } => {
            let mut s = vec![size];
            s.extend_from_slice(shape);
            let mut ds = vec![0];
            ds.extend(shift(dims));
            single(Prim::BroadcastInDim { shape: s, dims: ds }, front(0)?)
        }
        Prim::Reshape(shape) => {
            let mut s = vec![size];
            s.extend_from_slice(shape);
            single(Prim::Reshape(s), front(0)?)
        }
        Prim::Slice {
            start,
            limit,
            stride,
        } => {
            let with = |v: &[usize], x: usize| {
                let mut r = vec![x];
                r.extend_from_slice(v);
                r
            };
            single(
                Prim::Slice {
                    start: with(start, 0),
                    limit: with(limit, size),
                    stride: with(stride, 1),
                },
                front(0)?,
            )
        }
        Prim::Rev(axes) => single(Prim::Rev(shift(axes)), front(0)?),
        Prim::Pad { lo, hi, interior } => {
            let with = |v: &[usize]| {
                let mut r = vec![0];
                r.extend_from_slice(v);
                r
            };
            let batched_pad = Prim::Pad {
                lo: with(lo),
                hi: with(hi),
                interior: with(interior),
            };
            let x = front(0)?;
            if d[1].is_none() {
                return Ok((bind(&batched_pad, [x, v[1].clone()])?, vec![Some(0)]));
            }
            // The padding value differs per example, and pad takes one
            // scalar: pad with anything, then put each example's value
            // wherever a padded mask of the operand says it did not reach.
            let padded = bind1(&batched_pad, [x.clone(), lit(0.0, &x)])?;
            let inside = full(&x.shape()[1..], 1.0, DType::Bool)?;
            let mask = bind1(prim, [inside, scalar(0.0, DType::Bool)])?;
            let mut vshape = vec![size];
            vshape.resize(padded.ndim(), 1);
            let value = reshape(&front(1)?, &vshape)?;
            Ok((
                smallvec::smallvec![select(&mask, &padded, &value)?],
                vec![Some(0)],
            ))
        }
        Prim::Concatenate { axis } => {
            let args = (0..v.len()).map(front).collect::<Result<Vec<_>>>()?;
            Ok((
                bind(&Prim::Concatenate { axis: axis + 1 }, args)?,
                vec![Some(0)],
            ))
        }
        Prim::Gather { axis } => {
            match (d[0], d[1]) {
                // The operand [B, pre.., n, post..] gathered at axis + 1 keeps B first.
                (Some(_), None) => Ok((
                    bind(&Prim::Gather { axis: axis + 1 }, [front(0)?, v[1].clone()])?,
                    vec![Some(0)],
                )),
                (None, Some(di)) => {
                    // out = pre ++ idx ++ post, and idx's batch axis lands at axis + di.
                    Ok((
                        bind(prim, [v[0].clone(), v[1].clone()])?,
                        vec![Some(axis + di)],
                    ))
                }
                _ => {
                    let (a, idx) = flat_batched(&front(0)?, &front(1)?, *axis, size, false)?;
                    let g = bind(&Prim::Gather { axis: 0 }, [a, idx])?.swap_remove(0);
                    // g: [B, idx.., rest..] where rest = pre ++ post; want [B, pre.., idx.., post..].
                    let n_idx = v[1].ndim() - 1;
                    let n_pre = *axis;
                    let mut perm = vec![0];
                    perm.extend((1 + n_idx..1 + n_idx + n_pre).collect::<Vec<_>>());
                    perm.extend(1..1 + n_idx);
                    perm.extend(1 + n_idx + n_pre..g.ndim());
                    Ok((smallvec::smallvec![transpose(&g, &perm)?], vec![Some(0)]))
                }
            }
        }
        Prim::Scatter { axis, mode } => {
            // All three batched at the front, then one scatter into the
            // flattened (batch, axis) dimension.
            let a = front(0)?;
            let idx = front(1)?;
            let upd = front(2)?;
            let n_pre = *axis;
            let n_idx = idx.ndim() - 1;
            let (flat_a, flat_idx) = flat_batched(&a, &idx, *axis, size, true)?;
            // updates [B, pre.., idx.., post..] → [B, idx.., pre.., post..]
            let mut perm = vec![0];
            perm.extend(1 + n_pre..1 + n_pre + n_idx);
            perm.extend(1..1 + n_pre);
            perm.extend(1 + n_pre + n_idx..upd.ndim());
            let upd = transpose(&upd, &perm)?;
            let out = bind(
                &Prim::Scatter {
                    axis: 0,
                    mode: *mode,
                },
                [flat_a, flat_idx, upd],
            )?
            .swap_remove(0);
            // Back from [B*n, pre.., post..] to [B, pre.., n, post..].
            let n = a.shape()[axis + 1];
            let mut s = vec![size, n];
            s.extend_from_slice(&a.shape()[1..axis + 1]);
            s.extend_from_slice(&a.shape()[axis + 2..]);
            let out = reshape(&out, &s)?;
            Ok((
                smallvec::smallvec![moveaxis(&out, 1, axis + 1)?],
                vec![Some(0)],
            ))
        }
        Prim::Iota { .. } => Ok((bind(prim, Vec::<Tensor>::new())?, vec![None])),
        Prim::Threefry2x32 => {
            let args = (0..4).map(front).collect::<Result<Vec<_>>>()?;
            Ok((bind(prim, args)?, vec![Some(0), Some(0)]))
        }
        Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. } => {
            super::control::batch(prim, size, v, d)
        }
    }
}

/// For gathers and scatters where operand and indices are both batched (at
/// the front): the operand as [B*n, pre.., post..] (the indexed axis merged
/// with the batch axis), and the indices shifted into that merged axis.
/// An index keeps the meaning the primitive gives it within one example,
/// and must never reach a neighbouring example: a gather clamps it to the
/// axis (negative ones to 0), a scatter drops it when outside the axis.
fn flat_batched(
    a: &Tensor,
    idx: &Tensor,
    axis: usize,
    size: usize,
    scatter: bool,
) -> Result<(Tensor, Tensor)> {
    use arr_kernels::BinaryOp;
    let a = moveaxis(a, axis + 1, 1)?;
    let n = a.shape()[1];
    let mut s = vec![size * n];
    s.extend_from_slice(&a.shape()[2..]);
    let a = reshape(&a, &s)?;
    let idx = convert(idx, DType::I32)?;
    let first = scalar(0.0, DType::I32);
    let last = scalar(n.saturating_sub(1) as f64, DType::I32);
    let outside = if scatter {
        let below = binary(BinaryOp::Lt, &idx, &first)?;
        let above = binary(BinaryOp::Gt, &idx, &last)?;
        Some(binary(BinaryOp::Or, &below, &above)?)
    } else {
        None
    };
    let idx = binary(BinaryOp::Max, &idx, &first)?;
    let idx = binary(BinaryOp::Min, &idx, &last)?;
    let mut bshape = vec![size];
    bshape.extend(std::iter::repeat_n(1, idx.ndim() - 1));
    let base = reshape(&iota(DType::I32, &[size], 0)?, &bshape)?;
    let idx = add(&idx, &mul(&base, &scalar(n as f64, DType::I32))?)?;
    let idx = match outside {
        Some(outside) => select(&outside, &scalar(-1.0, DType::I32), &idx)?,
        None => idx,
    };
    Ok((a, idx))
}
