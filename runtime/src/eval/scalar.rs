//! Operators on Python values: int, float, bool, str, list, tuple and dict
//! arithmetic with Python's semantics (overflow and zero-division errors,
//! floor division and modulo signs), unary operators, equality, ordering and
//! comparisons; an array operand hands the operation to `numpy`.

use super::iter_items;
use crate::error::{Error, ErrorKind, Result};
use crate::numpy;
use crate::value::{Value, MAX_NESTING};
use arr_kernels::{BinaryOp, DType, UnaryOp};
use arr_lang::ast::{BinOp, CmpOp, UnaryOp as AstUnary};
use std::rc::Rc;

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}

fn kernel_op(op: BinOp) -> Option<BinaryOp> {
    Some(match op {
        BinOp::Add => BinaryOp::Add,
        BinOp::Sub => BinaryOp::Sub,
        BinOp::Mul => BinaryOp::Mul,
        BinOp::Div => BinaryOp::Div,
        BinOp::FloorDiv => BinaryOp::FloorDiv,
        BinOp::Mod => BinaryOp::Mod,
        BinOp::Pow => BinaryOp::Pow,
        BinOp::BitAnd => BinaryOp::And,
        BinOp::BitOr => BinaryOp::Or,
        BinOp::BitXor => BinaryOp::Xor,
        BinOp::LShift => BinaryOp::ShiftLeft,
        BinOp::RShift => BinaryOp::ShiftRight,
        BinOp::MatMul => return None,
    })
}

fn unsupported(op: &str, a: &Value, b: &Value) -> Error {
    Error::type_error(format!(
        "unsupported operand types for {op}: {} and {}",
        a.type_name(),
        b.type_name()
    ))
}

/// `a op b` for every pair of values.
pub fn binary_op(op: BinOp, a: Value, b: Value) -> Result<Value> {
    // Python numbers stay Python numbers.
    match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => return int_op(op, *x, *y),
        (Value::Float(x), Value::Float(y)) => return float_op(op, *x, *y),
        (Value::Int(x), Value::Float(y)) => return float_op(op, *x as f64, *y),
        (Value::Float(x), Value::Int(y)) => return float_op(op, *x, *y as f64),
        _ => {}
    }
    if is_number(&a) && is_number(&b) {
        // Bools: logical ops stay bool, arithmetic treats them as ints.
        if let (Value::Bool(x), Value::Bool(y)) = (&a, &b) {
            match op {
                BinOp::BitAnd => return Ok(Value::Bool(*x & *y)),
                BinOp::BitOr => return Ok(Value::Bool(*x | *y)),
                BinOp::BitXor => return Ok(Value::Bool(*x ^ *y)),
                _ => {}
            }
        }
        let num = |v: &Value| match v {
            Value::Bool(b) => Value::Int(*b as i64),
            other => other.clone(),
        };
        return binary_op(op, num(&a), num(&b));
    }
    if let Some(r) = crate::set::binary(op, &a, &b) {
        return r;
    }
    if let (BinOp::Mod, Value::Str(f)) = (op, &a) {
        return percent_format(f, &b);
    }
    let is_arrayish = |v: &Value| matches!(v, Value::Array(_));
    if is_arrayish(&a) || is_arrayish(&b) {
        if op == BinOp::MatMul {
            return numpy::matmul(&a, &b);
        }
        let k = kernel_op(op).expect("matmul handled");
        return numpy::binary_owned(k, a, b);
    }
    match (op, &a, &b) {
        (BinOp::Add, Value::Str(x), Value::Str(y)) => Ok(Value::str(&format!("{x}{y}"))),
        (BinOp::Mul, Value::Str(s), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Str(s)) => {
            let n = (*n).max(0) as usize;
            crate::value::check_str(&[s.len(), n])?;
            Ok(Value::str(&s.repeat(n)))
        }
        (BinOp::Add, Value::List(x), Value::List(y)) => Ok(Value::list(
            x.borrow()
                .iter()
                .chain(y.borrow().iter())
                .cloned()
                .collect(),
        )),
        (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
            Ok(Value::tuple(x.iter().chain(y.iter()).cloned().collect()))
        }
        (BinOp::Mul, Value::List(l), Value::Int(n))
        | (BinOp::Mul, Value::Int(n), Value::List(l)) => {
            let items = l.borrow();
            crate::value::check_items("list", &[items.len(), (*n).max(0) as usize])?;
            // (An empty list repeated is empty at once, however large n is.)
            let n = if items.is_empty() { 0 } else { (*n).max(0) };
            Ok(Value::list(
                (0..n).flat_map(|_| items.iter().cloned()).collect(),
            ))
        }
        (BinOp::Mul, Value::Tuple(t), Value::Int(n))
        | (BinOp::Mul, Value::Int(n), Value::Tuple(t)) => {
            crate::value::check_items("tuple", &[t.len(), (*n).max(0) as usize])?;
            let n = if t.is_empty() { 0 } else { (*n).max(0) };
            Ok(Value::tuple(
                (0..n).flat_map(|_| t.iter().cloned()).collect(),
            ))
        }
        (BinOp::BitOr, Value::Dict(x), Value::Dict(y)) => {
            let mut d = x.borrow().clone();
            d.extend(y.borrow().iter().map(|(k, v)| (k.clone(), v.clone())));
            Ok(Value::dict(d))
        }
        _ => Err(unsupported(op.symbol(), &a, &b)),
    }
}

