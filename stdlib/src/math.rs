//! Elementwise math, comparisons, `where`, `clip`, and products (`dot`, `matmul`, `einsum`).

use crate::args::*;
use crate::Registry;
use arr_kernels::ops::Builtin;
use arr_kernels::{BinaryOp, DType, DotDims, UnaryOp};
use arr_runtime::numpy::{self, ty};
use arr_runtime::prim::{bind1, Prim};
use arr_runtime::Tensor;
use arr_runtime::{Error, Interp, NativeFn, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    // Every elementwise op that is a builtin by itself, from its op-table row.
    for &op in UnaryOp::ALL {
        if let Builtin::Float { name, doc } = op.builtin() {
            // The floor or ceiling of an int or a bool is itself, of its own
            // dtype (NumPy 2, JAX), not the default float.
            let exact_on_ints = matches!(op, UnaryOp::Floor | UnaryOp::Ceil);
            r.func_from(&format!("{name}(x)"), doc, move |_, a| {
                if exact_on_ints {
                    let x = numpy::to_tensor(&a[0])?;
                    if !x.dtype().is_float() {
                        return Ok(Value::Array(x));
                    }
                }
                numpy::unary_float(op, &a[0])
            });
        }
    }
    for &op in BinaryOp::ALL {
        if let Builtin::Promoted { name, doc } = op.builtin() {
            r.func_from(&format!("{name}(x, y)"), doc, move |_, a| {
                numpy::binary(op, &a[0], &a[1])
            });
        }
    }
    for (name, doc, f) in [
        (
            "log2(x)",
            "Base-2 logarithm, elementwise.",
            log2 as NativeFn,
        ),
        ("log10(x)", "Base-10 logarithm, elementwise.", log10),
        ("sign(x)", "-1, 0 or 1 by the sign of x, elementwise.", sign),
        ("negative(x)", "-x, elementwise.", |_, a| {
            numpy::unary(UnaryOp::Neg, &a[0])
        }),
        ("square(x)", "x * x, elementwise.", |_, a| {
            numpy::binary(BinaryOp::Mul, &a[0], &a[0])
        }),
        ("reciprocal(x)", "1 / x, elementwise.", |_, a| {
            numpy::binary(BinaryOp::Div, &Value::Float(1.0), &a[0])
        }),
        ("isnan(x)", "Whether each element is NaN.", |_, a| {
            predicate(UnaryOp::IsNan, &a[0])
        }),
        ("isfinite(x)", "Whether each element is finite.", |_, a| {
            predicate(UnaryOp::IsFinite, &a[0])
        }),
        ("isinf(x)", "Whether each element is +inf or -inf.", isinf),
        ("logical_not(x)", "Elementwise not, as bool.", logical_not),
        (
            "invert(x)",
            "Bitwise (or logical, for bool) not.",
            |_, a| numpy::unary(UnaryOp::Not, &a[0]),
        ),
        (
            "where(condition, x=None, y=None)",
            "Elements of x where condition is true, else of y (broadcast together).",
            where_,
        ),
        (
            "clip(x, a_min=None, a_max=None, *, min=None, max=None)",
            "x limited to [a_min, a_max], elementwise.",
            clip,
        ),
        (
            "dot(a, b)",
            "Dot product: matrix product for 2-D, sum over the last/second-to-last axes otherwise.",
            dot,
        ),
        (
            "matmul(a, b)",
            "Matrix product with NumPy's broadcasting rules (the @ operator).",
            |_, a| numpy::matmul(&a[0], &a[1]),
        ),
        ("vdot(a, b)", "Dot product of the flattened arrays.", vdot),
        (
            "einsum(subscripts, *operands)",
            "Einstein summation, e.g. einsum('bij,bjk->bik', a, b).",
            einsum,
        ),
        (
            "round(x, ndigits=None)",
            "Round half to even (arrays) or Python rounding (numbers).",
            round,
        ),
        (
            "abs(x)",
            "Absolute value (Python numbers stay numbers).",
            abs,
        ),
    ] {
        r.func(name, doc, f);
    }
    r.method(
        "array",
        "round(self, decimals=0)",
        "Round half to even to the given decimals.",
        round,
    );
    r.method(
        "array",
        "clip(self, a_min=None, a_max=None, *, min=None, max=None)",
        "Limit values to [a_min, a_max].",
        clip,
    );
    r.method("array", "dot(self, b)", "Dot product with b.", dot);
    // NumPy's other names of two ops.
    for (alias, op) in [("true_divide", BinaryOp::Div), ("remainder", BinaryOp::Mod)] {
        if let Builtin::Promoted { doc, .. } = op.builtin() {
            r.func_from(&format!("{alias}(x, y)"), doc, move |_, a| {
                numpy::binary(op, &a[0], &a[1])
            });
        }
    }
    for (name, op) in [
        ("logical_and", BinaryOp::And),
        ("logical_or", BinaryOp::Or),
        ("logical_xor", BinaryOp::Xor),
    ] {
        let f: NativeFn = match op {
            BinaryOp::And => |_, a| logical(BinaryOp::And, &a[0], &a[1]),
            BinaryOp::Or => |_, a| logical(BinaryOp::Or, &a[0], &a[1]),
            _ => |_, a| logical(BinaryOp::Xor, &a[0], &a[1]),
        };
        r.func(
            &format!("{name}(x, y)"),
            "Elementwise logical operation, as bool.",
            f,
        );
    }
}

