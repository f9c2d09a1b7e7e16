//! Forward mode: the JVP trace and one rule per primitive.
//!
//! A rule receives the primal operands and their tangents (`None` is a
//! symbolic zero) and returns the primal outputs and their tangents. Every
//! tangent a rule builds is linear in the input tangents, with coefficients
//! computed from the primals: this is what lets `linear` record the tangent
//! work as a graph and transpose it.

use super::ops::*;
use super::{owned_by, push, TraceKind};
use crate::error::Result;
use crate::prim::{bind, Args, Outs, Prim};
use crate::tensor::{Tensor, Tracer, TracerKind};
use arr_kernels::{BinaryOp, DType, ReduceOp, ScanOp, UnaryOp};
use smallvec::smallvec;
use std::rc::Rc;

/// Tangents: `None` is a zero of the matching primal's type.
pub type Tangents = Vec<Option<Tensor>>;

pub fn process(level: usize, id: u64, prim: &Prim, args: Args) -> Result<Outs> {
    let mut primals = Vec::with_capacity(args.len());
    let mut tangents = Vec::with_capacity(args.len());
    for a in args {
        let (p, t) = split(&a, level);
        primals.push(p);
        tangents.push(t);
    }
    if tangents.iter().all(Option::is_none) {
        return bind(prim, primals);
    }
    let (outs, touts) = rule(prim, &primals, &tangents)?;
    Ok(outs
        .into_iter()
        .zip(touts)
        .map(|(p, t)| wrap(level, id, p, t))
        .collect())
}

/// The (primal, tangent) of a value as seen by the JVP trace at `level`.
pub fn split(a: &Tensor, level: usize) -> (Tensor, Option<Tensor>) {
    if owned_by(a, level) {
        if let Tensor::Traced(t) = a {
            if let TracerKind::Jvp { primal, tangent } = &t.kind {
                return (primal.clone(), tangent.clone());
            }
        }
    }
    (a.clone(), None)
}

/// A JVP tracer, or the primal itself when the tangent is zero or the
/// value is not a float (integers have no tangents).
pub fn wrap(level: usize, id: u64, primal: Tensor, tangent: Option<Tensor>) -> Tensor {
    match tangent {
        Some(t) if primal.dtype().is_float() => Tensor::Traced(Rc::new(Tracer {
            level,
            trace_id: id,
            aval: primal.aval(),
            kind: TracerKind::Jvp {
                primal,
                tangent: Some(t),
            },
        })),
        _ => primal,
    }
}

/// `jvp(f, primals, tangents)`: run `f` with tangents attached.
pub fn jvp(
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    primals: Vec<Tensor>,
    tangents: Tangents,
) -> Result<(Vec<Tensor>, Tangents)> {
    let guard = push(TraceKind::Jvp, false);
    let args = primals
        .into_iter()
        .zip(tangents)
        .map(|(p, t)| wrap(guard.level, guard.id, p, t))
        .collect();
    let outs = f(args)?;
    let (ps, ts) = outs.iter().map(|o| split(o, guard.level)).unzip();
    drop(guard);
    Ok((ps, ts))
}

/// A tangent for a value of this shape: the given one, or zeros.
pub fn instantiate(t: &Option<Tensor>, like: &Tensor) -> Result<Tensor> {
    match t {
        Some(t) => Ok(t.clone()),
        None => zeros(like.shape(), tangent_dtype(like.dtype())),
    }
}

fn tangent_dtype(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F32
    }
}

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
pub fn rule(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
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
                            // b * a^(b-1), and 0 where b == 0 (as JAX).
                            let bm1 = sub(b, &lit(1.0, b))?;
                            let k = mul(b, &binary(BinaryOp::Pow, a, &bm1)?)?;
                            let b0 = binary(BinaryOp::Eq, b, &lit(0.0, b))?;
                            let k = select(&b0, &lit(0.0, &k), &k)?;
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

/// `stop_gradient`: the value with the tangents of every forward-mode trace
/// removed (batched values keep their batch axis).
pub fn stop_gradient(t: &Tensor) -> Tensor {
    match t {
        Tensor::Concrete(_) => t.clone(),
        Tensor::Traced(tr) => match &tr.kind {
            TracerKind::Jvp { primal, .. } => stop_gradient(primal),
            TracerKind::Batch { val, bdim } => Tensor::Traced(Rc::new(Tracer {
                level: tr.level,
                trace_id: tr.trace_id,
                aval: tr.aval.clone(),
                kind: TracerKind::Batch {
                    val: stop_gradient(val),
                    bdim: *bdim,
                },
            })),
            TracerKind::Graph { .. } => t.clone(),
        },
    }
}