/// The float operations that cannot fail; the rest go through `float_op`.
#[inline(always)]
pub(super) fn float_fast(op: BinOp, x: f64, y: f64) -> Option<Value> {
    Some(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        _ => return None,
    }))
}

/// Integer operations that did not overflow; the rest go through `int_op`.
#[inline(always)]
pub(super) fn int_fast(op: BinOp, x: i64, y: i64) -> Option<Value> {
    Some(Value::Int(match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        _ => return None,
    }))
}

fn zero_division(what: &str) -> Error {
    Error::new(ErrorKind::ZeroDivisionError, format!("{what} by zero"))
}

/// Python's `0 ** -1` and `0.0 ** -1.5` (arrays give inf, as NumPy does).
fn zero_to_negative_power() -> Error {
    Error::new(
        ErrorKind::ZeroDivisionError,
        "0.0 cannot be raised to a negative power",
    )
}

fn int_op(op: BinOp, x: i64, y: i64) -> Result<Value> {
    let overflow = || {
        Error::new(
            ErrorKind::OverflowError,
            format!("integer overflow in {x} {} {y}", op.symbol()),
        )
    };
    Ok(Value::Int(match op {
        BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
        BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
        BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
        BinOp::Div => {
            if y == 0 {
                return Err(zero_division("division"));
            }
            return Ok(Value::Float(x as f64 / y as f64));
        }
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(zero_division("integer division"));
            }
            x.checked_div_euclid(y).ok_or_else(overflow)?;
            let q = x / y;
            if (x % y != 0) && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(zero_division("integer modulo"));
            }
            let r = x.checked_rem(y).ok_or_else(overflow)?;
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => {
            if y < 0 {
                if x == 0 {
                    return Err(zero_to_negative_power());
                }
                return Ok(Value::Float((x as f64).powf(y as f64)));
            }
            x.checked_pow(u32::try_from(y).map_err(|_| overflow())?)
                .ok_or_else(overflow)?
        }
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::LShift => {
            if !(0..64).contains(&y) {
                return Err(Error::value_error("shift count out of range"));
            }
            x.checked_shl(y as u32)
                .filter(|r| r >> y == x)
                .ok_or_else(overflow)?
        }
        BinOp::RShift => {
            if y < 0 {
                return Err(Error::value_error("negative shift count"));
            }
            x >> y.min(63)
        }
        BinOp::MatMul => return Err(unsupported("@", &Value::Int(x), &Value::Int(y))),
    }))
}

