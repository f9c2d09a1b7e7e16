//! The `random` module: JAX's counter-based PRNG (Threefry-2x32 keys), bit for bit.
//!
//! A key is a `u32[2]` array, as `jax.random.PRNGKey`; `random.key` tags it
//! as a typed key (`Flavour::Key`: shape `()`, dtype `key<fry>`), which
//! `split` and `fold_in` keep. Every sampler follows
//! JAX with `jax_threefry_partitionable=True` (the default in current JAX): the
//! random bits of an element depend only on the key and the element's row-major
//! flat index, so `normal(key, (1000,))` and `normal(key, (10, 100))` hold the same
//! numbers. Every array computation goes through the primitives (`bind`), so the
//! same code will trace and fuse once those exist.

use crate::dtype_arg;
use arr_kernels::{Array, BinaryOp, Buffer, DType, Flavour, UnaryOp};
use arr_runtime::numpy::{self, ty};
use arr_runtime::prim::{bind, bind1, Prim};
use arr_runtime::Tensor;
use arr_runtime::{Error, ErrorKind, Interp, Result, Value};

pub(crate) fn register(r: &mut crate::Registry) {
    r.module(
        "random",
        "Random numbers from explicit keys, as jax.random: make a key with random.key(seed), \
         split it with random.split, and pass a fresh key to every sampler.",
        &[
            (
                "key(seed)",
                "A typed PRNG key (shape (), dtype key<fry>) from an integer seed: its words are \
                 [seed >> 32, seed & 0xFFFFFFFF], as jax.random.key.",
                |i, a| Ok(typed(raw_key(i, a)?)),
            ),
            (
                "PRNGKey(seed)",
                "A raw PRNG key, u32[2], from an integer seed (random.key's words).",
                raw_key,
            ),
            (
                "key_data(keys)",
                "The u32 words of typed keys: shape + (2,).",
                |_, a| Ok(numpy::with_flavour(Value::Array(keys_arg("key_data", &a[0])?), Flavour::Jax)),
            ),
            (
                "wrap_key_data(key_bits_array, impl=None)",
                "Typed keys over u32 words of shape + (2,) (the inverse of key_data).",
                wrap_key_data,
            ),
            (
                "split(key, num=2)",
                "`num` new keys from one: u32[num, 2] (or shape + (2,) when num is a shape tuple).",
                split,
            ),
            ("fold_in(key, data)", "A new key (u32[2]) derived from `key` and the integer `data`.", fold_in),
            ("bits(key, shape=())", "Uniformly random 32-bit words: u32 array of `shape`.", bits),
            (
                "uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0)",
                "Uniform floats in [minval, maxval) of `shape` (float32 unless dtype says float64).",
                uniform,
            ),
            (
                "normal(key, shape=(), dtype=None)",
                "Standard normal floats of `shape` (float32 unless dtype says float64).",
                normal,
            ),
            (
                "randint(key, shape, minval, maxval, dtype=None)",
                "Uniform integers in [minval, maxval) of `shape` (int32 unless dtype is uint32 or int64); \
                 minval and maxval may be arrays that broadcast to shape.",
                randint,
            ),
            (
                "permutation(key, x, axis=0, independent=False)",
                "A random permutation of arange(x) (int32) when x is an int, else x shuffled along axis \
                 (each slice on its own if independent).",
                permutation,
            ),
            (
                "bernoulli(key, p=0.5, shape=None)",
                "Random booleans, True with probability p: bool array of `shape` (default: p's shape).",
                bernoulli,
            ),
            (
                "choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None)",
                "Random samples from arange(a) (a an int) or from the first axis of array a, \
                 with or without replacement: shape + a.shape[1:]; weighted by p, or along \
                 another axis, by the prelude's `_choice_weighted` (JAX's algorithms).",
                choice,
            ),
        ],
    );
}

// ---------------------------------------------------------------------------
// Keys and the Threefry plumbing

fn u32_scalar(x: u32) -> Tensor {
    Array::new(&[], Buffer::U32(vec![x])).into()
}

