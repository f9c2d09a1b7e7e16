//! The C-style renderer: kernel IR and kernel templates → CUDA C or OpenCL C.
//!
//! One renderer, a small table per dialect (`Tokens`): the two languages
//! differ in spellings (qualifiers, thread indices, barriers, a few math
//! names), not in structure, so every kernel is written once and the CUDA
//! text compiled by NVRTC is the OpenCL text executed on PoCL in the tests.
//! Op spellings come from the op table's C column; where C's operator and
//! the table's semantics differ (integer division by zero, Python's modulo,
//! NaN-propagating max) the column names an `a_` helper that the prelude
//! defines for the kernel's register type.
//!
//! Every kernel has one register type `T` (bool registers are `int` 0/1),
//! 64-bit indices, a grid-stride loop over its iteration space (four
//! elements per 16-byte load and store where every array is contiguous), and takes
//! sizes and strides as arguments, so one compiled module serves every
//! shape of the same structure. Reductions accumulate per thread, combine
//! through shared memory (CUDA: the last 32 lanes by warp shuffles; OpenCL:
//! local memory and barriers, as PoCL has no sub-groups) and split long
//! rows over several groups in two passes, never float atomics, so results
//! are reproducible.

use crate::kernel::ScalarOp;
use crate::{BinaryOp, DType, ReduceOp, ScanOp, UnaryOp};
use std::fmt::Write;

/// Threads per group of every kernel (a power of two, at most 1024).
pub const LOCAL: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    Cuda,
    OpenCl,
}

/// The dialect table: everything the two languages spell differently.
struct Tokens {
    /// Before the kernel's name (`{L}` is the fixed group size).
    kernel: &'static str,
    global: &'static str,
    restrict: &'static str,
    shared: &'static str,
    barrier: &'static str,
    lid: &'static str,
    gid: &'static str,
    lsize: &'static str,
    ngroups: &'static str,
    func: &'static str,
    head: &'static str,
    inf_f: &'static str,
    inf_d: &'static str,
    /// Bit casts between float and u32, and float `rint`.
    f2u: &'static str,
    u2f: &'static str,
    rint_f: &'static str,
    /// Warp shuffles for the last step of a reduction.
    shuffle: bool,
}

const CUDA: Tokens = Tokens {
    kernel: "extern \"C\" __global__ void __launch_bounds__({L})",
    global: "",
    restrict: "__restrict__",
    shared: "__shared__",
    barrier: "__syncthreads()",
    lid: "((i64)threadIdx.x)",
    gid: "((i64)blockIdx.x)",
    lsize: "((i64)blockDim.x)",
    ngroups: "((i64)gridDim.x)",
    func: "static __device__ __forceinline__",
    head: "typedef long long i64;\ntypedef unsigned long long u64;\ntypedef unsigned int u32;\ntypedef unsigned short u16;\ntypedef unsigned char u8;\n",
    inf_f: "__int_as_float(0x7f800000)",
    inf_d: "__longlong_as_double(0x7ff0000000000000LL)",
    f2u: "__float_as_uint",
    u2f: "__uint_as_float",
    rint_f: "rintf",
    shuffle: true,
};

const OPENCL: Tokens = Tokens {
    kernel: "__kernel __attribute__((reqd_work_group_size({L}, 1, 1))) void",
    global: "__global ",
    restrict: "restrict",
    shared: "__local",
    barrier: "barrier(CLK_LOCAL_MEM_FENCE)",
    lid: "((i64)get_local_id(0))",
    gid: "((i64)get_group_id(0))",
    lsize: "((i64)get_local_size(0))",
    ngroups: "((i64)get_num_groups(0))",
    func: "static inline",
    head: "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef long i64;\ntypedef ulong u64;\ntypedef uint u32;\ntypedef ushort u16;\ntypedef uchar u8;\n",
    inf_f: "INFINITY",
    inf_d: "((double)INFINITY)",
    f2u: "as_uint",
    u2f: "as_float",
    rint_f: "rint",
    shuffle: false,
};

impl Dialect {
    fn tokens(self) -> &'static Tokens {
        match self {
            Dialect::Cuda => &CUDA,
            Dialect::OpenCl => &OPENCL,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Cuda => "cuda",
            Dialect::OpenCl => "opencl",
        }
    }
}

/// The C type that stores elements of `dtype`.
pub fn storage_type(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool | DType::U8 => "u8",
        // Moved, never computed on: narrow integers compute as i32.
        DType::I8 => "signed char",
        DType::I16 => "short",
        DType::U16 => "u16",
        DType::I32 => "int",
        DType::I64 => "i64",
        DType::U32 => "u32",
        // 16-bit floats are their bits; kernels convert them to float
        // where they compute (`half_helpers`).
        DType::BF16 | DType::F16 => "u16",
        DType::F32 => "float",
        DType::F64 => "double",
        // Moved, never computed on: complex arithmetic runs on the CPU.
        DType::C64 => "float2",
    }
}

/// The C type registers of `dtype` are computed in (16-bit float
/// registers hold bits: only loops that move elements have them, as
/// arithmetic on them runs in f32, `backend::Dispatch`).
fn register_type(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "int",
        d => storage_type(d),
    }
}

/// A rendered kernel: its source and the name of its entry point.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// How a kernel reads an array: element `offset + Σ coord[i] * strides[i]`
/// at each coordinate of the iteration space (strides may be negative or 0).
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub dtype: DType,
    pub offset: i64,
    pub strides: Vec<i64>,
}

impl View {
    /// Reading an array of `shape` at every index of `space` with NumPy
    /// broadcasting (trailing axes aligned).
    pub fn broadcast(dtype: DType, shape: &[usize], space: &[usize]) -> View {
        let strides = crate::KernelInput::broadcast(dtype, shape, space).strides;
        View {
            dtype,
            offset: 0,
            strides: strides.iter().map(|&s| s as i64).collect(),
        }
    }

    /// Row-major, element `i` at index `i`.
    pub fn contiguous(dtype: DType, space: &[usize]) -> View {
        View::broadcast(dtype, space, space)
    }

