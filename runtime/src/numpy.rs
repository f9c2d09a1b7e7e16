//! NumPy semantics over the primitives: conversion to arrays, dtype promotion
//! with weak Python scalars (as JAX), operators, axes, matmul.
//!
//! Everything here ends in `bind`; nothing touches buffers directly.

use crate::error::{Error, ErrorKind, Result};
use crate::prim::{bind1, type_str, Prim};
use crate::tensor::Tensor;
use crate::value::Value;
use arr_kernels::{
    broadcast_shapes, Array, BinaryOp, Buffer, DType, DotDims, Flavour, ReduceOp, UnaryOp,
};
use std::cell::Cell;

thread_local! {
    /// NumPy's function or method running on this thread (`numpy_defaults`).
    static NUMPY_DEFAULTS: Cell<bool> = const { Cell::new(false) };
}

/// The float dtype of Python floats and of results that become float:
/// float32, as JAX without x64 (and arr's own names); float64 in NumPy's
/// functions and methods and on NumPy's arrays, and in a JAX program with
/// `jax_enable_x64`.
pub fn default_float() -> DType {
    if wide_defaults() {
        DType::F64
    } else {
        DType::F32
    }
}

/// The integer dtype of Python ints: int32 or int64, as `default_float`.
pub fn default_int() -> DType {
    if wide_defaults() {
        DType::I64
    } else {
        DType::I32
    }
}

fn wide_defaults() -> bool {
    in_numpy() || (JAX_DTYPES.with(Cell::get) && x64())
}

/// Whether one of NumPy's functions or methods is running (`numpy_defaults`):
/// its arrays keep NumPy's dtypes, also where they pass through jax.numpy's
/// rules (`asarray` of a float64 array inside `np.var`).
pub fn in_numpy() -> bool {
    NUMPY_DEFAULTS.with(Cell::get)
}

/// While the returned guard lives, this thread's defaults are NumPy's
/// 64-bit ones (`on`) or JAX's 32-bit ones; the previous state comes back
/// when it drops (also on an error's early return).
#[must_use]
pub fn numpy_defaults(on: bool) -> DefaultsScope {
    DefaultsScope(NUMPY_DEFAULTS.with(|c| c.replace(on)))
}

/// See `numpy_defaults`.
pub struct DefaultsScope(bool);

impl Drop for DefaultsScope {
    fn drop(&mut self) {
        NUMPY_DEFAULTS.with(|c| c.set(self.0));
    }
}

pub fn ty(a: &Tensor) -> String {
    type_str(a.shape(), a.dtype())
}

/// JAX's promotion lattice for two strong dtypes: bool < ints < floats,
/// and any int with a float gives that float.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (Bool, x) | (x, Bool) => x,
        // complex64 wins over every real type (no complex128 yet).
        (C64, _) | (_, C64) => C64,
        (F64, _) | (_, F64) => F64,
        (F32, _) | (_, F32) => F32,
        // The two 16-bit floats meet in float32; either with an int stays.
        (BF16, F16) | (F16, BF16) => F32,
        (BF16, _) | (_, BF16) => BF16,
        (F16, _) | (_, F16) => F16,
        _ => promote_ints(a, b),
    }
}

/// Two integer dtypes: the wider of one signedness; a signed and an
/// unsigned one meet in the smallest signed type holding both (u8 and i8
/// in i16, u32 and i32 in i64), as in JAX and NumPy.
fn promote_ints(a: DType, b: DType) -> DType {
    use DType::*;
    let info = |d: DType| match d {
        I8 => (8, true),
        I16 => (16, true),
        I32 => (32, true),
        I64 => (64, true),
        U8 => (8, false),
        U16 => (16, false),
        U32 => (32, false),
        _ => (64, true),
    };
    let signed = |bits| match bits {
        8 => I8,
        16 => I16,
        32 => I32,
        _ => I64,
    };
    let unsigned = |bits| match bits {
        8 => U8,
        16 => U16,
        _ => U32,
    };
    let ((ab, asg), (bb, bsg)) = (info(a), info(b));
    match (asg, bsg) {
        (true, true) => signed(ab.max(bb)),
        (false, false) => unsigned(ab.max(bb)),
        (true, false) => signed(ab.max(2 * bb)),
        (false, true) => signed(bb.max(2 * ab)),
    }
}

/// How a value takes part in promotion.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Strong(DType),
    WeakInt,
    WeakFloat,
}

fn kind_of(v: &Value) -> Result<Kind> {
    Ok(match v {
        Value::Array(a) if a.is_weak() && a.dtype().is_float() => Kind::WeakFloat,
        Value::Array(a) if a.is_weak() && a.dtype().is_int() => Kind::WeakInt,
        Value::Array(a) => Kind::Strong(a.dtype()),
        Value::Bool(_) => Kind::Strong(DType::Bool),
        Value::Int(_) => Kind::WeakInt,
        Value::Float(_) => Kind::WeakFloat,
        Value::List(_) | Value::Tuple(_) => Kind::Strong(to_tensor(v)?.dtype()),
        other => {
            return Err(Error::type_error(format!(
                "expected an array or a number, got {}",
                other.type_name()
            )))
        }
    })
}

