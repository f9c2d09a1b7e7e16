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
                    if !x.dtype().is_inexact() {
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
        (
            "real(x)",
            "The real part, elementwise (of a real array: itself).",
            |_, a| numpy::unary(UnaryOp::Real, &a[0]),
        ),
        (
            "imag(x)",
            "The imaginary part, elementwise (of a real array: zeros).",
            |_, a| numpy::unary(UnaryOp::Imag, &a[0]),
        ),
        (
            "conj(x)",
            "The complex conjugate, elementwise (of a real array: itself).",
            |_, a| numpy::unary(UnaryOp::Conj, &a[0]),
        ),
        (
            "conjugate(x)",
            "The complex conjugate (as conj).",
            |_, a| numpy::unary(UnaryOp::Conj, &a[0]),
        ),
        (
            "_lax_fft(x, fft_type, n)",
            "lax.fft along the last axis: fft_type 'FFT', 'IFFT', 'RFFT' or 'IRFFT', length n.",
            lax_fft,
        ),
        (
            "complex(real=0, imag=0)",
            "The complex number real + imag * 1j (complex64; of arrays, elementwise).",
            complex,
        ),
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
            "where(condition, x=None, y=None, size=None, fill_value=None)",
            "Elements of x where condition is true, else of y (broadcast together); \
             with the condition alone, nonzero(condition, size=size, fill_value=fill_value).",
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
            "nextafter(x1, x2)",
            "The next float after x1 in the direction of x2, elementwise (of concrete arrays).",
            nextafter,
        ),
        (
            "round(x, ndigits=None, decimals=None)",
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
    r.method("array", "conj(self)", "The complex conjugate.", |_, a| {
        numpy::unary(UnaryOp::Conj, &a[0])
    });
    r.method(
        "array",
        "conjugate(self)",
        "The complex conjugate.",
        |_, a| numpy::unary(UnaryOp::Conj, &a[0]),
    );
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

fn lax_fft(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    use arr_kernels::complex::FftKind;
    let x = numpy::to_tensor(&a[0])?;
    let kind = match str_arg("fft_type", &a[1])? {
        "FFT" => FftKind::Fft,
        "IFFT" => FftKind::Ifft,
        "RFFT" => FftKind::Rfft,
        "IRFFT" => FftKind::Irfft,
        other => {
            return Err(Error::value_error(format!(
                "fft: fft_type must be 'FFT', 'IFFT', 'RFFT' or 'IRFFT', got '{other}'"
            )))
        }
    };
    let n = int_arg("n", &a[2])?;
    let n = usize::try_from(n)
        .map_err(|_| Error::value_error(format!("fft: the length n must be >= 0, got {n}")))?;
    Ok(Value::Array(bind1(&Prim::Fft { kind, n }, vec![x])?))
}

/// `real + imag * 1j` as complex64: a product with `1j` keeps it one
/// differentiable expression (JAX's `lax.complex`, whose transpose gives
/// the real part of the cotangent to `real` and the imaginary one to `imag`).
fn complex(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let re = numpy::convert(numpy::to_tensor(&a[0])?, DType::C64)?;
    let im = numpy::convert(numpy::to_tensor(&a[1])?, DType::C64)?;
    let i = Value::Array(arr_runtime::transform::ops::complex_scalar(0.0, 1.0));
    let im = numpy::binary(BinaryOp::Mul, &Value::Array(im), &i)?;
    numpy::binary(BinaryOp::Add, &Value::Array(re), &im)
}

fn predicate(op: UnaryOp, v: &Value) -> Result<Value> {
    let a = array_arg(v)?;
    if !a.dtype().is_inexact() {
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
    // `decimals` is NumPy's name (the global's third parameter; the method's second).
    let given = match (&a[1], a.get(2)) {
        (Value::None, Some(d)) => d,
        (v, _) => v,
    };
    let digits = match given {
        Value::None => None,
        v => Some(int_arg("decimals", v)?),
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
    if !x.dtype().is_inexact() {
        return ok(x);
    }
    let d = digits.unwrap_or(0);
    if d == 0 {
        return ok(bind1(&Prim::Unary(UnaryOp::Round), vec![x])?);
    }
    let scale = Value::Float(10f64.powi(d as i32));
    let scaled = numpy::binary(BinaryOp::Mul, &Value::Array(x), &scale)?;
    let rounded = bind1(&Prim::Unary(UnaryOp::Round), vec![array_arg(&scaled)?])?;
    if numpy::is_ndarray(&scaled) {
        return numpy::binary(BinaryOp::Div, &Value::Array(rounded), &scale);
    }
    // A JAX array goes back by multiplying with the reciprocal, as XLA
    // compiles JAX's division by the constant: JAX's bits (-0.99969995,
    // where NumPy's division gives -0.9997).
    let inverse = Value::Float(10f64.powi(-d as i32));
    numpy::binary(BinaryOp::Mul, &Value::Array(rounded), &inverse)
}

/// The float next to `x` towards `y` in a format whose values `enc`
/// encodes as bit patterns (sign and magnitude: one step of the pattern is
/// one step of the magnitude) and `dec` decodes; x and y are exact in it.
fn next_float(x: f64, y: f64, enc: fn(f64) -> u64, dec: fn(u64) -> f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        return y;
    }
    if x == 0.0 {
        return dec(1).copysign(y);
    }
    let up = (y > x) == (x > 0.0);
    dec(if up { enc(x) + 1 } else { enc(x) - 1 })
}

fn nextafter(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut xy = numpy::promote(&[&a[0], &a[1]])?;
    let y = xy.pop().unwrap_or_else(|| unreachable!("two operands"));
    let x = xy.pop().unwrap_or_else(|| unreachable!("two operands"));
    let shape = arr_kernels::broadcast_shapes(x.shape(), y.shape()).ok_or_else(|| {
        Error::shape_error(format!(
            "nextafter: {} and {} do not broadcast",
            ty(&x),
            ty(&y)
        ))
    })?;
    let x = numpy::broadcast_to(x, &shape)?;
    let y = numpy::broadcast_to(y, &shape)?;
    let (Some(xc), Some(yc)) = (x.as_concrete(), y.as_concrete()) else {
        return Err(Error::type_error(
            "nextafter: needs concrete arrays (it steps bit patterns), not traced values",
        ));
    };
    let (xb, yb) = (xc.buffer()?, yc.buffer()?);
    type Codec = (fn(f64) -> u64, fn(u64) -> f64);
    let (enc, dec): Codec = match x.dtype() {
        DType::F64 => (f64::to_bits, f64::from_bits),
        DType::F32 => (
            |x| (x as f32).to_bits() as u64,
            |b| f32::from_bits(b as u32) as f64,
        ),
        DType::F16 => (
            |x| half::f16::from_f64(x).to_bits() as u64,
            |b| half::f16::from_bits(b as u16).to_f64(),
        ),
        DType::BF16 => (
            |x| half::bf16::from_f64(x).to_bits() as u64,
            |b| half::bf16::from_bits(b as u16).to_f64(),
        ),
        other => {
            return Err(Error::type_error(format!(
                "nextafter: needs float arrays, got {}",
                other.name()
            )))
        }
    };
    let values: Vec<f64> = (0..xc.len())
        .map(|i| next_float(xb.get_f64(i), yb.get_f64(i), enc, dec))
        .collect();
    // Exact in x's format, so the conversion from f64 does not round.
    let next = arr_kernels::Array::new(&shape, arr_kernels::Buffer::F64(values));
    ok(numpy::convert(next.into(), x.dtype())?)
}

fn where_(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match (&a[1], &a[2]) {
        (Value::None, Value::None) => {
            // The coordinates of the true elements: the prelude's `nonzero`.
            let id = interp.interner.intern("nonzero") as usize;
            let Some(Some(nonzero)) = interp.builtins.get(id).cloned() else {
                return Err(Error::type_error("where(condition): nonzero is not loaded"));
            };
            let kwargs = vec![
                ("size".into(), a[3].clone()),
                ("fill_value".into(), a[4].clone()),
            ];
            return interp.call(&nonzero, vec![a[0].clone()], kwargs);
        }
        (Value::None, _) | (_, Value::None) => {
            return Err(Error::value_error(
                "where: pass both x and y, or neither (for the coordinates of the true elements)",
            ))
        }
        _ => {}
    }
    if !matches!(a[3], Value::None) || !matches!(a[4], Value::None) {
        return Err(Error::value_error(
            "where: size and fill_value go with where(condition) alone",
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
    let (spec, operands) = match &a[0] {
        Value::Str(s) => (
            s.chars().filter(|c| !c.is_whitespace()).collect::<String>(),
            numpy::sequence_items(&a[1])?,
        ),
        // einsum(op0, sublist0, op1, sublist1, ..., [output sublist]).
        first => sublist_spec(first, &numpy::sequence_items(&a[1])?)?,
    };
    let (inputs, output) = match spec.split_once("->") {
        Some((i, o)) => (i.to_string(), Some(o.to_string())),
        None => (spec.clone(), None),
    };
    let split_terms: Vec<String> = inputs.split(',').map(str::to_string).collect();
    if split_terms.len() != operands.len() {
        return Err(Error::value_error(format!(
            "einsum: '{spec}' names {} operands, got {}",
            split_terms.len(),
            operands.len()
        )));
    }
    let refs: Vec<&Value> = operands.iter().collect();
    let mut arrays = numpy::promote(&refs)?;
    // `...`: as many fresh indices as the axes it stands for, right-aligned
    // across operands (broadcasting), Greek letters that no subscript uses.
    let mut ell_shape: Vec<usize> = Vec::new();
    for (k, (x, t)) in arrays.iter().zip(&split_terms).enumerate() {
        if let Some(named) = ellipsis_named(t) {
            let n = x.ndim().checked_sub(named).ok_or_else(|| {
                Error::shape_error(format!(
                    "einsum: operand {k} is {} but its subscripts '{t}' name more axes",
                    ty(x)
                ))
            })?;
            ell_shape = arr_kernels::broadcast_shapes(&ell_shape, &x.shape()[..n])
                .ok_or_else(|| {
                    Error::shape_error(format!(
                        "einsum: the axes '...' stands for do not broadcast: {:?} and {:?}",
                        ell_shape,
                        &x.shape()[..n]
                    ))
                })?
                .to_vec();
        }
    }
    let fresh: Vec<char> = (0..ell_shape.len())
        .map(|i| char::from_u32(0x3B1 + i as u32).unwrap_or('?'))
        .collect();
    let mut terms: Vec<Vec<char>> = Vec::new();
    for (x, t) in arrays.iter_mut().zip(&split_terms) {
        match ellipsis_named(t) {
            None => terms.push(t.chars().collect()),
            Some(named) => {
                let n = x.ndim() - named;
                let (before, after) = t.split_once("...").unwrap_or((t, ""));
                let mut term: Vec<char> = before.chars().collect();
                term.extend(&fresh[fresh.len() - n..]);
                term.extend(after.chars());
                // Size-1 axes of `...` stretch to the broadcast size.
                let mut shape = x.shape().to_vec();
                let lead = before.chars().count();
                shape[lead..lead + n].copy_from_slice(&ell_shape[ell_shape.len() - n..]);
                if shape != x.shape() {
                    *x = numpy::broadcast_to(x.clone(), &shape)?;
                }
                terms.push(term);
            }
        }
    }
    if terms.iter().flatten().any(|c| *c == '.') {
        return Err(Error::value_error(format!(
            "einsum: '{spec}' has a '.' that is not part of an ellipsis '...'"
        )));
    }
    let output: Vec<char> = match output {
        Some(o) => {
            let (before, after) = o.split_once("...").unwrap_or((&o, ""));
            let mut out: Vec<char> = before.chars().collect();
            if o.contains("...") {
                out.extend(&fresh);
            }
            out.extend(after.chars());
            out
        }
        None => {
            // Implicit mode: `...`, then indices that appear once, in alphabetical order.
            let mut once: Vec<char> = terms
                .iter()
                .flatten()
                .copied()
                .filter(|c| !fresh.contains(c))
                .filter(|c| terms.iter().flatten().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort();
            fresh.iter().copied().chain(once).collect()
        }
    };
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
        let (x, t) = take_diagonals(x, t)?;
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

/// How many axes a term names besides its `...`, or None without one.
fn ellipsis_named(term: &str) -> Option<usize> {
    term.contains("...")
        .then(|| term.replacen("...", "", 1).chars().count())
}

/// The string form of `einsum(op0, [0, 1], op1, [1, 2], [0, 2])`: axis
/// numbers become letters, `...` (Ellipsis) stays.
fn sublist_spec(first: &Value, rest: &[Value]) -> Result<(String, Vec<Value>)> {
    let mut items = vec![first.clone()];
    items.extend(rest.iter().cloned());
    let letter = |v: &Value| -> Result<String> {
        match v {
            Value::Ellipsis => Ok("...".to_string()),
            Value::Int(i) if (0..52).contains(i) => {
                let i = *i as u8;
                Ok(char::from(if i < 26 { b'a' + i } else { b'A' + i - 26 }).to_string())
            }
            other => Err(Error::value_error(format!(
                "einsum: a subscript list holds ints in [0, 52) or ..., got {}",
                arr_runtime::display::repr(other)
            ))),
        }
    };
    let term =
        |v: &Value| -> Result<String> { numpy::sequence_items(v)?.iter().map(letter).collect() };
    let mut operands = Vec::new();
    let mut inputs = Vec::new();
    let mut pairs = items.chunks_exact(2);
    for pair in pairs.by_ref() {
        operands.push(pair[0].clone());
        inputs.push(term(&pair[1])?);
    }
    let mut spec = inputs.join(",");
    if let [out] = pairs.remainder() {
        spec = format!("{spec}->{}", term(out)?);
    }
    Ok((spec, operands))
}

/// An operand with its repeated subscripts (`ii`) reduced to one axis: the
/// diagonal, as the elements where the two axes' iotas agree, summed over the second.
fn take_diagonals(mut x: Tensor, mut t: Vec<char>) -> Result<(Tensor, Vec<char>)> {
    while let Some((p, q)) =
        (0..t.len()).find_map(|q| t[..q].iter().position(|c| *c == t[q]).map(|p| (p, q)))
    {
        let (n, m) = (x.shape()[p], x.shape()[q]);
        if n != m {
            return Err(Error::shape_error(format!(
                "einsum: index '{}' has sizes {n} and {m} within one operand",
                t[p]
            )));
        }
        let iota = |dim: usize| {
            bind1(
                &Prim::Iota {
                    dtype: DType::I32,
                    shape: x.shape().to_vec(),
                    dim,
                },
                Vec::<Tensor>::new(),
            )
        };
        let on_diagonal = bind1(&Prim::Binary(BinaryOp::Eq), vec![iota(p)?, iota(q)?])?;
        let zero = numpy::to_array_as(&Value::Int(0), x.dtype())?;
        let zero = numpy::broadcast_to(zero, x.shape())?;
        let kept = bind1(&Prim::Select, vec![on_diagonal, x, zero])?;
        x = bind1(
            &Prim::Reduce {
                op: arr_kernels::ReduceOp::Sum,
                axes: vec![q],
            },
            vec![kept],
        )?;
        t.remove(q);
    }
    Ok((x, t))
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