    fn class(&self, space: &[usize]) -> Access {
        if self.strides.iter().all(|&s| s == 0) {
            return Access::Scalar;
        }
        let row_major = View::contiguous(self.dtype, space);
        if self.offset == 0
            && self
                .strides
                .iter()
                .zip(&row_major.strides)
                .enumerate()
                .all(|(i, (a, b))| a == b || space[i] == 1)
        {
            Access::Contiguous
        } else {
            Access::Strided
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Element `i` of the space is element `i` of the array.
    Contiguous,
    /// One element, read at every index (`offset`).
    Scalar,
    /// Offset and strides as arguments.
    Strided,
}

/// An output of a `Loop`: a register stored at every index (through `view`,
/// row-major when `None`) or reduced over the trailing `reduce_axes` axes,
/// converted to `dtype`.
#[derive(Clone, Debug, PartialEq)]
pub struct Out {
    pub reg: usize,
    pub reduce: Option<ReduceOp>,
    pub dtype: DType,
    pub view: Option<View>,
}

/// What the renderer renders: the kernel IR's loop with its register type,
/// inputs and outputs spelled out (any dtype, views with offsets). The
/// backend makes one of a fused `Kernel`, and of every elementwise,
/// reduction and movement primitive.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub space: Vec<usize>,
    pub reg: DType,
    pub inputs: Vec<View>,
    pub body: Vec<ScalarOp>,
    pub outputs: Vec<Out>,
    pub reduce_axes: usize,
}

/// The scalar arguments of a launch, in the order the kernel declares them.
pub type Scalars = Vec<i64>;

fn is_cuda_float(d: Dialect, t: DType) -> bool {
    d == Dialect::Cuda && t == DType::F32
}

/// C's math functions by their double names; CUDA's f32 versions add `f`.
const MATH: &[&str] = &[
    "exp", "exp2", "expm1", "log", "log1p", "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil",
    "rint", "fabs", "pow", "atan2", "fmod", "copysign", "fma",
];

/// Spell math calls for the dialect and register type: CUDA's f32 functions
/// are `expf`, `sqrtf`, … (NVRTC has no overloads without headers); OpenCL
/// overloads one name.
fn spell_math(text: &str, d: Dialect, t: DType) -> String {
    if !is_cuda_float(d, t) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            out.push_str(word);
            if i < b.len() && b[i] == b'(' && MATH.contains(&word) {
                out.push('f');
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// A literal of register type `t`.
fn literal(x: f64, t: DType) -> String {
    match t {
        DType::F32 | DType::F64 => {
            if x.is_nan() {
                "A_NAN".into()
            } else if x.is_infinite() {
                if x > 0.0 {
                    "A_INF".into()
                } else {
                    "(-A_INF)".into()
                }
            } else if t == DType::F32 {
                format!("{:?}f", x as f32)
            } else {
                format!("{x:?}")
            }
        }
        DType::Bool => ((x != 0.0) as i32).to_string(),
        DType::BF16 => format!("((u16){}u)", half::bf16::from_f64(x).to_bits()),
        DType::F16 => format!("((u16){}u)", half::f16::from_f64(x).to_bits()),
        DType::I32 => format!("((int){})", x as i32),
        DType::U32 => format!("((u32){}u)", x as u32),
        DType::I64 => format!("((i64){}LL)", x as i64),
        DType::C64 => unreachable!("no complex registers (complex arithmetic runs on the CPU)"),
        DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
            unreachable!("narrow integers compute as i32 (backend::Dispatch)")
        }
    }
}

/// Helpers for register type `t`: the `a_` functions the op table's C column
/// names, with the backend's semantics for this type.
fn helpers(d: Dialect, t: DType) -> String {
    let tk = d.tokens();
    let f = tk.func;
    let mut s = String::new();
    let rt = register_type(t);
    writeln!(s, "typedef {rt} T;").unwrap();
    match t {
        DType::F32 | DType::F64 => {
            let inf = if t == DType::F32 { tk.inf_f } else { tk.inf_d };
            writeln!(
                s,
                "#define A_INF ((T){inf})\n#define A_NAN ((T)(A_INF - A_INF))"
            )
            .unwrap();
            // `tanh` saturates by itself: beyond `sat` the exact value
            // rounds to ±1 (some OpenCL libraries give 1 - ulp there,
            // even at infinity).
            let sat = if t == DType::F32 { "9.1f" } else { "19.5" };
            // Exact remainders in double, as NumPy's npy_divmod.
            let generic = format!(
                "{f} T a_abs(T x) {{ return fabs(x); }}
{f} T a_sign(T x) {{ return x > 0 ? (T)1 : x < 0 ? (T)-1 : x; }}
{f} int a_isnan(T x) {{ return x != x; }}
{f} int a_isfinite(T x) {{ return x == x && fabs(x) != A_INF; }}
{f} T a_div(T a, T b) {{ return a / b; }}
{f} T a_max(T a, T b) {{ return (a > b || a != a) ? a : b; }}
{f} T a_min(T a, T b) {{ return (a < b || a != a) ? a : b; }}
{f} T a_pow(T a, T b) {{ return pow(a, b); }}
{f} T a_tanh(T x) {{ return fabs(x) > {sat} ? copysign((T)1, x) : tanh(x); }}
"
            );
            s.push_str(&spell_math(&generic, d, t));
            s.push_str(&format!(
                "{f} double a_divmod(double a, double b, int want_q) {{
  double m = fmod(a, b);
  if (b == 0) return want_q ? a / b : m;
  double q = (a - m) / b;
  if (m != 0) {{ if ((b < 0) != (m < 0)) {{ m += b; q -= 1; }} }} else {{ m = copysign(0.0, b); }}
  if (!want_q) return m;
  if (q != 0) {{ double fl = floor(q); return (q - fl > 0.5) ? fl + 1 : fl; }}
  return copysign(0.0, a / b);
}}
{f} T a_floordiv(T a, T b) {{ return (T)a_divmod((double)a, (double)b, 1); }}
{f} T a_mod(T a, T b) {{ return (T)a_divmod((double)a, (double)b, 0); }}
"
            ));
            s.push_str(&erfinv(d, t));
        }
        // Bits that loops only move: no arithmetic helpers.
        DType::BF16 | DType::F16 | DType::C64 | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
        }
        DType::Bool => {
            s.push_str(&format!(
                "{f} T a_not(T x) {{ return !x; }}
{f} T a_max(T a, T b) {{ return a | b; }}
{f} T a_min(T a, T b) {{ return a & b; }}
{f} int a_isnan(T x) {{ return 0; }}
{f} int a_isfinite(T x) {{ return 1; }}
"
            ));
        }
        DType::U32 => {
            s.push_str(&format!(
                "{f} T a_not(T x) {{ return ~x; }}
{f} T a_abs(T x) {{ return x; }}
{f} T a_sign(T x) {{ return x != 0; }}
{f} int a_isnan(T x) {{ return 0; }}
{f} int a_isfinite(T x) {{ return 1; }}
{f} T a_div(T a, T b) {{ return b == 0 ? 0xffffffffu : a / b; }}
{f} T a_floordiv(T a, T b) {{ return a_div(a, b); }}
{f} T a_mod(T a, T b) {{ return b == 0 ? 0 : a % b; }}
{f} T a_max(T a, T b) {{ return a > b ? a : b; }}
{f} T a_min(T a, T b) {{ return a < b ? a : b; }}
{f} T a_shl(T a, T b) {{ return b >= 32 ? 0 : a << b; }}
{f} T a_shr(T a, T b) {{ return b >= 32 ? 0 : a >> b; }}
{f} T a_pow(T a, T b) {{ T acc = 1; u64 e = b; while (e) {{ if (e & 1) acc *= a; a *= a; e >>= 1; }} return acc; }}
"
            ));
        }
        DType::I32 | DType::I64 => {
            let (ut, bits) = if t == DType::I32 {
                ("u32", 32)
            } else {
                ("u64", 64)
            };
            s.push_str(&format!(
                "typedef {ut} UT;
{f} T a_not(T x) {{ return ~x; }}
{f} T a_abs(T x) {{ return x < 0 ? (T)((UT)0 - (UT)x) : x; }}
{f} T a_sign(T x) {{ return (T)((x > 0) - (x < 0)); }}
{f} int a_isnan(T x) {{ return 0; }}
{f} int a_isfinite(T x) {{ return 1; }}
{f} T a_div(T a, T b) {{ return b == 0 ? (T)-1 : b == -1 ? (T)((UT)0 - (UT)a) : a / b; }}
{f} T a_rem(T a, T b) {{ return b == -1 ? 0 : a % b; }}
{f} T a_floordiv(T a, T b) {{ if (b == 0) return a == 0 ? -1 : -2; T q = a_div(a, b); T r = a_rem(a, b); return (r != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }}
{f} T a_mod(T a, T b) {{ if (b == 0) return 0; T r = a_rem(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? (T)((UT)r + (UT)b) : r; }}
{f} T a_max(T a, T b) {{ return a > b ? a : b; }}
{f} T a_min(T a, T b) {{ return a < b ? a : b; }}
{f} T a_shl(T a, T b) {{ return (b < 0 || b >= {bits}) ? 0 : (T)((UT)a << b); }}
{f} T a_shr(T a, T b) {{ return (b < 0 || b >= {bits}) ? (a < 0 ? -1 : 0) : a >> b; }}
{f} T a_pow(T a, T b) {{
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  UT acc = 1, base = (UT)a; u64 e = (u64)b;
  while (e) {{ if (e & 1) acc *= base; base *= base; e >>= 1; }}
  return (T)acc;
}}
"
            ));
        }
    }
    s
}

/// `a_erfinv` for float registers: CUDA's library function; on OpenCL
/// (which has none) Giles' single-precision approximation, as the CPU
/// backend computes it, refined by Newton steps for double.
fn erfinv(d: Dialect, t: DType) -> String {
    let f = d.tokens().func;
    if d == Dialect::Cuda {
        let name = if t == DType::F32 { "erfinvf" } else { "erfinv" };
        return format!("{f} T a_erfinv(T x) {{ return {name}(x); }}\n");
    }
    let giles = format!(
        "{f} float a_erfinv32(float x) {{
  float ax = fabs(x);
  if (ax >= 1.0f) return ax == 1.0f ? x * INFINITY : (x - x) / (x - x);
  float w = -log((1.0f - x) * (1.0f + x)); float p;
  if (w < 5.0f) {{
    w -= 2.5f; p = 2.81022636e-08f; p = fma(p, w, 3.43273939e-07f); p = fma(p, w, -3.5233877e-06f);
    p = fma(p, w, -4.39150654e-06f); p = fma(p, w, 0.00021858087f); p = fma(p, w, -0.00125372503f);
    p = fma(p, w, -0.00417768164f); p = fma(p, w, 0.246640727f); p = fma(p, w, 1.50140941f);
  }} else {{
    w = sqrt(w) - 3.0f; p = -0.000200214257f; p = fma(p, w, 0.000100950558f); p = fma(p, w, 0.00134934322f);
    p = fma(p, w, -0.00367342844f); p = fma(p, w, 0.00573950773f); p = fma(p, w, -0.0076224613f);
    p = fma(p, w, 0.00943887047f); p = fma(p, w, 1.00167406f); p = fma(p, w, 2.83297682f);
  }}
  return p * x;
}}
"
    );
    if t == DType::F32 {
        return giles + &format!("{f} T a_erfinv(T x) {{ return a_erfinv32(x); }}\n");
    }
    giles
        + &format!(
            "{f} T a_erfinv(T x) {{
  double ax = fabs(x);
  if (ax >= 1.0 || x != x) return ax == 1.0 ? x * A_INF : A_NAN;
  double y = a_erfinv32((float)ax);
  if (!(fabs(y) < A_INF)) y = a_erfinv32(0.99999994f);
  double tail = 1.0 - ax;
  for (int i = 0; i < 8; i++) {{
    double step;
    if (ax > 0.5) {{ double c = erfc(y); double der = -1.1283791670955126 * exp(-y * y) / c; step = (log(c) - log(tail)) / der; }}
    else {{ step = (erf(y) - ax) / (1.1283791670955126 * exp(-y * y)); }}
    if (!(fabs(step) < A_INF)) break;
    y -= step;
    if (fabs(step) <= 1e-17 * fabs(y)) break;
  }}
  return copysign(y, x);
}}
"
        )
}

