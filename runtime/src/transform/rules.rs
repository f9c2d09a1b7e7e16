//! The rules of every primitive under each transformation, in one place:
//! JVP (forward mode), transpose (reverse mode, linear primitives only) and
//! batching (`vmap`). With `prim.rs` (shape and eval), this is all a new
//! primitive needs; each `match` is exhaustive, so a missing rule is a
//! compile error, and a primitive without meaning in an interpretation says
//! so with an explicit error.
//!
//! Every rule is ordinary tensor code over `bind`, so rules are themselves
//! traced, differentiated and batched when transformations nest. JVP rules
//! are linear in the tangents, with coefficients from the primals: that is
//! what lets `linear` record the tangent work and transpose it.

use super::batch::{to_front, Bdims};
use super::jvp::{instantiate, Tangents};
use super::linear::LinIn;
use super::ops::*;
use crate::error::{Error, ErrorKind, Result};
use crate::prim::{bind, bind1, Outs, Prim};
use crate::tensor::Tensor;
use arr_kernels::{BinaryOp, DType, DotDims, ReduceOp, ScanOp, ScatterMode, UnaryOp};
use smallvec::smallvec;

/// Fused kernels are made after every transformation has run (by `jit`'s
/// fusion pass), so no rule ever sees one.
fn fused_error() -> Error {
    Error::new(
        ErrorKind::TransformError,
        "a fused kernel cannot be transformed: transformations apply before fusion",
    )
}

// ===========================================================================
// JVP rules

fn one(p: Tensor, t: Option<Tensor>) -> Result<(Outs, Tangents)> {
    Ok((smallvec![p], vec![t]))
}

fn map(t: &Option<Tensor>, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Option<Tensor>> {
    t.as_ref().map(f).transpose()
}

fn add_opt(a: Option<Tensor>, b: Option<Tensor>) -> Result<Option<Tensor>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(add(&a, &b)?),
        (a, None) => a,
        (None, b) => b,
    })
}

/// The tangent `t` of an operand, broadcast to the output's shape.
fn expand(t: Option<Tensor>, shape: &[usize]) -> Result<Option<Tensor>> {
    map(&t, |t| broadcast_to(t, shape))
}

