//! Array creation: array/asarray, zeros/ones/full/empty (and `_like`), arange, eye, dtypes.

use crate::args::*;
use crate::Registry;
use arr_kernels::{Array, Buffer, DType, Flavour};
use arr_runtime::numpy::{self, parse_shape};
use arr_runtime::prim::{bind1, check_alloc, Prim};
use arr_runtime::Tensor;
use arr_runtime::{Error, Interp, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    for d in DType::ALL {
        if d != DType::Bool {
            r.value(d.name(), Value::DType(d));
        }
    }
    r.value("bool_", Value::DType(DType::Bool));
    r.value("inf", Value::Float(f64::INFINITY));
    r.value("nan", Value::Float(f64::NAN));
    r.value("pi", Value::Float(std::f64::consts::PI));
    r.value("e", Value::Float(std::f64::consts::E));
    r.value("newaxis", Value::None);
    r.func(
        "array(x, dtype=None, copy=True, order=None)",
        "A new array from nested lists, numbers or another array (float32 for floats, int32 for ints).",
        |i, a| from_numpy(array, i, a),
    );
    r.func(
        "asarray(x, dtype=None, order=None, copy=None)",
        "x as an array (no copy if it already is one of that dtype).",
        |i, a| from_numpy(asarray, i, a),
    );
    r.func(
        "_np_asarray(x, dtype=None, order=None, copy=None)",
        "numpy.asarray: x as an array on the host (a sharded array gathered whole).",
        |i, a| {
            // A JAX array's elements seen as an ndarray: a read-only view,
            // as NumPy's asarray of a JAX array is.
            let view = matches!(&a[0], Value::Array(_)) && !numpy::is_ndarray(&a[0]);
            let r = on_host(asarray(i, a)?)?;
            Ok(numpy::with_flavour(r, Flavour::NumPy { writeable: !view }))
        },
    );
    r.func(
        "_np_array(x, dtype=None, copy=True, order=None)",
        "numpy.array: a new array on the host (a sharded array gathered whole).",
        |i, a| Ok(numpy::with_flavour(on_host(array(i, a)?)?, numpy::NDARRAY)),
    );
    r.func(
        "dtype(x)",
        "The dtype x names: a dtype, a name such as \"float32\", float/int/bool, or an array's dtype.",
        dtype,
    );
    r.func(
        "zeros(shape, dtype=None)",
        "An array of zeros (float32 unless dtype is given).",
        zeros,
    );
    r.func(
        "ones(shape, dtype=None)",
        "An array of ones (float32 unless dtype is given).",
        ones,
    );
    r.func(
        "empty(shape, dtype=None)",
        "An array of the given shape (filled with zeros).",
        zeros,
    );
    r.func(
        "full(shape, fill_value, dtype=None)",
        "An array filled with fill_value (its dtype unless given).",
        full,
    );
    r.func(
        "zeros_like(x, dtype=None)",
        "Zeros with the shape and dtype of x.",
        zeros_like,
    );
    r.func(
        "ones_like(x, dtype=None)",
        "Ones with the shape and dtype of x.",
        ones_like,
    );
    r.func(
        "empty_like(x, dtype=None)",
        "An array with the shape and dtype of x (zeros).",
        zeros_like,
    );
    r.func(
        "full_like(x, fill_value, dtype=None)",
        "fill_value with the shape and dtype of x.",
        full_like,
    );
    r.func(
        "arange(start, stop=None, step=None, dtype=None)",
        "Evenly spaced values in [start, stop): int32 for int arguments, float32 if any is a float.",
        arange,
    );
    r.func(
        "eye(N, M=None, k=0, dtype=None)",
        "A 2-D array with ones on the k-th diagonal.",
        eye,
    );
    r.func(
        "identity(n, dtype=None)",
        "The n x n identity matrix.",
        identity,
    );
    r.func(
        "iota(dtype, shape, dimension=0)",
        "Indices 0, 1, 2, ... along one dimension of shape (lax.iota).",
        iota,
    );
    r.method(
        "array",
        "astype(self, dtype)",
        "The array converted to dtype.",
        astype,
    );
    r.method(
        "array",
        "copy(self)",
        "The same values, as an array of its own: donating or deleting one \
         leaves the other (the elements are shared until then, never copied).",
        |_, a| {
            let t = array_arg(&a[0])?;
            Ok(match &t {
                Tensor::Concrete(_) => Value::Array(Tensor::from(t.concrete()?.handle()?)),
                Tensor::Traced(_) => a[0].clone(),
            })
        },
    );
    r.method(
        "array",
        "item(self)",
        "The value of a one-element array as a Python scalar.",
        item,
    );
    r.method(
        "array",
        "tolist(self)",
        "The array as nested Python lists of scalars.",
        tolist,
    );
}