/// Convert register `x` (of `from`) to the storage of `to`: float → int
/// truncates and saturates, NaN gives 0; integers wrap; bool is `!= 0`.
fn convert(x: &str, from: DType, to: DType) -> String {
    if from == to && to != DType::Bool {
        return x.to_string();
    }
    if to == DType::Bool {
        return format!("(u8)({x} != 0)");
    }
    if to.is_half() {
        // Registers are never 16-bit floats unless `from == to` (above).
        let name = if to == DType::BF16 { "bf16" } else { "f16" };
        return match from {
            DType::F32 => format!("a_f32_{name}({x})"),
            _ => format!("a_f32_{name}(a_odd_f32((double)({x})))"),
        };
    }
    if from.is_float() && to.is_int() {
        let (lo, hi, lo_v, hi_v) = match to {
            DType::I32 => (
                "-2147483648.0",
                "2147483647.0",
                "(-2147483647 - 1)",
                "2147483647",
            ),
            DType::U32 => ("0.0", "4294967295.0", "0u", "4294967295u"),
            _ => (
                "-9223372036854775808.0",
                "9223372036854775807.0",
                "(-9223372036854775807LL - 1)",
                "9223372036854775807LL",
            ),
        };
        let ty = storage_type(to);
        return format!("(({x}) != ({x}) ? ({ty})0 : ({x}) <= {lo} ? ({ty}){lo_v} : ({x}) >= {hi} ? ({ty}){hi_v} : ({ty})({x}))");
    }
    format!("(({})({x}))", storage_type(to))
}

/// The C expression of one scalar op on registers.
fn scalar_op(op: &ScalarOp, t: DType, suffix: &str) -> String {
    let reg = |i: &usize| format!("r{i}{suffix}");
    match op {
        ScalarOp::Load(_) => unreachable!("loads are rendered by the caller"),
        ScalarOp::Const(x) => literal(*x, t),
        ScalarOp::Unary(op, a) => op.c_template().replace("{x}", &reg(a)),
        ScalarOp::Binary(op, a, b) => op
            .c_template()
            .replace("{x}", &reg(a))
            .replace("{y}", &reg(b)),
        ScalarOp::Select(c, a, b) => format!("(r{c}{suffix} != 0 ? r{a}{suffix} : r{b}{suffix})"),
        ScalarOp::Reduced(_) => unreachable!("row values are run in phases (Kernel::in_phases)"),
    }
}

/// `cA` for each axis of flat index `i` over dims `d0..`, innermost last.
fn coordinates(nd: usize, indent: &str) -> String {
    let mut s = format!("{indent}i64 rem = i;\n");
    for a in (0..nd).rev() {
        writeln!(s, "{indent}i64 c{a} = rem % d{a}; rem /= d{a};").unwrap();
    }
    s
}

/// Input `i`'s element at flat index `i` (coordinates `cA` when strided),
/// as a register value.
fn load_expr(access: Access, i: usize, nd: usize, storage: DType, reg: DType) -> String {
    let idx = match access {
        Access::Contiguous => "i".to_string(),
        Access::Scalar => format!("o{i}"),
        Access::Strided => {
            let mut e = format!("o{i}");
            for a in 0..nd {
                write!(e, " + c{a} * s{i}_{a}").unwrap();
            }
            e
        }
    };
    widen_load(&format!("in{i}[{idx}]"), storage, reg)
}

/// A stored element as a register: 16-bit floats as float when the
/// registers are not their bits.
fn widen_load(elem: &str, storage: DType, reg: DType) -> String {
    match storage {
        DType::BF16 if reg != storage => format!("((T)a_bf16_f32({elem}))"),
        DType::F16 if reg != storage => format!("((T)a_f16_f32({elem}))"),
        _ => format!("((T){elem})"),
    }
}

