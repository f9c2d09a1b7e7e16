//! The reductions — reduce (sum, prod, max, min, all, any over axes),
//! arg-reduce (argmax, argmin) and cumulative (inclusive scans along an
//! axis) — and all their rules: shapes, evaluation, JVP, transpose,
//! batching, partitioning.

use super::{
    batched_at_front, bind, check_axis, device, map, not_linear, one, one_out, one_type, shift, ty,
    zero_tangents, Aval, Avals, Outs, Prim,
};
use crate::error::{Error, Result};
use crate::jit::partition::{Local, Spec, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::{to_front, Bdims};
use crate::transform::collective::CollectiveOp;
use crate::transform::jvp::{instantiate, Tangents};
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::Backend as _;
use arr_kernels::{ArgReduceOp, Array, BinaryOp, DType, ReduceOp, ScanOp};

// ---------------------------------------------------------------------------
// Shapes

pub fn shape_reduce(op: ReduceOp, axes: &[usize], args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    for &ax in axes {
        check_axis("reduce", ax, a.shape.len())?;
    }
    let logical = match op {
        ReduceOp::All | ReduceOp::Any => true,
        ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => false,
    };
    if matches!(op, ReduceOp::Max | ReduceOp::Min) {
        check_ordered(&format!("{op:?}").to_lowercase(), a)?;
    }
    if logical && a.dtype != DType::Bool {
        return Err(Error::type_error(format!(
            "all/any need a bool array, got {}",
            ty(a)
        )));
    }
    let shape = a
        .shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, &d)| d)
        .collect();
    one_type(shape, a.dtype)
}

pub fn shape_arg_reduce(axis: usize, args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    check_axis("argmax", axis, a.shape.len())?;
    if a.shape[axis] == 0 {
        return Err(Error::value_error(
            "attempt to get argmax/argmin of an empty sequence",
        ));
    }
    let mut shape = a.shape.clone();
    shape.remove(axis);
    one_type(shape, DType::I32)
}

/// Complex numbers have no order (JAX refuses their max and min).
fn check_ordered(what: &str, a: &Aval) -> Result<()> {
    if a.dtype.is_complex() {
        return Err(Error::type_error(format!(
            "{what} needs a real (non-complex) array, got {}: complex numbers have no order",
            ty(a)
        )));
    }
    Ok(())
}

pub fn shape_cumulative(op: ScanOp, axis: usize, args: &[Aval]) -> Result<Avals> {
    check_axis("cumulative op", axis, args[0].shape.len())?;
    if matches!(op, ScanOp::Max | ScanOp::Min) {
        check_ordered(&format!("cum{op:?}").to_lowercase(), &args[0])?;
    }
    one_type(args[0].shape.clone(), args[0].dtype)
}

// ---------------------------------------------------------------------------
// Evaluation

pub fn eval_reduce(op: ReduceOp, axes: &[usize], args: &[Array]) -> Result<Outs> {
    one_out(device(args).reduce(op, &args[0], axes))
}

pub fn eval_arg_reduce(op: ArgReduceOp, axis: usize, args: &[Array]) -> Result<Outs> {
    one_out(device(args).arg_reduce(op, &args[0], axis))
}

pub fn eval_cumulative(op: ScanOp, axis: usize, reverse: bool, args: &[Array]) -> Result<Outs> {
    one_out(device(args).scan(op, &args[0], axis, reverse))
}

// ---------------------------------------------------------------------------
// JVP

pub fn jvp_reduce(
    prim: &Prim,
    op: ReduceOp,
    axes: &[usize],
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let x = &p[0];
    let ty = match op {
        ReduceOp::Sum => map(&t[0], |t| reduce_sum(t, axes))?,
        ReduceOp::Max | ReduceOp::Min => {
            let t = instantiate(&t[0], x)?;
            Some(extremum_tangent(x, &t, &y, axes)?)
        }
        ReduceOp::Prod => {
            let t = instantiate(&t[0], x)?;
            Some(prod_tangent(x, &t, axes)?)
        }
        // Bool results.
        ReduceOp::All | ReduceOp::Any => None,
    };
    one(y, ty)
}

/// Integer results: no tangent.
pub fn jvp_arg_reduce(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    zero_tangents(prim, p)
}

pub fn jvp_cumulative(
    prim: &Prim,
    op: ScanOp,
    axis: usize,
    reverse: bool,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = match op {
        // Linear: the tangent goes through the same scan.
        ScanOp::Sum => map(&t[0], |t| {
            bind(prim, [t.clone()]).map(|mut o| o.swap_remove(0))
        })?,
        ScanOp::Prod => Some(cumulative_tangent(Running::Prod, p, t, axis, reverse)?),
        ScanOp::Max => {
            let running = Running::Extremum(ReduceOp::Max, f64::NEG_INFINITY);
            Some(cumulative_tangent(running, p, t, axis, reverse)?)
        }
        ScanOp::Min => {
            let running = Running::Extremum(ReduceOp::Min, f64::INFINITY);
            Some(cumulative_tangent(running, p, t, axis, reverse)?)
        }
    };
    one(y, ty)
}