/// The key argument of `random.<fname>`: a u32[2] array.
fn key_arg(fname: &str, v: &Value) -> Result<Tensor> {
    match v {
        Value::Array(a) if a.dtype() == DType::U32 && a.shape() == [2] => Ok(a.clone()),
        Value::Array(a) => Err(Error::type_error(format!(
            "random.{fname}: key must be a u32[2] key array (from random.key(seed)), got {}",
            ty(a)
        ))),
        other => Err(Error::type_error(format!(
            "random.{fname}: key must be a u32[2] key array (from random.key(seed)), got {}",
            other.type_name()
        ))),
    }
}

/// A shape argument, with the function named in errors.
fn shape_arg(fname: &str, v: &Value) -> Result<Vec<usize>> {
    numpy::parse_shape(v)
        .map_err(|e| Error::new(e.kind, format!("random.{fname}: shape: {}", e.message)))
}

/// The two words of a key as 0-d arrays.
fn key_words(key: &Tensor) -> Result<(Tensor, Tensor)> {
    let word = |i: usize| -> Result<Tensor> {
        let s = bind1(
            &Prim::Slice {
                start: vec![i],
                limit: vec![i + 1],
                stride: vec![1],
            },
            vec![key.clone()],
        )?;
        numpy::reshape(s, &[])
    };
    Ok((word(0)?, word(1)?))
}

/// `threefry2x32(k0, k1, x0, x1)` with the key words broadcast to the counters' shape.
fn threefry(key: &Tensor, x0: Tensor, x1: Tensor) -> Result<(Tensor, Tensor)> {
    let (k0, k1) = key_words(key)?;
    let shape = x0.shape().to_vec();
    let k0 = numpy::broadcast_to(k0, &shape)?;
    let k1 = numpy::broadcast_to(k1, &shape)?;
    let mut out = bind(&Prim::Threefry2x32, vec![k0, k1, x0, x1])?;
    let b1 = out
        .pop()
        .ok_or_else(|| Error::value_error("threefry2x32 returned no outputs"))?;
    let b0 = out
        .pop()
        .ok_or_else(|| Error::value_error("threefry2x32 returned one output"))?;
    Ok((b0, b1))
}

/// JAX's `iota_2x32_shape`: the high and low 32-bit words of every element's
/// row-major flat index. Sizes are limited to 2**32 elements, so the high word is 0.
fn iota_2x32(fname: &str, shape: &[usize]) -> Result<(Tensor, Tensor)> {
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or_else(|| {
            Error::value_error(format!(
                "random.{fname}: shape {shape:?} has more than 2**32 - 1 elements"
            ))
        })?;
    let lo = bind1(
        &Prim::Iota {
            dtype: DType::U32,
            shape: vec![n],
            dim: 0,
        },
        Vec::<Tensor>::new(),
    )?;
    let lo = numpy::reshape(lo, shape)?;
    let hi = numpy::broadcast_to(u32_scalar(0), shape)?;
    Ok((hi, lo))
}

/// The two Threefry output words for each element of `shape` (JAX's partitionable scheme).
fn bits_pair(fname: &str, key: &Tensor, shape: &[usize]) -> Result<(Tensor, Tensor)> {
    let (hi, lo) = iota_2x32(fname, shape)?;
    threefry(key, hi, lo)
}

/// 32 random bits per element: `b0 ^ b1` (JAX's `_random_bits` with bit_width 32).
fn random_bits(fname: &str, key: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (b0, b1) = bits_pair(fname, key, shape)?;
    bind1(&Prim::Binary(BinaryOp::Xor), vec![b0, b1])
}

/// `split(key, shape)`: keys of shape + (2,), row i = threefry(key, hi(i), lo(i)).
fn split_keys(fname: &str, key: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (b0, b1) = bits_pair(fname, key, shape)?;
    let mut col_shape = shape.to_vec();
    col_shape.push(1);
    let cols = vec![
        numpy::reshape(b0, &col_shape)?,
        numpy::reshape(b1, &col_shape)?,
    ];
    bind1(&Prim::Concatenate { axis: shape.len() }, cols)
}

/// `key, subkey = split(key)`: the two rows of a two-way split.
fn split2(fname: &str, key: &Tensor) -> Result<(Tensor, Tensor)> {
    let keys = split_keys(fname, key, &[2])?;
    let row = |i: usize| -> Result<Tensor> {
        let s = bind1(
            &Prim::Slice {
                start: vec![i, 0],
                limit: vec![i + 1, 2],
                stride: vec![1, 1],
            },
            vec![keys.clone()],
        )?;
        numpy::reshape(s, &[2])
    };
    Ok((row(0)?, row(1)?))
}