fn float_op(op: BinOp, x: f64, y: f64) -> Result<Value> {
    Ok(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(zero_division("float division"));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(zero_division("float floor division"));
            }
            (x / y).floor()
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(zero_division("float modulo"));
            }
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => {
            if x == 0.0 && y < 0.0 {
                return Err(zero_to_negative_power());
            }
            x.powf(y)
        }
        _ => return Err(unsupported(op.symbol(), &Value::Float(x), &Value::Float(y))),
    }))
}

pub fn unary_op(op: AstUnary, v: Value) -> Result<Value> {
    match (op, &v) {
        (AstUnary::Not, _) => Ok(Value::Bool(!v.truthy()?)),
        (AstUnary::Neg, Value::Int(i)) => {
            Ok(Value::Int(i.checked_neg().ok_or_else(|| {
                Error::new(ErrorKind::OverflowError, "integer overflow")
            })?))
        }
        (AstUnary::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
        (AstUnary::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
        (AstUnary::Pos, Value::Int(_) | Value::Float(_)) => Ok(v),
        (AstUnary::Pos, Value::Bool(b)) => Ok(Value::Int(*b as i64)),
        (AstUnary::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
        (AstUnary::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
        (AstUnary::Pos, Value::Array(_)) => Ok(v),
        (AstUnary::Neg | AstUnary::Invert, Value::Array(_)) => {
            let op = if op == AstUnary::Neg {
                UnaryOp::Neg
            } else {
                UnaryOp::Not
            };
            Ok(numpy::like_operand(&v, numpy::unary(op, &v)?))
        }
        _ => Err(Error::type_error(format!(
            "bad operand type for unary {}: {}",
            op.symbol(),
            v.type_name()
        ))),
    }
}

/// Structural equality of Python values (arrays compare by identity here;
/// `==` on arrays is elementwise and handled before this). Two distinct
/// containers that hold themselves compare until [`MAX_NESTING`] and raise
/// RecursionError there, as Python does.
pub fn values_equal(a: &Value, b: &Value) -> Result<bool> {
    equal_at(a, b, 0)
}

fn equal_at(a: &Value, b: &Value, depth: usize) -> Result<bool> {
    if depth > MAX_NESTING {
        return Err(Error::new(
            ErrorKind::RecursionError,
            format!("maximum recursion depth exceeded in comparison (containers nested more than {MAX_NESTING} deep)"),
        ));
    }
    let all = |x: &[Value], y: &[Value]| -> Result<bool> {
        if x.len() != y.len() {
            return Ok(false);
        }
        for (p, q) in x.iter().zip(y) {
            if !equal_at(p, q, depth + 1)? {
                return Ok(false);
            }
        }
        Ok(true)
    };
    Ok(match (a, b) {
        (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) if Rc::ptr_eq(x, y) => true,
        (Value::Dict(x), Value::Dict(y)) if Rc::ptr_eq(x, y) => true,
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            all(&x, &y)?
        }
        (Value::Tuple(x), Value::Tuple(y)) => all(x, y)?,
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                match y.get(k) {
                    Some(w) if equal_at(v, w, depth + 1)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        (Value::DType(x), Value::DType(y)) => x == y,
        (Value::Range(x), Value::Range(y)) => x == y,
        (Value::Function(x), Value::Function(y)) => Rc::ptr_eq(x, y),
        (Value::Builtin(x), Value::Builtin(y)) => Rc::ptr_eq(x, y),
        // `type(1) == int`: a value's type is the builtin of that name.
        (Value::Object(o), Value::Builtin(b)) | (Value::Builtin(b), Value::Object(o)) => o
            .as_any()
            .downcast_ref::<crate::class::TypeName>()
            .is_some_and(|t| t.name == &*b.name),
        (Value::Native(x), Value::Native(y)) => Rc::ptr_eq(x, y),
        (Value::Object(x), Value::Object(y)) => {
            Rc::ptr_eq(x, y)
                || x.equals(y.as_ref().as_ref())
                || crate::set::equal(a, b).unwrap_or(false)
        }
        (Value::Array(x), Value::Array(y)) => x.same(y),
        (Value::Class(x), Value::Class(y)) => Rc::ptr_eq(x, y),
        (Value::Instance(x), Value::Instance(y)) if Rc::ptr_eq(x, y) => true,
        (Value::Instance(x), Value::Instance(y)) => match (&x.items, &y.items) {
            (Some(p), Some(q)) => all(p, q)?,
            _ => false,
        },
        (Value::Instance(x), Value::Tuple(t)) | (Value::Tuple(t), Value::Instance(x)) => {
            match &x.items {
                Some(items) => all(items, t)?,
                None => false,
            }
        }
        (Value::Object(o), Value::Str(s)) | (Value::Str(s), Value::Object(o)) => {
            o.as_str() == Some(s.as_str())
        }
        _ if is_number(a) && is_number(b) => a.as_f64() == b.as_f64(),
        (Value::DType(d), Value::Str(s)) | (Value::Str(s), Value::DType(d)) => {
            DType::from_name(s) == Some(*d)
        }
        _ => false,
    })
}

fn order(a: &Value, b: &Value) -> Result<std::cmp::Ordering> {
    match (a, b) {
        _ if is_number(a) && is_number(b) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if let (Value::Int(i), Value::Int(j)) = (a, b) {
                return Ok(i.cmp(j));
            }
            x.partial_cmp(&y)
                .ok_or_else(|| Error::value_error("comparison with NaN"))
        }
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_)) => {
            let (x, y) = (iter_items(a)?, iter_items(b)?);
            for (p, q) in x.iter().zip(&y) {
                if !values_equal(p, q)? {
                    return order(p, q);
                }
            }
            Ok(x.len().cmp(&y.len()))
        }
        // One-element arrays order by value, as `<` on them decides in
        // Python (`sorted` of a list of JAX scalars).
        (Value::Array(_), _) | (_, Value::Array(_))
            if a.as_f64().is_some() && b.as_f64().is_some() =>
        {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y)
                .ok_or_else(|| Error::value_error("comparison with NaN"))
        }
        _ => Err(Error::type_error(format!(
            "'<' not supported between {} and {}",
            a.type_name(),
            b.type_name()
        ))),
    }
}

