//! Text forms of values: Python's `repr`/`str` for scalars and containers,
//! NumPy-style array printing (aligned columns, truncation past 1000
//! elements with 3 edge items, or as `set_printoptions` says), and f-string
//! format specs. Sharded arrays' own text forms (specs, typed layouts,
//! device grids) are `sharding.rs`.

pub mod sharding;

use crate::error::{Error, Result};
use crate::prim::type_str;
use crate::tensor::Tensor;
use crate::value::Value;
use arr_kernels::array::Deleted;
use arr_kernels::{Array, Buffer, DType};
use sharding::PlacementText;
use std::sync::Arc;

/// NumPy's print options (`np.set_printoptions`): how arrays print.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintOptions {
    /// At most this many digits after the point (or in the mantissa).
    pub precision: usize,
    /// Arrays with more elements than this are summarised...
    pub threshold: usize,
    /// ...showing this many items at each end of every axis.
    pub edgeitems: usize,
    /// Lines of elements wrap before this many columns.
    pub linewidth: usize,
    /// Fixed notation for small numbers too (exponent form only from 1e8).
    pub suppress: bool,
}

impl Default for PrintOptions {
    fn default() -> PrintOptions {
        PrintOptions {
            precision: 8,
            threshold: 1000,
            edgeitems: 3,
            linewidth: 75,
            suppress: false,
        }
    }
}

thread_local! {
    static OPTIONS: std::cell::Cell<PrintOptions> = std::cell::Cell::new(PrintOptions::default());
}

/// The print options in force (on this interpreter's thread).
pub fn print_options() -> PrintOptions {
    OPTIONS.with(|o| o.get())
}

/// Set the print options; the previous ones.
pub fn set_print_options(options: PrintOptions) -> PrintOptions {
    OPTIONS.with(|o| o.replace(options))
}