/// Typed keys over the words `v` holds.
fn typed(v: Value) -> Value {
    numpy::with_flavour(v, Flavour::Key)
}

/// `v` (what split or fold_in made of `key`) as typed keys when `key` was typed.
fn like_key(key: &Value, v: Value) -> Value {
    match key {
        Value::Array(k) if k.is_key() => typed(v),
        _ => v,
    }
}

/// Keys of any shape (typed, or raw words with a last axis of 2).
fn keys_arg(fname: &str, v: &Value) -> Result<Tensor> {
    match v {
        Value::Array(a) if a.dtype() == DType::U32 && a.shape().last() == Some(&2) => Ok(a.clone()),
        other => Err(Error::type_error(format!(
            "random.{fname}: expected keys (from random.key or random.split), got {}",
            match other {
                Value::Array(a) => ty(a),
                v => v.type_name().to_string(),
            }
        ))),
    }
}

fn wrap_key_data(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let words = keys_arg("wrap_key_data", &args[0]).or_else(|_| -> Result<Tensor> {
        let a = numpy::to_tensor(&args[0])?;
        if a.dtype().is_int() && a.shape().last() == Some(&2) {
            numpy::convert(a, DType::U32)
        } else {
            Err(Error::type_error(format!(
                "random.wrap_key_data: expected uint32 words with a last axis of 2, got {}",
                ty(&a)
            )))
        }
    })?;
    Ok(typed(Value::Array(words)))
}

fn raw_key(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    // JAX's `threefry_seed` without 64-bit mode: the seed as a 32-bit
    // integer (modulo 2**32) in the low word, the high word 0.
    if let Value::Array(t) = &args[0] {
        if t.dtype().is_int() && t.shape().is_empty() {
            // A traced seed (random.key inside vmap or jit) stays a tensor.
            let low = numpy::reshape(numpy::convert(t.clone(), DType::U32)?, &[1])?;
            let high = Array::new(&[1], Buffer::U32(vec![0])).into();
            return Ok(Value::Array(bind1(
                &Prim::Concatenate { axis: 0 },
                vec![high, low],
            )?));
        }
    }
    let seed = args[0].to_int()?.ok_or_else(|| {
        Error::type_error(format!(
            "random.key: seed must be an int, got {}",
            args[0].type_name()
        ))
    })?;
    Ok(Value::Array(
        Array::new(&[2], Buffer::U32(vec![0, seed as u32])).into(),
    ))
}

fn split(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("split", &args[0])?;
    let shape = match &args[1] {
        Value::Tuple(_) | Value::List(_) => shape_arg("split", &args[1])?,
        v => match v.to_int()? {
            Some(n) if n >= 0 => vec![n as usize],
            Some(n) => {
                return Err(Error::value_error(format!(
                    "random.split: num must be non-negative, got {n}"
                )))
            }
            None => {
                return Err(Error::type_error(format!(
                    "random.split: num must be an int or a shape tuple, got {}",
                    v.type_name()
                )))
            }
        },
    };
    Ok(like_key(
        &args[0],
        Value::Array(split_keys("split", &key, &shape)?),
    ))
}

fn fold_in(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("fold_in", &args[0])?;
    // The data may be traced (fold_in inside vmap over indices): it stays a tensor.
    let data = match &args[1] {
        Value::Int(i) => Tensor::from(Array::new(&[1], Buffer::U32(vec![*i as u32]))),
        Value::Array(t) if t.dtype().is_int() && t.len() == 1 => {
            numpy::reshape(numpy::convert(t.clone(), DType::U32)?, &[1])?
        }
        other => {
            return Err(Error::type_error(format!(
                "random.fold_in: data must be an int, got {}",
                other.type_name()
            )))
        }
    };
    // JAX: threefry_2x32(key, threefry_seed(uint32(data))) = threefry(key, [0], [data]).
    let x0 = Array::new(&[1], Buffer::U32(vec![0])).into();
    let x1 = data;
    let (b0, b1) = threefry(&key, x0, x1)?;
    let folded = bind1(&Prim::Concatenate { axis: 0 }, vec![b0, b1])?;
    Ok(like_key(&args[0], Value::Array(folded)))
}

