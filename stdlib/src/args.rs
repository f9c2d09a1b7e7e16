//! Argument helpers shared by the builtins: conversions with clear errors.

use arr_kernels::DType;
use arr_runtime::numpy;
use arr_runtime::Tensor;
use arr_runtime::{Error, ErrorKind, Result, Value};

/// Any array-like argument as an array.
pub fn array_arg(v: &Value) -> Result<Tensor> {
    numpy::to_tensor(v)
}

/// An array of a float or complex dtype (ints and bools become the default float).
pub fn float_arg(v: &Value) -> Result<Tensor> {
    let a = numpy::to_tensor(v)?;
    if a.dtype().is_inexact() {
        Ok(a)
    } else {
        numpy::convert(a, numpy::default_float())
    }
}

/// A traced scalar where a Python number is needed is JAX's
/// ConcretizationTypeError (`arange(n)` inside `jit`), not a wrong type.
fn concrete_scalar(v: &Value) -> Result<()> {
    if let Value::Array(t) = v {
        if t.ndim() == 0 {
            t.concrete()?;
        }
    }
    Ok(())
}

pub fn int_arg(name: &str, v: &Value) -> Result<i64> {
    concrete_scalar(v)?;
    v.to_int()?
        .ok_or_else(|| Error::type_error(format!("{name} must be an int, got {}", v.type_name())))
}

pub fn opt_int_arg(name: &str, v: &Value) -> Result<Option<i64>> {
    match v {
        Value::None => Ok(None),
        v => int_arg(name, v).map(Some),
    }
}

pub fn f64_arg(name: &str, v: &Value) -> Result<f64> {
    concrete_scalar(v)?;
    v.to_f64()?
        .ok_or_else(|| Error::type_error(format!("{name} must be a number, got {}", v.type_name())))
}

pub fn bool_arg(v: &Value) -> Result<bool> {
    v.truthy()
}

pub fn str_arg<'a>(name: &str, v: &'a Value) -> Result<&'a str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(Error::type_error(format!(
            "{name} must be a string, got {}",
            other.type_name()
        ))),
    }
}

/// A `dtype=` argument: a dtype value, a name such as `"float32"`, the
/// builtins `float`/`int`/`bool`/`complex`, or None.
pub fn dtype_arg(v: &Value) -> Result<Option<DType>> {
    Ok(match v {
        Value::None => None,
        Value::DType(d) => Some(*d),
        Value::Str(s) => Some(
            DType::from_name(s).ok_or_else(|| Error::type_error(format!("unknown dtype '{s}'")))?,
        ),
        Value::Builtin(b) => Some(match &*b.name {
            "float" => numpy::default_float(),
            "int" => numpy::default_int(),
            "bool" => DType::Bool,
            "complex" => DType::C64,
            other => return Err(Error::type_error(format!("{other} is not a dtype"))),
        }),
        other => {
            return Err(Error::type_error(format!(
                "expected a dtype, got {}",
                other.type_name()
            )))
        }
    })
}

/// Wrap an array result.
pub fn ok(a: Tensor) -> Result<Value> {
    Ok(Value::Array(a))
}

/// NumPy's `axis=None` convention for functions of one axis: None means
/// "flatten first, then axis 0". Returns the array to work on and the axis.
pub fn flatten_or_axis(x: Tensor, axis: &Value) -> Result<(Tensor, usize)> {
    match axis {
        Value::None => {
            let n = x.len();
            Ok((numpy::reshape(x, &[n])?, 0))
        }
        v => {
            let ax = numpy::normalize_axis(int_arg("axis", v)?, x.ndim())?;
            Ok((x, ax))
        }
    }
}

/// The sort keys of `items`: the items themselves, or `key(item)` for each.
pub fn key_values(
    interp: &mut arr_runtime::Interp,
    items: &[Value],
    key: &Value,
) -> Result<Vec<Value>> {
    match key {
        Value::None => Ok(items.to_vec()),
        f => items
            .iter()
            .map(|x| interp.call(f, vec![x.clone()], Vec::new()))
            .collect(),
    }
}

/// A donated array that the same call also passes elsewhere: `(i, j)` with
/// `arrays[i]` donated and `arrays[j]` the same array (`None`: no array).
/// Its buffer cannot be both read and overwritten, so the call is refused.
pub fn donated_twice(
    arrays: &[Option<&arr_kernels::Array>],
    donated: &[bool],
) -> Option<(usize, usize)> {
    (0..arrays.len()).filter(|&i| donated[i]).find_map(|i| {
        let a = arrays[i]?;
        (0..arrays.len())
            .find(|&j| j != i && arrays[j].is_some_and(|b| b.same(a)))
            .map(|j| (i, j))
    })
}

/// An integral float as a Python int, or Python's errors for NaN and
/// infinities (and, since ints here are 64-bit, for what does not fit one).
pub fn float_to_int(f: f64) -> Result<i64> {
    if f.is_nan() {
        return Err(Error::value_error("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(Error::new(
            ErrorKind::OverflowError,
            "cannot convert float infinity to integer",
        ));
    }
    // i64::MAX as f64 rounds up to 2**63, which does not fit.
    if !(-(2f64.powi(63))..2f64.powi(63)).contains(&f) {
        return Err(Error::new(
            ErrorKind::OverflowError,
            format!(
                "int too large: {} does not fit a 64-bit integer",
                arr_runtime::display::py_float(f)
            ),
        ));
    }
    Ok(f as i64)
}

/// The `**kwargs` dict a builtin received, as keyword arguments to pass on.
pub fn kwargs_of(v: &Value) -> Vec<(std::rc::Rc<str>, Value)> {
    match v {
        Value::Dict(d) => d
            .borrow()
            .iter()
            .filter_map(|(k, v)| match k {
                arr_runtime::Key::Str(s) => Some((s.clone(), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