/// `array(x)`: a new array, as NumPy's `array` copies. Of an array, a
/// handle of its own (the elements shared, never copied): donating or
/// deleting `x` later leaves it, and a deleted `x` has nothing to give.
fn array(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // NumPy's array of device objects, as meshes are made from.
    if let Some(grid) = crate::sharding_api::device_grid(&a[0])? {
        return Ok(grid);
    }
    let src = match &a[0] {
        Value::Array(Tensor::Concrete(x)) => Some(x.clone()),
        _ => None,
    };
    let out = asarray(interp, a)?;
    match (src, &out) {
        (Some(x), Value::Array(Tensor::Concrete(y))) if x.same(y) => Ok(Value::Array(
            Tensor::from(x.handle()?.with_weak(x.is_weak())),
        )),
        _ => Ok(out),
    }
}

/// NumPy's arrays live on the host: a concrete array laid out over devices
/// comes back whole, without its layout (as `np.asarray(jax_array)` does).
/// `array`/`asarray` (jnp's too): of a NumPy array, a JAX array, whose
/// 64-bit dtypes become 32-bit unless `dtype` asks otherwise (JAX's
/// canonical dtypes, as `jnp.asarray(np.arange(3))` gives int32), unless
/// jax_enable_x64 is on or NumPy's own function calls it.
fn from_numpy(
    f: fn(&mut Interp, Vec<Value>) -> Result<Value>,
    interp: &mut Interp,
    mut a: Vec<Value>,
) -> Result<Value> {
    if numpy::is_ndarray(&a[0])
        && matches!(a[1], Value::None)
        && !numpy::x64()
        && !numpy::in_numpy()
    {
        let d = array_arg(&a[0])?.dtype();
        a[1] = Value::DType(numpy::x32_of(d));
    }
    Ok(numpy::with_flavour(f(interp, a)?, Flavour::Jax))
}

fn on_host(v: Value) -> Result<Value> {
    match &v {
        Value::Array(Tensor::Concrete(a)) if a.placement().is_some() => Ok(Value::Array(
            Tensor::from(Array::from_arc(a.shape(), a.buffer()?)),
        )),
        _ => Ok(v),
    }
}

fn asarray(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match dtype_arg(&a[1])? {
        // Numbers (alone or in lists) convert straight to `d`, not through
        // the float32 they would otherwise be.
        Some(d) => match &a[0] {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::List(_) | Value::Tuple(_) => {
                ok(numpy::to_array_as(&a[0], d)?)
            }
            _ => ok(numpy::convert(array_arg(&a[0])?, d)?.weakened(false)),
        },
        None => ok(array_arg(&a[0])?),
    }
}

/// `x` repeated into `shape` as an array of `dtype`.
pub(crate) fn filled(shape: &[usize], x: &Value, dtype: DType) -> Result<Tensor> {
    check_alloc(shape, dtype)?;
    // A concrete scalar is repeated directly; anything else (an array, or a
    // traced scalar) is broadcast, which also works under transformations.
    let scalar = match numpy::to_array_as(x, dtype)? {
        Tensor::Concrete(a) if a.ndim() == 0 => a,
        other => return numpy::broadcast_to(other, shape),
    };
    let n: usize = shape.iter().product();
    let buf = match &*scalar.buffer()? {
        Buffer::Bool(v) => Buffer::Bool(vec![v[0]; n]),
        Buffer::I8(v) => Buffer::I8(vec![v[0]; n]),
        Buffer::I16(v) => Buffer::I16(vec![v[0]; n]),
        Buffer::U8(v) => Buffer::U8(vec![v[0]; n]),
        Buffer::U16(v) => Buffer::U16(vec![v[0]; n]),
        Buffer::I32(v) => Buffer::I32(vec![v[0]; n]),
        Buffer::I64(v) => Buffer::I64(vec![v[0]; n]),
        Buffer::U32(v) => Buffer::U32(vec![v[0]; n]),
        Buffer::BF16(v) => Buffer::BF16(vec![v[0]; n]),
        Buffer::F16(v) => Buffer::F16(vec![v[0]; n]),
        Buffer::F32(v) => Buffer::F32(vec![v[0]; n]),
        Buffer::F64(v) => Buffer::F64(vec![v[0]; n]),
        Buffer::C64(v) => Buffer::C64(vec![v[0]; n]),
    };
    Ok(Array::new(shape, buf).into())
}