/// The common dtype of operands, with Python scalars weakly typed.
pub fn result_dtype(values: &[&Value]) -> Result<DType> {
    Ok(result_type(values)?.0)
}

/// The common dtype of operands and whether it is weak (JAX's lattice: the
/// result is weak when no strong operand's dtype decides it, as in
/// `arange(3) * 1.0` or `asarray(2.0) + 1`).
pub fn result_type(values: &[&Value]) -> Result<(DType, bool)> {
    let weak = |t: &Tensor| t.is_weak();
    // The common case, an array with an array or a Python scalar, without allocating.
    if let [a, b] = values {
        match (a, b) {
            (Value::Array(x), Value::Array(y)) if x.dtype() == y.dtype() => {
                return Ok((x.dtype(), weak(x) && weak(y)))
            }
            (Value::Array(x), Value::Float(_)) | (Value::Float(_), Value::Array(x))
                if x.dtype().is_inexact() =>
            {
                return Ok((x.dtype(), weak(x)))
            }
            (Value::Array(x), Value::Int(_)) | (Value::Int(_), Value::Array(x))
                if x.dtype() != DType::Bool =>
            {
                return Ok((x.dtype(), weak(x)))
            }
            _ => {}
        }
    }
    let kinds: smallvec::SmallVec<[Kind; 4]> =
        values.iter().map(|v| kind_of(v)).collect::<Result<_>>()?;
    let strong = kinds
        .iter()
        .filter_map(|k| {
            if let Kind::Strong(d) = k {
                Some(*d)
            } else {
                None
            }
        })
        .reduce(promote_types);
    let any_float = kinds.contains(&Kind::WeakFloat);
    let any_int = kinds.contains(&Kind::WeakInt);
    Ok(match strong {
        Some(d) if any_float && !d.is_inexact() => (default_float(), true),
        Some(DType::Bool) if any_int => (default_int(), true),
        Some(d) => (d, false),
        None if any_float => (default_float(), true),
        None => (default_int(), true),
    })
}

/// A 0-d array holding `x` converted to `dtype`.
pub fn scalar_array(x: f64, dtype: DType) -> Array {
    cached_scalar((false, x.to_bits()), dtype, || make_scalar_array(x, dtype))
}

/// The last few Python scalars turned into 0-d arrays. A loop such as
/// `y = y * 0.99 + b` would otherwise allocate the same constant on every
/// iteration. Sharing is safe: arrays are immutable, and a cached one is
/// never uniquely owned, so no kernel reuses its buffer in place.
const SCALAR_CACHE: usize = 8;

/// The cache: the next slot to replace, and the entries.
type ScalarCache = (usize, Vec<(ScalarKey, DType, Array)>);

thread_local! {
    static SCALARS: std::cell::RefCell<ScalarCache> = const { std::cell::RefCell::new((0, Vec::new())) };
}

/// (is an integer, bits): ints and floats with equal bit patterns stay apart.
type ScalarKey = (bool, u64);

fn cached_scalar(bits: ScalarKey, dtype: DType, make: impl FnOnce() -> Array) -> Array {
    SCALARS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((_, _, a)) = cache.1.iter().find(|(b, d, _)| *b == bits && *d == dtype) {
            return a.clone();
        }
        // Pinned: every user of this value shares one array.
        let a = make().pinned();
        let (next, entries) = &mut *cache;
        if entries.len() < SCALAR_CACHE {
            entries.push((bits, dtype, a.clone()));
        } else {
            entries[*next] = (bits, dtype, a.clone());
            *next = (*next + 1) % SCALAR_CACHE;
        }
        a
    })
}

fn make_scalar_array(x: f64, dtype: DType) -> Array {
    let buf = match dtype {
        DType::Bool => Buffer::Bool(vec![x != 0.0]),
        DType::I8 => Buffer::I8(vec![x as i64 as i8]),
        DType::I16 => Buffer::I16(vec![x as i64 as i16]),
        DType::U8 => Buffer::U8(vec![x as i64 as u8]),
        DType::U16 => Buffer::U16(vec![x as i64 as u16]),
        DType::I32 => Buffer::I32(vec![x as i32]),
        DType::I64 => Buffer::I64(vec![x as i64]),
        DType::U32 => Buffer::U32(vec![x as u32]),
        DType::BF16 => Buffer::BF16(vec![arr_kernels::dtype::bf16_from_f64(x)]),
        DType::F16 => Buffer::F16(vec![arr_kernels::dtype::f16_from_f64(x)]),
        DType::F32 => Buffer::F32(vec![x as f32]),
        DType::F64 => Buffer::F64(vec![x]),
        DType::C64 => Buffer::C64(vec![arr_kernels::complex::C64::new(x as f32, 0.0)]),
    };
    Array::new(&[], buf)
}

