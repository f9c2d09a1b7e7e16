//! Reductions (sum, mean, max, ...) with `axis`/`keepdims`, arg-reductions and
//! cumulative scans. `sum`, `max`, `min`, `any` and `all` also keep their
//! Python meaning on plain lists and several scalar arguments.

use crate::args::*;
use crate::Registry;
use arr_kernels::{ArgReduceOp, DType, ReduceOp, ScanOp};
use arr_lang::ast::BinOp;
use arr_runtime::eval::{binary_op, iter_items};
use arr_runtime::numpy::{self, normalize_axis, ty};
use arr_runtime::prim::{bind1, Prim};
use arr_runtime::Tensor;
use arr_runtime::{Error, Interp, Result, Value};
use std::cmp::Ordering;

pub(crate) fn register(r: &mut Registry) {
    r.array_func(
        "sum(x, axis=None, keepdims=False, dtype=None, start=0, where=None)",
        "Sum of array elements over axis (None: all axes), of those where `where` is true. On a \
         list or tuple, Python's sum (start + items).",
        sum,
    );
    r.array_func(
        "prod(x, axis=None, keepdims=False, where=None)",
        "Product of array elements over axis (of those where `where` is true).",
        |i, mut a| {
            a[0] = masked(i, &a[0], &a[3], Value::Int(1))?;
            reduce_numeric(ReduceOp::Prod, &a[0], &a[1], &a[2])
        },
    );
    r.array_func(
        "mean(x, axis=None, keepdims=False, where=None)",
        "Arithmetic mean over axis (float32 for integer input), of the elements where `where` \
         is true.",
        mean,
    );
    r.array_func(
        "max(*args, axis=None, keepdims=False, key=None, initial=None, where=None, default=...)",
        "Maximum of an array over axis (with initial among the values; of the elements where \
         `where` is true, which needs initial); with several arguments or a list of numbers, \
         Python's max (`default=`: the result for an empty iterable).",
        |i, a| extremum(i, a, ReduceOp::Max),
    );
    r.array_func(
        "min(*args, axis=None, keepdims=False, key=None, initial=None, where=None, default=...)",
        "Minimum of an array over axis (with initial among the values; of the elements where \
         `where` is true, which needs initial); with several arguments or a list of numbers, \
         Python's min (`default=`: the result for an empty iterable).",
        |i, a| extremum(i, a, ReduceOp::Min),
    );
    r.array_func(
        "all(x, axis=None, keepdims=False, where=None)",
        "Whether every element is true (over axis; of those where `where` is true).",
        |i, mut a| {
            a[0] = iterable_as_list(i, &a[0])?;
            a[0] = masked(i, &a[0], &a[3], Value::Bool(true))?;
            logical(ReduceOp::All, &a)
        },
    );
    r.array_func(
        "any(x, axis=None, keepdims=False, where=None)",
        "Whether any element is true (over axis; of those where `where` is true).",
        |i, mut a| {
            a[0] = iterable_as_list(i, &a[0])?;
            a[0] = masked(i, &a[0], &a[3], Value::Bool(false))?;
            logical(ReduceOp::Any, &a)
        },
    );
    r.array_func(
        "argmax(x, axis=None, keepdims=False)",
        "Index of the first maximum (of the flattened array if axis is None).",
        |_, a| arg_reduce(ArgReduceOp::ArgMax, &a),
    );
    r.array_func(
        "argmin(x, axis=None, keepdims=False)",
        "Index of the first minimum (of the flattened array if axis is None).",
        |_, a| arg_reduce(ArgReduceOp::ArgMin, &a),
    );
    r.array_func(
        "cumsum(x, axis=None, dtype=None)",
        "Cumulative sum along axis (of the flattened array if None).",
        |_, a| scan(ScanOp::Sum, &a),
    );
    r.array_func(
        "cumprod(x, axis=None, dtype=None)",
        "Cumulative product along axis (of the flattened array if None).",
        |_, a| scan(ScanOp::Prod, &a),
    );
    // lax's cumulative reductions: along `axis` (0 by default, never
    // flattening), optionally from the end.
    for (name, op) in [
        ("cumsum", ScanOp::Sum),
        ("cumprod", ScanOp::Prod),
        ("cummax", ScanOp::Max),
        ("cummin", ScanOp::Min),
    ] {
        r.func_from(
            &format!("_lax_{name}(operand, axis=0, reverse=False)"),
            &format!("lax.{name}: the cumulative {name} of operand along axis (from the end if reverse)."),
            move |_, a| lax_cumulative(op, &a),
        );
    }
    r.func(
        "count_nonzero(x, axis=None, keepdims=False)",
        "Number of non-zero elements over axis.",
        count_nonzero,
    );
    // A typed key array's shape is its keys' (without the words axis).
    fn shown_shape(x: &Tensor) -> Vec<usize> {
        numpy::key_shape(x).unwrap_or(x.shape()).to_vec()
    }
    r.func("size(x)", "Number of elements of an array.", |_, a| {
        Ok(Value::Int(
            shown_shape(&array_arg(&a[0])?).iter().product::<usize>() as i64,
        ))
    });
    r.func("ndim(x)", "Number of axes of an array.", |_, a| {
        Ok(Value::Int(shown_shape(&array_arg(&a[0])?).len() as i64))
    });
    r.func("shape(x)", "The shape of an array, as a tuple.", |_, a| {
        Ok(Value::tuple(
            shown_shape(&array_arg(&a[0])?)
                .iter()
                .map(|&d| Value::Int(d as i64))
                .collect(),
        ))
    });
}

