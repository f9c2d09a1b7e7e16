//! The data-movement primitives — transpose, broadcast_in_dim, reshape,
//! slice, rev, pad, concatenate — and all their rules: shapes, evaluation,
//! JVP, transpose, batching, partitioning. All are linear in their array
//! operands, so each one's tangent goes through the primitive itself and
//! each one's transpose is another movement.

use super::{
    batched_at_front, bind, bind1, check_axis, device, for_linear, map, one, one_out, one_type,
    same_dtype, shift, ty, Aval, Avals, Outs, Prim,
};
use crate::error::{Error, Result};
use crate::jit::partition::{global_dim, global_shape, parts, replicated, Local, Spec, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::{to_front, Bdims};
use crate::transform::jvp::{instantiate, Tangents};
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::sharding::Mesh;
use arr_kernels::Backend as _;
use arr_kernels::{Array, DType, Shape};
use smallvec::smallvec;

// ---------------------------------------------------------------------------
// Shapes

pub fn shape_transpose(perm: &[usize], args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    let mut seen = vec![false; a.shape.len()];
    if perm.len() != a.shape.len()
        || perm
            .iter()
            .any(|&p| p >= seen.len() || std::mem::replace(&mut seen[p], true))
    {
        return Err(Error::value_error(format!(
            "transpose: {perm:?} is not a permutation of the axes of {}",
            ty(a)
        )));
    }
    one_type(perm.iter().map(|&p| a.shape[p]).collect(), a.dtype)
}

pub fn shape_broadcast_in_dim(shape: &[usize], dims: &[usize], args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    let ok = dims.len() == a.shape.len()
        && dims.windows(2).all(|w| w[0] < w[1])
        && dims
            .iter()
            .zip(&a.shape)
            .all(|(&d, &s)| d < shape.len() && (s == 1 || s == shape[d]));
    if !ok {
        return Err(Error::shape_error(format!(
            "cannot broadcast {} to shape {:?}",
            ty(a),
            shape
        )));
    }
    one_type(shape.into(), a.dtype)
}

pub fn shape_reshape(shape: &[usize], args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    // (The operand's size fits: every type made passed `check_shape`.)
    let size = a.shape.iter().product::<usize>();
    if arr_kernels::limits::element_count(shape, a.dtype.size_bytes()) != Ok(size) {
        return Err(Error::shape_error(format!(
            "cannot reshape {} into shape {:?}",
            ty(a),
            shape
        )));
    }
    one_type(shape.into(), a.dtype)
}

pub fn shape_slice(
    start: &[usize],
    limit: &[usize],
    stride: &[usize],
    args: &[Aval],
) -> Result<Avals> {
    let a = &args[0];
    let n = a.shape.len();
    if start.len() != n || limit.len() != n || stride.len() != n {
        return Err(Error::index_error(format!(
            "slice of {} needs {n} bounds",
            ty(a)
        )));
    }
    let mut shape = Shape::new();
    for i in 0..n {
        if start[i] > limit[i] || limit[i] > a.shape[i] || stride[i] == 0 {
            return Err(Error::index_error(format!(
                "slice {}:{}:{} out of bounds for axis {i} of {}",
                start[i],
                limit[i],
                stride[i],
                ty(a)
            )));
        }
        shape.push((limit[i] - start[i]).div_ceil(stride[i]));
    }
    one_type(shape, a.dtype)
}

pub fn shape_rev(axes: &[usize], args: &[Aval]) -> Result<Avals> {
    for &ax in axes {
        check_axis("flip", ax, args[0].shape.len())?;
    }
    one_type(args[0].shape.clone(), args[0].dtype)
}

pub fn shape_pad(lo: &[usize], hi: &[usize], interior: &[usize], args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    let n = a.shape.len();
    if lo.len() != n || hi.len() != n || interior.len() != n || !args[1].shape.is_empty() {
        return Err(Error::shape_error(format!(
            "pad: bad padding for {}",
            ty(a)
        )));
    }
    same_dtype("pad", args)?;
    let shape = (0..n)
        .map(|i| lo[i] + hi[i] + a.shape[i] + a.shape[i].saturating_sub(1) * interior[i])
        .collect();
    one_type(shape, a.dtype)
}

pub fn shape_concatenate(axis: usize, args: &[Aval]) -> Result<Avals> {
    if args.is_empty() {
        return Err(Error::value_error("need at least one array to concatenate"));
    }
    let first = &args[0];
    check_axis("concatenate", axis, first.shape.len())?;
    let dtype = same_dtype("concatenate", args)?;
    let mut shape = first.shape.clone();
    shape[axis] = 0;
    for a in args {
        let compatible = a.shape.len() == first.shape.len()
            && (0..a.shape.len()).all(|i| i == axis || a.shape[i] == first.shape[i]);
        if !compatible {
            return Err(Error::shape_error(format!(
                "concatenate: {} and {} differ outside axis {axis}",
                ty(first),
                ty(a)
            )));
        }
        shape[axis] += a.shape[axis];
    }
    one_type(shape, dtype)
}

// ---------------------------------------------------------------------------
// Evaluation

pub fn eval_transpose(perm: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(device(args).transpose(&args[0], perm))
}

pub fn eval_broadcast_in_dim(shape: &[usize], dims: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(device(args).broadcast_in_dim(&args[0], shape, dims))
}

/// A view of the same buffer: no kernel runs.
pub fn eval_reshape(shape: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(args[0].reshape(shape))
}

pub fn eval_slice(
    start: &[usize],
    limit: &[usize],
    stride: &[usize],
    args: &[Array],
) -> Result<Outs> {
    one_out(device(args).slice(&args[0], start, limit, stride))
}

pub fn eval_rev(axes: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(device(args).rev(&args[0], axes))
}

pub fn eval_pad(lo: &[usize], hi: &[usize], interior: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(device(args).pad(&args[0], &args[1], lo, hi, interior))
}

pub fn eval_concatenate(axis: usize, args: &[Array]) -> Result<Outs> {
    one_out(device(args).concatenate(args, axis))
}

// ---------------------------------------------------------------------------
// JVP

/// Transpose, broadcast_in_dim, reshape, slice and rev are linear in their
/// one operand: the tangent goes through the same primitive.
pub fn jvp_linear(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = map(&t[0], |t| {
        bind(prim, [t.clone()]).map(|mut o| o.swap_remove(0))
    })?;
    one(y, ty)
}

/// Linear in the array and the padding value together.
pub fn jvp_pad(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let tx = instantiate(&t[0], &p[0])?;
    let tv = instantiate(&t[1], &p[1])?;
    one(y, Some(bind(prim, [tx, tv])?.swap_remove(0)))
}

pub fn jvp_concatenate(
    prim: &Prim,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ts = p
        .iter()
        .zip(t)
        .map(|(p, t)| instantiate(t, p))
        .collect::<Result<Vec<_>>>()?;
    one(y, Some(bind(prim, ts)?.swap_remove(0)))
}

// ---------------------------------------------------------------------------
// Transpose

fn one_op(p: Prim, x: Tensor) -> Result<Tensor> {
    bind(&p, [x]).map(|mut o| o.swap_remove(0))
}

/// The inverse permutation.
pub fn transpose_transpose(
    perm: &[usize],
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |_| {
        let mut inv = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        transpose(&ct, &inv)
    })
}