fn int_scalar_array(x: i64, dtype: DType) -> Array {
    match dtype {
        DType::I32 => cached_scalar((true, x as u64), dtype, || {
            Array::new(&[], Buffer::I32(vec![x as i32]))
        }),
        DType::I64 => cached_scalar((true, x as u64), dtype, || {
            Array::new(&[], Buffer::I64(vec![x]))
        }),
        DType::U32 => cached_scalar((true, x as u64), dtype, || {
            Array::new(&[], Buffer::U32(vec![x as u32]))
        }),
        _ => scalar_array(x as f64, dtype),
    }
}

/// Convert any array-like value (array, number, bool, nested lists/tuples) to an array.
pub fn to_tensor(v: &Value) -> Result<Tensor> {
    let a = match v {
        Value::Array(a) => return Ok(a.clone()),
        Value::Bool(b) => Array::new(&[], Buffer::Bool(vec![*b])),
        // Python numbers are weakly typed (`jnp.asarray(2.0)`, a jit argument).
        Value::Int(i) => {
            if *i > i32::MAX as i64 || *i < i32::MIN as i64 {
                Array::new(&[], Buffer::I64(vec![*i]))
            } else if default_int() == DType::I64 {
                Array::new(&[], Buffer::I64(vec![*i])).with_weak(true)
            } else {
                Array::new(&[], Buffer::I32(vec![*i as i32])).with_weak(true)
            }
        }
        Value::Float(f) if default_float() == DType::F64 => {
            Array::new(&[], Buffer::F64(vec![*f])).with_weak(true)
        }
        Value::Float(f) => Array::new(&[], Buffer::F32(vec![*f as f32])).with_weak(true),
        Value::List(_) | Value::Tuple(_) => return nested_to_array(v),
        // An iterator's remaining items (`sum(x * x for x in gen)`).
        Value::Object(o) if o.as_any().is::<crate::eval::IterValue>() => {
            return nested_to_array(&Value::list(crate::eval::iter_items(v)?))
        }
        Value::Instance(_) if crate::class::array_attribute(v).is_some() => {
            return to_tensor(&crate::class::array_attribute(v).expect("checked"))
        }
        other => {
            return Err(Error::type_error(format!(
                "cannot convert {} to an array",
                other.type_name()
            )))
        }
    };
    Ok(Tensor::Concrete(a))
}

/// Convert to an array of exactly `dtype` (Python scalars convert directly, without a detour through f32).
pub fn to_array_as(v: &Value, dtype: DType) -> Result<Tensor> {
    match v {
        Value::Int(i) => {
            let fits = match dtype {
                DType::I8 => i8::try_from(*i).is_ok(),
                DType::I16 => i16::try_from(*i).is_ok(),
                DType::U8 => u8::try_from(*i).is_ok(),
                DType::U16 => u16::try_from(*i).is_ok(),
                DType::I32 => i32::try_from(*i).is_ok(),
                DType::U32 => *i <= u32::MAX as i64,
                _ => true,
            };
            if !fits {
                return Err(Error::new(
                    ErrorKind::OverflowError,
                    format!("Python int {i} too large to convert to {dtype}"),
                ));
            }
            Ok(int_scalar_array(*i, dtype).into())
        }
        Value::Float(f) => Ok(scalar_array(*f, dtype).into()),
        Value::Bool(b) => Ok(scalar_array(*b as u8 as f64, dtype).into()),
        // Each number of a list converts once, to `dtype` (a float64 list
        // keeps its digits, a float16 one rounds once).
        Value::List(_) | Value::Tuple(_) => nested_to_array_as(v, Some(dtype)),
        // A dtype asked for is a strong type (`jnp.float32(x)`, `astype`).
        _ => Ok(convert(to_tensor(v)?, dtype)?.weakened(false)),
    }
}

fn nested_to_array(v: &Value) -> Result<Tensor> {
    nested_to_array_as(v, None)
}

/// A nested list as an array of `dtype`, or of its elements' common dtype.
fn nested_to_array_as(v: &Value, dtype: Option<DType>) -> Result<Tensor> {
    let mut shape = Vec::new();
    let mut leaves = Vec::new();
    flatten_nested(v, 0, &mut shape, &mut leaves, &mut None)?;
    let refs: Vec<&Value> = leaves.iter().collect();
    let dtype = match dtype {
        Some(d) => d,
        None if leaves.is_empty() => default_float(),
        None if leaves.iter().all(|l| matches!(l, Value::Bool(_))) => DType::Bool,
        // Python ints beyond int32 make an int64 list, as one such int does.
        None => match result_dtype(&refs)? {
            DType::I32
                if leaves
                    .iter()
                    .any(|l| matches!(l, Value::Int(i) if i32::try_from(*i).is_err())) =>
            {
                DType::I64
            }
            d => d,
        },
    };
    let mut parts = Vec::with_capacity(leaves.len());
    for l in &leaves {
        parts.push(to_array_as(l, dtype)?);
    }
    let flat = if parts.is_empty() {
        Tensor::Concrete(Array::zeros(dtype, &[0]))
    } else {
        let rows = parts
            .iter()
            .map(|p| reshape(p.clone(), &[p.len()]))
            .collect::<Result<Vec<_>>>()?;
        bind1(&Prim::Concatenate { axis: 0 }, rows)?
    };
    reshape(flat, &shape)
}