/// `y` with the reduced axes put back as length-1 axes, broadcast to `x`.
fn broadcast_back(y: &Tensor, x: &Tensor, axes: &[usize]) -> Result<Tensor> {
    let mut kept = x.shape().to_vec();
    for &a in axes {
        kept[a] = 1;
    }
    let y = reshape(y, &kept)?;
    broadcast_to(&y, x.shape())
}

/// Tangent of max/min over `axes`: the tangents at the extreme positions,
/// averaged where several positions tie (as JAX).
fn extremum_tangent(x: &Tensor, t: &Tensor, y: &Tensor, axes: &[usize]) -> Result<Tensor> {
    let yb = broadcast_back(y, x, axes)?;
    let mask = convert(&binary(BinaryOp::Eq, x, &yb)?, x.dtype())?;
    let count = reduce_sum(&mask, axes)?;
    let picked = reduce_sum(&mul(t, &mask)?, axes)?;
    div(&picked, &count)
}

/// Tangent of a product over `axes`: sum_i t_i * prod_{j != i} x_j, with the
/// products of the others computed without dividing (exact with zeros).
fn prod_tangent(x: &Tensor, t: &Tensor, axes: &[usize]) -> Result<Tensor> {
    let n = x.ndim();
    let kept: Vec<usize> = (0..n).filter(|i| !axes.contains(i)).collect();
    let mut perm = kept.clone();
    perm.extend_from_slice(axes);
    let out_shape: Vec<usize> = kept.iter().map(|&i| x.shape()[i]).collect();
    let k: usize = axes.iter().map(|&i| x.shape()[i]).product();
    let mut flat = out_shape.clone();
    flat.push(k);
    let xf = reshape(&transpose(x, &perm)?, &flat)?;
    let tf = reshape(&transpose(t, &perm)?, &flat)?;
    let others = product_of_others(&xf)?;
    reduce_sum(&mul(&tf, &others)?, &[out_shape.len()])
}

/// For each position along the last axis, the product of all other entries.
fn product_of_others(x: &Tensor) -> Result<Tensor> {
    let last = x.ndim() - 1;
    let k = x.shape()[last];
    let cum = |reverse| {
        bind(
            &Prim::Cumulative {
                op: ScanOp::Prod,
                axis: last,
                reverse,
            },
            [x.clone()],
        )
        .map(|mut o| o.swap_remove(0))
    };
    // Exclusive prefix products: shift the inclusive ones by one, padding with 1.
    let shift = |c: &Tensor, from_left: bool| -> Result<Tensor> {
        let n = c.ndim();
        let mut start = vec![0; n];
        let mut limit = c.shape().to_vec();
        let (mut lo, mut hi) = (vec![0; n], vec![0; n]);
        if from_left {
            limit[last] = k.saturating_sub(1);
            lo[last] = 1;
        } else {
            start[last] = k.min(1);
            hi[last] = 1;
        }
        let s = bind(
            &Prim::Slice {
                start,
                limit,
                stride: vec![1; n],
            },
            [c.clone()],
        )?
        .swap_remove(0);
        bind(
            &Prim::Pad {
                lo,
                hi,
                interior: vec![0; n],
            },
            [s, lit(1.0, c)],
        )
        .map(|mut o| o.swap_remove(0))
    };
    let left = shift(&cum(false)?, true)?;
    let right = shift(&cum(true)?, false)?;
    mul(&left, &right)
}

/// What a cumulative product, maximum or minimum keeps: a running product,
/// or a running extremum (the reduction, and the value it starts from).
enum Running {
    Prod,
    Extremum(ReduceOp, f64),
}

/// Tangents of cumulative products, maxima and minima, through their
/// definition as reductions over a triangle: out_i = op_{j <= i} x_j.
fn cumulative_tangent(
    running: Running,
    p: &[Tensor],
    t: &[Option<Tensor>],
    axis: usize,
    reverse: bool,
) -> Result<Tensor> {
    let (x, t) = (&p[0], &instantiate(&t[0], &p[0])?);
    let x = moveaxis(x, axis, x.ndim() - 1)?;
    let t = moveaxis(t, axis, t.ndim() - 1)?;
    let n = x.ndim();
    let k = x.shape()[n - 1];
    // tri[i, j]: position j takes part in output i.
    let i = iota(DType::I32, &[k, k], 0)?;
    let j = iota(DType::I32, &[k, k], 1)?;
    let tri = binary(if reverse { BinaryOp::Ge } else { BinaryOp::Le }, &j, &i)?;
    let mut square = x.shape().to_vec();
    square.push(k);
    // Operand at [..., i, j] = x[..., j].
    let spread = |v: &Tensor| -> Result<Tensor> {
        let dims: Vec<usize> = (0..n - 1).chain([n]).collect();
        bind(
            &Prim::BroadcastInDim {
                shape: square.clone(),
                dims,
            },
            [v.clone()],
        )
        .map(|mut o| o.swap_remove(0))
    };
    let tri = broadcast_to(&tri, &square)?;
    let xs = spread(&x)?;
    let ts = select(&tri, &spread(&t)?, &lit(0.0, &t))?;
    let out = match running {
        Running::Prod => {
            let xs = select(&tri, &xs, &lit(1.0, &x))?;
            prod_tangent(&xs, &ts, &[n])?
        }
        Running::Extremum(red, fill) => {
            let xs = select(&tri, &xs, &lit(fill, &x))?;
            let y = bind(
                &Prim::Reduce {
                    op: red,
                    axes: vec![n],
                },
                [xs.clone()],
            )?
            .swap_remove(0);
            extremum_tangent(&xs, &ts, &y, &[n])?
        }
    };
    moveaxis(&out, n - 1, axis)
}