fn bits(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("bits", &args[0])?;
    let shape = shape_arg("bits", &args[1])?;
    Ok(Value::Array(random_bits("bits", &key, &shape)?))
}

// ---------------------------------------------------------------------------
// Floats

/// A float `dtype=` argument (None means float32).
fn float_dtype(fname: &str, v: &Value) -> Result<DType> {
    match dtype_arg(v)? {
        None => Ok(numpy::default_float()),
        Some(d) if d.is_float() => Ok(d),
        Some(d) => Err(Error::type_error(format!(
            "random.{fname}: dtype must be a float dtype, got {d}"
        ))),
    }
}

/// `x op y` for arrays of one dtype (broadcasting).
fn bin(op: BinaryOp, x: Tensor, y: Tensor) -> Result<Tensor> {
    bind1(&Prim::Binary(op), vec![x, y])
}

/// A bound such as `minval` as an array of `dtype` broadcast to `shape`.
fn bound_arg(fname: &str, what: &str, v: &Value, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let a = numpy::to_array_as(v, dtype)?;
    // Only a shape that does not fit is this error: a MemoryError (an
    // impossible `shape`) stays one.
    numpy::broadcast_to(a.clone(), shape).map_err(|e| match e.kind {
        ErrorKind::ShapeError | ErrorKind::ValueError => Error::shape_error(format!(
            "random.{fname}: {what} of shape {:?} does not broadcast to shape {shape:?}",
            a.shape()
        )),
        _ => e,
    })
}

/// JAX's `_uniform`: random mantissa bits under exponent 0 give a float in
/// [1, 2); minus 1, scaled and shifted, clamped below at minval.
fn uniform_array(
    fname: &str,
    key: &Tensor,
    shape: &[usize],
    dtype: DType,
    minval: Tensor,
    maxval: Tensor,
) -> Result<Tensor> {
    let floats = if dtype == DType::F64 {
        // 64 random bits (b0 << 32 | b1); the mantissa is their top 52 bits, so the
        // float is b0 * 2**-32 + (b1 >> 12) * 2**-52, both products and the sum exact.
        let (b0, b1) = bits_pair(fname, key, shape)?;
        let hi = bin(
            BinaryOp::Mul,
            numpy::convert(b0, DType::F64)?,
            numpy::scalar_array(2f64.powi(-32), DType::F64).into(),
        )?;
        let lo = bin(BinaryOp::ShiftRight, b1, u32_scalar(12))?;
        let lo = bin(
            BinaryOp::Mul,
            numpy::convert(lo, DType::F64)?,
            numpy::scalar_array(2f64.powi(-52), DType::F64).into(),
        )?;
        bin(BinaryOp::Add, hi, lo)?
    } else if let Some((width, mantissa)) = sixteen_bit(dtype) {
        // JAX draws `width` bits (the low bits of b0 ^ b1: 16 for float16,
        // 8 for bfloat16, whose 7 mantissa bits are fewer than 8), keeps the
        // top `mantissa` of them and reads 1.m - 1 = m * 2**-mantissa, which
        // the 16-bit type holds exactly.
        let b = random_bits(fname, key, shape)?;
        let low = bin(BinaryOp::And, b, u32_scalar((1u32 << width) - 1))?;
        let m = bin(BinaryOp::ShiftRight, low, u32_scalar(width - mantissa))?;
        let f = bin(
            BinaryOp::Mul,
            numpy::convert(m, DType::F32)?,
            Array::scalar_f32(2f32.powi(-(mantissa as i32))).into(),
        )?;
        numpy::convert(f, dtype)?
    } else {
        // ((bits >> 9) | 0x3F800000) as f32 - 1.0 is exactly (bits >> 9) * 2**-23.
        let b = random_bits(fname, key, shape)?;
        let m = bin(BinaryOp::ShiftRight, b, u32_scalar(9))?;
        bin(
            BinaryOp::Mul,
            numpy::convert(m, DType::F32)?,
            Array::scalar_f32(2f32.powi(-23)).into(),
        )?
    };
    let width = bin(BinaryOp::Sub, maxval, minval.clone())?;
    // JAX's CPU compiler contracts `floats * width + minval` into one fused
    // multiply-add. For float32 the same single rounding comes from float64:
    // the product of two float32s is exact there, and the sum rounds once
    // before the float32 rounding (a double rounding, which can differ from
    // a true FMA only when the float64 sum lands exactly halfway between two
    // float32s: rare, and then off by one unit in the last place).
    let scaled = if dtype == DType::F32 {
        let wide = |t: Tensor| numpy::convert(t, DType::F64);
        let sum = bin(
            BinaryOp::Add,
            bin(BinaryOp::Mul, wide(floats)?, wide(width)?)?,
            wide(minval.clone())?,
        )?;
        numpy::convert(sum, DType::F32)?
    } else {
        bin(
            BinaryOp::Add,
            bin(BinaryOp::Mul, floats, width)?,
            minval.clone(),
        )?
    };
    bin(BinaryOp::Max, minval, scaled)
}