/// Append the numbers of `v` (at nesting `depth`) to `out`, growing `shape`.
/// `rank` is the depth every number sits at once one was seen: a number
/// beside a list (`[1, [2]]`) is an inhomogeneous shape, as in NumPy.
fn flatten_nested(
    v: &Value,
    depth: usize,
    shape: &mut Vec<usize>,
    out: &mut Vec<Value>,
    rank: &mut Option<usize>,
) -> Result<()> {
    // NumPy's bound on dimensions; it also stops a list holding itself.
    const MAX_DIMS: usize = 64;
    if depth > MAX_DIMS {
        return Err(Error::value_error(format!(
            "maximum supported dimension for an ndarray is {MAX_DIMS}, found {depth} (a list holding itself?)"
        )));
    }
    let mut leaf_at = |d: usize| -> Result<()> {
        match *rank {
            Some(r) if r != d => Err(inhomogeneous(depth)),
            _ => {
                *rank = Some(d);
                Ok(())
            }
        }
    };
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Array(a) => {
            // An array inside a list contributes its own dimensions. Concrete
            // ones are split into scalars (so promotion sees each value);
            // a traced one stays whole and is concatenated as a block.
            let dims = a.shape();
            leaf_at(depth + dims.len())?;
            check_dims(depth, dims, shape)?;
            match a {
                Tensor::Concrete(a) => {
                    let b = a.buffer()?;
                    for i in 0..a.len() {
                        out.push(match a.dtype() {
                            DType::Bool => Value::Bool(b.get_f64(i) != 0.0),
                            d if d.is_int() => {
                                Value::Array(int_scalar_array(b.get_i64(i), d).into())
                            }
                            DType::C64 => Value::Array(complex_element(&b, i).into()),
                            d => Value::Array(scalar_array(b.get_f64(i), d).into()),
                        });
                    }
                }
                Tensor::Traced(_) => out.push(v.clone()),
            }
            return Ok(());
        }
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            leaf_at(depth)?;
            check_dims(depth, &[], shape)?;
            out.push(v.clone());
            return Ok(());
        }
        other => {
            return Err(Error::type_error(format!(
                "cannot convert a list containing {} to an array",
                other.type_name()
            )))
        }
    };
    if rank.is_some_and(|r| r <= depth) {
        return Err(inhomogeneous(depth));
    }
    if depth == shape.len() {
        shape.push(items.len());
    } else if shape[depth] != items.len() {
        return Err(Error::value_error(
            "setting an array element with a sequence: the nested lists have different lengths",
        ));
    }
    for item in &items {
        flatten_nested(item, depth + 1, shape, out, rank)?;
    }
    if items.is_empty() && shape.len() == depth + 1 {
        return Ok(());
    }
    Ok(())
}

fn inhomogeneous(depth: usize) -> Error {
    Error::value_error(format!(
        "setting an array element with a sequence: the nested lists have an inhomogeneous shape after {depth} dimension{}",
        if depth == 1 { "" } else { "s" }
    ))
}

fn check_dims(depth: usize, dims: &[usize], shape: &mut Vec<usize>) -> Result<()> {
    if shape.len() == depth {
        shape.extend_from_slice(dims);
        return Ok(());
    }
    if shape.len() != depth + dims.len() || shape[depth..] != *dims {
        return Err(Error::value_error(
            "setting an array element with a sequence: the nested lists have different shapes",
        ));
    }
    Ok(())
}

pub fn convert(a: Tensor, dtype: DType) -> Result<Tensor> {
    if a.dtype() == dtype {
        return Ok(a);
    }
    bind1(&Prim::Convert(dtype), vec![a])
}

/// Arrays of the common dtype of `values` (weak scalars adopt it).
pub fn promote(values: &[&Value]) -> Result<Vec<Tensor>> {
    let (dtype, weak) = result_type(values)?;
    values
        .iter()
        .map(|v| Ok(to_array_as(v, dtype)?.weakened(weak)))
        .collect()
}

/// Whether `v` is a NumPy array (see `Flavour`).
pub fn is_ndarray(v: &Value) -> bool {
    matches!(v, Value::Array(Tensor::Concrete(a)) if matches!(a.flavour(), Flavour::NumPy { .. }))
}

/// Whether an operator on these operands gives a NumPy array, as in NumPy:
/// some operand is one and the rest are NumPy arrays or Python numbers (a
/// JAX array among them makes the result a JAX array).
pub fn ndarray_operands(operands: &[&Value]) -> bool {
    operands.iter().any(|v| is_ndarray(v))
        && operands
            .iter()
            .all(|v| is_ndarray(v) || matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_)))
}