/// `"%5.2f and %s" % args`: printf-style formatting, each conversion
/// done by the format-spec code (`%-5d` is the spec `<5d`).
fn percent_format(fmt: &str, args: &Value) -> Result<Value> {
    let args: Vec<Value> = match args {
        Value::Tuple(t) => t.to_vec(),
        one => vec![one.clone()],
    };
    let mut next = args.iter();
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let bad = |why: &str| Error::value_error(format!("bad format string {fmt:?}: {why}"));
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut align, mut sign, mut zero) = (String::new(), String::new(), false);
        while let Some(&f) = chars.peek() {
            match f {
                '-' => align = "<".into(),
                '+' | ' ' => sign = f.to_string(),
                '0' => zero = true,
                _ => break,
            }
            chars.next();
        }
        let mut width_prec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() || d == '.' {
                width_prec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let Some(ty) = chars.next() else {
            return Err(bad("incomplete format"));
        };
        if ty == '%' {
            out.push('%');
            continue;
        }
        let v = next
            .next()
            .ok_or_else(|| Error::type_error("not enough arguments for format string"))?;
        let zero = if zero && align.is_empty() { "0" } else { "" };
        let (v, ty) = match ty {
            's' => (Value::str(&crate::display::str(v)), 's'),
            'r' | 'a' => (Value::str(&crate::display::repr(v)), 's'),
            'd' | 'i' | 'u' => {
                let n = v.as_f64().ok_or_else(|| {
                    Error::type_error(format!(
                        "%{ty} format: a real number is required, not {}",
                        v.type_name()
                    ))
                })?;
                (Value::Int(n.trunc() as i64), 'd')
            }
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'x' | 'X' | 'o' => (v.clone(), ty),
            other => {
                return Err(bad(&format!("unsupported format character '{other}'")));
            }
        };
        let spec = format!("{align}{sign}{zero}{width_prec}{ty}");
        out.push_str(&crate::display::format_spec(&v, &spec)?);
    }
    if next.next().is_some() {
        return Err(Error::type_error(
            "not all arguments converted during string formatting",
        ));
    }
    Ok(Value::str(&out))
}

