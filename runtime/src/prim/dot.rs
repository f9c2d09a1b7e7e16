//! `dot_general`, the generalised matrix product (batch and contracting
//! dimensions on each side; XLA's `DotGeneral`), with all its rules:
//! shapes, evaluation, JVP, transpose, batching, partitioning.

use super::{add_opt, bind, device, for_linear, map, one, one_out, one_type, same_dtype, shift};
use super::{ty, Aval, Avals, Outs, Prim};
use crate::error::{Error, Result};
use crate::jit::partition::{Local, Spec, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::Bdims;
use crate::transform::collective::CollectiveOp;
use crate::transform::jvp::Tangents;
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::Backend as _;
use arr_kernels::{Array, DotDims, ReduceOp, Shape};

pub fn shape_dot_general(d: &DotDims, args: &[Aval]) -> Result<Avals> {
    let (a, b) = (&args[0], &args[1]);
    let dtype = same_dtype("dot", args)?;
    let bad = || Error::shape_error(format!("dot: incompatible shapes {} and {}", ty(a), ty(b)));
    for (&i, &j) in d
        .lhs_batch
        .iter()
        .zip(&d.rhs_batch)
        .chain(d.lhs_contract.iter().zip(&d.rhs_contract))
    {
        if i >= a.shape.len() || j >= b.shape.len() || a.shape[i] != b.shape[j] {
            return Err(bad());
        }
    }
    if d.lhs_batch.len() != d.rhs_batch.len() || d.lhs_contract.len() != d.rhs_contract.len() {
        return Err(bad());
    }
    let mut shape: Shape = d.lhs_batch.iter().map(|&i| a.shape[i]).collect();
    let free = |s: &Shape, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..s.len())
            .filter(|i| !batch.contains(i) && !contract.contains(i))
            .map(|i| s[i])
            .collect()
    };
    shape.extend(free(&a.shape, &d.lhs_batch, &d.lhs_contract));
    shape.extend(free(&b.shape, &d.rhs_batch, &d.rhs_contract));
    one_type(shape, dtype)
}

pub fn eval_dot_general(d: &DotDims, args: &[Array]) -> Result<Outs> {
    one_out(device(args).dot_general(&args[0], &args[1], d))
}

/// Bilinear: each operand's tangent times the other operand.
pub fn jvp_dot_general(
    prim: &Prim,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let da = map(&t[0], |t| {
        bind(prim, [t.clone(), p[1].clone()]).map(|mut o| o.swap_remove(0))
    })?;
    let db = map(&t[1], |t| {
        bind(prim, [p[0].clone(), t.clone()]).map(|mut o| o.swap_remove(0))
    })?;
    one(y, add_opt(da, db)?)
}

/// Linear in one operand (the other is known): the cotangent contracted
/// with the known operand, its axes put back in the linear operand's order.
pub fn transpose_dot_general(
    d: &DotDims,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    for_linear(ins, |i| {
        let shape = ins[i].shape();
        let (other, mine_batch, mine_contract, other_batch, other_contract) = if i == 0 {
            (
                ins[1].known()?,
                &d.lhs_batch,
                &d.lhs_contract,
                &d.rhs_batch,
                &d.rhs_contract,
            )
        } else {
            (
                ins[0].known()?,
                &d.rhs_batch,
                &d.rhs_contract,
                &d.lhs_batch,
                &d.lhs_contract,
            )
        };
        let free = |n: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
            (0..n)
                .filter(|a| !batch.contains(a) && !contract.contains(a))
                .collect()
        };
        let nb = d.lhs_batch.len();
        let lhs_free = free(
            if i == 0 { shape.len() } else { other.ndim() },
            &d.lhs_batch,
            &d.lhs_contract,
        );
        let mine_free = free(shape.len(), mine_batch, mine_contract);
        let other_free = free(other.ndim(), other_batch, other_contract);
        // ct's axes: batch, lhs free, rhs free. Contract ct's "other free"
        // axes with the other operand's free axes.
        let ct_other_free: Vec<usize> = if i == 0 {
            (nb + lhs_free.len()..ct.ndim()).collect()
        } else {
            (nb..nb + lhs_free.len()).collect()
        };
        let dims = DotDims {
            lhs_batch: (0..nb).collect(),
            rhs_batch: other_batch.clone(),
            lhs_contract: ct_other_free,
            rhs_contract: other_free,
        };
        let r = bind(&Prim::DotGeneral(dims), [ct.clone(), other.clone()])?.swap_remove(0);
        // r's axes: batch, my free axes, then the other's remaining (its
        // contracted) axes in increasing order, each paired with one of mine.
        let mut pairs: Vec<(usize, usize)> = other_contract
            .iter()
            .zip(mine_contract)
            .map(|(&o, &m)| (o, m))
            .collect();
        pairs.sort();
        let mut src: Vec<usize> = mine_batch.clone();
        src.extend(&mine_free);
        src.extend(pairs.iter().map(|&(_, m)| m));
        let perm: Vec<usize> = (0..shape.len())
            .map(|ax| src.iter().position(|&s| s == ax).expect("every axis"))
            .collect();
        transpose(&r, &perm)
    })
}

/// Both batched: a new leading batch dimension on each side. One batched:
/// its batch axis becomes a free axis, found in the output where that
/// side's free axes are.
pub fn batch_dot_general(
    dims: &DotDims,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
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
        (None, None) => unreachable!("the batching trace binds unbatched operands directly"),
    }
}

