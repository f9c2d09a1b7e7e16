//! The primitives that read or write by index — gather, scatter — and
//! those that make or sort positions — iota, sort, argsort — with all their
//! rules: shapes, evaluation, JVP, transpose, batching, partitioning.
//!
//! Gather clamps its indices into the axis and scatter drops the ones
//! outside it, and with `set` the last of repeated indices wins: every rule
//! keeps those meanings (a cotangent goes back to the element that was
//! read; an index never reaches a neighbouring example).

use super::{
    batched_at_front, bind, check_axis, device, for_linear, map, not_linear, one, one_out,
    one_type, ty, zero_tangents, Aval, Avals, Outs, Prim,
};
use crate::error::{Error, Result};
use crate::jit::partition::{parts, Local, Spec, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::{to_front, Bdims};
use crate::transform::collective::CollectiveOp;
use crate::transform::jvp::{instantiate, Tangents};
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::Backend as _;
use arr_kernels::{Array, BinaryOp, DType, ReduceOp, ScatterMode, Shape};
use smallvec::smallvec;

// ---------------------------------------------------------------------------
// Shapes

/// The shape of a gather's result (a scatter's updates): the array's
/// dimensions before `axis` (the `batch` shared ones first), the indices'
/// own, the array's after `axis`.
fn gathered_shape(what: &str, axis: usize, batch: usize, a: &Aval, idx: &Aval) -> Result<Shape> {
    check_axis(what, axis, a.shape.len())?;
    if batch > axis || batch > idx.shape.len() || a.shape[..batch] != idx.shape[..batch] {
        return Err(Error::shape_error(format!(
            "{what}: the first {batch} dimensions of {} and its indices {} must agree",
            ty(a),
            ty(idx)
        )));
    }
    let mut shape: Shape = a.shape[..axis].into();
    shape.extend_from_slice(&idx.shape[batch..]);
    shape.extend_from_slice(&a.shape[axis + 1..]);
    Ok(shape)
}

pub fn shape_gather(axis: usize, batch: usize, args: &[Aval]) -> Result<Avals> {
    let (a, idx) = (&args[0], &args[1]);
    if !idx.dtype.is_int() {
        return Err(Error::type_error(format!(
            "indices must be integers, got {}",
            ty(idx)
        )));
    }
    one_type(gathered_shape("take", axis, batch, a, idx)?, a.dtype)
}

pub fn shape_scatter(axis: usize, batch: usize, args: &[Aval]) -> Result<Avals> {
    let (a, idx, upd) = (&args[0], &args[1], &args[2]);
    let shape = gathered_shape("scatter", axis, batch, a, idx)?;
    if upd.shape != shape || upd.dtype != a.dtype || !idx.dtype.is_int() {
        return Err(Error::shape_error(format!(
            "scatter: updates {} do not match {} indexed by {}",
            ty(upd),
            ty(a),
            ty(idx)
        )));
    }
    one_type(a.shape.clone(), a.dtype)
}

pub fn shape_iota(dtype: DType, shape: &[usize], dim: usize) -> Result<Avals> {
    check_axis("iota", dim, shape.len())?;
    one_type(shape.into(), dtype)
}

pub fn shape_sort(axis: usize, args: &[Aval]) -> Result<Avals> {
    check_axis("sort", axis, args[0].shape.len())?;
    one_type(args[0].shape.clone(), args[0].dtype)
}

pub fn shape_argsort(axis: usize, args: &[Aval]) -> Result<Avals> {
    check_axis("argsort", axis, args[0].shape.len())?;
    one_type(args[0].shape.clone(), DType::I32)
}

// ---------------------------------------------------------------------------
// Evaluation

/// With shared dimensions, the gather of their flattened product (the
/// backends' kernels index one axis).
pub fn eval_gather(axis: usize, batch: usize, args: &[Array]) -> Result<Outs> {
    if batch == 0 {
        return one_out(device(args).gather(&args[0], &args[1], axis));
    }
    let (a, idx, rows) = flatten_batch(&args[0], &args[1], batch)?;
    let g = gather_rows(&a, &idx, axis - batch + 1, rows)?;
    let mut shape: Vec<usize> = args[0].shape()[..batch].to_vec();
    shape.extend_from_slice(&g.shape()[1..]);
    Ok(smallvec![reshape(&g, &shape)?])
}

pub fn eval_scatter(axis: usize, mode: ScatterMode, batch: usize, args: &[Array]) -> Result<Outs> {
    if batch == 0 {
        return one_out(device(args).scatter(&args[0], &args[1], &args[2], axis, mode));
    }
    let (a, idx, rows) = flatten_batch(&args[0], &args[1], batch)?;
    let upd = Tensor::from(args[2].clone());
    let mut s = vec![rows];
    s.extend_from_slice(&upd.shape()[batch..]);
    let out = scatter_rows(&a, &idx, &reshape(&upd, &s)?, axis - batch + 1, mode, rows)?;
    Ok(smallvec![reshape(&out, args[0].shape())?])
}

/// The array and indices with their `batch` shared dimensions as one.
fn flatten_batch(a: &Array, idx: &Array, batch: usize) -> Result<(Tensor, Tensor, usize)> {
    let rows: usize = a.shape()[..batch].iter().product();
    let flat = |x: &Array| {
        let mut s = vec![rows];
        s.extend_from_slice(&x.shape()[batch..]);
        reshape(&Tensor::from(x.clone()), &s)
    };
    Ok((flat(a)?, flat(idx)?, rows))
}

/// The gather along `axis` of each of the `rows` rows of `a` [rows, ..] by
/// its row of `idx` [rows, ..]: [rows, pre.., idx.., post..].
fn gather_rows(a: &Tensor, idx: &Tensor, axis: usize, rows: usize) -> Result<Tensor> {
    let n_idx = idx.ndim() - 1;
    let n_pre = axis - 1;
    let (a, idx) = flat_batched(a, idx, axis - 1, rows, false)?;
    let g = bind(&Prim::Gather { axis: 0, batch: 0 }, [a, idx])?.swap_remove(0);
    // g: [B, idx.., rest..] where rest = pre ++ post; want [B, pre.., idx.., post..].
    let mut perm = vec![0];
    perm.extend(1 + n_idx..1 + n_idx + n_pre);
    perm.extend(1..1 + n_idx);
    perm.extend(1 + n_idx + n_pre..g.ndim());
    transpose(&g, &perm)
}

/// The scatter along `axis` of each row of `upd` [rows, pre.., idx..,
/// post..] into its row of `a` [rows, ..] at its row of `idx`.
fn scatter_rows(
    a: &Tensor,
    idx: &Tensor,
    upd: &Tensor,
    axis: usize,
    mode: ScatterMode,
    rows: usize,
) -> Result<Tensor> {
    let n_pre = axis - 1;
    let n_idx = idx.ndim() - 1;
    let (flat_a, flat_idx) = flat_batched(a, idx, axis - 1, rows, true)?;
    // updates [B, pre.., idx.., post..] → [B, idx.., pre.., post..]
    let mut perm = vec![0];
    perm.extend(1 + n_pre..1 + n_pre + n_idx);
    perm.extend(1..1 + n_pre);
    perm.extend(1 + n_pre + n_idx..upd.ndim());
    let upd = transpose(upd, &perm)?;
    let scatter = Prim::Scatter {
        axis: 0,
        mode,
        batch: 0,
    };
    let out = bind(&scatter, [flat_a, flat_idx, upd])?.swap_remove(0);
    // Back from [B*n, pre.., post..] to [B, pre.., n, post..].
    let n = a.shape()[axis];
    let mut s = vec![rows, n];
    s.extend_from_slice(&a.shape()[1..axis]);
    s.extend_from_slice(&a.shape()[axis + 1..]);
    moveaxis(&reshape(&out, &s)?, 1, axis)
}

pub fn eval_iota(dtype: DType, shape: &[usize], dim: usize) -> Result<Outs> {
    one_out(device(&[]).iota(dtype, shape, dim))
}

pub fn eval_sort(axis: usize, args: &[Array]) -> Result<Outs> {
    one_out(device(args).sort(&args[0], axis))
}

pub fn eval_argsort(axis: usize, args: &[Array]) -> Result<Outs> {
    one_out(device(args).argsort(&args[0], axis))
}

// ---------------------------------------------------------------------------
// JVP

/// Linear in the array: the tangent is gathered at the same indices.
pub fn jvp_gather(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = map(&t[0], |t| {
        bind(prim, [t.clone(), p[1].clone()]).map(|mut o| o.swap_remove(0))
    })?;
    one(y, ty)
}

/// Linear in the array and the updates together.
pub fn jvp_scatter(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    if !y.dtype().is_inexact() {
        return one(y, None);
    }
    let ta = instantiate(&t[0], &p[0])?;
    let tu = instantiate(&t[2], &p[2])?;
    // Set and add alike: the tangent is scattered the same way.
    let ty = bind(prim, [ta, p[1].clone(), tu])?.swap_remove(0);
    one(y, Some(ty))
}

/// No operands, so nothing to differentiate: no tangent.
pub fn jvp_iota(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    zero_tangents(prim, p)
}

/// The tangent is permuted as the values are.
pub fn jvp_sort(
    prim: &Prim,
    axis: usize,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let perm = bind(&Prim::Argsort { axis }, [p[0].clone()])?.swap_remove(0);
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = map(&t[0], |t| take_along_axis(t, &perm, axis))?;
    one(y, ty)
}

/// Integer positions: no tangent.
pub fn jvp_argsort(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    zero_tangents(prim, p)
}

/// `take_along_axis(t, idx, axis)`: out[..., i, ...] = t[..., idx[..., i, ...], ...]:
/// one gather whose shared dimensions are all of `t`'s but `axis` (moved last).
pub fn take_along_axis(t: &Tensor, idx: &Tensor, axis: usize) -> Result<Tensor> {
    let last = t.ndim() - 1;
    let tm = moveaxis(t, axis, last)?;
    let im = convert(&moveaxis(idx, axis, last)?, DType::I32)?;
    let gather = Prim::Gather {
        axis: last,
        batch: last,
    };
    let g = bind(&gather, [tm, im])?.swap_remove(0);
    moveaxis(&g, last, axis)
}

// ---------------------------------------------------------------------------
// Transpose

/// A scatter-add of the cotangent into zeros.
pub fn transpose_gather(
    axis: usize,
    batch: usize,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let idx = ins[1].known()?;
    for_linear(ins, |i| {
        let shape = ins[i].shape();
        // Gather clamps its indices, and scatter drops those out of
        // range: clamp them here, so each cotangent goes back to the
        // element that was read.
        let idx = clamp_indices(idx, shape[axis])?;
        let z = zeros(shape, ct.dtype())?;
        bind(
            &Prim::Scatter {
                axis,
                mode: ScatterMode::Add,
                batch,
            },
            [z, idx, ct.clone()],
        )
        .map(|mut o| o.swap_remove(0))
    })
}

/// The array's cotangent, less what the updates overwrote; each update's,
/// gathered where it landed.
pub fn transpose_scatter(
    prim: &Prim,
    axis: usize,
    mode: ScatterMode,
    batch: usize,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
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
            let n = ins[0].shape()[axis];
            let kept = scatter_kept(idx, n, mode, batch)?;
            let upd_shape = ins[2].shape();
            let kept = bind(
                &Prim::BroadcastInDim {
                    shape: upd_shape.to_vec(),
                    dims: (0..batch).chain(axis..axis + idx.ndim() - batch).collect(),
                },
                [kept],
            )?
            .swap_remove(0);
            let g = bind(&Prim::Gather { axis, batch }, [ct.clone(), idx.clone()])?.swap_remove(0);
            select(&kept, &g, &lit(0.0, &g))
        }
    })
}

