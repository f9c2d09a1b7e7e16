//! The elementwise primitives — unary, binary (NumPy broadcasting), select
//! and convert — and all their rules: shapes, evaluation, JVP, transpose,
//! batching, partitioning. What each op accepts and returns comes from its
//! row of the op table (`arr_kernels::optable`: `accepts`, `is_predicate`,
//! `is_comparison`, `symbol`); the derivatives are here, one arm per op.

use super::{
    add_opt, bind, device, needs, not_linear, one, one_out, one_type, same_dtype, ty, type_str,
    Args, Arrays, Aval, Avals, Outs, Prim,
};
use crate::error::{Error, Result};
use crate::jit::partition::{global_dim, replicated, Local, Spec, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::Bdims;
use crate::transform::jvp::{instantiate, Tangents};
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::sharding::Placement;
use arr_kernels::Backend as _;
use arr_kernels::{backend, broadcast_shapes, Array, BinaryOp, DType, Shape, UnaryOp};
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Shapes

pub fn shape_unary(op: UnaryOp, args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    if !op.accepts(a.dtype) {
        return Err(Error::type_error(format!(
            "{} needs a {} array, got {}",
            op.symbol(),
            needs(|d| op.accepts(d)),
            ty(a)
        )));
    }
    one_type(a.shape.clone(), op.result_dtype(a.dtype))
}

/// Operands whose shapes do not broadcast. A handler catches it as JAX
/// raises it: ValueError when the ranks differ (NumPy-style broadcasting
/// fails), else TypeError (the primitive's own check).
fn broadcast_error(a: &Aval, b: &Aval) -> Error {
    let e = Error::shape_error(format!("cannot broadcast {} with {}", ty(a), ty(b)));
    if a.shape.len() != b.shape.len() {
        e.as_class("ValueError")
    } else {
        e
    }
}

pub fn shape_binary(op: BinaryOp, args: &[Aval]) -> Result<Avals> {
    let (a, b) = (&args[0], &args[1]);
    let shape = if a.shape == b.shape {
        a.shape.clone()
    } else {
        broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| broadcast_error(a, b))?
    };
    let dtype = if a.dtype == b.dtype {
        a.dtype
    } else {
        same_dtype(op.symbol(), args)?
    };
    if !op.accepts(dtype) {
        return Err(Error::type_error(format!(
            "{} needs {} operands, got {} and {}",
            op.symbol(),
            needs(|d| op.accepts(d)),
            ty(a),
            ty(b)
        )));
    }
    one_type(shape, op.result_dtype(dtype))
}

pub fn shape_select(args: &[Aval]) -> Result<Avals> {
    let (c, a, b) = (&args[0], &args[1], &args[2]);
    if c.dtype != DType::Bool {
        return Err(Error::type_error(format!(
            "where: the condition must be bool, got {}",
            ty(c)
        )));
    }
    let ab = broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| broadcast_error(a, b))?;
    let shape = broadcast_shapes(&c.shape, &ab).ok_or_else(|| {
        Error::shape_error(format!(
            "cannot broadcast condition {} with {}",
            ty(c),
            type_str(&ab, a.dtype)
        ))
    })?;
    one_type(shape, same_dtype("where", &args[1..])?)
}

pub fn shape_convert(d: DType, args: &[Aval]) -> Result<Avals> {
    one_type(args[0].shape.clone(), d)
}

// ---------------------------------------------------------------------------
// Evaluation

/// The only operand of a unary primitive.
fn only(args: Args) -> Array {
    match args.into_iter().next() {
        Some(Tensor::Concrete(a)) => a,
        Some(Tensor::Traced(_)) => unreachable!("eager evaluation of a tracer"),
        None => unreachable!("checked arity"),
    }
}

pub fn eval_unary(op: UnaryOp, args: Args) -> Result<Outs> {
    let a = only(args);
    let place = elementwise_placement(&[&a]);
    one_out(keep_placement(backend::of([&a]).unary(op, a), place))
}