/// `v` with its arrays, and those of the tuple or list it is, given
/// `flavour` (a NumPy array keeps its own writeability).
pub fn with_flavour(v: Value, flavour: Flavour) -> Value {
    match v {
        // A tracer knows only whether it stands for keys.
        Value::Array(t @ Tensor::Traced(_)) => match flavour {
            Flavour::Key => Value::Array(t.keyed(true)),
            Flavour::Jax => Value::Array(t.keyed(false)),
            Flavour::NumPy { .. } => Value::Array(t),
        },
        Value::Array(Tensor::Concrete(a)) => {
            let keep = matches!(
                (a.flavour(), flavour),
                (Flavour::NumPy { .. }, Flavour::NumPy { .. })
            );
            if keep {
                Value::Array(Tensor::Concrete(a))
            } else {
                Value::Array(Tensor::Concrete(a.with_flavour(flavour)))
            }
        }
        Value::Tuple(items) => Value::tuple(
            items
                .iter()
                .map(|x| with_flavour(x.clone(), flavour))
                .collect(),
        ),
        Value::List(items) => Value::list(
            items
                .borrow()
                .iter()
                .map(|x| with_flavour(x.clone(), flavour))
                .collect(),
        ),
        other => other,
    }
}

/// The shape a typed key array shows (its data without the words axis);
/// None for any other array.
pub fn key_shape(t: &Tensor) -> Option<&[usize]> {
    match t {
        Tensor::Concrete(a) if a.flavour() == Flavour::Key && a.ndim() > 0 => {
            Some(&a.shape()[..a.ndim() - 1])
        }
        Tensor::Traced(tr) if tr.key && !tr.aval.shape.is_empty() => {
            Some(&tr.aval.shape[..tr.aval.shape.len() - 1])
        }
        _ => None,
    }
}

/// The dtype of typed PRNG keys, `key<fry>` (Threefry keys, as JAX's default).
#[derive(Debug)]
pub struct KeyDType;