pub fn transpose_iota(prim: &Prim) -> Result<Vec<Option<Tensor>>> {
    Err(not_linear(prim))
}

/// Not linear (its tangent is a gather, which is what reverse mode transposes).
pub fn transpose_sort(prim: &Prim) -> Result<Vec<Option<Tensor>>> {
    Err(not_linear(prim))
}

pub fn transpose_argsort(prim: &Prim) -> Result<Vec<Option<Tensor>>> {
    Err(not_linear(prim))
}

/// Indices limited to `0..n`, as gather reads them.
fn clamp_indices(idx: &Tensor, n: usize) -> Result<Tensor> {
    let lo = scalar(0.0, idx.dtype());
    let hi = scalar(n.saturating_sub(1) as f64, idx.dtype());
    binary(BinaryOp::Min, &binary(BinaryOp::Max, idx, &lo)?, &hi)
}

/// Which entries of `idx` a scatter into an axis of length `n` writes: those
/// in range, and with `Set` only the last of each repeated index (a scatter
/// of the update positions finds the one that wins; in each row of the
/// `batch` shared dimensions apart).
fn scatter_kept(idx: &Tensor, n: usize, mode: ScatterMode, batch: usize) -> Result<Tensor> {
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
            let mut rows = idx.shape()[..batch].to_vec();
            rows.push(n);
            let none = full(&rows, -1.0, DType::I32)?;
            let winner = bind(
                &Prim::Scatter {
                    axis: batch,
                    mode: ScatterMode::Set,
                    batch,
                },
                [none, idx.clone(), pos.clone()],
            )?
            .swap_remove(0);
            let gather = Prim::Gather { axis: batch, batch };
            let read = bind(&gather, [winner, idx.clone()])?.swap_remove(0);
            binary(
                BinaryOp::And,
                &in_range,
                &binary(BinaryOp::Eq, &read, &pos)?,
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Batching

pub fn batch_gather(
    prim: &Prim,
    axis: usize,
    batch: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    match (d[0], d[1]) {
        // The operand [B, pre.., n, post..] gathered at axis + 1 keeps B first.
        (Some(d0), None) if batch == 0 => Ok((
            bind(
                &Prim::Gather {
                    axis: axis + 1,
                    batch: 0,
                },
                [to_front(&v[0], Some(d0), size)?, v[1].clone()],
            )?,
            vec![Some(0)],
        )),
        // out = pre ++ idx ++ post, and idx's batch axis lands at axis + di.
        (None, Some(di)) if batch == 0 => Ok((
            bind(prim, [v[0].clone(), v[1].clone()])?,
            vec![Some(axis + di)],
        )),
        // Otherwise the examples are one more shared dimension.
        _ => {
            let shared = Prim::Gather {
                axis: axis + 1,
                batch: batch + 1,
            };
            let a = to_front(&v[0], d[0], size)?;
            let idx = to_front(&v[1], d[1], size)?;
            Ok((bind(&shared, [a, idx])?, vec![Some(0)]))
        }
    }
}

/// All three operands batched at the front: the examples are one more
/// shared dimension.
pub fn batch_scatter(
    axis: usize,
    mode: ScatterMode,
    batch: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let front = |i: usize| to_front(&v[i], d[i], size);
    let shared = Prim::Scatter {
        axis: axis + 1,
        mode,
        batch: batch + 1,
    };
    Ok((
        bind(&shared, [front(0)?, front(1)?, front(2)?])?,
        vec![Some(0)],
    ))
}

/// No operands, so never batched: the same positions for every example.
pub fn batch_iota(prim: &Prim) -> Result<(Outs, Bdims)> {
    Ok((bind(prim, Vec::<Tensor>::new())?, vec![None]))
}

pub fn batch_sort(
    axis: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(Prim::Sort { axis: axis + 1 }, to_front(&v[0], d[0], size)?)
}

pub fn batch_argsort(
    axis: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(
        Prim::Argsort { axis: axis + 1 },
        to_front(&v[0], d[0], size)?,
    )
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

// ---------------------------------------------------------------------------
// Partitioning: gather and scatter run on each device's blocks, whole
// along the indexed axis (an index may point into any device's block);
// iota, sort and argsort run replicated.

/// The layouts a gather or scatter along `axis` runs in locally: the
/// operand's with the indexed axis whole (an index may point anywhere
/// along it), the shared dimensions split alike in both (the operand's
/// split, else the indices'), and the indices' own dimensions with the
/// mesh axes the operand uses left out (one mesh axis cannot split two
/// dimensions of the result). The indices' dimensions keep their split
/// otherwise: a batch-split embedding lookup stays on each device's own
/// tokens, and so does a batch-split `take_along_axis`.
fn indexed_layouts(axis: usize, batch: usize, operand: &Spec, indices: &Spec) -> (Spec, Spec) {
    let mut a = operand.clone();
    a[axis].clear();
    // A mesh axis that splits the indices splits the result there: the
    // operand's other dimensions give it up (gathering a table split
    // over the batch axis, as FSDP does, keeps the batch split).
    let by_indices: Vec<usize> = indices.iter().flatten().copied().collect();
    for d in (batch..a.len()).filter(|&d| d != axis) {
        if a[d].iter().any(|m| by_indices.contains(m)) {
            a[d].clear();
        }
    }
    for d in 0..batch {
        if a[d].is_empty() {
            let used: Vec<usize> = a.iter().flatten().copied().collect();
            a[d] = indices[d]
                .iter()
                .copied()
                .filter(|m| !used.contains(m))
                .collect();
        }
    }
    let used: Vec<usize> = a.iter().flatten().copied().collect();
    let idx = indices
        .iter()
        .enumerate()
        .map(|(d, s)| match d < batch {
            true => a[d].clone(),
            false => s.iter().copied().filter(|m| !used.contains(m)).collect(),
        })
        .collect();
    (a, idx)
}

/// The layout of a gather's result (and a scatter's updates): the
/// operand's dimensions before `axis`, the indices' own, the operand's after.
fn gathered_layout(axis: usize, batch: usize, operand: &Spec, indices: &Spec) -> Spec {
    let mut out: Spec = operand[..axis].to_vec();
    out.extend(indices[batch..].iter().cloned());
    out.extend(operand[axis + 1..].iter().cloned());
    out
}

/// Each device gathers its block of the result from its block of the
/// operand, whole along the indexed axis (`indexed_layouts`).
pub fn partition_gather(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    let Prim::Gather { axis, batch } = *prim else {
        unreachable!("partition_gather takes a gather")
    };
    let [(a, sa), (idx, si)]: [Local; 2] = ins.try_into().expect("two operands");
    let (ka, ki) = indexed_layouts(axis, batch, &sa, &si);
    let a = cx.reshard(&a, &sa, &ka, "gather along a split dimension")?;
    let idx = cx.reshard(&idx, &si, &ki, "gather: indices split like the operand")?;
    let spec = gathered_layout(axis, batch, &ka, &ki);
    Ok(vec![(bind(prim, [a, idx])?.swap_remove(0), spec)])
}

/// Each device scatters its block of the updates into its block of the
/// operand (whole along the indexed axis). Where the indices' own
/// dimensions are split, each device holds only some of the updates of its
/// block: a scatter-add adds them into zeros, sums those over the mesh
/// axes that split the indices, and adds the operand once (the transpose
/// of a batch-split embedding lookup: one all-reduce, as the gradient
/// needs anyway); a scatter that sets gathers the indices whole first, as
/// the last update to an element must win. Split shared dimensions need
/// neither: each device owns its rows.
pub fn partition_scatter(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    let Prim::Scatter { axis, mode, batch } = *prim else {
        unreachable!("partition_scatter takes a scatter")
    };
    let [(a, sa), (idx, si), (upd, su)]: [Local; 3] = ins.try_into().expect("three operands");
    let (ka, mut ki) = indexed_layouts(axis, batch, &sa, &si);
    let split: Vec<usize> = ki[batch..].iter().flatten().copied().collect();
    // Bytes each device sends either way: gathering the indices and their
    // updates whole, or summing its partial result (what XLA weighs too).
    let bytes = |t: &Tensor| t.shape().iter().product::<usize>() * t.dtype().size_bytes();
    let mesh = cx.mesh();
    let upd_split: Vec<usize> = su[axis..axis + si.len() - batch]
        .iter()
        .flatten()
        .copied()
        .collect();
    let gather_cost =
        bytes(&idx) * (parts(mesh, &split) - 1) + bytes(&upd) * (parts(mesh, &upd_split) - 1);
    let sum_cost: usize = split
        .iter()
        .map(|&m| 2 * bytes(&a) * parts(mesh, &sa[axis]) * (mesh.shape[m] - 1) / mesh.shape[m])
        .sum();
    let summed = !split.is_empty() && mode == ScatterMode::Add && sum_cost < gather_cost;
    if !summed {
        for s in &mut ki[batch..] {
            s.clear();
        }
    }
    let ku = gathered_layout(axis, batch, &ka, &ki);
    let a = cx.reshard(&a, &sa, &ka, "scatter along a split dimension")?;
    let idx = cx.reshard(&idx, &si, &ki, "scatter: indices gathered whole")?;
    let upd = cx.reshard(&upd, &su, &ku, "scatter: updates laid out as indexed")?;
    if !summed {
        return Ok(vec![(bind(prim, [a, idx, upd])?.swap_remove(0), ka)]);
    }
    let mut y = bind(prim, [zeros(a.shape(), a.dtype())?, idx, upd])?.swap_remove(0);
    for m in split {
        y = cx.collective(
            CollectiveOp::AllReduce(ReduceOp::Sum),
            m,
            &y,
            &format!(
                "scatter_add of updates split by '{}'",
                cx.mesh().axis_names[m]
            ),
        )?;
    }
    let sum = cx.elementwise(
        &Prim::Binary(BinaryOp::Add),
        vec![(a, ka.clone()), (y, ka.clone())],
    )?;
    Ok(vec![(sum, ka)])
}

pub fn partition_iota(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

/// Each row along the sorted axis is sorted where it lives.
pub fn partition_sort(prim: &Prim, axis: usize, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.along_axis(prim, ins, axis)
}

pub fn partition_argsort(
    prim: &Prim,
    axis: usize,
    cx: &Spmd,
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    cx.along_axis(prim, ins, axis)
}