/// `f32[3,4]`
pub fn type_string(a: &Tensor) -> String {
    match a {
        Tensor::Concrete(x) => match x.placement() {
            Some(p) => p.type_text(x.shape(), x.dtype()),
            None => type_str(a.shape(), a.dtype()),
        },
        Tensor::Traced(_) => type_str(a.shape(), a.dtype()),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form
/// outside 1e-4 <= |x| < 1e16.
pub fn py_float(x: f64) -> String {
    let sci = format!("{x:e}");
    let exp: i32 = sci
        .rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    py_float_digits(x, sci, format!("{x}"), (-4..16).contains(&exp))
}

/// A float32 scalar as NumPy prints one: its shortest digits, positional
/// for 1e-4 <= |x| < 1e6 (beyond, positional digits would not be the
/// value's: `1.3421773e+08`, not `134217730.0`).
pub fn py_float32(x: f32) -> String {
    let positional = (1e-4..1e6).contains(&(x.abs() as f64));
    py_float_digits(x as f64, format!("{x:e}"), format!("{x}"), positional)
}

/// `py_float32` for float16, whose positional range ends at 1e3.
fn py_float16(x: arr_kernels::f16) -> String {
    let v = x.to_f64();
    let digits = shortest_f16(v);
    let positional = (1e-4..1e3).contains(&v.abs());
    py_float_digits(
        v,
        format!("{:.*e}", digits.0, v),
        format!("{:.*}", digits.1, v),
        positional,
    )
}

fn py_float_digits(x: f64, sci: String, plain: String, positional: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    if !positional {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// `repr(v)`: what the REPL echoes.
pub fn repr(v: &Value) -> String {
    match v {
        Value::Str(s) => py_str_repr(s),
        Value::Array(a) => array_repr(a),
        Value::Object(o) => o.repr(),
        // A NumPy dtype object (`x.dtype`): `dtype('float32')`; ml_dtypes'
        // bfloat16 prints without quotes, as NumPy shows it.
        Value::DType(DType::BF16) => "dtype(bfloat16)".into(),
        Value::DType(d) => format!("dtype('{}')", d.name()),
        _ => str(v),
    }
}

fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// An element of a container: `repr`, with arrays in JAX's one-value form
/// (also what an f-string's `{x!r}` and `{x=}` show).
pub fn item_repr(v: &Value) -> String {
    match v {
        Value::Array(a) => jax_repr(a),
        other => repr(other),
    }
}

/// `str(v)`: what `print` shows.
pub fn str(v: &Value) -> String {
    // Containers can hold themselves (`l.append(l)`): as Python does, one
    // already being printed shows as `[...]`; so does nesting past a depth
    // (the stack bounds it, and no one reads ten thousand brackets).
    thread_local! {
        static OPEN: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let container = matches!(v, Value::List(_) | Value::Tuple(_) | Value::Dict(_));
    if !container {
        return str_inner(v);
    }
    let id = v.container_id();
    let cut = OPEN.with(|o| {
        let o = o.borrow();
        o.len() > 1000 || id.is_some_and(|id| o.contains(&id))
    });
    if cut {
        return match v {
            Value::Dict(_) => "{...}".into(),
            Value::Tuple(_) => "(...)".into(),
            _ => "[...]".into(),
        };
    }
    OPEN.with(|o| o.borrow_mut().push(id.unwrap_or(0)));
    let out = str_inner(v);
    OPEN.with(|o| o.borrow_mut().pop());
    out
}

fn str_inner(v: &Value) -> String {
    match v {
        Value::Object(o) => o.str().unwrap_or_else(|| o.repr()),
        Value::Class(c) => format!("<class '__main__.{}'>", c.name),
        // Without the interpreter no `__repr__` can run: the default form
        // (`Interp::repr_of` is what print and repr use).
        Value::Instance(i) => match i.class.fields() {
            Some(fields) => crate::class::tuple_repr(i, &fields, &item_repr),
            None => crate::class::default_repr(i),
        },
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => py_float(*f),
        Value::Str(s) => s.to_string(),
        Value::Array(a) => array_str(a),
        Value::List(l) => format!(
            "[{}]",
            l.borrow()
                .iter()
                .map(item_repr)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tuple(t) => {
            if t.len() == 1 {
                format!("({},)", item_repr(&t[0]))
            } else {
                format!(
                    "({})",
                    t.iter().map(item_repr).collect::<Vec<_>>().join(", ")
                )
            }
        }
        Value::Dict(d) => {
            let items: Vec<String> = d
                .borrow()
                .iter()
                .map(|(k, v)| format!("{}: {}", repr(&k.to_value()), item_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Function(f) => format!("<function {}>", f.code.signature),
        Value::Builtin(b) => format!("<builtin {}>", b.name),
        Value::Native(n) => format!("<function {}>", n.name),
        Value::BoundMethod(m) => format!("<bound method of {}>", m.0.type_name()),
        Value::Module(m) => format!("<module '{}'>", m.name),
        Value::DType(d) => d.name().to_string(),
        Value::Slice(s) => {
            let p = |x: Option<i64>| x.map_or("None".to_string(), |v| v.to_string());
            format!("slice({}, {}, {})", p(s.start), p(s.stop), p(s.step))
        }
        Value::Range(r) => {
            if r.step == 1 {
                format!("range({}, {})", r.start, r.stop)
            } else {
                format!("range({}, {}, {})", r.start, r.stop, r.step)
            }
        }
        Value::Ellipsis => "Ellipsis".into(),
    }
}

/// The REPL form: the type, then the values.
pub fn array_repr(t: &Tensor) -> String {
    let Tensor::Concrete(a) = t else {
        return tracer_str(t);
    };
    if let Some(text) = key_text(t) {
        return text;
    }
    let body = concrete_str(a);
    if a.ndim() == 0 {
        format!("{} {}", type_string(t), body)
    } else {
        format!("{}\n{}", type_string(t), body)
    }
}

/// A traced value shows its type and the transformation tracing it.
/// A tracer as JAX 0.10 prints one (repr and str alike): `JitTracer(float32[3])`,
/// `GradTracer(primal=[0. 1.], typeof(tangent)=f32[2])`,
/// `VmapTracer(aval=float32[3], batched=float32[2,3])`.
fn tracer_str(t: &Tensor) -> String {
    use crate::tensor::TracerKind;
    let jax_type = |t: &Tensor| crate::sharding::ArrayTypeValue::of(t).text();
    let Tensor::Traced(tr) = t else {
        return jax_type(t);
    };
    match &tr.kind {
        TracerKind::Graph { .. } => format!("JitTracer({})", jax_type(t)),
        TracerKind::Jvp { primal, tangent } => {
            let tangent = match tangent {
                Some(d) => type_string(d),
                None => type_string(primal),
            };
            format!(
                "GradTracer(primal={}, typeof(tangent)={tangent})",
                array_str(primal)
            )
        }
        // A shard_map's value per device (as JAX's manual axes show it).
        TracerKind::Batch { .. } if crate::transform::is_mesh_axis(tr.level) => {
            format!("JitTracer({})", jax_type(t))
        }
        TracerKind::Batch { val, .. } => {
            format!(
                "VmapTracer(aval={}, batched={})",
                jax_type(t),
                jax_type(val)
            )
        }
    }
}

/// NumPy's `str(array)`.
pub fn array_str(t: &Tensor) -> String {
    if let Some(text) = key_text(t) {
        return text;
    }
    match t {
        Tensor::Concrete(a) => concrete_str(a),
        Tensor::Traced(_) => tracer_str(t),
    }
}

fn concrete_str(a: &Array) -> String {
    let buf = match a.buffer() {
        Ok(b) => b,
        Err(d) => return format!("<deleted: {}>", d.why),
    };
    let summarise = a.len() > print_options().threshold;
    let fmt = ElementFormat::new(a.shape(), &buf, summarise);
    if a.ndim() == 0 {
        // A 0-d array prints like the scalar it holds, as NumPy does.
        return match &*buf {
            Buffer::F32(v) => py_float32(v[0]),
            Buffer::F64(v) => py_float(v[0]),
            Buffer::F16(v) => py_float16(v[0]),
            Buffer::C64(v) => py_complex(v[0]),
            _ => fmt.format(&buf, 0).trim().to_string(),
        };
    }
    if a.is_empty() {
        // NumPy prints any empty array as `[]`, whatever its shape.
        return "[]".into();
    }
    let mut out = String::new();
    write_axis(a, &buf, &fmt, 0, 0, summarise, STR_LAYOUT, &mut out);
    out
}

/// A typed key array as JAX shows it (repr and str alike): its shape and
/// dtype, then the key words it overlays.
fn key_text(t: &Tensor) -> Option<String> {
    let shape = crate::numpy::key_shape(t)?;
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let Tensor::Concrete(a) = t else {
        return None;
    };
    let words = concrete_str(&a.with_flavour(arr_kernels::Flavour::Jax));
    Some(format!(
        "Array({dims}, dtype=key<fry>) overlaying:\n{words}"
    ))
}

/// JAX's `repr` of an array, `Array([1., 2.], dtype=float32)`: how an
/// array inside a list, tuple or dict prints (on its own, the REPL shows
/// arr's type line and the values instead). A NumPy array shows as NumPy
/// shows it: `array([1., 2.], dtype=float32)`, the dtype left out for
/// NumPy's defaults (float64, int64, bool).
pub fn jax_repr(t: &Tensor) -> String {
    let Tensor::Concrete(a) = t else {
        return tracer_str(t);
    };
    if let Some(text) = key_text(t) {
        return text;
    }
    let (prefix, default_dtype) = match a.flavour() {
        arr_kernels::Flavour::NumPy { .. } => (
            "array(",
            matches!(a.dtype(), DType::F64 | DType::I64 | DType::Bool) && !a.is_empty(),
        ),
        arr_kernels::Flavour::Jax | arr_kernels::Flavour::Key => ("Array(", false),
    };
    let buf = match a.buffer() {
        Ok(b) => b,
        Err(d) => return format!("<deleted: {}>", d.why),
    };
    let body = if a.ndim() == 0 {
        // NumPy's repr of one element, as in an array: `Array(-1., dtype=float32)`.
        ElementFormat::new(a.shape(), &buf, false)
            .format(&buf, 0)
            .trim()
            .to_string()
    } else if a.is_empty() {
        // JAX (NumPy's repr): `Array([], shape=(2, 0), dtype=float32)`,
        // the shape left out for one axis.
        if a.ndim() == 1 {
            "[]".into()
        } else {
            let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
            format!("[], shape=({})", dims.join(", "))
        }
    } else {
        let summarise = a.len() > print_options().threshold;
        let fmt = ElementFormat::new(a.shape(), &buf, summarise);
        let mut out = String::new();
        let layout = Layout {
            comma: true,
            indent: prefix.len(),
        };
        write_axis(a, &buf, &fmt, 0, 0, summarise, layout, &mut out);
        out
    };
    if default_dtype {
        return format!("{prefix}{body})");
    }
    let weak = if a.is_weak() { ", weak_type=True" } else { "" };
    let dtype = format!("dtype={}{weak}", a.dtype());
    let after_newline = body.len() - body.rfind('\n').map_or(0, |i| i + 1);
    let width = print_options().linewidth;
    if matches!(a.flavour(), arr_kernels::Flavour::NumPy { .. }) {
        // NumPy's rule: the dtype goes on a line of its own when the last
        // line (with `array(` on the first, and its comma) would be too long.
        let last = after_newline + 1 + if body.contains('\n') { 0 } else { prefix.len() };
        let sep = if last + dtype.len() + 2 > width {
            format!("\n{}", " ".repeat(prefix.len()))
        } else {
            " ".into()
        };
        return format!("{prefix}{body},{sep}{dtype})");
    }
    // JAX's rule, word for word: it measures the text without its prefix,
    // `len(s) - s.rfind('\n') + 1`, and then puts the dtype after spaces as
    // wide as `Array(` on the same line.
    let last = after_newline + 2;
    let sep = if last + dtype.len() + 2 > width {
        " ".repeat(prefix.len())
    } else {
        " ".into()
    };
    format!("{prefix}{body},{sep}{dtype})")
}

/// How nested brackets are laid out: NumPy's `str` (space-separated) or
/// its `repr` (comma-separated, rows indented past a prefix such as `Array(`).
#[derive(Clone, Copy)]
struct Layout {
    comma: bool,
    indent: usize,
}

const STR_LAYOUT: Layout = Layout {
    comma: false,
    indent: 0,
};

#[allow(clippy::too_many_arguments)]
fn write_axis(
    a: &Array,
    buf: &Buffer,
    fmt: &ElementFormat,
    axis: usize,
    offset: usize,
    summarise: bool,
    layout: Layout,
    out: &mut String,
) {
    let shape = a.shape();
    let n = shape[axis];
    let stride: usize = shape[axis + 1..].iter().product();
    let indices = shown_indices(n, summarise);
    out.push('[');
    let margin = layout.indent + axis + 1;
    let comma = if layout.comma { "," } else { "" };
    if axis + 1 == a.ndim() {
        let mut line_len = margin;
        for (k, i) in indices.iter().enumerate() {
            let piece = match i {
                Some(i) => fmt.format(buf, offset + i),
                None => "...".to_string(),
            };
            if k > 0 {
                out.push_str(comma);
                // NumPy's rule: a line's words (with their separators) fit
                // in the line width less one per closing bracket to come.
                let limit = print_options().linewidth.saturating_sub(1 + axis);
                if line_len + 1 + comma.len() + piece.len() > limit {
                    // A wrapped line keeps no padding at its end.
                    out.truncate(out.trim_end_matches(' ').len());
                    out.push('\n');
                    out.push_str(&" ".repeat(margin));
                    line_len = margin;
                } else {
                    out.push(' ');
                    line_len += 1 + comma.len();
                }
            }
            out.push_str(&piece);
            line_len += piece.len();
        }
    } else {
        for (k, i) in indices.iter().enumerate() {
            if k > 0 {
                out.push_str(comma);
                out.push_str(&"\n".repeat(a.ndim() - axis - 1));
                out.push_str(&" ".repeat(margin));
            }
            match i {
                Some(i) => write_axis(
                    a,
                    buf,
                    fmt,
                    axis + 1,
                    offset + i * stride,
                    summarise,
                    layout,
                    out,
                ),
                None => out.push_str("..."),
            }
        }
    }
    out.push(']');
}

/// The elements of an array as its printed form shows them (same precision,
/// same summarising), for front ends that lay them out themselves (HTML tables).
pub struct ElementText {
    fmt: ElementFormat,
    buf: Arc<Buffer>,
    /// Whether the array is large enough to be summarised with `...`.
    pub summarised: bool,
}

impl ElementText {
    /// The elements of `a`, or why it has none (it was deleted).
    pub fn new(a: &Array) -> Result<ElementText, Deleted> {
        let summarised = a.len() > print_options().threshold;
        let buf = a.buffer()?;
        Ok(ElementText {
            fmt: ElementFormat::new(a.shape(), &buf, summarised),
            buf,
            summarised,
        })
    }

    /// The text of the element at flat (row-major) index `i`, without padding.
    pub fn get(&self, i: usize) -> String {
        self.fmt.format(&self.buf, i).trim().to_string()
    }

    /// The indices shown along an axis of length `n`; None is the `...` gap.
    pub fn shown(&self, n: usize) -> Vec<Option<usize>> {
        shown_indices(n, self.summarised)
    }
}

fn shown_indices(n: usize, summarise: bool) -> Vec<Option<usize>> {
    let edge = print_options().edgeitems;
    if summarise && n > 2 * edge {
        (0..edge)
            .map(Some)
            .chain([None])
            .chain((n - edge..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// How every element of one array is formatted, so that columns align.
struct ElementFormat {
    kind: FloatMode,
    width: usize,
    /// `+` before non-negative numbers (the imaginary parts of complex ones).
    plus: bool,
    /// A complex array's two formats, NumPy's `ComplexFloatingFormat`.
    parts: Option<Box<ComplexFormat>>,
}

/// The real and imaginary parts of a complex array, each formatted as a
/// float array of its own (the imaginary one signed), joined per element.
struct ComplexFormat {
    re: ElementFormat,
    im: ElementFormat,
    re_buf: Buffer,
    im_buf: Buffer,
}

enum FloatMode {
    Bool,
    Int,
    /// bfloat16 as JAX prints it (its scalars' `str`: C's `%g`, six
    /// significant digits), unpadded.
    General,
    /// Fixed notation with up to `precision` digits after the point.
    Fixed {
        precision: usize,
        pad_right: usize,
    },
    Scientific {
        precision: usize,
    },
}

fn shortest_digits(x: f64, dtype: DType) -> String {
    match dtype {
        DType::F32 => format!("{}", x as f32),
        DType::F16 => format!("{:.*}", shortest_f16(x).1, x),
        _ => format!("{x}"),
    }
}

/// The fewest significant digits that read back as the same float16:
/// (significant digits - 1, digits after the point) of that form.
fn shortest_f16(x: f64) -> (usize, usize) {
    for p in 0..8 {
        let s = format!("{:.*e}", p, x);
        if s.parse::<f64>().map(arr_kernels::dtype::f16_from_f64).ok()
            == Some(arr_kernels::dtype::f16_from_f64(x))
        {
            let exp: i32 = s.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
            return (p, (p as i32 - exp).max(0) as usize);
        }
    }
    (8, 8)
}

/// C's `%g`: six significant digits, trailing zeros dropped, exponent form
/// below 1e-4 and from 1e6.
pub fn c_general(x: f64) -> String {
    if !x.is_finite() {
        return nonfinite(x);
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.5e}", x);
    let (m, e) = sci.split_once('e').expect("`{:e}` has an exponent");
    let e: i32 = e.parse().expect("an integer exponent");
    let trim = |t: &str| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..6).contains(&e) {
        let sign = if e < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(m), e.abs());
    }
    trim(&format!("{:.*}", (5 - e) as usize, x))
}

/// Digits after the point in the shortest round-trip form, at most the
/// print precision: past it, those of x rounded to it without trailing
/// zeros (NumPy's `floatmode='maxprec'`).
fn fraction_digits(x: f64, dtype: DType) -> usize {
    let precision = print_options().precision;
    let s = shortest_digits(x, dtype);
    let s = if s.contains('e') {
        format!("{:.*}", precision, x)
    } else {
        s
    };
    let digits = |s: &str| match s.split_once('.') {
        Some((_, frac)) => frac.trim_end_matches('0').len(),
        None => 0,
    };
    match digits(&s) {
        n if n <= precision => n,
        _ => digits(&format!("{:.*}", precision, x)),
    }
}

/// A complex number as Python's `repr` shows it (NumPy's `str` of a
/// complex64 scalar): `(7+1j)`, `2j`, `(0.5-0.25j)`.
pub fn py_complex(z: arr_kernels::complex::C64) -> String {
    let part = |x: f32| {
        let s = py_float32(x);
        s.strip_suffix(".0").map_or(s.clone(), str::to_string)
    };
    if z.re == 0.0 && z.re.is_sign_positive() {
        return format!("{}j", part(z.im));
    }
    let sign = if z.im.is_sign_negative() && !z.im.is_nan() {
        ""
    } else {
        "+"
    };
    format!("({}{sign}{}j)", part(z.re), part(z.im))
}

impl ElementFormat {
    fn new(shape: &[usize], buf: &Buffer, summarise: bool) -> ElementFormat {
        Self::signed(shape, buf, summarise, false)
    }

    fn complex(shape: &[usize], z: &[arr_kernels::complex::C64], summarise: bool) -> ElementFormat {
        let re_buf = Buffer::F32(z.iter().map(|z| z.re).collect());
        let im_buf = Buffer::F32(z.iter().map(|z| z.im).collect());
        ElementFormat {
            kind: FloatMode::Bool,
            width: 0,
            plus: false,
            parts: Some(Box::new(ComplexFormat {
                re: Self::signed(shape, &re_buf, summarise, false),
                im: Self::signed(shape, &im_buf, summarise, true),
                re_buf,
                im_buf,
            })),
        }
    }

    fn signed(shape: &[usize], buf: &Buffer, summarise: bool, plus: bool) -> ElementFormat {
        if let Buffer::C64(z) = buf {
            return Self::complex(shape, z, summarise);
        }
        let dtype = buf.dtype();
        let idx = element_sample(shape, summarise);
        let mut fmt = match dtype {
            DType::Bool => ElementFormat {
                kind: FloatMode::Bool,
                width: 0,
                plus,
                parts: None,
            },
            d if d.is_int() => ElementFormat {
                kind: FloatMode::Int,
                width: 0,
                plus,
                parts: None,
            },
            DType::BF16 => ElementFormat {
                kind: FloatMode::General,
                width: 0,
                plus,
                parts: None,
            },
            _ => {
                let finite: Vec<f64> = idx
                    .iter()
                    .map(|&i| buf.get_f64(i))
                    .filter(|x| x.is_finite())
                    .collect();
                let max = finite.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let min = finite
                    .iter()
                    .filter(|x| **x != 0.0)
                    .fold(f64::INFINITY, |m, x| m.min(x.abs()));
                // NumPy's rule (FloatingFormat): exponent form for very large values,
                // or (unless suppressed) when the non-zero magnitudes are tiny or
                // span more than 1e3.
                let suppress = print_options().suppress;
                let sci =
                    max >= 1e8 || (!suppress && min.is_finite() && (min < 1e-4 || max / min > 1e3));
                if sci {
                    let precision = finite
                        .iter()
                        .map(|&x| sci_digits(x, dtype))
                        .max()
                        .unwrap_or(0);
                    ElementFormat {
                        kind: FloatMode::Scientific { precision },
                        width: 0,
                        plus,
                        parts: None,
                    }
                } else {
                    let precision = finite
                        .iter()
                        .map(|&x| fraction_digits(x, dtype))
                        .max()
                        .unwrap_or(0);
                    ElementFormat {
                        kind: FloatMode::Fixed {
                            precision,
                            pad_right: 0,
                        },
                        width: 0,
                        plus,
                        parts: None,
                    }
                }
            }
        };
        // Widths: the widest integer part (left) and fraction (right) over the shown elements.
        let mut width = 0;
        let mut right = 0;
        let mut nonfinite = 0;
        for &i in idx
            .iter()
            .filter(|_| !matches!(fmt.kind, FloatMode::General))
        {
            let s = fmt.format_raw(buf, i);
            if let FloatMode::Fixed { .. } = fmt.kind {
                match s.split_once('.') {
                    Some((l, r)) => {
                        width = width.max(l.len());
                        right = right.max(r.len());
                    }
                    None => nonfinite = nonfinite.max(s.len()),
                }
            } else {
                width = width.max(s.len());
            }
        }
        // NumPy right-aligns nan and inf in the whole width of a number,
        // widening only the integer part when they do not fit.
        width = width.max(nonfinite.saturating_sub(right + 1));
        if let FloatMode::Fixed { precision, .. } = fmt.kind {
            fmt.kind = FloatMode::Fixed {
                precision,
                pad_right: right,
            };
        }
        // NumPy writes True as ' True' in arrays: always as wide as False.
        if dtype == DType::Bool && !shape.is_empty() {
            width = width.max(5);
        }
        fmt.width = width;
        fmt
    }

    fn format_raw(&self, buf: &Buffer, i: usize) -> String {
        let s = self.format_unsigned(buf, i);
        if self.plus && !s.starts_with('-') {
            format!("+{s}")
        } else {
            s
        }
    }

    fn format_unsigned(&self, buf: &Buffer, i: usize) -> String {
        let mut x = buf.get_f64(i);
        if x.is_finite() && matches!(self.kind, FloatMode::Fixed { .. }) {
            // Positional numbers show their shortest digits, then spaces, as
            // NumPy's (scientific ones show the value's own further digits,
            // as NumPy's `min_digits` does).
            let digits = match buf.dtype() {
                DType::F16 => Some(format!("{:.*e}", shortest_f16(x).0, x)),
                DType::F32 => Some(format!("{:e}", x as f32)),
                _ => None,
            };
            x = digits.and_then(|d| d.parse().ok()).unwrap_or(x);
        }
        match self.kind {
            FloatMode::Bool => if x != 0.0 { "True" } else { "False" }.to_string(),
            FloatMode::Int => buf.get_i64(i).to_string(),
            FloatMode::General => c_general(x),
            FloatMode::Fixed { precision, .. } => {
                if !x.is_finite() {
                    return nonfinite(x);
                }
                // NumPy drops trailing zeros but keeps the point: `1.`, `0.5`.
                let s = format!("{:.*}", precision, x);
                if precision == 0 {
                    format!("{s}.")
                } else {
                    s.trim_end_matches('0').to_string()
                }
            }
            FloatMode::Scientific { precision } => {
                if !x.is_finite() {
                    return nonfinite(x);
                }
                // Every mantissa gets the same number of digits, as NumPy pads them.
                let s = format!("{:.*e}", precision, x);
                let (m, e) = s.split_once('e').unwrap();
                let e: i32 = e.parse().unwrap();
                let m = if m.contains('.') {
                    m.to_string()
                } else {
                    format!("{m}.")
                };
                format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
            }
        }
    }

    fn format(&self, buf: &Buffer, i: usize) -> String {
        if let Some(c) = &self.parts {
            // NumPy's rule: the imaginary part's padding moves after the `j`.
            let re = c.re.format(&c.re_buf, i);
            let im = c.im.format(&c.im_buf, i);
            let used = im.trim_end().len();
            return format!("{re}{}j{}", &im[..used], &im[used..]);
        }
        let s = self.format_raw(buf, i);
        match self.kind {
            FloatMode::Fixed { pad_right, .. } => {
                let (l, r) = s
                    .split_once('.')
                    .map_or((s.as_str(), None), |(l, r)| (l, Some(r)));
                match r {
                    Some(r) => format!("{:>w$}.{:<p$}", l, r, w = self.width, p = pad_right),
                    None => format!("{:>w$}", l, w = self.width + pad_right + 1),
                }
            }
            _ => format!("{:>w$}", s, w = self.width),
        }
    }
}

fn nonfinite(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

fn sci_digits(x: f64, dtype: DType) -> usize {
    let s = match dtype {
        DType::F32 => format!("{:e}", x as f32),
        DType::F16 => return shortest_f16(x).0,
        _ => format!("{x:e}"),
    };
    let m = s.split_once('e').map_or(s.as_str(), |(m, _)| m);
    let precision = print_options().precision;
    match m.split_once('.').map_or(0, |(_, f)| f.len()) {
        n if n <= precision => n,
        _ => {
            let r = format!("{:.*e}", precision, x);
            let m = r.split_once('e').map_or(r.as_str(), |(m, _)| m);
            m.split_once('.')
                .map_or(0, |(_, f)| f.trim_end_matches('0').len())
        }
    }
}

/// The flat indices of the elements that will be shown.
fn element_sample(shape: &[usize], summarise: bool) -> Vec<usize> {
    if !summarise {
        return (0..shape.iter().product()).collect();
    }
    let mut out = Vec::new();
    collect_shown(shape, 0, 0, &mut out);
    out
}

fn collect_shown(shape: &[usize], axis: usize, offset: usize, out: &mut Vec<usize>) {
    if axis == shape.len() {
        out.push(offset);
        return;
    }
    let stride: usize = shape[axis + 1..].iter().product();
    for i in shown_indices(shape[axis], true).into_iter().flatten() {
        collect_shown(shape, axis + 1, offset + i * stride, out);
    }
}

/// The number a 0-d concrete array holds, for formatting without a spec:
/// NumPy's and JAX's `__format__` format it as the Python number
/// (`f"{jnp.float32(0.1)}"` is `0.10000000149011612`), where `str` shows
/// the array's own shortest digits.
pub fn scalar_to_format(v: &Value) -> Option<Value> {
    match v {
        Value::Array(t @ crate::Tensor::Concrete(a))
            if a.shape().is_empty() && crate::numpy::key_shape(t).is_none() =>
        {
            crate::numpy::item(t).ok()
        }
        _ => None,
    }
}

/// Python's format mini-language for one value: `[[fill]align][sign][width][,][.precision][type]`.
pub fn format_spec(v: &Value, spec: &str) -> Result<String> {
    let bad = || {
        Error::value_error(format!(
            "invalid format specifier '{spec}' for {}",
            v.type_name()
        ))
    };
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let (mut fill, mut align) = (' ', None);
    if chars.len() >= 2 && matches!(chars[1], '<' | '>' | '^') {
        fill = chars[0];
        align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && matches!(chars[0], '<' | '>' | '^') {
        align = Some(chars[0]);
        i = 1;
    }
    let mut sign = '-';
    if i < chars.len() && matches!(chars[i], '+' | '-' | ' ') {
        sign = chars[i];
        i += 1;
    }
    let mut zero_pad = false;
    if i < chars.len() && chars[i] == '0' {
        zero_pad = true;
        i += 1;
    }
    let width = spec_number(&chars, &mut i)?;
    let mut grouping = false;
    if i < chars.len() && (chars[i] == ',' || chars[i] == '_') {
        grouping = true;
        i += 1;
    }
    let mut precision = None;
    if i < chars.len() && chars[i] == '.' {
        i += 1;
        let start = i;
        let p = spec_number(&chars, &mut i)?;
        if i == start {
            return Err(bad());
        }
        precision = Some(p);
    }
    let ty = chars.get(i).copied();
    if i + usize::from(ty.is_some()) != chars.len() {
        return Err(bad());
    }
    if let (Value::Array(_), true) = (v, spec.is_empty()) {
        return Ok(str(&scalar_to_format(v).unwrap_or_else(|| v.clone())));
    }
    if let Value::Array(a) = v {
        // NumPy formats only one-element arrays with a spec (a TypeError else).
        if a.len() != 1 && !spec.is_empty() {
            return Err(Error::type_error(format!(
                "unsupported format string '{spec}' passed to {}: only one-element arrays take a format spec",
                v.type_name()
            )));
        }
    }
    let num = match v {
        Value::Array(a) if a.len() == 1 => crate::numpy::item(a)?,
        other => other.clone(),
    };
    let body = match (ty, &num) {
        (Some('s') | None, Value::Str(s)) => s.to_string(),
        (None, Value::Int(_) | Value::Bool(_)) | (Some('d'), Value::Int(_) | Value::Bool(_)) => {
            let n = num.as_int().unwrap();
            let s = n.unsigned_abs().to_string();
            let s = if grouping { group_thousands(&s) } else { s };
            signed(n < 0, sign, s)
        }
        (Some(base @ ('x' | 'X' | 'o' | 'b')), Value::Int(_) | Value::Bool(_)) => {
            let n = num.as_int().unwrap_or(0);
            let m = n.unsigned_abs();
            let s = match base {
                'x' => format!("{m:x}"),
                'X' => format!("{m:X}"),
                'o' => format!("{m:o}"),
                _ => format!("{m:b}"),
            };
            signed(n < 0, sign, s)
        }
        (Some('f' | 'F' | 'e' | 'E' | 'g' | 'G' | '%'), _) | (None, Value::Float(_))
            if num.as_f64().is_some() =>
        {
            let x = num.as_f64().unwrap();
            let t = t_or_default(ty, precision);
            // The digits asked for are allocated: a precision is a size
            // (and, as in Python, at most a C int).
            if precision.unwrap_or(0) > i32::MAX as usize {
                return Err(Error::value_error("precision too big"));
            }
            crate::value::check_str(&[precision.unwrap_or(0)])?;
            let s = match t {
                _ if !x.is_finite() => {
                    let s = if x.is_nan() { "nan" } else { "inf" };
                    let s = if matches!(t, 'F' | 'E' | 'G') {
                        s.to_uppercase()
                    } else {
                        s.to_string()
                    };
                    if t == '%' {
                        format!("{s}%")
                    } else {
                        s
                    }
                }
                'f' | 'F' => fixed(x.abs(), precision.unwrap_or(6)),
                'e' | 'E' => sci(x.abs(), precision.unwrap_or(6), t == 'E'),
                '%' => format!("{}%", fixed(x.abs() * 100.0, precision.unwrap_or(6))),
                'r' => py_float(x.abs()),
                _ => general(x.abs(), precision.unwrap_or(6)),
            };
            let s = if grouping { group_float(&s) } else { s };
            signed(x.is_sign_negative() && x != 0.0, sign, s)
        }
        (None, _) => str(v),
        _ => return Err(bad()),
    };
    let align = align.unwrap_or(if matches!(num, Value::Str(_)) {
        '<'
    } else {
        '>'
    });
    let len = body.chars().count();
    if len >= width {
        return Ok(body);
    }
    let pad = width - len;
    let f = fill.to_string();
    crate::value::check_str(&[pad.saturating_mul(f.len()).saturating_add(body.len())])?;
    if zero_pad && align == '>' && num.as_f64().is_some() {
        let (sign_part, digits) = if body.starts_with(['-', '+', ' ']) {
            body.split_at(1)
        } else {
            ("", body.as_str())
        };
        return Ok(format!("{sign_part}{}{digits}", "0".repeat(pad)));
    }
    Ok(match align {
        '<' => format!("{body}{}", f.repeat(pad)),
        '^' => format!("{}{body}{}", f.repeat(pad / 2), f.repeat(pad - pad / 2)),
        _ => format!("{}{body}", f.repeat(pad)),
    })
}

fn t_or_default(ty: Option<char>, precision: Option<usize>) -> char {
    match ty {
        Some(t) => t,
        None if precision.is_some() => 'g',
        None => 'r',
    }
}

fn signed(negative: bool, sign: char, s: String) -> String {
    if negative {
        format!("-{s}")
    } else if sign == '+' {
        format!("+{s}")
    } else if sign == ' ' {
        format!(" {s}")
    } else {
        s
    }
}

/// Any f64 has at most 1074 digits after the point and 767 significant
/// ones, so beyond this many every further digit is 0: larger precisions
/// (which Rust's formatter refuses past 65535) format at this one and pad.
const EXACT_DIGITS: usize = 1100;

/// A Python width or precision: digits, at most what fits a Py_ssize_t.
fn spec_number(chars: &[char], i: &mut usize) -> Result<usize> {
    let mut n: u64 = 0;
    while let Some(d) = chars.get(*i).and_then(|c| c.to_digit(10)) {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(d as u64))
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| Error::value_error("Too many decimal digits in format string"))?;
        *i += 1;
    }
    Ok(n as usize)
}

/// `x` with `precision` digits after the point, any precision.
fn fixed(x: f64, precision: usize) -> String {
    if precision <= EXACT_DIGITS || !x.is_finite() {
        return format!("{:.*}", precision.min(EXACT_DIGITS), x);
    }
    let mut s = format!("{:.*}", EXACT_DIGITS, x);
    s.extend(std::iter::repeat_n('0', precision - EXACT_DIGITS));
    s
}

fn sci(x: f64, precision: usize, upper: bool) -> String {
    let s = format!("{:.*e}", precision.min(EXACT_DIGITS), x);
    let (m, e) = s.split_once('e').unwrap();
    let e: i32 = e.parse().unwrap();
    let zeros = if x.is_finite() {
        precision.saturating_sub(EXACT_DIGITS)
    } else {
        0
    };
    let m = format!("{m}{}", "0".repeat(zeros));
    let out = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    if upper {
        out.to_uppercase()
    } else {
        out
    }
}

/// Python's `g` format: significant digits, exponent form for very large or small values.
fn general(x: f64, precision: usize) -> String {
    // (Trailing zeros are dropped: more than the exact digits change nothing.)
    let p = precision.clamp(1, EXACT_DIGITS);
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if exp < -4 || exp >= p as i32 {
        let s = sci(x, p - 1, false);
        let (m, e) = s.split_once('e').unwrap();
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        format!("{m}e{e}")
    } else {
        let s = format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, x);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

fn group_thousands(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn group_float(s: &str) -> String {
    match s.split_once('.') {
        Some((int, frac)) => format!("{}.{frac}", group_thousands(int)),
        None => group_thousands(s),
    }
}

/// `template.format(*args, **kwargs)`: Python's replacement fields (`{}`,
/// `{0}`, `{name}`, each with an optional `:spec`, `{{`/`}}` escapes).
pub fn str_format(template: &str, args: &[Value], kwargs: &crate::value::Dict) -> Result<String> {
    let mut out = String::new();
    let mut auto = 0;
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => {
                return Err(Error::value_error(
                    "Single '}' encountered in format string",
                ))
            }
            '{' => {
                let mut field = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    field.push(c);
                }
                if !closed {
                    return Err(Error::value_error(
                        "Single '{' encountered in format string",
                    ));
                }
                let (name, spec) = field.split_once(':').unwrap_or((&field, ""));
                // As Python: a missing position is an IndexError, a
                // missing name a KeyError.
                let v = if name.is_empty() {
                    auto += 1;
                    args.get(auto - 1).cloned()
                } else if let Ok(i) = name.parse::<usize>() {
                    args.get(i).cloned()
                } else {
                    let v = kwargs.get(&crate::value::Key::Str(name.into())).cloned();
                    v.ok_or_else(|| {
                        Error::new(crate::error::ErrorKind::KeyError, format!("'{name}'"))
                    })
                    .map(Some)?
                };
                let v = v.ok_or_else(|| {
                    Error::index_error(format!("format: no argument for field '{{{field}}}'"))
                })?;
                out.push_str(&if spec.is_empty() {
                    str(&scalar_to_format(&v).unwrap_or(v))
                } else {
                    format_spec(&v, spec)?
                });
            }
            c => out.push(c),
        }
    }
    Ok(out)
}