impl crate::value::Object for KeyDType {
    fn type_name(&self) -> &'static str {
        "KeyTy"
    }
    fn repr(&self) -> String {
        "key<fry>".into()
    }
    fn equals(&self, other: &dyn crate::value::Object) -> bool {
        other.as_any().is::<KeyDType>()
    }
    fn attr(&self, name: &str) -> Option<Value> {
        match name {
            "name" => Some(Value::str("key<fry>")),
            // Two uint32 words per key, as JAX's key<fry> itemsize.
            "itemsize" => Some(Value::Int(8)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A part of `of` (an item, a row): a NumPy array's parts are NumPy
/// arrays and a key array's are keys; any other's are JAX arrays.
pub fn part_of(of: &Tensor, part: Tensor) -> Value {
    let flavour = match of {
        Tensor::Concrete(a) => match a.flavour() {
            Flavour::NumPy { .. } => NDARRAY,
            f => f,
        },
        Tensor::Traced(t) if t.key => Flavour::Key,
        Tensor::Traced(_) => Flavour::Jax,
    };
    match flavour {
        Flavour::Jax => Value::Array(part),
        f => with_flavour(Value::Array(part), f),
    }
}

/// `r`, what an operation on `of` alone gave (a method, a transpose, a
/// negation): of a NumPy array, a NumPy array.
pub fn like_operand(of: &Value, r: Value) -> Value {
    if is_ndarray(of) {
        with_flavour(r, NDARRAY)
    } else {
        r
    }
}

/// The flavour of a fresh NumPy result.
pub const NDARRAY: Flavour = Flavour::NumPy { writeable: true };

/// `a op b` on arrays (or an array and a scalar), NumPy/JAX style.
pub fn binary(op: BinaryOp, a: &Value, b: &Value) -> Result<Value> {
    binary_owned(op, a.clone(), b.clone())
}

/// `binary` taking its operands by value, so that a temporary's buffer can be
/// reused for the result (`x * 2.0 + 1.0` allocates once). Of NumPy arrays,
/// a NumPy array.
pub fn binary_owned(op: BinaryOp, a: Value, b: Value) -> Result<Value> {
    if ndarray_operands(&[&a, &b]) {
        let _numpy = numpy_defaults(true);
        return Ok(with_flavour(binary_arrays(op, a, b, false)?, NDARRAY));
    }
    // Inside NumPy's functions (`numpy_defaults`), their intermediates
    // follow NumPy's dtypes too.
    binary_arrays(op, a, b, jax_32bit() && !in_numpy())
}

thread_local! {
    /// The interpreter of this thread runs a JAX program (`Interp::jax_rules`,
    /// mirrored here for the operators, which have no interpreter at hand).
    static JAX_DTYPES: Cell<bool> = const { Cell::new(false) };
    /// `jax.config.update("jax_enable_x64", True)`, or JAX_ENABLE_X64=1.
    static X64: Cell<bool> = Cell::new(
        std::env::var("JAX_ENABLE_X64").is_ok_and(|v| matches!(v.trim(), "1" | "true" | "True")),
    );
}

/// Whether this thread's program follows JAX's dtype rules (it imported jax).
pub fn follow_jax_dtypes(on: bool) {
    JAX_DTYPES.with(|j| j.set(on));
}

/// Set jax_enable_x64.
pub fn set_x64(on: bool) {
    X64.with(|x| x.set(on));
}

/// Whether jax_enable_x64 is on.
pub fn x64() -> bool {
    X64.with(|x| x.get())
}

/// Whether JAX's 32-bit rule holds: a JAX program without x64, where no JAX
/// array is 64-bit (a 64-bit result type is truncated, as JAX canonicalises).
pub fn jax_32bit() -> bool {
    JAX_DTYPES.with(|j| j.get()) && !X64.with(|x| x.get())
}

/// The 32-bit dtype JAX uses for `d` without x64.
pub fn x32_of(d: DType) -> DType {
    match d {
        DType::F64 => DType::F32,
        DType::I64 => DType::I32,
        other => other,
    }
}

fn binary_arrays(op: BinaryOp, a: Value, b: Value, x32: bool) -> Result<Value> {
    let (mut dtype, weak) = result_type(&[&a, &b])?;
    if x32 {
        dtype = x32_of(dtype);
    }
    if op == BinaryOp::Div && !dtype.is_inexact() {
        dtype = default_float();
    }
    if matches!(op, BinaryOp::Atan2) && !dtype.is_float() {
        dtype = default_float();
    }
    // Arithmetic on bools counts in integers, as NumPy does.
    if dtype == DType::Bool
        && matches!(
            op,
            BinaryOp::Pow
                | BinaryOp::FloorDiv
                | BinaryOp::Mod
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRight
        )
    {
        dtype = default_int();
    }
    // A Python int exponent, or a concrete integer scalar (JAX's `power`
    // takes `operator.index` of one), is an integer power.
    let exponent = match (op, &b) {
        (BinaryOp::Pow, Value::Int(n)) => Some(*n),
        (BinaryOp::Pow, Value::Array(t @ Tensor::Concrete(c)))
            if c.shape().is_empty() && c.dtype().is_int() =>
        {
            item(t)?.as_int()
        }
        _ => None,
    };
    if let Some(n) = exponent {
        if dtype.is_inexact() || n >= 0 {
            let x = into_array_as(a, dtype)?.weakened(weak);
            return Ok(Value::Array(integer_pow(x, n)?));
        }
    }
    // Operands converted for the operation are as weak as its result.
    let x = into_array_as(a, dtype)?.weakened(weak);
    let y = into_array_as(b, dtype)?.weakened(weak);
    Ok(Value::Array(bind1(
        &Prim::Binary(op),
        smallvec::smallvec![x, y],
    )?))
}

/// `x ** n` for a Python int `n`, as JAX's `integer_pow`: multiplications
/// by repeated squaring (then a reciprocal for negative `n`), never `pow` —
/// faster, exact for squares, and with the gradient of the products.
fn integer_pow(x: Tensor, n: i64) -> Result<Tensor> {
    let mul = |a: Tensor, b: Tensor| bind1(&Prim::Binary(BinaryOp::Mul), smallvec::smallvec![a, b]);
    let one = || -> Result<Tensor> {
        let unit = to_array_as(&Value::Int(1), x.dtype())?.weakened(x.is_weak());
        broadcast_to(unit, x.shape())
    };
    if n == 0 {
        return one();
    }
    let mut base = x.clone();
    let mut e = n.unsigned_abs();
    let mut acc: Option<Tensor> = None;
    while e > 0 {
        if e & 1 == 1 {
            acc = Some(match acc {
                None => base.clone(),
                Some(a) => mul(a, base.clone())?,
            });
        }
        e >>= 1;
        if e > 0 {
            base = mul(base.clone(), base)?;
        }
    }
    let acc = acc.expect("n != 0 sets a bit");
    if n < 0 {
        return bind1(
            &Prim::Binary(BinaryOp::Div),
            smallvec::smallvec![one()?, acc],
        );
    }
    Ok(acc)
}

fn into_array_as(v: Value, dtype: DType) -> Result<Tensor> {
    match v {
        Value::Array(a) => convert(a, dtype),
        other => to_array_as(&other, dtype),
    }
}

/// Elementwise math on an array-like; ints and bools become the default float first.
pub fn unary_float(op: UnaryOp, v: &Value) -> Result<Value> {
    let a = to_tensor(v)?;
    let a = if a.dtype().is_inexact() {
        a
    } else {
        let weak = a.is_weak();
        convert(a, default_float())?.weakened(weak)
    };
    Ok(Value::Array(bind1(&Prim::Unary(op), vec![a])?))
}

pub fn unary(op: UnaryOp, v: &Value) -> Result<Value> {
    let a = to_tensor(v)?;
    if op == UnaryOp::Neg && a.dtype() == DType::Bool {
        return Err(Error::type_error(
            "the - operator is not supported for bool arrays: use ~ (invert) instead",
        ));
    }
    Ok(Value::Array(bind1(&Prim::Unary(op), vec![a])?))
}

/// Normalise one axis (negative counts from the end).
pub fn normalize_axis(axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(Error::new(
            ErrorKind::ValueError,
            format!("axis {axis} is out of bounds for an array of rank {ndim}"),
        ));
    }
    Ok(a as usize)
}

/// The `axis=` argument of a reduction: None (all), an int, or a tuple of ints.
pub fn parse_axes(axis: &Value, ndim: usize) -> Result<Vec<usize>> {
    let mut axes = match axis {
        Value::None => (0..ndim).collect(),
        Value::Tuple(_) | Value::List(_) => {
            let items = sequence_items(axis)?;
            items
                .iter()
                .map(|v| {
                    normalize_axis(
                        v.to_int()?.ok_or_else(|| {
                            Error::type_error("axis must be an int or a tuple of ints")
                        })?,
                        ndim,
                    )
                })
                .collect::<Result<Vec<_>>>()?
        }
        v => vec![normalize_axis(
            v.to_int()?
                .ok_or_else(|| Error::type_error("axis must be an int, a tuple of ints or None"))?,
            ndim,
        )?],
    };
    axes.sort_unstable();
    if axes.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::value_error("repeated axis in reduction"));
    }
    Ok(axes)
}