/// For a 16-bit float: how many random bits JAX draws for it, and its
/// mantissa bits.
fn sixteen_bit(dtype: DType) -> Option<(u32, u32)> {
    match dtype {
        DType::F16 => Some((16, 10)),
        DType::BF16 => Some((8, 7)),
        _ => None,
    }
}

fn uniform(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("uniform", &args[0])?;
    let shape = shape_arg("uniform", &args[1])?;
    let dtype = float_dtype("uniform", &args[2])?;
    let minval = bound_arg("uniform", "minval", &args[3], dtype, &shape)?;
    let maxval = bound_arg("uniform", "maxval", &args[4], dtype, &shape)?;
    Ok(Value::Array(uniform_array(
        "uniform", &key, &shape, dtype, minval, maxval,
    )?))
}

fn normal(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("normal", &args[0])?;
    let shape = shape_arg("normal", &args[1])?;
    let dtype = float_dtype("normal", &args[2])?;
    // JAX's `_normal_real`: u uniform in (nextafter(-1, 0), 1), then sqrt(2) * erfinv(u).
    let (lo, sqrt2): (Tensor, Tensor) = match dtype {
        DType::F64 => (
            Array::new(&[], Buffer::F64(vec![-(1.0 - f64::EPSILON / 2.0)])).into(),
            Array::new(&[], Buffer::F64(vec![std::f64::consts::SQRT_2])).into(),
        ),
        DType::F32 => (
            Array::scalar_f32(-(1.0 - f32::EPSILON / 2.0)).into(),
            Array::scalar_f32(std::f32::consts::SQRT_2).into(),
        ),
        // nextafter(-1, 0) in the 16-bit type: -(1 - 2**-(mantissa + 1)).
        _ => {
            let (_, mantissa) = sixteen_bit(dtype).expect("a float dtype");
            let lo = -(1.0 - 2f64.powi(-(mantissa as i32) - 1));
            (
                numpy::scalar_array(lo, dtype).into(),
                numpy::scalar_array(std::f64::consts::SQRT_2, dtype).into(),
            )
        }
    };
    let minval = numpy::broadcast_to(lo, &shape)?;
    let maxval = numpy::broadcast_to(numpy::scalar_array(1.0, dtype).into(), &shape)?;
    let u = uniform_array("normal", &key, &shape, dtype, minval, maxval)?;
    let e = bind1(&Prim::Unary(UnaryOp::ErfInv), vec![u])?;
    Ok(Value::Array(bin(BinaryOp::Mul, sqrt2, e)?))
}

fn bernoulli(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("bernoulli", &args[0])?;
    let p = crate::float_arg(&args[1])?;
    let shape = match &args[2] {
        Value::None => p.shape().to_vec(),
        v => shape_arg("bernoulli", v)?,
    };
    let p = bound_arg(
        "bernoulli",
        "p",
        &Value::Array(p.clone()),
        p.dtype(),
        &shape,
    )?;
    let zero = numpy::broadcast_to(numpy::scalar_array(0.0, p.dtype()).into(), &shape)?;
    let one = numpy::broadcast_to(numpy::scalar_array(1.0, p.dtype()).into(), &shape)?;
    let u = uniform_array("bernoulli", &key, &shape, p.dtype(), zero, one)?;
    Ok(Value::Array(bin(BinaryOp::Lt, u, p)?))
}