// ---------------------------------------------------------------------------
// Transpose

pub fn transpose_reduce(
    prim: &Prim,
    op: ReduceOp,
    axes: &[usize],
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    match op {
        ReduceOp::Sum => super::for_linear(ins, |i| {
            let mut kept = ins[i].shape().to_vec();
            for &a in axes {
                kept[a] = 1;
            }
            broadcast_to(&reshape(&ct, &kept)?, ins[i].shape())
        }),
        ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min | ReduceOp::All | ReduceOp::Any => {
            Err(not_linear(prim))
        }
    }
}

pub fn transpose_arg_reduce(prim: &Prim) -> Result<Vec<Option<Tensor>>> {
    Err(not_linear(prim))
}

pub fn transpose_cumulative(
    prim: &Prim,
    op: ScanOp,
    axis: usize,
    reverse: bool,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    match op {
        // A running sum's transpose runs the other way.
        ScanOp::Sum => super::for_linear(ins, |_| {
            bind(
                &Prim::Cumulative {
                    op: ScanOp::Sum,
                    axis,
                    reverse: !reverse,
                },
                [ct.clone()],
            )
            .map(|mut o| o.swap_remove(0))
        }),
        ScanOp::Prod | ScanOp::Max | ScanOp::Min => Err(not_linear(prim)),
    }
}

// ---------------------------------------------------------------------------
// Batching: the batch axis to the front, the axis parameters shifted.

pub fn batch_reduce(
    op: ReduceOp,
    axes: &[usize],
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(
        Prim::Reduce {
            op,
            axes: shift(axes),
        },
        to_front(&v[0], d[0], size)?,
    )
}

pub fn batch_arg_reduce(
    op: ArgReduceOp,
    axis: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(
        Prim::ArgReduce { op, axis: axis + 1 },
        to_front(&v[0], d[0], size)?,
    )
}

pub fn batch_cumulative(
    op: ScanOp,
    axis: usize,
    reverse: bool,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(
        Prim::Cumulative {
            op,
            axis: axis + 1,
            reverse,
        },
        to_front(&v[0], d[0], size)?,
    )
}

// ---------------------------------------------------------------------------
// Partitioning

/// A reduction drops the reduced dimensions from the layout. Over a split
/// dimension, sums, maxima and minima reduce each block and then combine
/// the blocks with an all-reduce; the others gather the dimension first.
pub fn partition_reduce(
    prim: &Prim,
    cx: &Spmd,
    op: ReduceOp,
    axes: &[usize],
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let name = prim.ir_name();
    let (x, s) = ins.into_iter().next().expect("one operand");
    let split: Vec<usize> = axes.iter().flat_map(|&d| s[d].clone()).collect();
    let combinable = match op {
        ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => true,
        ReduceOp::Prod | ReduceOp::All | ReduceOp::Any => false,
    };
    let (x, s) = if !split.is_empty() && !combinable {
        let mut to = s.clone();
        for &d in axes {
            to[d].clear();
        }
        (
            cx.reshard(&x, &s, &to, &format!("{name} over a split dimension"))?,
            to,
        )
    } else {
        (x, s)
    };
    let mut y = bind(prim, [x])?.swap_remove(0);
    let spec: Spec = (0..s.len())
        .filter(|d| !axes.contains(d))
        .map(|d| s[d].clone())
        .collect();
    if combinable {
        for &d in axes {
            for &a in &s[d] {
                y = cx.collective(
                    CollectiveOp::AllReduce(op),
                    a,
                    &y,
                    &format!(
                        "{name} over a dimension split by '{}'",
                        cx.mesh().axis_names[a]
                    ),
                )?;
            }
        }
    }
    Ok(vec![(y, spec)])
}

/// Runs replicated: an arg-reduction over a split dimension would need
/// each block's offset and a combining step it does not have.
pub fn partition_arg_reduce(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

/// Each row along the scanned axis is scanned where it lives (a scan over
/// a split dimension would need the blocks before each one).
pub fn partition_cumulative(
    prim: &Prim,
    axis: usize,
    cx: &Spmd,
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    cx.along_axis(prim, ins, axis)
}