/// The JVP rule of each primitive.
pub fn jvp_rule(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let out = |args: &[Tensor]| bind(prim, args.to_vec());
    match prim {
        Prim::Unary(op) => {
            let x = &p[0];
            let y = out(p)?.swap_remove(0);
            let tx = &t[0];
            let u = |op| unary(op, x);
            let ty = match op {
                UnaryOp::Neg => map(tx, neg)?,
                UnaryOp::Abs => {
                    let s = u(UnaryOp::Sign)?;
                    map(tx, |t| mul(t, &s))?
                }
                UnaryOp::Sign
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
                | UnaryOp::Not
                | UnaryOp::IsFinite
                | UnaryOp::IsNan => None,
                UnaryOp::Exp => map(tx, |t| mul(t, &y))?,
                UnaryOp::Expm1 => {
                    let d = add(&y, &lit(1.0, &y))?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Log => map(tx, |t| div(t, x))?,
                UnaryOp::Log1p => {
                    let d = add(x, &lit(1.0, x))?;
                    map(tx, |t| div(t, &d))?
                }
                UnaryOp::Sqrt => {
                    let d = mul_scalar(&y, 2.0)?;
                    map(tx, |t| div(t, &d))?
                }
                UnaryOp::Rsqrt => {
                    let d = mul_scalar(&div(&y, x)?, -0.5)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Sin => {
                    let d = u(UnaryOp::Cos)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Cos => {
                    let d = neg(&u(UnaryOp::Sin)?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Tan => {
                    let d = add(&lit(1.0, &y), &mul(&y, &y)?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Asin | UnaryOp::Acos => {
                    let one_minus = sub(&lit(1.0, x), &mul(x, x)?)?;
                    let mut d = unary(UnaryOp::Rsqrt, &one_minus)?;
                    if *op == UnaryOp::Acos {
                        d = neg(&d)?;
                    }
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Atan => {
                    let d = add(&lit(1.0, x), &mul(x, x)?)?;
                    map(tx, |t| div(t, &d))?
                }
                UnaryOp::Sinh => {
                    let d = u(UnaryOp::Cosh)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Cosh => {
                    let d = u(UnaryOp::Sinh)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Tanh => {
                    let d = sub(&lit(1.0, &y), &mul(&y, &y)?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Asinh => {
                    let d = unary(UnaryOp::Rsqrt, &add(&mul(x, x)?, &lit(1.0, x))?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Acosh => {
                    let d = unary(UnaryOp::Rsqrt, &sub(&mul(x, x)?, &lit(1.0, x))?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Atanh => {
                    let d = sub(&lit(1.0, x), &mul(x, x)?)?;
                    map(tx, |t| div(t, &d))?
                }
                UnaryOp::Logistic => {
                    let d = mul(&y, &sub(&lit(1.0, &y), &y)?)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::Erf => {
                    let k = 2.0 / std::f64::consts::PI.sqrt();
                    let d = mul_scalar(&unary(UnaryOp::Exp, &neg(&mul(x, x)?)?)?, k)?;
                    map(tx, |t| mul(t, &d))?
                }
                UnaryOp::ErfInv => {
                    let k = std::f64::consts::PI.sqrt() / 2.0;
                    let d = mul_scalar(&unary(UnaryOp::Exp, &mul(&y, &y)?)?, k)?;
                    map(tx, |t| mul(t, &d))?
                }
            };
            one(y, ty)
        }
        Prim::Binary(op) => {
            let (a, b) = (&p[0], &p[1]);
            let y = out(p)?.swap_remove(0);
            if !y.dtype().is_float() {
                return one(y, None);
            }
            let shape = y.shape().to_vec();
            let (ta, tb) = (&t[0], &t[1]);
            let ty = match op {
                BinaryOp::Add => add_opt(expand(ta.clone(), &shape)?, expand(tb.clone(), &shape)?)?,
                BinaryOp::Sub => {
                    add_opt(expand(ta.clone(), &shape)?, expand(map(tb, neg)?, &shape)?)?
                }
                BinaryOp::Mul => add_opt(
                    expand(map(ta, |t| mul(t, b))?, &shape)?,
                    expand(map(tb, |t| mul(a, t))?, &shape)?,
                )?,
                BinaryOp::Div => {
                    // d(a/b) = ta/b - tb*(a/b)/b
                    let da = map(ta, |t| div(t, b))?;
                    let db = match tb {
                        Some(t) => {
                            let k = neg(&div(&y, b)?)?;
                            Some(mul(t, &k)?)
                        }
                        None => None,
                    };
                    add_opt(expand(da, &shape)?, expand(db, &shape)?)?
                }
                BinaryOp::Pow => {
                    let da = match ta {
                        Some(t) => {
                            // b * a^(b-1), and 0 where b == 0 (as JAX). A
                            // constant exponent (x ** 2) needs no select, and
                            // x ** 2 differentiates to a product, not a power.
                            let exponent = b.as_concrete().filter(|c| c.len() == 1);
                            let k = match exponent.map(|c| c.get_f64(0)).transpose()? {
                                Some(2.0) => mul_scalar(a, 2.0)?,
                                Some(1.0) => ones_like(a)?,
                                Some(c) if c != 0.0 => {
                                    let bm1 = sub(b, &lit(1.0, b))?;
                                    mul(b, &binary(BinaryOp::Pow, a, &bm1)?)?
                                }
                                _ => {
                                    let bm1 = sub(b, &lit(1.0, b))?;
                                    let k = mul(b, &binary(BinaryOp::Pow, a, &bm1)?)?;
                                    let b0 = binary(BinaryOp::Eq, b, &lit(0.0, b))?;
                                    select(&b0, &lit(0.0, &k), &k)?
                                }
                            };
                            Some(mul(t, &k)?)
                        }
                        None => None,
                    };
                    let db = match tb {
                        Some(t) => {
                            // log(a) * a^b, with log(0) read as 0 (a^b is 0 there).
                            let a0 = binary(BinaryOp::Eq, a, &lit(0.0, a))?;
                            let safe = select(&a0, &lit(1.0, a), a)?;
                            let k = mul(&unary(UnaryOp::Log, &safe)?, &y)?;
                            Some(mul(t, &k)?)
                        }
                        None => None,
                    };
                    add_opt(expand(da, &shape)?, expand(db, &shape)?)?
                }
                BinaryOp::Max | BinaryOp::Min => {
                    // Where the operands tie, each gets half (JAX's choice).
                    let cmp = if *op == BinaryOp::Max {
                        BinaryOp::Gt
                    } else {
                        BinaryOp::Lt
                    };
                    let wins = convert(&binary(cmp, a, b)?, y.dtype())?;
                    let ties = convert(&binary(BinaryOp::Eq, a, b)?, y.dtype())?;
                    let half = mul_scalar(&ties, 0.5)?;
                    let wa = add(&wins, &half)?;
                    let wb = sub(&sub(&lit(1.0, &wa), &wins)?, &ties)?;
                    let wb = add(&wb, &half)?;
                    add_opt(
                        expand(map(ta, |t| mul(t, &wa))?, &shape)?,
                        expand(map(tb, |t| mul(t, &wb))?, &shape)?,
                    )?
                }
                BinaryOp::Atan2 => {
                    let den = add(&mul(a, a)?, &mul(b, b)?)?;
                    let da = map(ta, |t| mul(t, &div(b, &den)?))?;
                    let db = map(tb, |t| mul(t, &neg(&div(a, &den)?)?))?;
                    add_opt(expand(da, &shape)?, expand(db, &shape)?)?
                }
                BinaryOp::Mod => {
                    // a mod b = a - floor(a/b) * b
                    let q = unary(UnaryOp::Floor, &div(a, b)?)?;
                    let db = map(tb, |t| mul(t, &neg(&q)?))?;
                    add_opt(expand(ta.clone(), &shape)?, expand(db, &shape)?)?
                }
                BinaryOp::FloorDiv => None,
                BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRight
                | BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge => None,
            };
            one(y, ty)
        }
        Prim::Select => {
            let y = out(p)?.swap_remove(0);
            if !y.dtype().is_float() {
                return one(y, None);
            }
            let ta = instantiate(&t[1], &p[1])?;
            let tb = instantiate(&t[2], &p[2])?;
            let ty = select(&p[0], &ta, &tb)?;
            let ty = broadcast_to(&ty, y.shape())?;
            one(y, Some(ty))
        }
        Prim::Convert(d) => {
            let y = out(p)?.swap_remove(0);
            let ty = if d.is_float() && p[0].dtype().is_float() {
                map(&t[0], |t| convert(t, *d))?
            } else {
                None
            };
            one(y, ty)
        }
        Prim::Reduce { op, axes } => {
            let y = out(p)?.swap_remove(0);
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
                ReduceOp::All | ReduceOp::Any => None,
            };
            one(y, ty)
        }
        Prim::ArgReduce { .. } | Prim::Argsort { .. } | Prim::Iota { .. } | Prim::Threefry2x32 => {
            Ok((out(p)?, vec![None; prim.shape_rule(&avals(p))?.len()]))
        }
        Prim::Cumulative { op, axis, reverse } => {
            let y = out(p)?.swap_remove(0);
            let ty = match op {
                ScanOp::Sum => map(&t[0], |t| {
                    bind(prim, [t.clone()]).map(|mut o| o.swap_remove(0))
                })?,
                _ => {
                    let t = instantiate(&t[0], &p[0])?;
                    Some(cumulative_tangent(*op, &p[0], &t, *axis, *reverse)?)
                }
            };
            one(y, ty)
        }
        Prim::DotGeneral(_) => {
            let y = out(p)?.swap_remove(0);
            let da = map(&t[0], |t| {
                bind(prim, [t.clone(), p[1].clone()]).map(|mut o| o.swap_remove(0))
            })?;
            let db = map(&t[1], |t| {
                bind(prim, [p[0].clone(), t.clone()]).map(|mut o| o.swap_remove(0))
            })?;
            one(y, add_opt(da, db)?)
        }
        // Linear in their one array operand: the tangent goes through the same primitive.
        Prim::Transpose(_)
        | Prim::BroadcastInDim { .. }
        | Prim::Reshape(_)
        | Prim::Slice { .. }
        | Prim::Rev(_) => {
            let y = out(p)?.swap_remove(0);
            let ty = map(&t[0], |t| {
                bind(prim, [t.clone()]).map(|mut o| o.swap_remove(0))
            })?;
            one(y, ty)
        }
        Prim::Gather { .. } => {
            let y = out(p)?.swap_remove(0);
            let ty = map(&t[0], |t| {
                bind(prim, [t.clone(), p[1].clone()]).map(|mut o| o.swap_remove(0))
            })?;
            one(y, ty)
        }
        Prim::Pad { .. } => {
            let y = out(p)?.swap_remove(0);
            let tx = instantiate(&t[0], &p[0])?;
            let tv = instantiate(&t[1], &p[1])?;
            one(y, Some(bind(prim, [tx, tv])?.swap_remove(0)))
        }
        Prim::Concatenate { .. } => {
            let y = out(p)?.swap_remove(0);
            let ts = p
                .iter()
                .zip(t)
                .map(|(p, t)| instantiate(t, p))
                .collect::<Result<Vec<_>>>()?;
            one(y, Some(bind(prim, ts)?.swap_remove(0)))
        }
        Prim::Scatter { .. } => {
            let y = out(p)?.swap_remove(0);
            if !y.dtype().is_float() {
                return one(y, None);
            }
            let ta = instantiate(&t[0], &p[0])?;
            let tu = instantiate(&t[2], &p[2])?;
            // Set and add alike: the tangent is scattered the same way.
            let ty = bind(prim, [ta, p[1].clone(), tu])?.swap_remove(0);
            one(y, Some(ty))
        }
        Prim::Sort { axis } => {
            let perm = bind(&Prim::Argsort { axis: *axis }, [p[0].clone()])?.swap_remove(0);
            let y = out(p)?.swap_remove(0);
            let ty = map(&t[0], |t| take_along_axis(t, &perm, *axis))?;
            one(y, ty)
        }
        Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. } => {
            super::control::jvp(prim, p, t)
        }
        Prim::Collective(c) => super::collective::jvp(prim, c, p, t),
        // The identity, laid out: its tangent is laid out the same way.
        Prim::ShardingConstraint(_) => {
            let y = out(p)?.swap_remove(0);
            let ty = map(&t[0], |t| Ok(bind(prim, [t.clone()])?.swap_remove(0)))?;
            one(y, ty)
        }
        Prim::Fused(_) | Prim::FusedMatmul(_) => Err(fused_error()),
    }
}

fn avals(p: &[Tensor]) -> Vec<crate::prim::Aval> {
    p.iter().map(Tensor::aval).collect()
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

/// Tangents of cumulative products, maxima and minima, through their
/// definition as reductions over a triangle: out_i = op_{j <= i} x_j.
fn cumulative_tangent(
    op: ScanOp,
    x: &Tensor,
    t: &Tensor,
    axis: usize,
    reverse: bool,
) -> Result<Tensor> {
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
    let out = match op {
        ScanOp::Prod => {
            let xs = select(&tri, &xs, &lit(1.0, &x))?;
            prod_tangent(&xs, &ts, &[n])?
        }
        ScanOp::Max | ScanOp::Min => {
            let fill = if op == ScanOp::Max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            let xs = select(&tri, &xs, &lit(fill, &x))?;
            let red = if op == ScanOp::Max {
                ReduceOp::Max
            } else {
                ReduceOp::Min
            };
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
        ScanOp::Sum => unreachable!("cumsum is linear"),
    };
    moveaxis(&out, n - 1, axis)
}

/// `take_along_axis(t, idx, axis)`: out[..., i, ...] = t[..., idx[..., i, ...], ...].
pub fn take_along_axis(t: &Tensor, idx: &Tensor, axis: usize) -> Result<Tensor> {
    let n = t.ndim();
    let last = n - 1;
    let tm = moveaxis(t, axis, last)?;
    let im = moveaxis(idx, axis, last)?;
    let k = tm.shape()[last];
    let rows: usize = tm.shape()[..last].iter().product();
    let flat_t = reshape(&tm, &[rows * k])?;
    let im = convert(&im, DType::I32)?;
    let mut row_shape = im.shape().to_vec();
    row_shape[last] = 1;
    let row = reshape(&iota(DType::I32, &[rows], 0)?, &row_shape)?;
    let flat_i = add(&mul(&row, &scalar(k as f64, DType::I32))?, &im)?;
    let g = bind(&Prim::Gather { axis: 0 }, [flat_t, flat_i])?.swap_remove(0);
    moveaxis(&g, last, axis)
}

// ===========================================================================
// Transpose rules

fn not_linear(prim: &Prim) -> Error {
    Error::new(
        ErrorKind::TransformError,
        format!(
            "reverse-mode differentiation: no transpose rule for {} applied to a tangent",
            prim.ir_name()
        ),
    )
}

impl LinIn {
    fn shape(&self) -> &[usize] {
        match self {
            LinIn::Linear(a) => &a.shape,
            LinIn::Known(t) => t.shape(),
        }
    }

    fn is_linear(&self) -> bool {
        matches!(self, LinIn::Linear(_))
    }

    fn known(&self) -> Result<&Tensor> {
        match self {
            LinIn::Known(t) => Ok(t),
            LinIn::Linear(_) => Err(Error::new(
                ErrorKind::TransformError,
                "reverse-mode differentiation: a product of two tangents is not linear",
            )),
        }
    }
}

/// The cotangent for each linear input, `None` for known ones.
fn for_linear(
    ins: &[LinIn],
    mut f: impl FnMut(usize) -> Result<Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    (0..ins.len())
        .map(|i| {
            if ins[i].is_linear() {
                f(i).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect()
}

/// The transpose rule of each linear primitive.
pub fn transpose_rule(
    prim: &Prim,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    if let Prim::Cond { .. } | Prim::While { .. } | Prim::Scan { .. } | Prim::CustomVjp { .. } =
        prim
    {
        return super::control::transpose(prim, cts, ins);
    }
    if let Prim::Collective(c) = prim {
        let linear: Vec<bool> = ins.iter().map(LinIn::is_linear).collect();
        return super::collective::transpose_all(c, cts, &linear);
    }
    let ct = cts[0].clone().expect("a cotangent");
    let one_op = |p: Prim, x: Tensor| bind(&p, [x]).map(|mut o| o.swap_remove(0));
    match prim {
        Prim::Unary(UnaryOp::Neg) => for_linear(ins, |_| neg(&ct)),
        Prim::Binary(op) => match op {
            BinaryOp::Add => for_linear(ins, |i| unbroadcast(&ct, ins[i].shape())),
            BinaryOp::Sub => for_linear(ins, |i| {
                let c = if i == 0 { ct.clone() } else { neg(&ct)? };
                unbroadcast(&c, ins[i].shape())
            }),
            BinaryOp::Mul => for_linear(ins, |i| {
                let other = ins[1 - i].known()?;
                unbroadcast(&mul(&ct, other)?, ins[i].shape())
            }),
            BinaryOp::Div if !ins[1].is_linear() => for_linear(ins, |i| {
                unbroadcast(&div(&ct, ins[1].known()?)?, ins[i].shape())
            }),
            _ => Err(not_linear(prim)),
        },
        Prim::Select => {
            let c = ins[0].known()?;
            let zero = lit(0.0, &ct);
            for_linear(ins, |i| {
                let picked = if i == 1 {
                    select(c, &ct, &zero)?
                } else {
                    select(c, &zero, &ct)?
                };
                unbroadcast(&broadcast_to(&picked, ct.shape())?, ins[i].shape())
            })
        }
        Prim::Convert(_) => for_linear(ins, |i| match &ins[i] {
            LinIn::Linear(a) => convert(&ct, a.dtype),
            LinIn::Known(_) => unreachable!(),
        }),
        Prim::Reduce {
            op: arr_kernels::ReduceOp::Sum,
            axes,
        } => for_linear(ins, |i| {
            let mut kept = ins[i].shape().to_vec();
            for &a in axes {
                kept[a] = 1;
            }
            broadcast_to(&reshape(&ct, &kept)?, ins[i].shape())
        }),
        Prim::Cumulative {
            op: ScanOp::Sum,
            axis,
            reverse,
        } => for_linear(ins, |_| {
            one_op(
                Prim::Cumulative {
                    op: ScanOp::Sum,
                    axis: *axis,
                    reverse: !reverse,
                },
                ct.clone(),
            )
        }),
        Prim::DotGeneral(d) => for_linear(ins, |i| {
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
            let dims = arr_kernels::DotDims {
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
        }),
        Prim::Collective(_) => unreachable!("transposed above"),
        Prim::ShardingConstraint(_) => for_linear(ins, |_| one_op(prim.clone(), ct.clone())),
        Prim::Transpose(perm) => for_linear(ins, |_| {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            transpose(&ct, &inv)
        }),
        Prim::BroadcastInDim { shape, dims } => for_linear(ins, |i| {
            let in_shape = ins[i].shape();
            let axes: Vec<usize> = (0..shape.len())
                .filter(|a| match dims.iter().position(|d| d == a) {
                    None => true,
                    Some(k) => in_shape[k] == 1 && shape[*a] != 1,
                })
                .collect();
            reshape(&reduce_sum(&ct, &axes)?, in_shape)
        }),
        Prim::Reshape(_) => for_linear(ins, |i| reshape(&ct, ins[i].shape())),
        Prim::Slice { start, stride, .. } => for_linear(ins, |i| {
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
                    lo: start.clone(),
                    hi,
                    interior,
                },
                [ct.clone(), lit(0.0, &ct)],
            )
            .map(|mut o| o.swap_remove(0))
        }),
        Prim::Rev(axes) => for_linear(ins, |_| one_op(Prim::Rev(axes.clone()), ct.clone())),
        Prim::Pad { lo, interior, .. } => {
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
                        start: lo.clone(),
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
        Prim::Concatenate { axis } => {
            let mut offset = 0;
            let mut out = Vec::new();
            for a in ins {
                let shape = a.shape();
                if a.is_linear() {
                    let mut start = vec![0; shape.len()];
                    let mut limit = ct.shape().to_vec();
                    start[*axis] = offset;
                    limit[*axis] = offset + shape[*axis];
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
                offset += shape[*axis];
            }
            Ok(out)
        }
        Prim::Gather { axis } => {
            let idx = ins[1].known()?;
            for_linear(ins, |i| {
                let shape = ins[i].shape();
                // Gather clamps its indices, and scatter drops those out of
                // range: clamp them here, so each cotangent goes back to the
                // element that was read.
                let idx = clamp_indices(idx, shape[*axis])?;
                let z = zeros(shape, ct.dtype())?;
                bind(
                    &Prim::Scatter {
                        axis: *axis,
                        mode: ScatterMode::Add,
                    },
                    [z, idx, ct.clone()],
                )
                .map(|mut o| o.swap_remove(0))
            })
        }
        Prim::Scatter { axis, mode } => {
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
                    let n = ins[0].shape()[*axis];
                    let kept = scatter_kept(idx, n, *mode)?;
                    let upd_shape = ins[2].shape();
                    let kept = bind(
                        &Prim::BroadcastInDim {
                            shape: upd_shape.to_vec(),
                            dims: (*axis..*axis + idx.ndim()).collect(),
                        },
                        [kept],
                    )?
                    .swap_remove(0);
                    let g = bind(&Prim::Gather { axis: *axis }, [ct.clone(), idx.clone()])?
                        .swap_remove(0);
                    select(&kept, &g, &lit(0.0, &g))
                }
            })
        }
        _ => Err(not_linear(prim)),
    }
}

/// Indices limited to `0..n`, as gather reads them.
fn clamp_indices(idx: &Tensor, n: usize) -> Result<Tensor> {
    let lo = scalar(0.0, idx.dtype());
    let hi = scalar(n.saturating_sub(1) as f64, idx.dtype());
    binary(BinaryOp::Min, &binary(BinaryOp::Max, idx, &lo)?, &hi)
}

/// Which entries of `idx` a scatter into an axis of length `n` writes: those
/// in range, and with `Set` only the last of each repeated index (a scatter
/// of the update positions finds the one that wins).
fn scatter_kept(idx: &Tensor, n: usize, mode: ScatterMode) -> Result<Tensor> {
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
            let none = full(&[n], -1.0, DType::I32)?;
            let winner = bind(
                &Prim::Scatter {
                    axis: 0,
                    mode: ScatterMode::Set,
                },
                [none, idx.clone(), pos.clone()],
            )?
            .swap_remove(0);
            let read = bind(&Prim::Gather { axis: 0 }, [winner, idx.clone()])?.swap_remove(0);
            binary(
                BinaryOp::And,
                &in_range,
                &binary(BinaryOp::Eq, &read, &pos)?,
            )
        }
    }
}

// ===========================================================================
// Batching rules

fn shift(axes: &[usize]) -> Vec<usize> {
    axes.iter().map(|a| a + 1).collect()
}

/// The batching rule of each primitive.
pub fn batch_rule(
    prim: &Prim,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
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
        // A vmap over another axis name (its own name is handled in batch.rs).
        Prim::Collective(c) => super::collective::batch_other(c, size, v, d),
        // The batch axis (to the front) is not split.
        Prim::ShardingConstraint(p) => {
            let mut spec = vec![Vec::new()];
            spec.extend(p.spec.iter().cloned());
            let q = arr_kernels::sharding::Placement::new(p.mesh.clone(), spec, p.spec.len() + 1)
                .map_err(Error::value_error)?;
            single(Prim::ShardingConstraint(std::sync::Arc::new(q)), front(0)?)
        }
        Prim::Fused(_) | Prim::FusedMatmul(_) => Err(fused_error()),
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