// ---------------------------------------------------------------------------
// Integers

/// JAX's `_randint`: two independent 32-bit draws reduced modulo the span with
/// `(hi % span) * (2**32 % span) + lo % span`, which halves the modulo bias.
///
/// `minval`/`maxval` are int64 arrays of `shape`. int64 results use the 32-bit
/// algorithm (JAX with x64 draws 64-bit words), so their span must fit in 32 bits.
/// 8- and 16-bit results are drawn as int32 between the bounds clipped to
/// their range (JAX's `randint` does so to reduce the modulo bias).
fn randint_array(
    fname: &str,
    key: &Tensor,
    shape: &[usize],
    minval: Tensor,
    maxval: Tensor,
    dtype: DType,
) -> Result<Tensor> {
    if dtype.is_narrow_int() {
        let (lo, hi) = match dtype {
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::U8 => (0, u8::MAX as i64),
            _ => (0, u16::MAX as i64),
        };
        let i64s = |x: i64| -> Tensor { Array::new(&[], Buffer::I64(vec![x])).into() };
        let clip = |a: Tensor, top: i64| -> Result<Tensor> {
            bin(BinaryOp::Min, bin(BinaryOp::Max, a, i64s(lo))?, i64s(top))
        };
        let (minval, maxval) = (clip(minval, hi)?, clip(maxval, hi + 1)?);
        let drawn = randint_array(fname, key, shape, minval, maxval, DType::I32)?;
        return numpy::convert(drawn, dtype);
    }
    let (dmin, dmax) = match dtype {
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::U32 => (0, u32::MAX as i64),
        DType::I64 => (i64::MIN, i64::MAX),
        d => {
            return Err(Error::type_error(format!(
                "random.{fname}: dtype must be an integer dtype, got {d}"
            )))
        }
    };
    let i64s = |x: i64| -> Tensor { Array::new(&[], Buffer::I64(vec![x])).into() };
    let maxval_out_of_range = bin(BinaryOp::Gt, maxval.clone(), i64s(dmax))?;
    let clip = |a: Tensor| -> Result<Tensor> {
        bin(
            BinaryOp::Min,
            bin(BinaryOp::Max, a, i64s(dmin))?,
            i64s(dmax),
        )
    };
    let minval = clip(minval)?;
    let maxval = clip(maxval)?;
    if dtype == DType::I64 {
        // Checking the span reads the bounds, so int64 draws need concrete bounds.
        let (lo_bounds, hi_bounds) = (minval.concrete()?, maxval.concrete()?);
        let (lo_bounds, hi_bounds) = (lo_bounds.buffer()?, hi_bounds.buffer()?);
        let too_wide = (0..minval.len()).any(|i| {
            let (lo, hi) = (lo_bounds.get_i64(i) as i128, hi_bounds.get_i64(i) as i128);
            hi - lo > u32::MAX as i128
        });
        if too_wide {
            return Err(Error::value_error(format!(
                "random.{fname}: int64 ranges wider than 2**32 - 1 are not supported (use smaller bounds)"
            )));
        }
    }
    let empty = bin(BinaryOp::Le, maxval.clone(), minval.clone())?;
    let nonempty = bin(BinaryOp::Gt, maxval.clone(), minval.clone())?;
    // The span wraps modulo 2**32 like JAX's conversion to the unsigned dtype.
    let span = numpy::convert(bin(BinaryOp::Sub, maxval, minval.clone())?, DType::U32)?;
    let one = numpy::broadcast_to(u32_scalar(1), shape)?;
    // An empty range always gives minval.
    let span = bind1(&Prim::Select, vec![empty, one.clone(), span])?;
    // maxval beyond the dtype: the span reaches the dtype's maximum inclusive.
    let widen = bin(BinaryOp::And, maxval_out_of_range, nonempty)?;
    let span = bind1(
        &Prim::Select,
        vec![widen, bin(BinaryOp::Add, span.clone(), one)?, span],
    )?;

    let (k1, k2) = split2(fname, key)?;
    let higher = random_bits(fname, &k1, shape)?;
    let lower = random_bits(fname, &k2, shape)?;
    let multiplier = bin(BinaryOp::Mod, u32_scalar(1 << 16), span.clone())?;
    let multiplier = bin(
        BinaryOp::Mod,
        bin(BinaryOp::Mul, multiplier.clone(), multiplier)?,
        span.clone(),
    )?;
    let offset = bin(
        BinaryOp::Add,
        bin(
            BinaryOp::Mul,
            bin(BinaryOp::Mod, higher, span.clone())?,
            multiplier,
        )?,
        bin(BinaryOp::Mod, lower, span.clone())?,
    )?;
    let offset = bin(BinaryOp::Mod, offset, span)?;
    bin(
        BinaryOp::Add,
        numpy::convert(minval, dtype)?,
        numpy::convert(offset, dtype)?,
    )
}