fn dtype(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let d = match &a[0] {
        Value::Array(t) => t.dtype(),
        v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_)) => numpy::to_tensor(v)?.dtype(),
        Value::None => return Err(Error::type_error("dtype(None) names no dtype")),
        v => dtype_arg(v)?.expect("not None"),
    };
    Ok(Value::DType(d))
}

fn zeros(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dtype = dtype_arg(&a[1])?.unwrap_or(numpy::default_float());
    let shape = parse_shape(&a[0])?;
    check_alloc(&shape, dtype)?;
    ok(Array::zeros(dtype, &shape).into())
}

fn ones(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dtype = dtype_arg(&a[1])?.unwrap_or(numpy::default_float());
    ok(filled(&parse_shape(&a[0])?, &Value::Int(1), dtype)?)
}

fn full(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (dtype, weak) = match dtype_arg(&a[2])? {
        Some(d) => (d, false),
        None => numpy::result_type(&[&a[1]])?,
    };
    ok(filled(&parse_shape(&a[0])?, &a[1], dtype)?.weakened(weak))
}

fn zeros_like(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let given = dtype_arg(&a[1])?;
    let dtype = given.unwrap_or(x.dtype());
    check_alloc(x.shape(), dtype)?;
    let weak = given.is_none() && x.is_weak();
    ok(laid_out_like(
        &x,
        Tensor::from(Array::zeros(dtype, x.shape())).weakened(weak),
    )?)
}

fn ones_like(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let given = dtype_arg(&a[1])?;
    let dtype = given.unwrap_or(x.dtype());
    let weak = given.is_none() && x.is_weak();
    ok(laid_out_like(
        &x,
        filled(x.shape(), &Value::Int(1), dtype)?.weakened(weak),
    )?)
}

fn full_like(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let given = dtype_arg(&a[2])?;
    let dtype = given.unwrap_or(x.dtype());
    let weak = given.is_none() && x.is_weak();
    ok(laid_out_like(
        &x,
        filled(x.shape(), &a[1], dtype)?.weakened(weak),
    )?)
}

/// `out` (made in `x`'s shape) laid out over the mesh as `x` is, as JAX's
/// `*_like` keep their operand's sharding (traced too: automatic JIT must
/// not change a layout): an optimiser's state then lives where its
/// parameter does.
fn laid_out_like(x: &Tensor, out: Tensor) -> Result<Tensor> {
    match x.placement() {
        Some(p) if out.placement().is_none() => bind1(&Prim::ShardingConstraint(p), [out]),
        _ => Ok(out),
    }
}

fn arange(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (start, stop) = match &a[1] {
        Value::None => (Value::Int(0), a[0].clone()),
        stop => (a[0].clone(), stop.clone()),
    };
    let step = if matches!(a[2], Value::None) {
        Value::Int(1)
    } else {
        a[2].clone()
    };
    let all_int = [&start, &stop, &step]
        .iter()
        .all(|v| matches!(v, Value::Int(_) | Value::Bool(_)));
    let dtype = match dtype_arg(&a[3])? {
        Some(d) => d,
        None if all_int => numpy::default_int(),
        None => numpy::default_float(),
    };
    let (x0, x1, dx) = (
        f64_arg("start", &start)?,
        f64_arg("stop", &stop)?,
        f64_arg("step", &step)?,
    );
    if dx == 0.0 {
        return Err(Error::value_error("arange: step must not be zero"));
    }
    if all_int {
        let (i0, i1, di) = (
            start.as_int().unwrap_or(0),
            stop.as_int().unwrap_or(0),
            step.as_int().unwrap_or(1),
        );
        // Exact in integers: the count, and the values made in the result's
        // own type (no wider intermediate of n elements).
        let span = (i1 as i128 - i0 as i128 + di as i128 - di.signum() as i128) / di as i128;
        let n = usize::try_from(span.max(0)).unwrap_or(usize::MAX);
        check_alloc(&[n], dtype)?;
        let last = i0 as i128 + (n.max(1) as i128 - 1) * di as i128;
        let value = |k: usize| i0 + k as i64 * di;
        let buffer = match dtype {
            DType::I32 => {
                for v in [i0 as i128, last] {
                    if i32::try_from(v).is_err() {
                        return Err(Error::new(
                            arr_runtime::ErrorKind::OverflowError,
                            format!("arange: {v} does not fit int32 (give dtype=int64)"),
                        ));
                    }
                }
                Buffer::I32((0..n).map(|k| value(k) as i32).collect())
            }
            DType::I64 => Buffer::I64((0..n).map(value).collect()),
            DType::F32 => Buffer::F32((0..n).map(|k| value(k) as f32).collect()),
            DType::F64 => Buffer::F64((0..n).map(|k| value(k) as f64).collect()),
            _ => {
                check_alloc(&[n], DType::I64)?;
                return ok(numpy::convert(
                    Array::new(&[n], Buffer::I64((0..n).map(value).collect())).into(),
                    dtype,
                )?);
            }
        };
        return ok(Array::new(&[n], buffer).into());
    }
    let n = ((x1 - x0) / dx).ceil().max(0.0);
    let n = if n < usize::MAX as f64 {
        n as usize
    } else {
        usize::MAX
    };
    check_alloc(&[n], dtype)?;
    // As NumPy's fill (which jax.numpy calls for these arguments): the
    // first two values are `start` and `start + step` in the result's type,
    // and value k is `first + k * (second - first)` computed in that type.
    fn fill<
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    >(
        n: usize,
        first: T,
        second: T,
        index: impl Fn(usize) -> T,
    ) -> Vec<T> {
        let delta = second - first;
        (0..n)
            .map(|k| match k {
                0 => first,
                1 => second,
                _ => first + index(k) * delta,
            })
            .collect()
    }
    let buffer = match dtype {
        DType::F32 => Buffer::F32(fill(n, x0 as f32, (x0 + dx) as f32, |k| k as f32)),
        DType::F64 => Buffer::F64(fill(n, x0, x0 + dx, |k| k as f64)),
        _ => {
            check_alloc(&[n], DType::F64)?;
            return ok(numpy::convert(
                Array::new(&[n], Buffer::F64(fill(n, x0, x0 + dx, |k| k as f64))).into(),
                dtype,
            )?);
        }
    };
    ok(Array::new(&[n], buffer).into())
}