/// The hottest evaluation (`x * y`): the operands go to the kernel by
/// value, so it may write into one whose buffer nothing else holds.
pub fn eval_binary(op: BinaryOp, args: Args) -> Result<Outs> {
    let mut it = super::arrays(args).into_iter();
    let (Some(a), Some(b)) = (it.next(), it.next()) else {
        unreachable!("checked arity")
    };
    let place = elementwise_placement(&[&a, &b]);
    one_out(keep_placement(
        backend::of([&a, &b]).binary(op, a, b),
        place,
    ))
}

pub fn eval_select(args: &[Array]) -> Result<Outs> {
    one_out(device(args).select(&args[0], &args[1], &args[2]))
}

pub fn eval_convert(d: DType, mut args: Arrays) -> Result<Outs> {
    if args[0].dtype() == d {
        return one_out(args.swap_remove(0));
    }
    one_out(device(&args).convert(&args[0], d))
}

/// An elementwise result keeps the layout of its sharded operands: the
/// placement of the first one (all sharded operands of the output's shape
/// must agree; otherwise the result is a plain host array).
fn elementwise_placement(args: &[&Array]) -> Option<(Arc<Placement>, Shape)> {
    let mut found: Option<(Arc<Placement>, Shape)> = None;
    for a in args {
        if let Some(p) = a.placement() {
            match &found {
                None => found = Some((p.clone(), Shape::from_slice(a.shape()))),
                Some((q, _)) if **q == **p => {}
                Some(_) => return None,
            }
        }
    }
    found
}