fn int_dtype(fname: &str, v: &Value) -> Result<DType> {
    match dtype_arg(v)? {
        None => Ok(numpy::default_int()),
        Some(d) if d.is_int() => Ok(d),
        Some(d) => Err(Error::type_error(format!(
            "random.{fname}: dtype must be an integer dtype, got {d}"
        ))),
    }
}

fn randint(_: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("randint", &args[0])?;
    let shape = shape_arg("randint", &args[1])?;
    let dtype = int_dtype("randint", &args[4])?;
    // A Python int bound becomes an array of the default integer type first,
    // as in JAX (`jnp.asarray(2**40)` is an OverflowError); arrays are clipped.
    let python_int = if dtype == DType::I64 {
        DType::I64
    } else {
        DType::I32
    };
    for bound in &args[2..4] {
        if let Value::Int(_) = bound {
            numpy::to_array_as(bound, python_int)?;
        }
    }
    let minval = bound_arg("randint", "minval", &args[2], DType::I64, &shape)?;
    let maxval = bound_arg("randint", "maxval", &args[3], DType::I64, &shape)?;
    Ok(Value::Array(randint_array(
        "randint", &key, &shape, minval, maxval, dtype,
    )?))
}

/// JAX's `_shuffle` of `arange(n)`: rounds of a stable sort by fresh random
/// 32-bit keys, enough rounds (3 * log(n) / log(2**32 - 1)) that ties are unlikely.
fn shuffled_indices(fname: &str, key: &Tensor, n: usize) -> Result<Tensor> {
    let mut idx = bind1(
        &Prim::Iota {
            dtype: DType::I32,
            shape: vec![n],
            dim: 0,
        },
        Vec::<Tensor>::new(),
    )?;
    let rounds = (3.0 * (n.max(1) as f64).ln() / (u32::MAX as f64).ln()).ceil() as usize;
    let mut key = key.clone();
    for _ in 0..rounds {
        let (next, sub) = split2(fname, &key)?;
        key = next;
        let sort_keys = random_bits(fname, &sub, &[n])?;
        let order = bind1(&Prim::Argsort { axis: 0 }, vec![sort_keys])?;
        idx = bind1(&Prim::Gather { axis: 0, batch: 0 }, vec![idx, order])?;
    }
    Ok(idx)
}

/// `n` from an int argument (a Python int or a 0-d integer array).
fn count_arg(fname: &str, what: &str, v: &Value) -> Result<Option<usize>> {
    let int_like = match v {
        Value::Array(a) => a.ndim() == 0 && (a.dtype().is_int()),
        Value::Int(_) => true,
        _ => false,
    };
    if !int_like {
        return Ok(None);
    }
    match v.to_int()? {
        Some(n) if n >= 0 => Ok(Some(n as usize)),
        Some(n) => Err(Error::value_error(format!(
            "random.{fname}: {what} must be non-negative, got {n}"
        ))),
        None => Ok(None),
    }
}