/// Sums and products of bools and small ints accumulate in int32 (uint32
/// for unsigned ones), as JAX.
fn sum_input(v: &Value, dtype: &Value) -> Result<Tensor> {
    let x = scan_input(v, dtype)?;
    Ok(match x.dtype() {
        DType::I8 | DType::I16 if matches!(dtype, Value::None) => {
            numpy::convert(x, numpy::default_int())?
        }
        DType::U8 | DType::U16 if matches!(dtype, Value::None) => numpy::convert(x, DType::U32)?,
        _ => x,
    })
}

/// Cumulative sums and products keep small ints; bools count in int32, as JAX.
fn scan_input(v: &Value, dtype: &Value) -> Result<Tensor> {
    let x = array_arg(v)?;
    Ok(match dtype_arg(dtype)? {
        Some(d) => numpy::convert(x, d)?,
        None if x.dtype() == DType::Bool => numpy::convert(x, numpy::default_int())?,
        None => x,
    })
}

/// A user class's iterable instance (a deque, a Counter) as the list of its
/// items, so that Python's sum/min/max/any/all take it; other values as
/// they are (an array-like instance stays one).
fn iterable_as_list(interp: &mut Interp, v: &Value) -> Result<Value> {
    Ok(match v {
        Value::Instance(_) if arr_runtime::class::array_attribute(v).is_none() => interp
            .instance_items(v)
            .map(Value::list)
            .unwrap_or_else(|_| v.clone()),
        // A generator's errors are the program's own.
        _ if arr_runtime::eval::generator::generator_of(v).is_some() => {
            Value::list(interp.items(v)?)
        }
        _ => v.clone(),
    })
}

/// `where(mask, x, fill)` for a reduction's `where=` (x unchanged without one).
fn masked(interp: &mut Interp, x: &Value, mask: &Value, fill: Value) -> Result<Value> {
    if matches!(mask, Value::None) {
        return Ok(x.clone());
    }
    let select = crate::builtin_named(interp, "where")?;
    let x = Value::Array(array_arg(x)?);
    interp.call(&select, vec![mask.clone(), x, fill], Vec::new())
}

fn sum(interp: &mut Interp, mut a: Vec<Value>) -> Result<Value> {
    a[0] = iterable_as_list(interp, &a[0])?;
    a[0] = masked(interp, &a[0], &a[5], Value::Int(0))?;
    if matches!(a[0], Value::List(_) | Value::Tuple(_) | Value::Range(..))
        && matches!(a[1], Value::None)
    {
        let mut acc = a[4].clone();
        for item in interp.items(&a[0])? {
            acc = binary_op(BinOp::Add, acc, item)?;
        }
        return Ok(acc);
    }
    let x = sum_input(&a[0], &a[3])?;
    ok(numpy::reduce(ReduceOp::Sum, x, &a[1], a[2].truthy()?)?)
}

fn reduce_numeric(op: ReduceOp, x: &Value, axis: &Value, keepdims: &Value) -> Result<Value> {
    let x = sum_input(x, &Value::None)?;
    ok(numpy::reduce(op, x, axis, keepdims.truthy()?)?)
}