/// The items of a list or tuple.
pub fn sequence_items(v: &Value) -> Result<Vec<Value>> {
    match v {
        Value::List(l) => Ok(l.borrow().clone()),
        Value::Tuple(t) => Ok(t.to_vec()),
        other => Err(Error::type_error(format!(
            "expected a list or tuple, got {}",
            other.type_name()
        ))),
    }
}

/// A shape argument: an int or a sequence of ints (each non-negative).
pub fn parse_shape(v: &Value) -> Result<Vec<usize>> {
    let items = match v {
        Value::List(_) | Value::Tuple(_) => sequence_items(v)?,
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|d| match d.to_int()? {
            Some(n) if n >= 0 => Ok(n as usize),
            Some(n) => Err(Error::value_error(format!(
                "negative dimension {n} in shape"
            ))),
            None => Err(Error::type_error(format!(
                "shape entries must be ints, got {}",
                d.type_name()
            ))),
        })
        .collect()
}

/// Reduce with NumPy's `axis`/`keepdims`.
pub fn reduce(op: ReduceOp, a: Tensor, axis: &Value, keepdims: bool) -> Result<Tensor> {
    let axes = parse_axes(axis, a.ndim())?;
    if let Some(&empty) = axes.iter().find(|&&i| a.shape()[i] == 0) {
        if matches!(op, ReduceOp::Max | ReduceOp::Min) {
            return Err(Error::value_error(format!(
                "zero-size array {} to reduction operation {} which has no identity (axis {empty} is empty)",
                ty(&a),
                if op == ReduceOp::Max { "max" } else { "min" }
            )));
        }
    }
    let out_keep: Vec<usize> = a
        .shape()
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let r = bind1(&Prim::Reduce { op, axes }, vec![a])?;
    Ok(if keepdims { reshape(r, &out_keep)? } else { r })
}

pub fn reshape(a: Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape() == shape {
        return Ok(a);
    }
    bind1(&Prim::Reshape(shape.to_vec()), vec![a])
}

/// Resolve a `-1` in a requested shape.
pub fn infer_shape(size: usize, dims: &[i64], from: &Tensor) -> Result<Vec<usize>> {
    if let Some(d) = dims.iter().find(|&&d| d < -1) {
        return Err(Error::value_error(format!(
            "invalid shape {dims:?}: dimension {d} is negative (-1 stands for the one unknown size)"
        )));
    }
    if dims.iter().filter(|&&d| d == -1).count() > 1 {
        return Err(Error::value_error(format!(
            "invalid shape {dims:?}: can only specify one unknown dimension (-1)"
        )));
    }
    let bad = || Error::shape_error(format!("cannot reshape {} into shape {:?}", ty(from), dims));
    // Products of requested sizes never wrap: (2**32, 2**32) is no shape of 0 elements.
    let known = dims
        .iter()
        .filter(|&&d| d != -1)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize))
        .ok_or_else(bad)?;
    // A -1 beside a zero could be any size: ambiguous, an error as in NumPy.
    if known == 0 && dims.contains(&-1) {
        return Err(bad());
    }
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| {
            if d == -1 {
                size.checked_div(known).unwrap_or(0)
            } else {
                d as usize
            }
        })
        .collect();
    if arr_kernels::limits::element_count(&shape, from.dtype().size_bytes()) != Ok(size) {
        return Err(bad());
    }
    Ok(shape)
}