fn permutation(interp: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let key = key_arg("permutation", &args[0])?;
    if let Some(n) = count_arg("permutation", "x", &args[1])? {
        return Ok(Value::Array(shuffled_indices("permutation", &key, n)?));
    }
    let x = numpy::to_tensor(&args[1])?;
    if x.ndim() == 0 {
        return Err(Error::type_error(format!(
            "random.permutation: x must be an integer or at least one-dimensional, got {}",
            ty(&x)
        )));
    }
    let axis = crate::args::flatten_or_axis(x.clone(), &args[2])?.1;
    if args[3].truthy()? && x.ndim() > 1 {
        // Each slice along axis on its own: JAX sorts x by fresh random
        // words of x's shape, round after round, as for arange(n).
        let take_along = interp
            .builtins
            .get(interp.interner.intern("take_along_axis") as usize)
            .cloned()
            .flatten()
            .ok_or_else(|| {
                Error::type_error("random.permutation: take_along_axis is not loaded")
            })?;
        let rounds = (3.0 * (x.len().max(1) as f64).ln() / (u32::MAX as f64).ln()).ceil() as usize;
        let (mut key, mut x) = (key, Value::Array(x));
        for _ in 0..rounds {
            let (next, sub) = split2("permutation", &key)?;
            key = next;
            let shape = numpy::to_tensor(&x)?.shape().to_vec();
            let sort_keys = random_bits("permutation", &sub, &shape)?;
            let order = bind1(&Prim::Argsort { axis }, vec![sort_keys])?;
            x = interp.call(
                &take_along,
                vec![x, Value::Array(order), Value::Int(axis as i64)],
                Vec::new(),
            )?;
        }
        return Ok(x);
    }
    // JAX shuffles arange(n) and takes along axis: the same order as shuffling x itself.
    let idx = shuffled_indices("permutation", &key, x.shape()[axis])?;
    Ok(Value::Array(bind1(
        &Prim::Gather { axis, batch: 0 },
        vec![x, idx],
    )?))
}

fn choice(interp: &mut Interp, args: Vec<Value>) -> Result<Value> {
    let plain_axis = matches!(args[5], Value::Int(0));
    if !matches!(args[4], Value::None) || !plain_axis {
        let id = interp.interner.intern("_choice_weighted") as usize;
        let weighted =
            interp.builtins.get(id).cloned().flatten().ok_or_else(|| {
                Error::type_error("random.choice: _choice_weighted is not loaded")
            })?;
        return interp.call(&weighted, args, Vec::new());
    }
    let key = key_arg("choice", &args[0])?;
    let shape = shape_arg("choice", &args[2])?;
    let replace = args[3].truthy()?;
    let (n, arr) = match count_arg("choice", "a", &args[1])? {
        Some(n) => (n, None),
        None => {
            let a = numpy::to_tensor(&args[1])?;
            if a.ndim() == 0 {
                return Err(Error::value_error(format!(
                    "random.choice: a must be an integer or at least one-dimensional, got {}",
                    ty(&a)
                )));
            }
            (a.shape()[0], Some(a))
        }
    };
    let n_draws: usize = shape.iter().product();
    let mut out_shape = shape.clone();
    if let Some(a) = &arr {
        out_shape.extend_from_slice(&a.shape()[1..]);
    }
    if n_draws == 0 {
        let dtype = arr.as_ref().map_or(numpy::default_int(), |a| a.dtype());
        return Ok(Value::Array(Array::zeros(dtype, &out_shape).into()));
    }
    if n == 0 {
        return Err(Error::value_error(
            "random.choice: a must be non-empty unless no samples are taken",
        ));
    }
    let idx = if replace {
        let lo = numpy::broadcast_to(Array::new(&[], Buffer::I64(vec![0])).into(), &shape)?;
        let hi = numpy::broadcast_to(Array::new(&[], Buffer::I64(vec![n as i64])).into(), &shape)?;
        randint_array("choice", &key, &shape, lo, hi, DType::I32)?
    } else {
        if n_draws > n {
            return Err(Error::value_error(format!(
                "random.choice: cannot take {n_draws} samples from a population of {n} without replacement"
            )));
        }
        let perm = shuffled_indices("choice", &key, n)?;
        let first = bind1(
            &Prim::Slice {
                start: vec![0],
                limit: vec![n_draws],
                stride: vec![1],
            },
            vec![perm],
        )?;
        numpy::reshape(first, &shape)?
    };
    Ok(Value::Array(match arr {
        None => idx,
        Some(a) => bind1(&Prim::Gather { axis: 0, batch: 0 }, vec![a, idx])?,
    }))
}