fn predicate(op: UnaryOp, v: &Value) -> Result<Value> {
    let a = array_arg(v)?;
    if !a.dtype().is_float() {
        // Integers and bools are always finite and never NaN.
        let truth = op == UnaryOp::IsFinite;
        return ok(crate::creation::filled(
            a.shape(),
            &Value::Bool(truth),
            DType::Bool,
        )?);
    }
    ok(bind1(&Prim::Unary(op), vec![a])?)
}

fn isinf(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let finite = predicate(UnaryOp::IsFinite, &a[0])?;
    let nan = predicate(UnaryOp::IsNan, &a[0])?;
    let either = numpy::binary(BinaryOp::Or, &finite, &nan)?;
    numpy::unary(UnaryOp::Not, &either)
}

fn as_bool(v: &Value) -> Result<Value> {
    Ok(Value::Array(numpy::convert(array_arg(v)?, DType::Bool)?))
}

fn logical_not(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    numpy::unary(UnaryOp::Not, &as_bool(&a[0])?)
}

fn logical(op: BinaryOp, x: &Value, y: &Value) -> Result<Value> {
    numpy::binary(op, &as_bool(x)?, &as_bool(y)?)
}

fn log2(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let l = numpy::unary_float(UnaryOp::Log, &a[0])?;
    numpy::binary(BinaryOp::Div, &l, &Value::Float(std::f64::consts::LN_2))
}

fn log10(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let l = numpy::unary_float(UnaryOp::Log, &a[0])?;
    numpy::binary(BinaryOp::Div, &l, &Value::Float(std::f64::consts::LN_10))
}

fn sign(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    if x.dtype() == DType::Bool {
        return ok(x);
    }
    ok(bind1(&Prim::Unary(UnaryOp::Sign), vec![x])?)
}

fn abs(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match &a[0] {
        Value::Int(i) => {
            Ok(Value::Int(i.checked_abs().ok_or_else(|| {
                Error::value_error("integer overflow in abs")
            })?))
        }
        Value::Float(f) => Ok(Value::Float(f.abs())),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        v => {
            let x = array_arg(v)?;
            if x.dtype() == DType::Bool {
                return ok(x);
            }
            ok(bind1(&Prim::Unary(UnaryOp::Abs), vec![x])?)
        }
    }
}