/// Conversions between 16-bit floats (as `u16` bits) and float, rounding to
/// nearest even as the CPU backend (the `half` crate) does, NaNs quieted
/// with their sign; `a_odd_f32` rounds a double to float with round-to-odd
/// so that a second rounding to 16 bits is correct. Bit arithmetic rather
/// than CUDA's `cuda_fp16.h`, which NVRTC cannot find without the toolkit's
/// headers and OpenCL devices need not have (`cl_khr_fp16`).
fn half_helpers(d: Dialect) -> String {
    let tk = d.tokens();
    let (f, f2u, u2f, rint) = (tk.func, tk.f2u, tk.u2f, tk.rint_f);
    format!(
        "{f} float a_bf16_f32(u16 h) {{ return {u2f}(((u32)h) << 16); }}
{f} u16 a_f32_bf16(float x) {{
  u32 u = {f2u}(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
  return (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}}
{f} float a_f16_f32(u16 h) {{
  u32 s = ((u32)h & 0x8000u) << 16, e = ((u32)h >> 10) & 0x1fu, m = (u32)h & 0x3ffu;
  if (e == 0x1fu) return {u2f}(s | 0x7f800000u | (m << 13));
  if (e == 0u) {{ float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }}
  return {u2f}(s | ((e + 112u) << 23) | (m << 13));
}}
{f} u16 a_f32_f16(float x) {{
  u32 u = {f2u}(x), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (u16)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (u16)(s | 0x7c00u);
  if (a < 0x38800000u) return (u16)(s | (u32){rint}({u2f}(a) * 16777216.0f));
  return (u16)(s | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
}}
{f} float a_odd_f32(double x) {{
  float r = (float)x;
  if ((double)r == x || r != r) return r;
  u32 u = {f2u}(r);
  if (u & 1u) return r;
  return {u2f}(fabs((double)r) > fabs(x) ? u - 1u : u + 1u);
}}
"
    )
}

/// The combine step and identity of a reduction on register type `t`.
fn reduce_combine(op: ReduceOp, t: DType, a: &str, b: &str) -> String {
    let bool_like = t == DType::Bool;
    match op {
        ReduceOp::Sum if bool_like => format!("({a} | {b})"),
        ReduceOp::Prod if bool_like => format!("({a} & {b})"),
        ReduceOp::Sum => format!("({a} + {b})"),
        ReduceOp::Prod => format!("({a} * {b})"),
        ReduceOp::Max => format!("a_max({a}, {b})"),
        ReduceOp::Min => format!("a_min({a}, {b})"),
        ReduceOp::All => format!("(T)(({a} != 0) & ({b} != 0))"),
        ReduceOp::Any => format!("(T)(({a} != 0) | ({b} != 0))"),
    }
}

fn reduce_identity(op: ReduceOp, t: DType) -> String {
    match (op, t) {
        (ReduceOp::Sum | ReduceOp::Any, _) => "(T)0".into(),
        (ReduceOp::Prod | ReduceOp::All, _) => "(T)1".into(),
        (ReduceOp::Max | ReduceOp::Min, DType::BF16 | DType::F16) => {
            unreachable!("16-bit floats reduce in f32 (backend::Dispatch)")
        }
        (ReduceOp::Max, DType::F32 | DType::F64) => "(-A_INF)".into(),
        (ReduceOp::Min, DType::F32 | DType::F64) => "A_INF".into(),
        (ReduceOp::Max, DType::I32) => "(-2147483647 - 1)".into(),
        (ReduceOp::Min, DType::I32) => "2147483647".into(),
        (ReduceOp::Max, DType::I64) => "(-9223372036854775807LL - 1)".into(),
        (ReduceOp::Min, DType::I64) => "9223372036854775807LL".into(),
        (ReduceOp::Max, DType::U32 | DType::Bool) => "(T)0".into(),
        (ReduceOp::Min, DType::U32) => "0xffffffffu".into(),
        (ReduceOp::Min, DType::Bool) => "(T)1".into(),
        (ReduceOp::Max | ReduceOp::Min, DType::C64) => {
            unreachable!("complex numbers have no order")
        }
        (ReduceOp::Max | ReduceOp::Min, DType::I8 | DType::I16 | DType::U8 | DType::U16) => {
            unreachable!("narrow integers reduce as i32 (backend::Dispatch)")
        }
    }
}

fn scan_as_reduce(op: ScanOp) -> ReduceOp {
    match op {
        ScanOp::Sum => ReduceOp::Sum,
        ScanOp::Prod => ReduceOp::Prod,
        ScanOp::Max => ReduceOp::Max,
        ScanOp::Min => ReduceOp::Min,
    }
}

/// The start of every source: typedefs and the helpers of register type `t`.
fn prelude(d: Dialect, t: DType) -> String {
    format!("{}{}", d.tokens().head, helpers(d, t))
}

fn kernel_head(d: Dialect, name: &str) -> String {
    format!(
        "{} {name}(",
        d.tokens().kernel.replace("{L}", &LOCAL.to_string())
    )
}

fn in_ptr(d: Dialect, dtype: DType, name: &str) -> String {
    let tk = d.tokens();
    format!(
        "{}const {}* {} {name}",
        tk.global,
        storage_type(dtype),
        tk.restrict
    )
}

fn out_ptr(d: Dialect, dtype: DType, name: &str) -> String {
    let tk = d.tokens();
    format!(
        "{}{}* {} {name}",
        tk.global,
        storage_type(dtype),
        tk.restrict
    )
}

/// The grid-stride loop header over `0..n` with index variable `i`.
fn grid_loop(d: Dialect, i: &str, n: &str) -> String {
    let tk = d.tokens();
    format!(
        "for (i64 {i} = {} * {} + {}; {i} < {n}; {i} += {} * {})",
        tk.gid, tk.lsize, tk.lid, tk.lsize, tk.ngroups
    )
}

/// A kernel's parameter list and the scalars it takes, built side by side.
struct Params {
    decls: Vec<String>,
}

impl Params {
    fn new() -> Params {
        Params { decls: Vec::new() }
    }
    fn ptr(&mut self, decl: String) {
        self.decls.push(decl);
    }
    fn scalar(&mut self, name: &str) {
        self.decls.push(format!("const i64 {name}"));
    }
    fn render(&self) -> String {
        self.decls.join(", ")
    }
}

/// Launch arguments of a `Loop`, in declaration order after the pointers.
pub struct LoopArgs {
    pub scalars: Scalars,
    /// Number of groups to launch.
    pub groups: usize,
}

/// How a reduction splits its rows: `parts` groups per output row, each
/// over `chunk` elements (`parts == 1`: one pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub parts: usize,
    pub chunk: usize,
}

/// Choose the split of `rows` reductions of `len` elements: enough groups
/// to fill a device, chunks of at least 8 groups' worth of elements.
pub fn split(rows: usize, len: usize) -> Split {
    const TARGET_GROUPS: usize = 512;
    let min_chunk = 8 * LOCAL;
    if rows >= TARGET_GROUPS / 4 || len <= 2 * min_chunk {
        return Split {
            parts: 1,
            chunk: len.max(1),
        };
    }
    let parts = (TARGET_GROUPS / rows.max(1)).clamp(1, len.div_ceil(min_chunk));
    let chunk = len.div_ceil(parts);
    Split {
        parts: len.div_ceil(chunk),
        chunk,
    }
}

impl Loop {
    fn kept(&self) -> usize {
        self.space[..self.space.len() - self.reduce_axes]
            .iter()
            .product()
    }
    fn reduced(&self) -> usize {
        self.space[self.space.len() - self.reduce_axes..]
            .iter()
            .product()
    }

    /// The source of this loop, and (for reductions split in two passes)
    /// its partial results: the first pass writes `T` partials per part.
    pub fn render(&self, d: Dialect, split: Split) -> Source {
        let t = self.reg;
        let nd = self.space.len();
        let mut p = Params::new();
        for (i, v) in self.inputs.iter().enumerate() {
            p.ptr(in_ptr(d, v.dtype, &format!("in{i}")));
        }
        let partial = split.parts > 1;
        for (k, o) in self.outputs.iter().enumerate() {
            let dtype = if partial && o.reduce.is_some() {
                t
            } else {
                o.dtype
            };
            p.ptr(out_ptr(d, dtype, &format!("out{k}")));
        }
        p.scalar("n");
        for a in 0..nd {
            p.scalar(&format!("d{a}"));
        }
        let access: Vec<Access> = self.inputs.iter().map(|v| v.class(&self.space)).collect();
        for (i, v) in self.inputs.iter().enumerate() {
            match access[i] {
                Access::Contiguous => {}
                Access::Scalar => p.scalar(&format!("o{i}")),
                Access::Strided => {
                    p.scalar(&format!("o{i}"));
                    for a in 0..v.strides.len() {
                        p.scalar(&format!("s{i}_{a}"));
                    }
                }
            }
        }
        let out_strided: Vec<bool> = self
            .outputs
            .iter()
            .map(|o| {
                o.reduce.is_none()
                    && o.view
                        .as_ref()
                        .is_some_and(|v| v.class(&self.space) != Access::Contiguous)
            })
            .collect();
        for (k, o) in self.outputs.iter().enumerate() {
            if out_strided[k] {
                p.scalar(&format!("oo{k}"));
                for a in 0..o.view.as_ref().unwrap().strides.len() {
                    p.scalar(&format!("os{k}_{a}"));
                }
            }
        }
        if self.reduce_axes > 0 {
            for n in ["nr", "nk", "parts", "chunk"] {
                p.scalar(n);
            }
        }
        let need_coords = access.contains(&Access::Strided) || out_strided.contains(&true);

        let tk = d.tokens();
        let mut s = prelude(d, t);
        let halves = self.inputs.iter().map(|v| v.dtype);
        if halves
            .chain(self.outputs.iter().map(|o| o.dtype))
            .any(|x| x.is_half() && x != t)
        {
            s.push_str(&half_helpers(d));
        }
        let kind = if self.reduce_axes > 0 {
            "reduce"
        } else {
            "elementwise"
        };
        let name = format!("arr_{kind}");
        writeln!(s, "{}{}) {{", kernel_head(d, &name), p.render()).unwrap();
        // The element at flat index `i`: coordinates, loads, registers,
        // stores.
        let mut elem = String::new();
        if need_coords {
            elem.push_str(&coordinates(nd, "    "));
        }
        let load = |i: usize| load_expr(access[i], i, nd, self.inputs[i].dtype, t);
        self.body_lines(&mut elem, &load, d);
        let reducing: Vec<usize> = (0..self.outputs.len())
            .filter(|&k| self.outputs[k].reduce.is_some())
            .collect();
        for (k, o) in self.outputs.iter().enumerate() {
            match o.reduce {
                None => {
                    let idx = if out_strided[k] {
                        let mut e = format!("oo{k}");
                        for a in 0..nd {
                            write!(e, " + c{a} * os{k}_{a}").unwrap();
                        }
                        e
                    } else {
                        "i".into()
                    };
                    writeln!(
                        elem,
                        "    out{k}[{idx}] = {};",
                        convert(&format!("r{}", o.reg), t, o.dtype)
                    )
                    .unwrap();
                }
                Some(op) => {
                    writeln!(
                        elem,
                        "    acc{k} = {};",
                        reduce_combine(op, t, &format!("acc{k}"), &format!("r{}", o.reg))
                    )
                    .unwrap();
                }
            }
        }
        if self.reduce_axes == 0 {
            if self.vectorizes(&access) {
                s.push_str(&self.vector_loop(d, &access));
                let tail = format!(
                    "for (i64 i = (n / 4) * 4 + {} * {} + {}; i < n; i += {} * {})",
                    tk.gid, tk.lsize, tk.lid, tk.lsize, tk.ngroups
                );
                writeln!(s, "  {tail} {{\n{elem}  }}\n}}").unwrap();
            } else {
                writeln!(s, "  {} {{\n{elem}  }}\n}}", grid_loop(d, "i", "n")).unwrap();
            }
            return Source { name, text: s };
        }
        // One group per (row, part); threads stride over the part's chunk.
        for &k in &reducing {
            writeln!(s, "  {} T sh{k}[{LOCAL}];", tk.shared).unwrap();
        }
        writeln!(s, "  i64 rows = nk * parts;").unwrap();
        writeln!(
            s,
            "  for (i64 g = {}; g < rows; g += {}) {{",
            tk.gid, tk.ngroups
        )
        .unwrap();
        writeln!(s, "    i64 row = g / parts, part = g % parts;").unwrap();
        writeln!(
            s,
            "    i64 lo = part * chunk, hi = lo + chunk < nr ? lo + chunk : nr;"
        )
        .unwrap();
        for &k in &reducing {
            let op = self.outputs[k].reduce.unwrap();
            writeln!(s, "    T acc{k} = {};", reduce_identity(op, t)).unwrap();
        }
        writeln!(s, "    for (i64 j = lo + {}; j < hi; j += {}) {{\n    i64 i = row * nr + j;\n{elem}    }}", tk.lid, tk.lsize).unwrap();
        let lid = tk.lid;
        for &k in &reducing {
            writeln!(s, "    sh{k}[{lid}] = acc{k};").unwrap();
        }
        writeln!(s, "    {};", tk.barrier).unwrap();
        let stop = if tk.shuffle { 32 } else { 0 };
        writeln!(s, "    for (int w = {} / 2; w > {stop}; w >>= 1) {{", LOCAL).unwrap();
        writeln!(s, "      if ({lid} < w) {{").unwrap();
        for &k in &reducing {
            let op = self.outputs[k].reduce.unwrap();
            writeln!(
                s,
                "        sh{k}[{lid}] = {};",
                reduce_combine(
                    op,
                    t,
                    &format!("sh{k}[{lid}]"),
                    &format!("sh{k}[{lid} + w]")
                )
            )
            .unwrap();
        }
        writeln!(s, "      }}\n      {};\n    }}", tk.barrier).unwrap();
        if tk.shuffle {
            // The last 64 values: one warp combines them with shuffles.
            writeln!(s, "    if ({lid} < 32) {{").unwrap();
            for &k in &reducing {
                let op = self.outputs[k].reduce.unwrap();
                writeln!(
                    s,
                    "      T v{k} = {};",
                    reduce_combine(
                        op,
                        t,
                        &format!("sh{k}[{lid}]"),
                        &format!("sh{k}[{lid} + 32]")
                    )
                )
                .unwrap();
                writeln!(
                    s,
                    "      for (int m = 16; m > 0; m >>= 1) v{k} = {};",
                    reduce_combine(
                        op,
                        t,
                        &format!("v{k}"),
                        &format!("__shfl_xor_sync(0xffffffffu, v{k}, m)")
                    )
                )
                .unwrap();
                writeln!(s, "      if ({lid} == 0) sh{k}[0] = v{k};").unwrap();
            }
            writeln!(s, "    }}\n    {};", tk.barrier).unwrap();
        }
        writeln!(s, "    if ({lid} == 0) {{").unwrap();
        for &k in &reducing {
            let value = if partial {
                format!("sh{k}[0]")
            } else {
                convert(&format!("sh{k}[0]"), t, self.outputs[k].dtype)
            };
            writeln!(s, "      out{k}[g] = {value};").unwrap();
        }
        writeln!(s, "    }}\n    {};\n  }}\n}}", tk.barrier).unwrap();
        Source { name, text: s }
    }

    /// Registers of the body, each `T rN = ...;`, loading inputs by `load`.
    fn body_lines(&self, out: &mut String, load: &dyn Fn(usize) -> String, d: Dialect) {
        self.body_lines_named(out, load, d, "");
    }

    /// `body_lines` with every register named `rN{suffix}` (one lane of the
    /// vector path).
    fn body_lines_named(
        &self,
        out: &mut String,
        load: &dyn Fn(usize) -> String,
        d: Dialect,
        suffix: &str,
    ) {
        let t = self.reg;
        for (r, op) in self.body.iter().enumerate() {
            let e = match op {
                ScalarOp::Load(i) => load(*i),
                op => spell_math(&scalar_op(op, t, suffix), d, t),
            };
            // Bool registers stay 0 or 1 whatever the op computed.
            if t == DType::Bool {
                writeln!(out, "    T r{r}{suffix} = ({e}) != 0;").unwrap();
            } else {
                writeln!(out, "    T r{r}{suffix} = {e};").unwrap();
            }
        }
    }

    /// Whether the elementwise loop takes the 16-byte vector path: every
    /// array is contiguous (or one element) and of a 4-byte type, so four
    /// elements move in one aligned load or store (buffers are aligned to
    /// their size class, and contiguous views start at element 0).
    fn vectorizes(&self, access: &[Access]) -> bool {
        let four = |d: DType| matches!(d, DType::F32 | DType::I32 | DType::U32);
        self.reduce_axes == 0
            && access.iter().all(|a| *a != Access::Strided)
            && self.inputs.iter().all(|v| four(v.dtype))
            && self.outputs.iter().all(|o| {
                four(o.dtype)
                    && o.view
                        .as_ref()
                        .is_none_or(|v| v.class(&self.space) == Access::Contiguous)
            })
    }

    /// The vector loop over `n / 4` groups of four elements; the scalar
    /// loop after it finishes the tail.
    fn vector_loop(&self, d: Dialect, access: &[Access]) -> String {
        let tk = d.tokens();
        let t = self.reg;
        let vec_of = |dt: DType| {
            format!(
                "{}4",
                match dt {
                    DType::F32 => "float",
                    DType::I32 => "int",
                    _ => "uint",
                }
            )
        };
        let mut s = format!(
            "  {} {{
",
            grid_loop(d, "q", "n / 4")
        );
        for (i, v) in self.inputs.iter().enumerate() {
            if access[i] == Access::Contiguous {
                let ty = vec_of(v.dtype);
                let e = match d {
                    Dialect::Cuda => format!("(({}const {ty}*)in{i})[q]", tk.global),
                    Dialect::OpenCl => format!("vload4(q, in{i})"),
                };
                writeln!(s, "    {ty} v{i} = {e};").unwrap();
            }
        }
        let lanes = ["x", "y", "z", "w"];
        for lane in lanes {
            let load = |i: usize| match access[i] {
                Access::Contiguous => format!("((T)v{i}.{lane})"),
                _ => format!("((T)in{i}[o{i}])"),
            };
            self.body_lines_named(&mut s, &load, d, &format!("_{lane}"));
        }
        for (k, o) in self.outputs.iter().enumerate() {
            let parts: Vec<String> = lanes
                .iter()
                .map(|l| convert(&format!("r{}_{l}", o.reg), t, o.dtype))
                .collect();
            let ty = vec_of(o.dtype);
            match d {
                Dialect::Cuda => writeln!(
                    s,
                    "    (({ty}*)out{k})[q] = make_{ty}({});",
                    parts.join(", ")
                )
                .unwrap(),
                Dialect::OpenCl => {
                    writeln!(s, "    vstore4(({ty})({}), q, out{k});", parts.join(", ")).unwrap()
                }
            }
        }
        s.push_str(
            "  }
",
        );
        s
    }

    /// The scalar arguments and group count of a launch of this loop.
    pub fn args(&self, split: Split) -> LoopArgs {
        let mut sc: Scalars = vec![self.space.iter().product::<usize>() as i64];
        sc.extend(self.space.iter().map(|&x| x as i64));
        for v in &self.inputs {
            match v.class(&self.space) {
                Access::Contiguous => {}
                Access::Scalar => sc.push(v.offset),
                Access::Strided => {
                    sc.push(v.offset);
                    sc.extend(&v.strides);
                }
            }
        }
        for o in &self.outputs {
            if let (None, Some(v)) = (o.reduce, &o.view) {
                if v.class(&self.space) != Access::Contiguous {
                    sc.push(v.offset);
                    sc.extend(&v.strides);
                }
            }
        }
        let groups = if self.reduce_axes > 0 {
            sc.push(self.reduced() as i64);
            sc.push(self.kept() as i64);
            sc.push(split.parts as i64);
            sc.push(split.chunk as i64);
            (self.kept() * split.parts).clamp(1, 65535)
        } else {
            elementwise_groups(self.space.iter().product())
        };
        LoopArgs {
            scalars: sc,
            groups,
        }
    }
}

/// Groups for a grid-stride loop over `n` elements: a few waves, capped.
pub fn elementwise_groups(n: usize) -> usize {
    n.div_ceil(LOCAL).clamp(1, 4096)
}

/// Templates: the primitives that are not a loop of scalar ops. Each
/// renders one kernel named `arr_<kind>` over register type `t`.
pub mod template {
    use super::*;

    fn open(d: Dialect, t: DType, name: &str, params: &Params) -> String {
        format!(
            "{}{}{}) {{\n",
            prelude(d, t),
            kernel_head(d, name),
            params.render()
        )
    }

    /// A template's source: the prelude, its head with `params`, `body`.
    fn made(d: Dialect, t: DType, name: &str, params: &Params, body: &str) -> Source {
        Source {
            name: name.into(),
            text: open(d, t, name, params) + body,
        }
    }

    /// `out[i] = (i / inner) % n` along one axis: iota.
    pub fn iota(d: Dialect, t: DType) -> Source {
        let mut p = Params::new();
        p.ptr(out_ptr(d, t, "out"));
        for n in ["total", "n", "inner"] {
            p.scalar(n);
        }
        let body = format!(
            "  {} out[i] = {};\n}}\n",
            grid_loop(d, "i", "total"),
            convert("(T)((i / inner) % n)", t, t)
        );
        made(d, t, "arr_iota", &p, &body)
    }

    /// `take` along an axis: `a` as `[pre, n, post]`, `idx` of `m` entries,
    /// out `[pre, m, post]`; indices clamped, an empty axis gives zeros.
    pub fn gather(d: Dialect, t: DType, index: DType) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "a"));
        p.ptr(in_ptr(d, index, "idx"));
        p.ptr(out_ptr(d, t, "out"));
        for n in ["total", "n", "m", "post"] {
            p.scalar(n);
        }
        let body = format!(
            "  {} {{
    i64 q = i % post, j = (i / post) % m, pre = i / (post * m);
    i64 k = (i64)idx[j]; k = k < 0 ? 0 : k >= n ? n - 1 : k;
    out[i] = n == 0 ? (T)0 : a[(pre * n + k) * post + q];
  }}\n}}\n",
            grid_loop(d, "i", "total")
        );
        made(d, t, "arr_gather", &p, &body)
    }

    /// The transpose of gather, without atomics: each output element scans
    /// the indices in order (the last `Set` wins; `Add` sums in order).
    pub fn scatter(d: Dialect, t: DType, index: DType, add: bool) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "a"));
        p.ptr(in_ptr(d, index, "idx"));
        p.ptr(in_ptr(d, t, "upd"));
        p.ptr(out_ptr(d, t, "out"));
        for n in ["total", "n", "m", "post"] {
            p.scalar(n);
        }
        let step = if add {
            "v = v + (T)upd[(pre * m + j) * post + q];"
        } else {
            "v = (T)upd[(pre * m + j) * post + q];"
        };
        let body = format!(
            "  {} {{
    i64 q = i % post, r = (i / post) % n, pre = i / (post * n);
    T v = (T)a[i];
    for (i64 j = 0; j < m; j++) {{ if ((i64)idx[j] == r) {{ {step} }} }}
    out[i] = {};
  }}\n}}\n",
            grid_loop(d, "i", "total"),
            convert("v", t, t)
        );
        let name = if add {
            "arr_scatter_add"
        } else {
            "arr_scatter"
        };
        made(d, t, name, &p, &body)
    }

    /// Pad: each output coordinate maps back to an input one, or to `value`.
    pub fn pad(d: Dialect, t: DType, nd: usize) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "a"));
        p.ptr(in_ptr(d, t, "value"));
        p.ptr(out_ptr(d, t, "out"));
        p.scalar("total");
        for a in 0..nd {
            for n in ["d", "n", "lo", "step"] {
                p.scalar(&format!("{n}{a}"));
            }
        }
        let mut b = format!(
            "  {} {{\n    i64 rem = i, src = 0, in_stride = 1; int inside = 1;\n",
            grid_loop(d, "i", "total")
        );
        for a in (0..nd).rev() {
            writeln!(
                b,
                "    {{ i64 c = rem % d{a}; rem /= d{a}; i64 j = c - lo{a};
      if (j < 0 || j % step{a} != 0 || j / step{a} >= n{a}) inside = 0; else src += (j / step{a}) * in_stride;
      in_stride *= n{a}; }}"
            )
            .unwrap();
        }
        b.push_str("    out[i] = inside ? a[src] : value[0];\n  }\n}\n");
        made(d, t, "arr_pad", &p, &b)
    }

    /// Whether `y` sorts strictly before `x` (NaNs last).
    fn before(t: DType, y: &str, x: &str) -> String {
        if t.is_float() {
            format!("({y} == {y} && ({x} != {x} || {y} < {x}))")
        } else {
            format!("({y} < {x})")
        }
    }

    /// One pass of a stable merge sort along an axis, carrying each
    /// element's original index: runs of `width` sorted elements are merged
    /// in pairs, every element placed at once by a binary search for its
    /// rank in the other run (a left element goes before equal right ones).
    /// `log2(n)` passes sort a lane in O(n log² n) work, all of it parallel.
    pub fn merge_pass(d: Dialect, t: DType) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "kin"));
        p.ptr(in_ptr(d, DType::I32, "iin"));
        p.ptr(out_ptr(d, t, "kout"));
        p.ptr(out_ptr(d, DType::I32, "iout"));
        for n in ["total", "n", "post", "width"] {
            p.scalar(n);
        }
        let body = format!(
            "  {} {{
    i64 q = i % post, j = (i / post) % n, pre = i / (post * n);
    i64 base = pre * n * post + q;
    i64 L = (j / (2 * width)) * 2 * width;
    i64 R = L + width < n ? L + width : n;
    i64 E = R + width < n ? R + width : n;
    T x = (T)kin[base + j * post];
    int left = j < R;
    i64 lo = left ? R : L, hi = left ? E : R;
    while (lo < hi) {{
      i64 mid = lo + (hi - lo) / 2;
      T y = (T)kin[base + mid * post];
      int go_right = left ? {} : !{};
      if (go_right) lo = mid + 1; else hi = mid;
    }}
    i64 dst = left ? j + (lo - R) : L + (j - R) + (lo - L);
    kout[base + dst * post] = kin[base + j * post];
    iout[base + dst * post] = iin[base + j * post];
  }}\n}}\n",
            grid_loop(d, "i", "total"),
            before(t, "y", "x"),
            before(t, "x", "y"),
        );
        made(d, t, "arr_merge", &p, &body)
    }

    /// Inclusive scan along an axis, one thread per lane.
    pub fn scan(d: Dialect, t: DType, op: ScanOp, reverse: bool) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "a"));
        p.ptr(out_ptr(d, t, "out"));
        for n in ["lanes", "n", "post"] {
            p.scalar(n);
        }
        let op = scan_as_reduce(op);
        let k = if reverse { "n - 1 - j" } else { "j" };
        let body = format!(
            "  {} {{
    i64 q = i % post, pre = i / post; i64 base = pre * n * post + q;
    T acc = {};
    for (i64 j = 0; j < n; j++) {{ i64 at = base + ({k}) * post; acc = {}; out[at] = {}; }}
  }}\n}}\n",
            grid_loop(d, "i", "lanes"),
            reduce_identity(op, t),
            reduce_combine(op, t, "acc", "(T)a[at]"),
            convert("acc", t, t)
        );
        made(d, t, "arr_scan", &p, &body)
    }

    /// Index of the first max/min along an axis; the first NaN wins both.
    pub fn arg_reduce(d: Dialect, t: DType, max: bool) -> Source {
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "a"));
        p.ptr(out_ptr(d, DType::I32, "out"));
        for n in ["lanes", "n", "post"] {
            p.scalar(n);
        }
        let better = if max { "x > best" } else { "x < best" };
        let nan = if t.is_float() { "best != best" } else { "0" };
        let xnan = if t.is_float() { "x != x ||" } else { "" };
        let body = format!(
            "  {} {{
    i64 q = i % post, pre = i / post; i64 base = pre * n * post + q;
    int at = 0; T best = n > 0 ? (T)a[base] : (T)0;
    for (i64 j = 1; j < n; j++) {{
      if ({nan}) break;
      T x = (T)a[base + j * post];
      if ({xnan} {better}) {{ best = x; at = (int)j; }}
    }}
    out[i] = at;
  }}\n}}\n",
            grid_loop(d, "i", "lanes")
        );
        let name = if max { "arr_argmax" } else { "arr_argmin" };
        made(d, t, name, &p, &body)
    }

    /// Threefry-2x32, 20 rounds; single-element inputs are used everywhere.
    pub fn threefry(d: Dialect) -> Source {
        let mut p = Params::new();
        for n in ["k0", "k1", "x0", "x1"] {
            p.ptr(in_ptr(d, DType::U32, n));
        }
        p.ptr(out_ptr(d, DType::U32, "y0"));
        p.ptr(out_ptr(d, DType::U32, "y1"));
        for n in ["total", "n0", "n1", "n2", "n3"] {
            p.scalar(n);
        }
        let f = d.tokens().func;
        let rot =
            format!("{f} u32 a_rotl(u32 v, u32 r) {{ return (v << r) | (v >> (32u - r)); }}\n");
        let mut b = format!(
            "  {} {{
    u32 a0 = k0[n0 == 1 ? 0 : i], a1 = k1[n1 == 1 ? 0 : i];
    u32 ks[3]; ks[0] = a0; ks[1] = a1; ks[2] = a0 ^ a1 ^ 0x1BD11BDAu;
    u32 v0 = x0[n2 == 1 ? 0 : i] + ks[0], v1 = x1[n3 == 1 ? 0 : i] + ks[1];
",
            grid_loop(d, "i", "total")
        );
        const ROT: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
        for g in 0..5usize {
            for r in ROT[g % 2] {
                writeln!(b, "    v0 += v1; v1 = a_rotl(v1, {r}u) ^ v0;").unwrap();
            }
            writeln!(
                b,
                "    v0 += ks[{}]; v1 += ks[{}] + {}u;",
                (g + 1) % 3,
                (g + 2) % 3,
                g + 1
            )
            .unwrap();
        }
        b.push_str("    y0[i] = v0; y1[i] = v1;\n  }\n}\n");
        let head = format!(
            "{}{rot}{}{}) {{\n",
            d.tokens().head,
            kernel_head(d, "arr_threefry"),
            p.render()
        );
        Source {
            name: "arr_threefry".into(),
            text: head + &b,
        }
    }

    /// An epilogue for `gemm`: a loop over the product's shape whose input
    /// `product` is the product itself (read at every index).
    pub struct Epilogue<'a> {
        pub body: &'a Loop,
        pub product: usize,
    }

    /// Batched matrix product `C[b] = A[b] · B[b]` with operands read
    /// through strides, tiled through shared memory (16×16 tiles, one
    /// thread per output element of a tile), accumulating in `T`, and an
    /// optional epilogue applied to each element of the tile before its
    /// store. Group `g` computes tile `g` of the (batch, row, column) tiles.
    pub fn gemm(d: Dialect, t: DType, epilogue: Option<&Epilogue>) -> Source {
        let tk = d.tokens();
        let mut p = Params::new();
        p.ptr(in_ptr(d, t, "A"));
        p.ptr(in_ptr(d, t, "B"));
        let mut extra_access = Vec::new();
        if let Some(e) = epilogue {
            for (i, v) in e.body.inputs.iter().enumerate() {
                if i != e.product {
                    p.ptr(in_ptr(d, v.dtype, &format!("in{i}")));
                }
            }
            for (k, o) in e.body.outputs.iter().enumerate() {
                p.ptr(out_ptr(d, o.dtype, &format!("out{k}")));
            }
        } else {
            p.ptr(out_ptr(d, t, "out0"));
        }
        for n in [
            "nb", "M", "N", "K", "sab", "sam", "sak", "sbb", "sbk", "sbn",
        ] {
            p.scalar(n);
        }
        if let Some(e) = epilogue {
            let space = &e.body.space;
            for (i, v) in e.body.inputs.iter().enumerate() {
                let a = if i == e.product {
                    Access::Contiguous
                } else {
                    v.class(space)
                };
                extra_access.push(a);
                if i != e.product && a != Access::Contiguous {
                    p.scalar(&format!("o{i}"));
                    if a == Access::Strided {
                        for ax in 0..space.len() {
                            p.scalar(&format!("s{i}_{ax}"));
                        }
                    }
                }
            }
            for ax in 0..space.len() {
                p.scalar(&format!("d{ax}"));
            }
        }
        let mut s = open(d, t, "arr_gemm", &p);
        let lid = tk.lid;
        writeln!(
            s,
            "  {} T ta[16][17]; {} T tb[16][17];",
            tk.shared, tk.shared
        )
        .unwrap();
        writeln!(
            s,
            "  i64 tm = (M + 15) / 16, tn = (N + 15) / 16, tiles = nb * tm * tn;
  i64 ty = {lid} / 16, tx = {lid} % 16;
  for (i64 g = {}; g < tiles; g += {}) {{
    i64 b = g / (tm * tn), row = ((g / tn) % tm) * 16 + ty, col = (g % tn) * 16 + tx;
    T acc = (T)0;
    for (i64 k0 = 0; k0 < K; k0 += 16) {{
      i64 ka = k0 + tx, kb = k0 + ty;
      ta[ty][tx] = (row < M && ka < K) ? (T)A[b * sab + row * sam + ka * sak] : (T)0;
      tb[ty][tx] = (kb < K && col < N) ? (T)B[b * sbb + kb * sbk + col * sbn] : (T)0;
      {};
      for (int kk = 0; kk < 16; kk++) acc += ta[ty][kk] * tb[kk][tx];
      {};
    }}
    if (row < M && col < N) {{
      i64 i = (b * M + row) * N + col;",
            tk.gid, tk.ngroups, tk.barrier, tk.barrier
        )
        .unwrap();
        match epilogue {
            None => writeln!(s, "      out0[i] = {};", convert("acc", t, t)).unwrap(),
            Some(e) => {
                let space = &e.body.space;
                let nd = space.len();
                if extra_access.contains(&Access::Strided) {
                    s.push_str(&coordinates(nd, "      "));
                }
                let load = |i: usize| -> String {
                    if i == e.product {
                        return "acc".into();
                    }
                    load_expr(extra_access[i], i, nd, e.body.inputs[i].dtype, t)
                };
                let mut lines = String::new();
                e.body.body_lines(&mut lines, &load, d);
                s.push_str(
                    &lines
                        .replace("\n    ", "\n      ")
                        .replacen("    ", "      ", 1),
                );
                for (k, o) in e.body.outputs.iter().enumerate() {
                    writeln!(
                        s,
                        "      out{k}[i] = {};",
                        convert(&format!("r{}", o.reg), t, o.dtype)
                    )
                    .unwrap();
                }
            }
        }
        s.push_str("    }\n  }\n}\n");
        Source {
            name: "arr_gemm".into(),
            text: s,
        }
    }

    /// The scalars of an epilogue's inputs and shape, after gemm's own.
    pub fn epilogue_args(e: &Epilogue) -> Scalars {
        let space = &e.body.space;
        let mut sc = Scalars::new();
        for (i, v) in e.body.inputs.iter().enumerate() {
            if i == e.product {
                continue;
            }
            match v.class(space) {
                Access::Contiguous => {}
                Access::Scalar => sc.push(v.offset),
                Access::Strided => {
                    sc.push(v.offset);
                    sc.extend(&v.strides);
                }
            }
        }
        sc.extend(space.iter().map(|&x| x as i64));
        sc
    }
}

/// Every unary and binary op rendered on every dtype its row accepts (the
/// NVRTC test compiles them all), named `op_dtype`.
pub fn every_elementwise_op(d: Dialect) -> Vec<(String, Source)> {
    let one = |name: String, dtype: DType, out: DType, body: Vec<ScalarOp>| {
        let loads = body
            .iter()
            .filter(|op| matches!(op, ScalarOp::Load(_)))
            .count();
        // 16-bit floats load into float registers (conversions).
        let reg = if dtype.is_half() && out != dtype {
            DType::F32
        } else {
            dtype
        };
        let l = Loop {
            space: vec![5],
            reg,
            inputs: vec![View::contiguous(dtype, &[5]); loads],
            outputs: vec![Out {
                reg: body.len() - 1,
                reduce: None,
                dtype: out,
                view: None,
            }],
            body,
            reduce_axes: 0,
        };
        (
            format!("{name}_{}", dtype.short()),
            l.render(d, Split { parts: 1, chunk: 1 }),
        )
    };
    let mut out = Vec::new();
    // Conversions between every pair of dtypes, and the copies that move
    // elements (16-bit floats compute as f32, so their arithmetic rows are
    // the f32 ones; complex numbers never reach GPU kernels).
    let real = || DType::ALL.into_iter().filter(|d| d.in_gpu_kernels());
    for from in real() {
        for to in real() {
            out.push(one(
                format!("convert_to_{}", to.short()),
                from,
                to,
                vec![ScalarOp::Load(0)],
            ));
        }
    }
    for dtype in real().filter(|d| !d.is_half()) {
        for &op in UnaryOp::ALL.iter().filter(|op| op.accepts(dtype)) {
            let to = if op.is_predicate() {
                DType::Bool
            } else {
                dtype
            };
            out.push(one(
                op.name().into(),
                dtype,
                to,
                vec![ScalarOp::Load(0), ScalarOp::Unary(op, 0)],
            ));
        }
        for &op in BinaryOp::ALL.iter().filter(|op| op.accepts(dtype)) {
            let to = if op.is_comparison() {
                DType::Bool
            } else {
                dtype
            };
            let body = vec![
                ScalarOp::Load(0),
                ScalarOp::Load(1),
                ScalarOp::Binary(op, 0, 1),
            ];
            out.push(one(op.name().into(), dtype, to, body));
        }
    }
    out
}