/// Python's ordering of two values, for `sorted`, `min`, `max`.
pub fn compare_values(a: &Value, b: &Value) -> Result<std::cmp::Ordering> {
    order(a, b)
}

pub fn compare_op(op: CmpOp, a: &Value, b: &Value) -> Result<Value> {
    let array_involved = matches!(a, Value::Array(_)) || matches!(b, Value::Array(_));
    if array_involved && !matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        if matches!(a, Value::None | Value::Str(_)) || matches!(b, Value::None | Value::Str(_)) {
            return Ok(Value::Bool(op == CmpOp::NotEq));
        }
        let k = match op {
            CmpOp::Eq => BinaryOp::Eq,
            CmpOp::NotEq => BinaryOp::Ne,
            CmpOp::Lt => BinaryOp::Lt,
            CmpOp::LtE => BinaryOp::Le,
            CmpOp::Gt => BinaryOp::Gt,
            CmpOp::GtE => BinaryOp::Ge,
            _ => unreachable!(),
        };
        return numpy::binary(k, a, b);
    }
    use std::cmp::Ordering::*;
    Ok(Value::Bool(match op {
        CmpOp::Eq => values_equal(a, b)?,
        CmpOp::NotEq => !values_equal(a, b)?,
        CmpOp::Lt => order(a, b)? == Less,
        CmpOp::LtE => order(a, b)? != Greater,
        CmpOp::Gt => order(a, b)? == Greater,
        CmpOp::GtE => order(a, b)? != Less,
        CmpOp::In | CmpOp::NotIn => {
            let found = match b {
                Value::Str(s) => match a {
                    Value::Str(sub) => s.contains(sub.as_str()),
                    _ => {
                        return Err(Error::type_error(
                            "'in <string>' requires a string on the left",
                        ))
                    }
                },
                Value::Dict(d) => d.borrow().contains_key(&a.to_key()?),
                Value::Object(_) if crate::set::as_set(b).is_some() => {
                    crate::set::as_set(b).is_some_and(|s| s.contains(a).unwrap_or(false))
                }
                _ => {
                    let mut found = false;
                    for x in iter_items(b)? {
                        if values_equal(a, &x)? {
                            found = true;
                            break;
                        }
                    }
                    found
                }
            };
            found == (op == CmpOp::In)
        }
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (a, b) {
                (Value::None, Value::None) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
                (Value::Dict(x), Value::Dict(y)) => Rc::ptr_eq(x, y),
                (Value::Module(x), Value::Module(y)) => Rc::ptr_eq(x, y),
                (Value::Class(x), Value::Class(y)) => Rc::ptr_eq(x, y),
                (Value::Instance(x), Value::Instance(y)) => Rc::ptr_eq(x, y),
                (Value::Instance(_), _) | (_, Value::Instance(_)) => false,
                (Value::Object(x), Value::Object(y)) => {
                    Rc::ptr_eq(x, y) || (x.type_name() == "type" && x.equals(y.as_ref().as_ref()))
                }
                // One array object, not one buffer: `x.copy() is x` is False.
                (
                    Value::Array(crate::tensor::Tensor::Concrete(x)),
                    Value::Array(crate::tensor::Tensor::Concrete(y)),
                ) => x.same(y),
                _ => values_equal(a, b)? && !is_number(a),
            };
            same == (op == CmpOp::Is)
        }
    }))
}