fn round(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let digits = match &a[1] {
        Value::None => None,
        v => Some(int_arg("ndigits", v)?),
    };
    match &a[0] {
        Value::Int(i) => return Ok(Value::Int(*i)),
        Value::Float(f) => {
            return Ok(match digits {
                None => Value::Int(float_to_int(f.round_ties_even())?),
                // Past every digit an f64 has, and past its largest magnitude,
                // there is nothing to round (Python's NDIGITS_MAX and _MIN).
                Some(d) if d > 323 => Value::Float(*f),
                Some(d) if d < -308 => Value::Float(0.0 * f),
                // Python rounds the exact binary value (2.675 is below 2.675 and
                // rounds down); formatting with d digits does exactly that.
                Some(d) if d >= 0 => {
                    Value::Float(format!("{:.*}", d as usize, f).parse().unwrap_or(*f))
                }
                Some(d) => {
                    let scale = 10f64.powi((-d) as i32);
                    Value::Float((f / scale).round_ties_even() * scale)
                }
            });
        }
        _ => {}
    }
    let x = array_arg(&a[0])?;
    if !x.dtype().is_float() {
        return ok(x);
    }
    let d = digits.unwrap_or(0);
    if d == 0 {
        return ok(bind1(&Prim::Unary(UnaryOp::Round), vec![x])?);
    }
    let scale = Value::Float(10f64.powi(d as i32));
    let scaled = numpy::binary(BinaryOp::Mul, &Value::Array(x), &scale)?;
    let rounded = bind1(&Prim::Unary(UnaryOp::Round), vec![array_arg(&scaled)?])?;
    numpy::binary(BinaryOp::Div, &Value::Array(rounded), &scale)
}

fn where_(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if matches!(a[1], Value::None) || matches!(a[2], Value::None) {
        return Err(Error::type_error(
            "where(condition) with one argument is not supported: pass x and y",
        ));
    }
    let c = numpy::convert(array_arg(&a[0])?, DType::Bool)?;
    let mut xy = numpy::promote(&[&a[1], &a[2]])?;
    let y = xy.pop().unwrap();
    let x = xy.pop().unwrap();
    ok(bind1(&Prim::Select, vec![c, x, y])?)
}

/// `clip(x, a_min, a_max)`, or NumPy 2's and JAX's `min=`/`max=` keywords.
fn clip(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut x = a[0].clone();
    let either = |old: &Value, new: &Value, name: &str| match (old, new) {
        (Value::None, v) | (v, Value::None) => Ok(v.clone()),
        _ => Err(Error::type_error(format!(
            "clip: give a_{name} or {name}, not both"
        ))),
    };
    let (lo, hi) = (either(&a[1], &a[3], "min")?, either(&a[2], &a[4], "max")?);
    if !matches!(lo, Value::None) {
        x = numpy::binary(BinaryOp::Max, &x, &lo)?;
    }
    if !matches!(hi, Value::None) {
        x = numpy::binary(BinaryOp::Min, &x, &hi)?;
    }
    Ok(Value::Array(array_arg(&x)?))
}

fn dot(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (x, y) = (array_arg(&a[0])?, array_arg(&a[1])?);
    if x.ndim() == 0 || y.ndim() == 0 {
        return numpy::binary(BinaryOp::Mul, &a[0], &a[1]);
    }
    if y.ndim() <= 2 {
        return numpy::matmul(&a[0], &a[1]);
    }
    // NumPy: sum over the last axis of a and the second-to-last of b.
    let mut ops = numpy::promote(&[&a[0], &a[1]])?;
    let y = ops.pop().unwrap();
    let x = ops.pop().unwrap();
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![x.ndim() - 1],
        rhs_contract: vec![y.ndim() - 2],
    };
    ok(bind1(&Prim::DotGeneral(dims), vec![x, y])?)
}

fn vdot(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut ops = numpy::promote(&[&a[0], &a[1]])?;
    let y = ops.pop().unwrap();
    let x = ops.pop().unwrap();
    let (nx, ny) = (x.len(), y.len());
    if nx != ny {
        return Err(Error::shape_error(format!(
            "vdot: {} and {} have different sizes",
            ty(&x),
            ty(&y)
        )));
    }
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![0],
        rhs_contract: vec![0],
    };
    ok(bind1(
        &Prim::DotGeneral(dims),
        vec![numpy::reshape(x, &[nx])?, numpy::reshape(y, &[ny])?],
    )?)
}