/// Batch dimensions follow one operand's layout (the lhs's, or the rhs's
/// where moving the lhs sends fewer bytes: experts' weights split over an
/// axis pull the tokens to them with one all-to-all rather than be
/// gathered); free dimensions keep theirs; a contracting dimension split
/// alike on both sides is summed per device and then all-reduced (row
/// parallel), one split differently is gathered.
pub fn partition_dot_general(
    prim: &Prim,
    cx: &Spmd,
    dd: &DotDims,
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let mut it = ins.into_iter();
    let ((a, sa), (b, sb)) = (it.next().expect("lhs"), it.next().expect("rhs"));
    let cost = |l: &DotLayout| {
        let bytes = |t: &Tensor| t.shape().iter().product::<usize>() * t.dtype().size_bytes();
        // The all-reduces of the result (about the size of the larger operand's block).
        let sum: usize = l
            .summed
            .iter()
            .map(|&m| 2 * bytes(&a).max(bytes(&b)) * (cx.mesh().shape[m] - 1) / cx.mesh().shape[m])
            .sum();
        cx.reshard_bytes(&a, &sa, &l.lhs) + cx.reshard_bytes(&b, &sb, &l.rhs) + sum
    };
    // The candidates, the usual one first (it wins ties).
    let mut l = dot_layout(dd, &sa, &sb, true, false);
    let mut best = cost(&l);
    let rhs_batch_split = dd.rhs_batch.iter().any(|&r| !sb[r].is_empty());
    for (by_lhs, rhs_free_wins) in [(true, true), (false, false), (false, true)] {
        if !by_lhs && !rhs_batch_split {
            continue;
        }
        let other = dot_layout(dd, &sa, &sb, by_lhs, rhs_free_wins);
        let c = cost(&other);
        if c < best {
            (l, best) = (other, c);
        }
    }
    let a = cx.reshard(&a, &sa, &l.lhs, "dot: operands laid out differently")?;
    let b = cx.reshard(&b, &sb, &l.rhs, "dot: operands laid out differently")?;
    let mut y = bind(prim, [a, b])?.swap_remove(0);
    for &ax in &l.summed {
        y = cx.collective(
            CollectiveOp::AllReduce(ReduceOp::Sum),
            ax,
            &y,
            &format!(
                "dot: partial sums over the contracting dimension split by '{}'",
                cx.mesh().axis_names[ax]
            ),
        )?;
    }
    Ok(vec![(y, l.out)])
}

/// The layouts a product runs in: its operands', the mesh axes its
/// result is summed over, and the result's.
struct DotLayout {
    lhs: Spec,
    rhs: Spec,
    summed: Vec<usize>,
    out: Spec,
}

/// `partition_dot_general`'s layouts when the batch dimensions follow the
/// lhs (`by_lhs`) or the rhs, and where a mesh axis splits a free
/// dimension of each side, when the rhs's keeps it (`rhs_free_wins`: the
/// lhs is gathered, as sequence parallelism gathers the tokens for a
/// column-parallel weight) or the lhs's.
fn dot_layout(dd: &DotDims, sa: &Spec, sb: &Spec, by_lhs: bool, rhs_free_wins: bool) -> DotLayout {
    let (mut ta, mut tb) = (sa.clone(), sb.clone());
    for (&l, &r) in dd.lhs_batch.iter().zip(&dd.rhs_batch) {
        if by_lhs {
            tb[r] = ta[l].clone();
        } else {
            ta[l] = tb[r].clone();
        }
    }
    if !by_lhs {
        // The lhs's other dimensions give up the axes its batch now uses.
        let batch: Vec<usize> = dd.lhs_batch.iter().flat_map(|&d| ta[d].clone()).collect();
        for d in (0..ta.len()).filter(|d| !dd.lhs_batch.contains(d)) {
            ta[d].retain(|m| !batch.contains(m));
        }
    }
    let mut summed: Vec<usize> = Vec::new();
    for (&l, &r) in dd.lhs_contract.iter().zip(&dd.rhs_contract) {
        if ta[l] == tb[r] {
            summed.extend(ta[l].iter().copied());
        } else {
            ta[l].clear();
            tb[r].clear();
        }
    }
    let free = |rank: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|d| !batch.contains(d) && !contract.contains(d))
            .collect()
    };
    let lfree = free(sa.len(), &dd.lhs_batch, &dd.lhs_contract);
    let rfree = free(sb.len(), &dd.rhs_batch, &dd.rhs_contract);
    // A mesh axis may split only one dimension of the result (and
    // of the rhs, whose batch layout was just changed).
    let axes = |t: &Spec, dims: &[usize]| -> Vec<usize> {
        dims.iter().flat_map(|&d| t[d].clone()).collect::<Vec<_>>()
    };
    let mut used: Vec<usize> = axes(&ta, &dd.lhs_batch);
    used.extend(summed.iter().copied());
    if rhs_free_wins {
        for &d in &rfree {
            if tb[d].iter().any(|x| used.contains(x)) {
                tb[d].clear();
            }
        }
        let by_rhs_free = axes(&tb, &rfree);
        for &d in &lfree {
            if ta[d].iter().any(|x| by_rhs_free.contains(x)) {
                ta[d].clear();
            }
        }
    } else {
        used.extend(axes(&ta, &lfree));
        for &d in &rfree {
            if tb[d].iter().any(|x| used.contains(x)) {
                tb[d].clear();
            }
        }
    }
    let out: Spec = dd
        .lhs_batch
        .iter()
        .chain(&lfree)
        .map(|&d| ta[d].clone())
        .chain(rfree.iter().map(|&d| tb[d].clone()))
        .collect();
    DotLayout {
        lhs: ta,
        rhs: tb,
        summed,
        out,
    }
}