fn keep_placement(out: Array, place: Option<(Arc<Placement>, Shape)>) -> Array {
    if let Some((p, shape)) = place {
        if out.placement().is_none() && out.shape() == &shape[..] {
            return out.with_placement(p);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// JVP

fn map(t: &Option<Tensor>, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Option<Tensor>> {
    super::map(t, f)
}

/// The tangent `t` of an operand, broadcast to the output's shape.
fn expand(t: Option<Tensor>, shape: &[usize]) -> Result<Option<Tensor>> {
    map(&t, |t| broadcast_to(t, shape))
}

pub fn jvp_unary(
    prim: &Prim,
    op: UnaryOp,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let x = &p[0];
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let tx = &t[0];
    let u = |op| unary(op, x);
    let ty = match op {
        UnaryOp::Neg => map(tx, neg)?,
        // Linear: the same op on the tangent.
        UnaryOp::Real | UnaryOp::Imag | UnaryOp::Conj => map(tx, |t| unary(op, t))?,
        // |x| of a complex x: re(conj(x) t) / |x| (0 where x is 0), as JAX.
        UnaryOp::Abs if x.dtype().is_complex() => {
            let zero = binary(BinaryOp::Eq, &y, &lit(0.0, &y))?;
            let safe = convert(&select(&zero, &lit(1.0, &y), &y)?, x.dtype())?;
            let d = div(&unary(UnaryOp::Conj, x)?, &safe)?;
            map(tx, |t| unary(UnaryOp::Real, &mul(t, &d)?))?
        }
        // JAX's rule: t where x >= 0, else -t (so d|x|/dx is 1 at 0).
        UnaryOp::Abs => {
            let up = binary(BinaryOp::Ge, x, &lit(0.0, x))?;
            map(tx, |t| select(&up, t, &neg(t)?))?
        }
        // Piecewise constant, or bool results: the tangent is zero.
        UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Not
        | UnaryOp::IsFinite
        | UnaryOp::IsNan => None,
        UnaryOp::Exp => map(tx, |t| mul(t, &y))?,
        UnaryOp::Exp2 => {
            let d = mul_scalar(&y, std::f64::consts::LN_2)?;
            map(tx, |t| mul(t, &d))?
        }
        UnaryOp::Cbrt => {
            let d = mul_scalar(&mul(&y, &y)?, 3.0)?;
            map(tx, |t| div(t, &d))?
        }
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
            if op == UnaryOp::Acos {
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

pub fn jvp_binary(
    prim: &Prim,
    op: BinaryOp,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let (a, b) = (&p[0], &p[1]);
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    if !y.dtype().is_inexact() {
        return one(y, None);
    }
    let shape = y.shape().to_vec();
    let (ta, tb) = (&t[0], &t[1]);
    let ty = match op {
        BinaryOp::Add => add_opt(expand(ta.clone(), &shape)?, expand(tb.clone(), &shape)?)?,
        BinaryOp::Sub => add_opt(expand(ta.clone(), &shape)?, expand(map(tb, neg)?, &shape)?)?,
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
                    let exponent = b
                        .as_concrete()
                        .filter(|c| c.len() == 1 && !c.dtype().is_complex());
                    let k = match exponent.map(|c| c.get_f64(0)).transpose()? {
                        Some(2.0) => mul_scalar(a, 2.0)?,
                        Some(1.0) => ones_like(a)?,
                        Some(c) if c != 0.0 => {
                            let bm1 = sub(b, &lit(1.0, b))?;
                            mul(b, &binary(BinaryOp::Pow, a, &bm1)?)?
                        }
                        // A constant 0, a traced exponent, or an array of exponents.
                        Some(_) | None => {
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
            let cmp = if op == BinaryOp::Max {
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
        // Piecewise constant.
        BinaryOp::FloorDiv => None,
        // Integer and bool results.
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

pub fn jvp_select(prim: &Prim, p: &[Tensor], t: &[Option<Tensor>]) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    if !y.dtype().is_inexact() {
        return one(y, None);
    }
    let ta = instantiate(&t[1], &p[1])?;
    let tb = instantiate(&t[2], &p[2])?;
    let ty = select(&p[0], &ta, &tb)?;
    let ty = broadcast_to(&ty, y.shape())?;
    one(y, Some(ty))
}

pub fn jvp_convert(
    prim: &Prim,
    d: DType,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = if d.is_inexact() && p[0].dtype().is_inexact() {
        map(&t[0], |t| convert(t, d))?
    } else {
        None
    };
    one(y, ty)
}

// ---------------------------------------------------------------------------
// Transpose

pub fn transpose_unary(
    prim: &Prim,
    op: UnaryOp,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    match op {
        UnaryOp::Neg => super::for_linear(ins, |_| neg(&ct)),
        UnaryOp::Conj => super::for_linear(ins, |_| unary(UnaryOp::Conj, &ct)),
        // JAX's transposes: re(z)ᵀ c = c + 0i, im(z)ᵀ c = -i c (no conjugates:
        // grad of a real function of z is then the conjugate of 2 ∂f/∂z̄).
        UnaryOp::Real | UnaryOp::Imag => super::for_linear(ins, |i| {
            let c = convert(&ct, DType::C64)?;
            let c = if op == UnaryOp::Imag {
                mul(&c, &complex_scalar(0.0, -1.0))?
            } else {
                c
            };
            if ins[i].dtype().is_complex() {
                Ok(c)
            } else {
                // re/im of a real operand: only its real part flows back.
                convert(&unary(UnaryOp::Real, &c)?, ins[i].dtype())
            }
        }),
        UnaryOp::Not
        | UnaryOp::Abs
        | UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Exp
        | UnaryOp::Exp2
        | UnaryOp::Expm1
        | UnaryOp::Cbrt
        | UnaryOp::Log
        | UnaryOp::Log1p
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Tan
        | UnaryOp::Asin
        | UnaryOp::Acos
        | UnaryOp::Atan
        | UnaryOp::Sinh
        | UnaryOp::Cosh
        | UnaryOp::Tanh
        | UnaryOp::Asinh
        | UnaryOp::Acosh
        | UnaryOp::Atanh
        | UnaryOp::Logistic
        | UnaryOp::Erf
        | UnaryOp::ErfInv
        | UnaryOp::IsFinite
        | UnaryOp::IsNan => Err(not_linear(prim)),
    }
}

pub fn transpose_binary(
    prim: &Prim,
    op: BinaryOp,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    match op {
        BinaryOp::Add => super::for_linear(ins, |i| unbroadcast(&ct, ins[i].shape())),
        BinaryOp::Sub => super::for_linear(ins, |i| {
            let c = if i == 0 { ct.clone() } else { neg(&ct)? };
            unbroadcast(&c, ins[i].shape())
        }),
        BinaryOp::Mul => super::for_linear(ins, |i| {
            let other = ins[1 - i].known()?;
            unbroadcast(&mul(&ct, other)?, ins[i].shape())
        }),
        // Linear in the numerator only.
        BinaryOp::Div if !ins[1].is_linear() => super::for_linear(ins, |i| {
            unbroadcast(&div(&ct, ins[1].known()?)?, ins[i].shape())
        }),
        BinaryOp::Div
        | BinaryOp::FloorDiv
        | BinaryOp::Mod
        | BinaryOp::Pow
        | BinaryOp::Max
        | BinaryOp::Min
        | BinaryOp::Atan2
        | BinaryOp::And
        | BinaryOp::Or
        | BinaryOp::Xor
        | BinaryOp::ShiftLeft
        | BinaryOp::ShiftRight
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge => Err(not_linear(prim)),
    }
}

pub fn transpose_select(ct: Tensor, ins: &[LinIn]) -> Result<Vec<Option<Tensor>>> {
    let c = ins[0].known()?;
    let zero = lit(0.0, &ct);
    super::for_linear(ins, |i| {
        let picked = if i == 1 {
            select(c, &ct, &zero)?
        } else {
            select(c, &zero, &ct)?
        };
        unbroadcast(&broadcast_to(&picked, ct.shape())?, ins[i].shape())
    })
}

pub fn transpose_convert(ct: Tensor, ins: &[LinIn]) -> Result<Vec<Option<Tensor>>> {
    super::for_linear(ins, |i| convert(&ct, ins[i].dtype()))
}

// ---------------------------------------------------------------------------
// Batching

/// Unary and convert: elementwise on one operand, so the batch axis stays
/// where it is.
pub fn batch_keeping_axis(prim: &Prim, v: &[Tensor], d: &[Option<usize>]) -> Result<(Outs, Bdims)> {
    Ok((bind(prim, [v[0].clone()])?, vec![d[0]]))
}

/// Binary and select, with NumPy broadcasting: batch axes to the front, and
/// batched operands padded with length-1 axes to the output's rank, so
/// that broadcasting aligns the per-example axes.
pub fn batch_broadcasting(prim: &Prim, v: &[Tensor], d: &[Option<usize>]) -> Result<(Outs, Bdims)> {
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

// ---------------------------------------------------------------------------
// Partitioning

/// Unary and convert keep their operand's layout.
pub fn partition_keeping_layout(prim: &Prim, ins: Vec<Local>) -> Result<Vec<Local>> {
    let (x, s) = ins.into_iter().next().expect("one operand");
    let y = bind(prim, [x])?.swap_remove(0);
    Ok(vec![(y, s)])
}

/// Binary and select: the output takes the layout of one operand of the
/// output's rank, the one that sends the fewest bytes to bring the others
/// to it (the first split one on a tie), and every operand is resharded to
/// it. Broadcasting aligns dimensions from the right: each operand takes
/// the output layout of the dimensions it has (replicated where it has 1).
pub fn partition_broadcasting(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    let name = prim.ir_name();
    let gshape = &cx.out_type(0).shape;
    let rank = gshape.len();
    // Each operand's layout under the output layout `spec`.
    let wants = |spec: &Spec| -> Vec<Spec> {
        ins.iter()
            .map(|(x, s)| {
                let off = rank - s.len();
                (0..s.len())
                    .map(|d| {
                        if gshape[off + d] == global_dim(cx.mesh(), x, s, d) {
                            spec[off + d].clone()
                        } else {
                            Vec::new()
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let cost = |spec: &Spec| -> usize {
        ins.iter()
            .zip(wants(spec))
            .map(|((x, s), w)| cx.reshard_bytes(x, s, &w))
            .sum()
    };
    let mut spec = replicated(rank);
    let mut best = usize::MAX;
    for (x, s) in &ins {
        if x.ndim() == rank && s.iter().any(|a| !a.is_empty()) {
            let c = cost(s);
            if c < best {
                (spec, best) = (s.clone(), c);
            }
        }
    }
    let mut args = Vec::new();
    for ((x, s), want) in ins.iter().zip(wants(&spec)) {
        args.push(cx.reshard(
            x,
            s,
            &want,
            &format!("{name}: operands laid out differently"),
        )?);
    }
    Ok(vec![(bind(prim, args)?.swap_remove(0), spec)])
}