fn mean(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    if !matches!(a[3], Value::None) {
        // The masked sum over the number of elements the mask keeps.
        let x = Value::Array(float_arg(&a[0])?);
        let kept = masked(interp, &x, &a[3], Value::Float(0.0))?;
        let ones = numpy::binary(arr_kernels::BinaryOp::Mul, &x, &Value::Float(0.0))?;
        let ones = numpy::binary(arr_kernels::BinaryOp::Add, &ones, &Value::Float(1.0))?;
        let count = masked(interp, &ones, &a[3], Value::Float(0.0))?;
        let (axis, keep) = (&a[1], a[2].truthy()?);
        let s = numpy::reduce(ReduceOp::Sum, array_arg(&kept)?, axis, keep)?;
        let n = numpy::reduce(ReduceOp::Sum, array_arg(&count)?, axis, keep)?;
        return numpy::binary(
            arr_kernels::BinaryOp::Div,
            &Value::Array(s),
            &Value::Array(n),
        );
    }
    let x = float_arg(&a[0])?;
    let axes = numpy::parse_axes(&a[1], x.ndim())?;
    let n: usize = axes.iter().map(|&i| x.shape()[i]).product();
    let s = numpy::reduce(ReduceOp::Sum, x, &a[1], a[2].truthy()?)?;
    numpy::binary(
        arr_kernels::BinaryOp::Div,
        &Value::Array(s),
        &Value::Float(n as f64),
    )
}

fn extremum(interp: &mut Interp, a: Vec<Value>, op: ReduceOp) -> Result<Value> {
    let mut args = numpy::sequence_items(&a[0])?;
    if let [one] = args.as_mut_slice() {
        *one = iterable_as_list(interp, one)?;
    }
    let (initial, mask) = (&a[4], &a[5]);
    if !matches!((initial, mask), (Value::None, Value::None)) {
        // As NumPy's: `where=` needs `initial`, which takes part in the
        // reduction (so an all-false row gives it).
        let [x] = args.as_slice() else {
            return Err(Error::type_error(
                "max()/min(): initial and where take one array",
            ));
        };
        if matches!(initial, Value::None) {
            return Err(Error::value_error(
                "reduction operation max/min with where= needs initial= (the value of a row \
                 where selects nothing)",
            ));
        }
        let x = masked(interp, x, mask, initial.clone())?;
        let r = numpy::reduce(op, array_arg(&x)?, &a[1], a[2].truthy()?)?;
        let bop = if op == ReduceOp::Max {
            arr_kernels::BinaryOp::Max
        } else {
            arr_kernels::BinaryOp::Min
        };
        return numpy::binary(bop, &Value::Array(r), initial);
    }
    let (axis, keepdims, key) = (&a[1], &a[2], &a[3]);
    // `default=` (Python's): `...` when not given, since None is a default
    // a program may give.
    let default = (!matches!(a[6], Value::Ellipsis)).then(|| a[6].clone());
    if default.is_some() && args.len() > 1 {
        return Err(Error::type_error(
            "Cannot specify a default for max()/min() with multiple positional arguments",
        ));
    }
    let python = |items: Vec<Value>, interp: &mut Interp| -> Result<Value> {
        if items.is_empty() {
            return match &default {
                Some(d) => Ok(d.clone()),
                None => Err(Error::value_error("max()/min() arg is an empty sequence")),
            };
        }
        let keys = key_values(interp, &items, key)?;
        let mut best = 0;
        for i in 1..items.len() {
            let ord = interp.order_values(&keys[i], &keys[best])?;
            if (op == ReduceOp::Max && ord == Ordering::Greater)
                || (op == ReduceOp::Min && ord == Ordering::Less)
            {
                best = i;
            }
        }
        Ok(items[best].clone())
    };
    match args.as_slice() {
        [] => Err(Error::type_error(
            "max()/min() expected at least 1 argument",
        )),
        [one] => {
            match one {
                Value::Array(_) => {
                    let x = array_arg(one)?;
                    if x.is_empty() && matches!(axis, Value::None) {
                        return Err(Error::value_error(format!("zero-size array {} to reduction operation max/min which has no identity", ty(&x))));
                    }
                    let op = if x.dtype() == DType::Bool {
                        // As any/all they would have an identity: an empty
                        // axis is the error it is for every other dtype.
                        let axes = numpy::parse_axes(axis, x.ndim())?;
                        if let Some(&empty) = axes.iter().find(|&&i| x.shape()[i] == 0) {
                            return Err(Error::value_error(format!("zero-size array {} to reduction operation max/min which has no identity (axis {empty} is empty)", ty(&x))));
                        }
                        if op == ReduceOp::Max {
                            ReduceOp::Any
                        } else {
                            ReduceOp::All
                        }
                    } else {
                        op
                    };
                    ok(numpy::reduce(op, x, axis, keepdims.truthy()?)?)
                }
                // Python's min/max over the items of a dict, set or string,
                // or with a key function.
                seq @ (Value::Dict(_) | Value::Str(_) | Value::Object(_))
                    if matches!(axis, Value::None) =>
                {
                    python(interp.items(seq)?, interp)
                }
                seq @ (Value::List(_) | Value::Tuple(_) | Value::Range(..))
                    if matches!(axis, Value::None) =>
                {
                    let items = interp.items(seq)?;
                    if !matches!(key, Value::None) {
                        return python(items, interp);
                    }
                    if items.iter().any(|v| matches!(v, Value::Array(_))) {
                        let x = array_arg(seq)?;
                        return ok(numpy::reduce(op, x, axis, keepdims.truthy()?)?);
                    }
                    python(items, interp)
                }
                other => ok(numpy::reduce(
                    op,
                    array_arg(other)?,
                    axis,
                    keepdims.truthy()?,
                )?),
            }
        }
        many => {
            if many.iter().any(|v| matches!(v, Value::Array(_))) {
                return Err(Error::type_error("max()/min() of several arrays: use maximum(a, b) / minimum(a, b) for elementwise"));
            }
            python(many.to_vec(), interp)
        }
    }
}