pub fn broadcast_to(a: Tensor, shape: &[usize]) -> Result<Tensor> {
    if a.shape() == shape {
        return Ok(a);
    }
    if a.ndim() > shape.len() {
        return Err(Error::shape_error(format!(
            "cannot broadcast {} to shape {:?}",
            ty(&a),
            shape
        )));
    }
    let dims: Vec<usize> = (shape.len() - a.ndim()..shape.len()).collect();
    bind1(
        &Prim::BroadcastInDim {
            shape: shape.to_vec(),
            dims,
        },
        vec![a],
    )
}

pub fn transpose(a: Tensor, perm: &[usize]) -> Result<Tensor> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) && perm.len() == a.ndim() {
        return Ok(a);
    }
    bind1(&Prim::Transpose(perm.to_vec()), vec![a])
}

/// `a @ b` with NumPy's rules: 1-D operands are promoted and the added axis
/// removed again; leading (batch) axes broadcast.
pub fn matmul(a: &Value, b: &Value) -> Result<Value> {
    let mut ops = promote(&[a, b])?;
    let b = ops.pop().unwrap();
    let a = ops.pop().unwrap();
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(Error::shape_error(format!(
            "matmul: operands must have at least one axis, got {} and {}",
            ty(&a),
            ty(&b)
        )));
    }
    let (a_vec, b_vec) = (a.ndim() == 1, b.ndim() == 1);
    let a2 = if a_vec {
        reshape(a.clone(), &[1, a.shape()[0]])?
    } else {
        a.clone()
    };
    let b2 = if b_vec {
        reshape(b.clone(), &[b.shape()[0], 1])?
    } else {
        b.clone()
    };
    let (ar, br) = (a2.ndim(), b2.ndim());
    let (m, k) = (a2.shape()[ar - 2], a2.shape()[ar - 1]);
    let (k2, n) = (b2.shape()[br - 2], b2.shape()[br - 1]);
    if k != k2 {
        return Err(Error::shape_error(format!(
            "matmul: contraction dimensions differ ({k} vs {k2}) in {} @ {}",
            ty(&a),
            ty(&b)
        )));
    }
    let batch =
        broadcast_shapes(&a2.shape()[..ar - 2], &b2.shape()[..br - 2]).ok_or_else(|| {
            Error::shape_error(format!(
                "matmul: cannot broadcast batch axes of {} and {}",
                ty(&a),
                ty(&b)
            ))
        })?;
    let nb = batch.len();
    // The result's shape: the added axes of 1-D operands removed again.
    let out_shape = || {
        let mut shape = batch.to_vec();
        if !a_vec {
            shape.push(m);
        }
        if !b_vec {
            shape.push(n);
        }
        shape
    };
    if br == 2 {
        // `x @ w` with a matrix `w` (every dense layer): contract x's last
        // axis with w's first, as JAX does, rather than broadcasting `w`
        // over x's leading axes. One product over all rows instead of a
        // batch of small ones, no copies of `w`, and a gradient for `w`
        // that contracts the rows instead of summing a batch of copies.
        let dims = DotDims {
            lhs_batch: vec![],
            rhs_batch: vec![],
            lhs_contract: vec![ar - 1],
            rhs_contract: vec![0],
        };
        let out = bind1(&Prim::DotGeneral(dims), vec![a2, b2])?;
        return Ok(Value::Array(reshape(out, &out_shape())?));
    }
    let mut ashape = batch.to_vec();
    ashape.extend([m, k]);
    let mut bshape = batch.to_vec();
    bshape.extend([k, n]);
    let a3 = broadcast_to(a2, &ashape)?;
    let b3 = broadcast_to(b2, &bshape)?;
    let dims = DotDims {
        lhs_batch: (0..nb).collect(),
        rhs_batch: (0..nb).collect(),
        lhs_contract: vec![nb + 1],
        rhs_contract: vec![nb],
    };
    let out = bind1(&Prim::DotGeneral(dims), vec![a3, b3])?;
    Ok(Value::Array(reshape(out, &out_shape())?))
}

/// A Python-scalar view of a 0-d array, for `int(x)`, `float(x)`, formatting.
pub fn item(a: &Tensor) -> Result<Value> {
    let a = a.concrete()?;
    if a.len() != 1 {
        return Err(Error::type_error(format!(
            "only one-element arrays can be converted to Python scalars, got {}",
            type_str(a.shape(), a.dtype())
        )));
    }
    let b = a.buffer()?;
    Ok(match a.dtype() {
        DType::Bool => Value::Bool(b.get_f64(0) != 0.0),
        d if d.is_int() => Value::Int(b.get_i64(0)),
        // Python complex numbers are complex64 scalars.
        DType::C64 => Value::Array(complex_element(&b, 0).into()),
        _ => Value::Float(b.get_f64(0)),
    })
}

/// Element `i` of a complex buffer, as a 0-d array.
fn complex_element(b: &Buffer, i: usize) -> Array {
    match b {
        Buffer::C64(v) => Array::new(&[], Buffer::C64(vec![v[i]])),
        other => unreachable!("a complex element of a {} buffer", other.dtype()),
    }
}