/// A sum over the broadcast dimensions.
pub fn transpose_broadcast_in_dim(
    shape: &[usize],
    dims: &[usize],
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |i| {
        let in_shape = ins[i].shape();
        let axes: Vec<usize> = (0..shape.len())
            .filter(|a| match dims.iter().position(|d| d == a) {
                None => true,
                Some(k) => in_shape[k] == 1 && shape[*a] != 1,
            })
            .collect();
        reshape(&reduce_sum(&ct, &axes)?, in_shape)
    })
}

pub fn transpose_reshape(ct: Tensor, ins: &[LinIn]) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |i| reshape(&ct, ins[i].shape()))
}

/// The cotangent padded back to the operand's shape, zeros between strides.
pub fn transpose_slice(
    start: &[usize],
    stride: &[usize],
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |i| {
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
                lo: start.to_vec(),
                hi,
                interior,
            },
            [ct.clone(), lit(0.0, &ct)],
        )
        .map(|mut o| o.swap_remove(0))
    })
}

pub fn transpose_rev(axes: &[usize], ct: Tensor, ins: &[LinIn]) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |_| one_op(Prim::Rev(axes.to_vec()), ct.clone()))
}

/// The operand's cotangent is the slice the operand landed in; the padding
/// value's is the sum of everything else.
pub fn transpose_pad(
    lo: &[usize],
    interior: &[usize],
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
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
                start: lo.to_vec(),
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

/// Each linear operand's cotangent is its slice of the output's.
pub fn transpose_concatenate(
    axis: usize,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let mut offset = 0;
    let mut out = Vec::new();
    for a in ins {
        let shape = a.shape();
        if a.is_linear() {
            let mut start = vec![0; shape.len()];
            let mut limit = ct.shape().to_vec();
            start[axis] = offset;
            limit[axis] = offset + shape[axis];
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
        offset += shape[axis];
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Batching: the batch axis to the front, a new leading dimension in the
// parameters.

pub fn batch_transpose(
    perm: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let mut p = vec![0];
    p.extend(shift(perm));
    batched_at_front(Prim::Transpose(p), to_front(&v[0], d[0], size)?)
}

pub fn batch_broadcast_in_dim(
    shape: &[usize],
    dims: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let mut s = vec![size];
    s.extend_from_slice(shape);
    let mut ds = vec![0];
    ds.extend(shift(dims));
    batched_at_front(
        Prim::BroadcastInDim { shape: s, dims: ds },
        to_front(&v[0], d[0], size)?,
    )
}

pub fn batch_reshape(
    shape: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let mut s = vec![size];
    s.extend_from_slice(shape);
    batched_at_front(Prim::Reshape(s), to_front(&v[0], d[0], size)?)
}

pub fn batch_slice(
    start: &[usize],
    limit: &[usize],
    stride: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let with = |v: &[usize], x: usize| {
        let mut r = vec![x];
        r.extend_from_slice(v);
        r
    };
    batched_at_front(
        Prim::Slice {
            start: with(start, 0),
            limit: with(limit, size),
            stride: with(stride, 1),
        },
        to_front(&v[0], d[0], size)?,
    )
}

pub fn batch_rev(
    axes: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(Prim::Rev(shift(axes)), to_front(&v[0], d[0], size)?)
}

pub fn batch_pad(
    prim: &Prim,
    lo: &[usize],
    hi: &[usize],
    interior: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let front = |i: usize| to_front(&v[i], d[i], size);
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
    Ok((smallvec![select(&mask, &padded, &value)?], vec![Some(0)]))
}

pub fn batch_concatenate(
    axis: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let args = (0..v.len())
        .map(|i| to_front(&v[i], d[i], size))
        .collect::<Result<Vec<_>>>()?;
    Ok((
        bind(&Prim::Concatenate { axis: axis + 1 }, args)?,
        vec![Some(0)],
    ))
}

// ---------------------------------------------------------------------------
// Partitioning

/// The layout is permuted with the dimensions.
pub fn partition_transpose(prim: &Prim, perm: &[usize], ins: Vec<Local>) -> Result<Vec<Local>> {
    let (x, s) = ins.into_iter().next().expect("one operand");
    let spec = perm.iter().map(|&p| s[p].clone()).collect();
    Ok(vec![(bind(prim, [x])?.swap_remove(0), spec)])
}

/// Each operand dimension keeps its layout in the output dimension it
/// maps to; a split dimension of size 1 that is broadcast is gathered
/// first. New dimensions are replicated.
pub fn partition_broadcast_in_dim(
    cx: &Spmd,
    shape: &[usize],
    dims: &[usize],
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let (x, s) = ins.into_iter().next().expect("one operand");
    let mut spec = replicated(shape.len());
    let mut keep = s.clone();
    for (i, &d) in dims.iter().enumerate() {
        if global_dim(cx.mesh(), &x, &s, i) == shape[d] {
            spec[d] = s[i].clone();
        } else {
            keep[i].clear();
        }
    }
    let x = cx.reshard(&x, &s, &keep, "broadcast of a split dimension of size 1")?;
    let local: Vec<usize> = (0..shape.len())
        .map(|d| shape[d] / parts(cx.mesh(), &spec[d]))
        .collect();
    let p = Prim::BroadcastInDim {
        shape: local,
        dims: dims.to_vec(),
    };
    Ok(vec![(bind(&p, [x])?.swap_remove(0), spec)])
}

/// A reshape keeps a split dimension when it stays the major part of its
/// group of dimensions (`[B@d, H, W] -> [B@d, H*W]`, `[B@d*H] -> [B@d, H]`,
/// keepdims): each device's block is then still contiguous in the new
/// shape. Otherwise the operand is gathered and reshaped whole.
pub fn partition_reshape(
    prim: &Prim,
    cx: &Spmd,
    shape: &[usize],
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let (x, s) = ins.into_iter().next().expect("one operand");
    let from = global_shape(cx.mesh(), &(x.clone(), s.clone()));
    match reshape_spec(cx.mesh(), &from, shape, &s) {
        Some(spec) => {
            let local: Vec<usize> = (0..shape.len())
                .map(|d| shape[d] / parts(cx.mesh(), &spec[d]))
                .collect();
            Ok(vec![(
                bind(&Prim::Reshape(local), [x])?.swap_remove(0),
                spec,
            )])
        }
        None => {
            let x = cx.reshard(&x, &s, &replicated(s.len()), "reshape of a split dimension")?;
            Ok(vec![(
                bind(prim, [x])?.swap_remove(0),
                replicated(shape.len()),
            )])
        }
    }
}

/// The layout of a reshape's output, when every split input dimension is
/// the first (major) non-1 dimension of its group — the runs of input and
/// output dimensions with equal products — and the group's first output
/// dimension divides by its devices; `None` when the blocks would not stay
/// contiguous (then the input is gathered).
fn reshape_spec(mesh: &Mesh, from: &[usize], to: &[usize], s: &Spec) -> Option<Spec> {
    let mut spec = replicated(to.len());
    let (mut i, mut o) = (0, 0);
    while i < from.len() || o < to.len() {
        // One group: take dimensions from the side with the smaller product
        // until both products meet (size-1 dimensions join the group).
        let (i0, o0) = (i, o);
        let (mut pi, mut po) = (1usize, 1usize);
        loop {
            if i < from.len() && (pi < po || o >= to.len() || (pi == po && i - i0 <= o - o0)) {
                pi *= from[i];
                i += 1;
            } else if o < to.len() {
                po *= to[o];
                o += 1;
            } else {
                break;
            }
            let more_ones = (i < from.len() && from[i] == 1) || (o < to.len() && to[o] == 1);
            if pi == po && i > i0 && o > o0 && !more_ones {
                break;
            }
        }
        let split: Vec<usize> = (i0..i).filter(|&d| !s[d].is_empty()).collect();
        match split[..] {
            [] => {}
            [d] => {
                // The split dimension must lead its group (ignoring 1s), and
                // the output dimension that takes the split must divide.
                if (i0..d).any(|e| from[e] != 1) {
                    return None;
                }
                let first_out = (o0..o).find(|&e| to[e] != 1)?;
                if !to[first_out].is_multiple_of(parts(mesh, &s[d])) {
                    return None;
                }
                spec[first_out] = s[d].clone();
            }
            [_, _, ..] => return None,
        }
    }
    Some(spec)
}

/// A slice keeps the layout of the dimensions it takes whole. A dimension
/// it cuts stays split when the window divides by its devices: each device
/// gets its block of the window from the devices holding it (`realign`),
/// or from the dimension gathered whole where that sends fewer bytes; other
/// cut dimensions are gathered.
pub fn partition_slice(
    cx: &Spmd,
    start: &[usize],
    limit: &[usize],
    stride: &[usize],
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let (mut x, s) = ins.into_iter().next().expect("one operand");
    let mut from = global_shape(cx.mesh(), &(x.clone(), s.clone()));
    let (mut start, mut limit) = (start.to_vec(), limit.to_vec());
    for d in 0..s.len() {
        let width = limit[d].saturating_sub(start[d]);
        let cut = !(start[d] == 0 && limit[d] == from[d]);
        let Some(y) = (match s[d].as_slice() {
            &[m] if cut && stride[d] == 1 && width.is_multiple_of(cx.mesh().shape[m]) => {
                let because = "slice of a split dimension";
                let w = width / cx.mesh().shape[m];
                cx.realign(&x, d, m, from[d], start[d] as isize, w, None, because)?
            }
            _ => None,
        }) else {
            continue;
        };
        x = y;
        (from[d], start[d], limit[d]) = (width, 0, width);
    }
    let whole = |d: usize| start[d] == 0 && limit[d] == from[d] && stride[d] == 1;
    let keep: Spec = (0..s.len())
        .map(|d| if whole(d) { s[d].clone() } else { Vec::new() })
        .collect();
    let x = cx.reshard(&x, &s, &keep, "slice of a split dimension")?;
    let limit: Vec<usize> = (0..keep.len())
        .map(|d| start[d] + (limit[d] - start[d]) / parts(cx.mesh(), &keep[d]))
        .collect();
    let p = Prim::Slice {
        start,
        limit,
        stride: stride.to_vec(),
    };
    let y = bind(&p, [x])?.swap_remove(0);
    resplit(cx, y, &keep, &s)
}

/// `y`, computed on dimensions gathered whole (`now`), split again as the
/// operand was (`was`) along each dimension whose new extent still divides
/// by its devices: each device keeps its own block (a selection, no
/// collective). q, k and v sliced out of a column-split product thus stay
/// split, and attention runs on each device's heads instead of on all of
/// them everywhere; their cotangents, padded back, stay split as the
/// product's weight is.
fn resplit(cx: &Spmd, y: Tensor, now: &Spec, was: &Spec) -> Result<Vec<Local>> {
    let want: Spec = (0..now.len())
        .map(|d| {
            let divides = y.shape()[d].is_multiple_of(parts(cx.mesh(), &was[d]));
            if now[d].is_empty() && divides {
                was[d].clone()
            } else {
                now[d].clone()
            }
        })
        .collect();
    let y = cx.reshard(&y, now, &want, "a block of a gathered dimension")?;
    Ok(vec![(y, want)])
}

/// The reversed dimensions are gathered whole (reversing a split one would
/// also reverse the order of its blocks); the others keep their split.
pub fn partition_rev(
    prim: &Prim,
    dims: &[usize],
    cx: &Spmd,
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let [(x, s)]: [Local; 1] = ins.try_into().expect("one operand");
    let keep: Spec = (0..s.len())
        .map(|d| match dims.contains(&d) {
            true => Vec::new(),
            false => s[d].clone(),
        })
        .collect();
    let x = cx.reshard(&x, &s, &keep, "rev of a split dimension")?;
    Ok(vec![(bind(prim, [x])?.swap_remove(0), keep)])
}

/// Padding keeps the layout of the dimensions it leaves alone. A padded
/// dimension stays split when its new extent divides by its devices (as a
/// slice's window does: `realign`, or gathered and cut); other padded
/// dimensions are gathered.
pub fn partition_pad(
    cx: &Spmd,
    lo: &[usize],
    hi: &[usize],
    interior: &[usize],
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let [(mut x, s), (v, sv)]: [Local; 2] = ins.try_into().expect("two operands");
    let v = cx.reshard(&v, &sv, &replicated(sv.len()), "pad value")?;
    let from = global_shape(cx.mesh(), &(x.clone(), s.clone()));
    let (mut lo, mut hi) = (lo.to_vec(), hi.to_vec());
    for d in 0..s.len() {
        let extent = lo[d] + from[d] + hi[d];
        let padded = lo[d] != 0 || hi[d] != 0;
        let Some(y) = (match s[d].as_slice() {
            &[m] if padded && interior[d] == 0 && extent.is_multiple_of(cx.mesh().shape[m]) => {
                let because = "pad of a split dimension";
                let w = extent / cx.mesh().shape[m];
                let start = -(lo[d] as isize);
                cx.realign(&x, d, m, from[d], start, w, Some(&v), because)?
            }
            _ => None,
        }) else {
            continue;
        };
        x = y;
        (lo[d], hi[d]) = (0, 0);
    }
    let keep: Spec = (0..s.len())
        .map(|d| {
            if lo[d] == 0 && hi[d] == 0 && interior[d] == 0 {
                s[d].clone()
            } else {
                Vec::new()
            }
        })
        .collect();
    let x = cx.reshard(&x, &s, &keep, "pad of a split dimension")?;
    let p = Prim::Pad {
        lo,
        hi,
        interior: interior.to_vec(),
    };
    let y = bind(&p, [x, v])?.swap_remove(0);
    resplit(cx, y, &keep, &s)
}

/// Runs replicated: the operands' blocks do not line up with the output's.
pub fn partition_concatenate(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}