/// `einsum` over one or two operands (more are contracted left to right).
fn einsum(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let spec: String = str_arg("subscripts", &a[0])?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let operands = numpy::sequence_items(&a[1])?;
    let (inputs, output) = match spec.split_once("->") {
        Some((i, o)) => (i.to_string(), Some(o.to_string())),
        None => (spec.clone(), None),
    };
    let terms: Vec<Vec<char>> = inputs.split(',').map(|t| t.chars().collect()).collect();
    if terms.len() != operands.len() {
        return Err(Error::value_error(format!(
            "einsum: '{spec}' names {} operands, got {}",
            terms.len(),
            operands.len()
        )));
    }
    if spec.contains('.') {
        return Err(Error::value_error(
            "einsum: ellipsis ('...') subscripts are not supported yet",
        ));
    }
    let output: Vec<char> = match output {
        Some(o) => o.chars().collect(),
        None => {
            // Implicit mode: indices that appear once, in alphabetical order.
            let mut once: Vec<char> = terms
                .iter()
                .flatten()
                .copied()
                .filter(|c| terms.iter().flatten().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort();
            once
        }
    };
    let refs: Vec<&Value> = operands.iter().collect();
    let arrays = numpy::promote(&refs)?;
    let mut acc: Option<(Tensor, Vec<char>)> = None;
    let all_terms = terms.clone();
    for (k, (x, t)) in arrays.into_iter().zip(terms).enumerate() {
        if t.len() != x.ndim() {
            return Err(Error::shape_error(format!(
                "einsum: operand {k} is {} but its subscripts '{}' name {} axes",
                ty(&x),
                t.iter().collect::<String>(),
                t.len()
            )));
        }
        if t.iter().enumerate().any(|(i, c)| t[..i].contains(c)) {
            return Err(Error::value_error("einsum: repeated subscripts within one operand (traces, diagonals) are not supported yet"));
        }
        acc = Some(match acc {
            None => (x, t),
            Some((lhs, lt)) => {
                // Indices still needed later: in the output or in a later operand.
                let mut later: Vec<char> = output.clone();
                later.extend(all_terms[k + 1..].iter().flatten());
                contract_pair(lhs, &lt, x, &t, &later)?
            }
        });
    }
    let (x, t) = acc.ok_or_else(|| Error::value_error("einsum needs at least one operand"))?;
    // Sum out what the output does not name, then order the axes.
    let sum_axes: Vec<usize> = (0..t.len()).filter(|&i| !output.contains(&t[i])).collect();
    let kept: Vec<char> = t.iter().copied().filter(|c| output.contains(c)).collect();
    let x = if sum_axes.is_empty() {
        x
    } else {
        bind1(
            &Prim::Reduce {
                op: arr_kernels::ReduceOp::Sum,
                axes: sum_axes,
            },
            vec![x],
        )?
    };
    let perm: Vec<usize> = output
        .iter()
        .map(|c| {
            kept.iter().position(|d| d == c).ok_or_else(|| {
                Error::value_error(format!(
                    "einsum: output subscript '{c}' does not appear in the inputs"
                ))
            })
        })
        .collect::<Result<_>>()?;
    ok(numpy::transpose(x, &perm)?)
}

/// Contract two operands with dot_general; returns the result and its subscripts
/// (batch indices, then the lhs's free ones, then the rhs's).
fn contract_pair(
    lhs: Tensor,
    lt: &[char],
    rhs: Tensor,
    rt: &[char],
    keep: &[char],
) -> Result<(Tensor, Vec<char>)> {
    let shared: Vec<char> = lt.iter().copied().filter(|c| rt.contains(c)).collect();
    let (batch, contract): (Vec<char>, Vec<char>) = shared.iter().partition(|c| keep.contains(c));
    let pos = |t: &[char], c: char| t.iter().position(|&d| d == c).expect("index present");
    for &c in &shared {
        if lhs.shape()[pos(lt, c)] != rhs.shape()[pos(rt, c)] {
            return Err(Error::shape_error(format!(
                "einsum: index '{c}' has sizes {} and {}",
                lhs.shape()[pos(lt, c)],
                rhs.shape()[pos(rt, c)]
            )));
        }
    }
    let dims = DotDims {
        lhs_batch: batch.iter().map(|&c| pos(lt, c)).collect(),
        rhs_batch: batch.iter().map(|&c| pos(rt, c)).collect(),
        lhs_contract: contract.iter().map(|&c| pos(lt, c)).collect(),
        rhs_contract: contract.iter().map(|&c| pos(rt, c)).collect(),
    };
    let mut out_t = batch.clone();
    out_t.extend(lt.iter().filter(|c| !shared.contains(c)));
    out_t.extend(rt.iter().filter(|c| !shared.contains(c)));
    Ok((bind1(&Prim::DotGeneral(dims), vec![lhs, rhs])?, out_t))
}