fn logical(op: ReduceOp, a: &[Value]) -> Result<Value> {
    if let (Value::List(_) | Value::Tuple(_), Value::None) = (&a[0], &a[1]) {
        let items = iter_items(&a[0])?;
        if !items.iter().any(|v| matches!(v, Value::Array(_))) {
            let mut out = op == ReduceOp::All;
            for v in items {
                let t = v.truthy()?;
                if op == ReduceOp::All {
                    out &= t
                } else {
                    out |= t
                }
            }
            return Ok(Value::Bool(out));
        }
    }
    let x = numpy::convert(array_arg(&a[0])?, DType::Bool)?;
    ok(numpy::reduce(op, x, &a[1], a[2].truthy()?)?)
}

fn arg_reduce(op: ArgReduceOp, a: &[Value]) -> Result<Value> {
    let mut x = array_arg(&a[0])?;
    let keepdims = a[2].truthy()?;
    let keep_shape: Vec<usize>;
    let axis = match &a[1] {
        Value::None => {
            keep_shape = vec![1; x.ndim()];
            x = numpy::reshape(x.clone(), &[x.len()])?;
            0
        }
        v => {
            let ax = normalize_axis(int_arg("axis", v)?, x.ndim())?;
            keep_shape = x
                .shape()
                .iter()
                .enumerate()
                .map(|(i, &d)| if i == ax { 1 } else { d })
                .collect();
            ax
        }
    };
    if x.dtype() == DType::Bool {
        x = numpy::convert(x, DType::I32)?;
    }
    let r = bind1(&Prim::ArgReduce { op, axis }, vec![x])?;
    ok(if keepdims {
        numpy::reshape(r, &keep_shape)?
    } else {
        r
    })
}

fn scan(op: ScanOp, a: &[Value]) -> Result<Value> {
    let (x, axis) = flatten_or_axis(scan_input(&a[0], &a[2])?, &a[1])?;
    ok(bind1(
        &Prim::Cumulative {
            op,
            axis,
            reverse: false,
        },
        vec![x],
    )?)
}

fn lax_cumulative(op: ScanOp, a: &[Value]) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axis = numpy::normalize_axis(int_arg("axis", &a[1])?, x.ndim())?;
    let reverse = a[2].truthy()?;
    ok(bind1(&Prim::Cumulative { op, axis, reverse }, vec![x])?)
}

fn count_nonzero(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = numpy::convert(array_arg(&a[0])?, DType::Bool)?;
    let x = numpy::convert(x, numpy::default_int())?;
    ok(numpy::reduce(ReduceOp::Sum, x, &a[1], a[2].truthy()?)?)
}