fn eye(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let n = int_arg("N", &a[0])?.max(0) as usize;
    let m = opt_int_arg("M", &a[1])?.map_or(n, |m| m.max(0) as usize);
    let k = int_arg("k", &a[2])?;
    let dtype = dtype_arg(&a[3])?.unwrap_or(numpy::default_float());
    check_alloc(&[n, m], dtype)?;
    check_alloc(&[n, m], DType::F64)?;
    let mut vals = vec![0.0f64; n * m];
    for i in 0..n {
        let j = i as i64 + k;
        if j >= 0 && (j as usize) < m {
            vals[i * m + j as usize] = 1.0;
        }
    }
    ok(numpy::convert(
        Array::new(&[n, m], Buffer::F64(vals)).into(),
        dtype,
    )?)
}

fn identity(i: &mut Interp, a: Vec<Value>) -> Result<Value> {
    eye(
        i,
        vec![a[0].clone(), Value::None, Value::Int(0), a[1].clone()],
    )
}

fn iota(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dtype = dtype_arg(&a[0])?.unwrap_or(numpy::default_int());
    let shape = parse_shape(&a[1])?;
    let dim = numpy::normalize_axis(int_arg("dimension", &a[2])?, shape.len())?;
    ok(bind1(
        &Prim::Iota { dtype, shape, dim },
        Vec::<Tensor>::new(),
    )?)
}

fn astype(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    // A JAX array without x64 takes a 64-bit dtype as JAX does (truncated).
    let dtype = match interp.jax_rules
        && numpy::jax_32bit()
        && !numpy::is_ndarray(&a[0])
        && !numpy::in_numpy()
    {
        true => crate::modules::x32_dtype(interp, Some("astype"), &a[1])?,
        false => a[1].clone(),
    };
    let d = dtype_arg(&dtype)?.ok_or_else(|| Error::type_error("astype needs a dtype"))?;
    ok(numpy::convert(array_arg(&a[0])?, d)?.weakened(false))
}

fn item(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    numpy::item(&array_arg(&a[0])?)
}

fn tolist(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let x = x.concrete()?;
    // One value per element, and a list per row of every axis but the last.
    arr_runtime::value::check_items("list", &[x.len()])?;
    fn build(x: &Array, b: &Buffer, axis: usize, offset: usize) -> Value {
        if axis == x.ndim() {
            return match x.dtype() {
                DType::Bool => Value::Bool(b.get_f64(offset) != 0.0),
                d if d.is_int() => Value::Int(b.get_i64(offset)),
                _ => Value::Float(b.get_f64(offset)),
            };
        }
        let stride: usize = x.shape()[axis + 1..].iter().product();
        Value::list(
            (0..x.shape()[axis])
                .map(|i| build(x, b, axis + 1, offset + i * stride))
                .collect(),
        )
    }
    Ok(build(x, &*x.buffer()?, 0, 0))
}
