//! The elementwise op table: one row per unary and binary op, and
//! everything else reads it — the dtypes an op accepts (so the shape rule
//! and the kernels cannot disagree), its scalar function for each element
//! type, its vectorised f32 slice loop where there is one, its IR name, the
//! name users write (for error messages), its C spelling for code
//! generators, and how the language offers it as a builtin.
//!
//! A column holds `none` (the op is not defined on that type) or one of:
//! * `(map |x| e)` — `e` computes the result, of the operand's type;
//! * `(test |x| e)` — `e` is a bool (predicates, comparisons);
//! * `(slices into, in_place, |x| e)` — like `map`, with a vectorised slice
//!   loop (`into(src, out)`, `in_place(v)`) a kernel may run instead.
//!
//! Kernels reach a column through a visitor (`UnaryFn`/`BinaryFn`): the
//! table hands the visitor the row's function as a closure, so every op
//! gets its own monomorphised loop and LLVM vectorises it; no function
//! pointer is called per element. The `float` column of the binary table
//! and the `int` columns are generic over the `Float` and `Arith + Bits`
//! traits (`cpu/scalar.rs`, the math library); unary float columns are per
//! type, so an op whose f32 and f64 implementations differ is still one row.

use crate::cpu::scalar::{Arith, Bits, Float};
use crate::cpu::vmath;
use crate::DType;

/// How the language offers an op as a builtin function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// Not by itself: an operator, or a builtin with rules of its own.
    None,
    /// `name(x)`; integer and bool arguments are converted to float32
    /// first, as in JAX.
    Float {
        name: &'static str,
        doc: &'static str,
    },
    /// `name(x, y)` with NumPy promotion of the operands.
    Promoted {
        name: &'static str,
        doc: &'static str,
    },
}

/// What a kernel does with a unary op's function on element type `T`.
pub trait UnaryFn<T>: Sized {
    type Out;
    fn map<F: Fn(T) -> T + Copy + Send + Sync>(self, f: F) -> Self::Out;
    fn test<F: Fn(T) -> bool + Copy + Send + Sync>(self, f: F) -> Self::Out;
    /// A vectorised slice loop of the same function; by default, `map(f)`.
    fn slices<F: Fn(T) -> T + Copy + Send + Sync>(
        self,
        into: fn(&[T], &mut [T]),
        in_place: fn(&mut [T]),
        f: F,
    ) -> Self::Out {
        let _ = (into, in_place);
        self.map(f)
    }
}

/// What a kernel does with a binary op's function on element type `T`.
pub trait BinaryFn<T>: Sized {
    type Out;
    fn map<F: Fn(T, T) -> T + Copy + Send + Sync>(self, f: F) -> Self::Out;
    fn test<F: Fn(T, T) -> bool + Copy + Send + Sync>(self, f: F) -> Self::Out;
}

/// An element type's column of the unary table.
pub trait UnaryKernels: Sized {
    /// `None` when `op` is not defined on this type.
    fn unary<V: UnaryFn<Self>>(op: UnaryOp, v: V) -> Option<V::Out>;
}

/// An element type's column of the binary table.
pub trait BinaryKernels: Sized {
    /// `None` when `op` is not defined on this type.
    fn binary<V: BinaryFn<Self>>(op: BinaryOp, v: V) -> Option<V::Out>;
}

macro_rules! defined {
    (none) => {
        false
    };
    ($($t:tt)+) => {
        true
    };
}

macro_rules! is_test {
    ((test $($t:tt)*)) => {
        true
    };
    ($($t:tt)*) => {
        false
    };
}

macro_rules! unary_arm {
    ($v:ident, $T:ty, none) => {
        None
    };
    ($v:ident, $T:ty, (map |$x:ident| $e:expr)) => {
        Some($v.map(|$x: $T| -> $T { $e }))
    };
    ($v:ident, $T:ty, (test |$x:ident| $e:expr)) => {
        Some($v.test(|$x: $T| -> bool { $e }))
    };
    ($v:ident, $T:ty, (slices $into:path, $in_place:path, |$x:ident| $e:expr)) => {
        Some($v.slices($into, $in_place, |$x: $T| -> $T { $e }))
    };
}

macro_rules! binary_arm {
    ($v:ident, $T:ty, none) => {
        None
    };
    ($v:ident, $T:ty, (map |$a:ident, $b:ident| $e:expr)) => {
        Some($v.map(|$a: $T, $b: $T| -> $T { $e }))
    };
    ($v:ident, $T:ty, (test |$a:ident, $b:ident| $e:expr)) => {
        Some($v.test(|$a: $T, $b: $T| -> bool { $e }))
    };
}

/// Columns shared by both tables: the op enum, its names and dtypes.
macro_rules! op_enum {
    ($Op:ident; $($(#[doc = $doc:literal])* $V:ident = $name:literal, $sym:literal, $c:literal, $builtin:expr;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $Op {
            $($(#[doc = $doc])* $V,)*
        }

        impl $Op {
            /// Every op, in table order.
            pub const ALL: &'static [$Op] = &[$($Op::$V),*];

            /// The name in IR and kernel text.
            pub fn name(self) -> &'static str {
                match self {
                    $($Op::$V => $name,)*
                }
            }

            /// The name users write: the operator or the builtin function.
            pub fn symbol(self) -> &'static str {
                match self {
                    $($Op::$V => $sym,)*
                }
            }

            /// The C expression (CUDA C and OpenCL C) with `{x}` (and `{y}`)
            /// standing for the operands; `a_` helpers are defined by the
            /// GPU renderer's prelude for each register type.
            pub fn c_template(self) -> &'static str {
                match self {
                    $($Op::$V => $c,)*
                }
            }

            /// How the language offers the op as a builtin.
            pub fn builtin(self) -> Builtin {
                match self {
                    $($Op::$V => $builtin,)*
                }
            }
        }
    };
}

macro_rules! unary_table {
    ($(
        $(#[doc = $doc:literal])*
        $V:ident = $name:literal, $sym:literal, c $c:literal, $builtin:expr;
            f32 $f32:tt, f64 $f64:tt, int $int:tt, bool $bool:tt;
    )*) => {
        op_enum!(UnaryOp; $($(#[doc = $doc])* $V = $name, $sym, $c, $builtin;)*);

        impl UnaryOp {
            /// Whether the op is defined on operands of `dtype`.
            pub fn accepts(self, dtype: DType) -> bool {
                match self {
                    $(UnaryOp::$V => match dtype {
                        // 16-bit floats compute in f32 (`backend::Dispatch`).
                        DType::BF16 | DType::F16 | DType::F32 => defined!($f32),
                        DType::F64 => defined!($f64),
                        DType::I32 | DType::I64 | DType::U32 => defined!($int),
                        // Narrow integers compute in i32 (`backend::Dispatch`).
                        DType::I8 | DType::I16 | DType::U8 | DType::U16 => defined!($int),
                        DType::Bool => defined!($bool),
                        DType::C64 => crate::complex::accepts_unary(self),
                    },)*
                }
            }

            /// The result's dtype on an operand of `dtype`: bool for
            /// predicates, f32 for the parts and modulus of complex numbers,
            /// else the operand's.
            pub fn result_dtype(self, dtype: DType) -> DType {
                if self.is_predicate() {
                    DType::Bool
                } else if dtype == DType::C64 && crate::complex::to_real(self) {
                    DType::F32
                } else {
                    dtype
                }
            }

            /// Whether the result is bool whatever the operand.
            pub fn is_predicate(self) -> bool {
                match self {
                    $(UnaryOp::$V => is_test!($f32) || is_test!($int),)*
                }
            }

            #[inline(always)]
            pub fn on_f32<V: UnaryFn<f32>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(UnaryOp::$V => unary_arm!(v, f32, $f32),)*
                }
            }

            #[inline(always)]
            pub fn on_f64<V: UnaryFn<f64>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(UnaryOp::$V => unary_arm!(v, f64, $f64),)*
                }
            }

            #[inline(always)]
            pub fn on_int<T: Arith + Bits, V: UnaryFn<T>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(UnaryOp::$V => unary_arm!(v, T, $int),)*
                }
            }

            #[inline(always)]
            pub fn on_bool<V: UnaryFn<bool>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(UnaryOp::$V => unary_arm!(v, bool, $bool),)*
                }
            }
        }
    };
}

macro_rules! binary_table {
    ($(
        $(#[doc = $doc:literal])*
        $V:ident = $name:literal, $sym:literal, c $c:literal, $builtin:expr;
            float $float:tt, int $int:tt, bool $bool:tt;
    )*) => {
        op_enum!(BinaryOp; $($(#[doc = $doc])* $V = $name, $sym, $c, $builtin;)*);

        impl BinaryOp {
            /// Whether the op is defined on operands of `dtype`.
            pub fn accepts(self, dtype: DType) -> bool {
                match self {
                    $(BinaryOp::$V => match dtype {
                        DType::BF16 | DType::F16 | DType::F32 | DType::F64 => defined!($float),
                        DType::I32 | DType::I64 | DType::U32 => defined!($int),
                        // Narrow integers compute in i32 (`backend::Dispatch`).
                        DType::I8 | DType::I16 | DType::U8 | DType::U16 => defined!($int),
                        DType::Bool => defined!($bool),
                        DType::C64 => crate::complex::accepts_binary(self),
                    },)*
                }
            }

            /// The result's dtype on operands of `dtype`.
            pub fn result_dtype(self, dtype: DType) -> DType {
                if self.is_comparison() {
                    DType::Bool
                } else {
                    dtype
                }
            }

            /// Whether the result is bool whatever the operands.
            pub fn is_comparison(self) -> bool {
                match self {
                    $(BinaryOp::$V => is_test!($int),)*
                }
            }

            #[inline(always)]
            pub fn on_float<T: Float + PartialOrd, V: BinaryFn<T>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(BinaryOp::$V => binary_arm!(v, T, $float),)*
                }
            }

            #[inline(always)]
            pub fn on_int<T: Arith + Bits + PartialOrd, V: BinaryFn<T>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(BinaryOp::$V => binary_arm!(v, T, $int),)*
                }
            }

            #[inline(always)]
            pub fn on_bool<V: BinaryFn<bool>>(self, v: V) -> Option<V::Out> {
                match self {
                    $(BinaryOp::$V => binary_arm!(v, bool, $bool),)*
                }
            }
        }
    };
}

const fn float(name: &'static str, doc: &'static str) -> Builtin {
    Builtin::Float { name, doc }
}

const fn promoted(name: &'static str, doc: &'static str) -> Builtin {
    Builtin::Promoted { name, doc }
}

const NONE: Builtin = Builtin::None;

unary_table! {
    Neg = "neg", "-", c "(-{x})", NONE;
        f32 (map |x| -x), f64 (map |x| -x), int (map |x| Arith::neg(x)), bool none;
    /// Logical not on bool, bitwise not on integers.
    Not = "not", "~", c "a_not({x})", NONE;
        f32 none, f64 none, int (map |x| Bits::not(x)), bool (map |x| !x);
    Abs = "abs", "abs", c "a_abs({x})", NONE;
        f32 (map |x| x.abs()), f64 (map |x| x.abs()), int (map |x| Arith::abs(x)), bool none;
    Sign = "sign", "sign", c "a_sign({x})", NONE;
        f32 (map |x| Arith::sign(x)), f64 (map |x| Arith::sign(x)), int (map |x| Arith::sign(x)), bool none;
    Floor = "floor", "floor", c "floor({x})", float("floor", "Largest integer not greater than x, elementwise.");
        f32 (map |x| x.floor()), f64 (map |x| x.floor()), int none, bool none;
    Ceil = "ceil", "ceil", c "ceil({x})", float("ceil", "Smallest integer not less than x, elementwise.");
        f32 (map |x| x.ceil()), f64 (map |x| x.ceil()), int none, bool none;
    /// Round half to even, as NumPy.
    Round = "round", "round", c "rint({x})", NONE;
        f32 (map |x| x.round_ties_even()), f64 (map |x| x.round_ties_even()), int none, bool none;
    Exp = "exp", "exp", c "exp({x})", float("exp", "e to the power x, elementwise.");
        f32 (slices vmath::exp_into, vmath::exp_in_place, |x| Float::exp(x)),
        f64 (map |x| Float::exp(x)), int none, bool none;
    Exp2 = "exp2", "exp2", c "exp2({x})", float("exp2", "2 to the power x, elementwise.");
        f32 (map |x| libm::exp2f(x)), f64 (map |x| libm::exp2(x)), int none, bool none;
    Expm1 = "expm1", "expm1", c "expm1({x})", float("expm1", "exp(x) - 1, accurate near 0.");
        f32 (slices vmath::expm1_into, vmath::expm1_in_place, |x| Float::expm1(x)),
        f64 (map |x| Float::expm1(x)), int none, bool none;
    Log = "log", "log", c "log({x})", float("log", "Natural logarithm, elementwise.");
        f32 (slices vmath::ln_into, vmath::ln_in_place, |x| Float::ln(x)),
        f64 (map |x| Float::ln(x)), int none, bool none;
    Log1p = "log1p", "log1p", c "log1p({x})", float("log1p", "log(1 + x), accurate near 0.");
        f32 (slices vmath::ln_1p_into, vmath::ln_1p_in_place, |x| Float::ln_1p(x)),
        f64 (map |x| Float::ln_1p(x)), int none, bool none;
    Sqrt = "sqrt", "sqrt", c "sqrt({x})", float("sqrt", "Square root, elementwise.");
        f32 (map |x| x.sqrt()), f64 (map |x| x.sqrt()), int none, bool none;
    Rsqrt = "rsqrt", "rsqrt", c "(1 / sqrt({x}))", float("rsqrt", "1 / sqrt(x), elementwise.");
        f32 (map |x| 1.0 / x.sqrt()), f64 (map |x| 1.0 / x.sqrt()), int none, bool none;
    Cbrt = "cbrt", "cbrt", c "cbrt({x})", float("cbrt", "Cube root, elementwise.");
        f32 (map |x| libm::cbrtf(x)), f64 (map |x| libm::cbrt(x)), int none, bool none;
    Sin = "sin", "sin", c "sin({x})", float("sin", "Sine, elementwise (radians).");
        f32 (slices vmath::sin_into, vmath::sin_in_place, |x| Float::sin(x)),
        f64 (map |x| Float::sin(x)), int none, bool none;
    Cos = "cos", "cos", c "cos({x})", float("cos", "Cosine, elementwise (radians).");
        f32 (slices vmath::cos_into, vmath::cos_in_place, |x| Float::cos(x)),
        f64 (map |x| Float::cos(x)), int none, bool none;
    Tan = "tan", "tan", c "tan({x})", float("tan", "Tangent, elementwise (radians).");
        f32 (map |x| x.tan()), f64 (map |x| x.tan()), int none, bool none;
    Asin = "asin", "arcsin", c "asin({x})", float("arcsin", "Inverse sine, elementwise.");
        f32 (map |x| x.asin()), f64 (map |x| x.asin()), int none, bool none;
    Acos = "acos", "arccos", c "acos({x})", float("arccos", "Inverse cosine, elementwise.");
        f32 (map |x| x.acos()), f64 (map |x| x.acos()), int none, bool none;
    Atan = "atan", "arctan", c "atan({x})", float("arctan", "Inverse tangent, elementwise.");
        f32 (map |x| x.atan()), f64 (map |x| x.atan()), int none, bool none;
    Sinh = "sinh", "sinh", c "sinh({x})", float("sinh", "Hyperbolic sine, elementwise.");
        f32 (map |x| x.sinh()), f64 (map |x| x.sinh()), int none, bool none;
    Cosh = "cosh", "cosh", c "cosh({x})", float("cosh", "Hyperbolic cosine, elementwise.");
        f32 (map |x| x.cosh()), f64 (map |x| x.cosh()), int none, bool none;
    Tanh = "tanh", "tanh", c "a_tanh({x})", float("tanh", "Hyperbolic tangent, elementwise.");
        f32 (slices vmath::tanh_into, vmath::tanh_in_place, |x| Float::tanh(x)),
        f64 (map |x| Float::tanh(x)), int none, bool none;
    Asinh = "asinh", "arcsinh", c "asinh({x})", float("arcsinh", "Inverse hyperbolic sine, elementwise.");
        f32 (map |x| Float::asinh(x)), f64 (map |x| x.asinh()), int none, bool none;
    Acosh = "acosh", "arccosh", c "acosh({x})", float("arccosh", "Inverse hyperbolic cosine, elementwise.");
        f32 (map |x| Float::acosh(x)), f64 (map |x| x.acosh()), int none, bool none;
    Atanh = "atanh", "arctanh", c "atanh({x})", float("arctanh", "Inverse hyperbolic tangent, elementwise.");
        f32 (map |x| Float::atanh(x)), f64 (map |x| x.atanh()), int none, bool none;
    /// 1 / (1 + exp(-x))
    Logistic = "logistic", "logistic", c "(1 / (1 + exp(-{x})))", float("logistic", "1 / (1 + exp(-x)), computed stably.");
        f32 (slices vmath::logistic_into, vmath::logistic_in_place, |x| Float::logistic(x)),
        f64 (map |x| Float::logistic(x)), int none, bool none;
    Erf = "erf", "erf", c "erf({x})", float("erf", "The error function, elementwise.");
        f32 (slices vmath::erf_into, vmath::erf_in_place, |x| Float::erf(x)),
        f64 (map |x| Float::erf(x)), int none, bool none;
    ErfInv = "erf_inv", "erfinv", c "a_erfinv({x})", float("erfinv", "The inverse error function, elementwise.");
        f32 (map |x| Float::erf_inv(x)), f64 (map |x| Float::erf_inv(x)), int none, bool none;
    /// The real part (of a real number: itself).
    Real = "real", "real", c "({x})", NONE;
        f32 (map |x| x), f64 (map |x| x), int (map |x| x), bool (map |x| x);
    /// The imaginary part (of a real number: zero).
    Imag = "imag", "imag", c "(0)", NONE;
        f32 (map |_x| 0.0), f64 (map |_x| 0.0), int (map |x| Arith::sub(x, x)), bool (map |_x| false);
    /// The complex conjugate (of a real number: itself).
    Conj = "conj", "conj", c "({x})", NONE;
        f32 (map |x| x), f64 (map |x| x), int (map |x| x), bool (map |x| x);
    /// Result dtype bool.
    IsFinite = "is_finite", "isfinite", c "a_isfinite({x})", NONE;
        f32 (test |x| x.is_finite()), f64 (test |x| x.is_finite()),
        int (test |_x| true), bool (test |_x| true);
    /// Result dtype bool.
    IsNan = "is_nan", "isnan", c "a_isnan({x})", NONE;
        f32 (test |x| x.is_nan()), f64 (test |x| x.is_nan()),
        int (test |_x| false), bool (test |_x| false);
}

binary_table! {
    Add = "add", "+", c "({x} + {y})", promoted("add", "x + y, elementwise.");
        float (map |a, b| Arith::add(a, b)), int (map |a, b| Arith::add(a, b)), bool (map |a, b| a | b);
    Sub = "sub", "-", c "({x} - {y})", promoted("subtract", "x - y, elementwise.");
        float (map |a, b| Arith::sub(a, b)), int (map |a, b| Arith::sub(a, b)), bool none;
    Mul = "mul", "*", c "({x} * {y})", promoted("multiply", "x * y, elementwise.");
        float (map |a, b| Arith::mul(a, b)), int (map |a, b| Arith::mul(a, b)), bool (map |a, b| a & b);
    /// True division on floats; on integers, Python's floor division is `FloorDiv`
    /// and `Div` truncates toward zero (C semantics, as XLA).
    Div = "div", "/", c "a_div({x}, {y})", promoted("divide", "x / y, elementwise (true division).");
        float (map |a, b| Arith::div(a, b)), int (map |a, b| Arith::div(a, b)), bool none;
    /// Python `//`: floor(a / b) on floats, floor division on integers.
    FloorDiv = "floor_div", "//", c "a_floordiv({x}, {y})", promoted("floor_divide", "x // y, elementwise.");
        float (map |a, b| Arith::floor_div(a, b)), int (map |a, b| Arith::floor_div(a, b)), bool none;
    /// Python `%`: the result has the sign of the divisor.
    Mod = "mod", "%", c "a_mod({x}, {y})", promoted("mod", "x % y, elementwise (sign of y).");
        float (map |a, b| Arith::modulo(a, b)), int (map |a, b| Arith::modulo(a, b)), bool none;
    Pow = "pow", "**", c "a_pow({x}, {y})", promoted("power", "x ** y, elementwise.");
        float (map |a, b| Arith::pow(a, b)), int (map |a, b| Arith::pow(a, b)), bool none;
    /// NaN-propagating, as `np.maximum`.
    Max = "max", "maximum", c "a_max({x}, {y})", promoted("maximum", "The larger of x and y, elementwise (NaN propagates).");
        float (map |a, b| Arith::max(a, b)), int (map |a, b| Arith::max(a, b)), bool (map |a, b| a | b);
    Min = "min", "minimum", c "a_min({x}, {y})", promoted("minimum", "The smaller of x and y, elementwise (NaN propagates).");
        float (map |a, b| Arith::min(a, b)), int (map |a, b| Arith::min(a, b)), bool (map |a, b| a & b);
    Atan2 = "atan2", "arctan2", c "atan2({x}, {y})", promoted("arctan2", "Angle of the point (y=x, x=y), elementwise.");
        float (map |a, b| Arith::atan2(a, b)), int none, bool none;
    /// Logical on bool, bitwise on integers.
    And = "and", "&", c "({x} & {y})", promoted("bitwise_and", "x & y, elementwise.");
        float none, int (map |a, b| Bits::and(a, b)), bool (map |a, b| a & b);
    Or = "or", "|", c "({x} | {y})", promoted("bitwise_or", "x | y, elementwise.");
        float none, int (map |a, b| Bits::or(a, b)), bool (map |a, b| a | b);
    Xor = "xor", "^", c "({x} ^ {y})", promoted("bitwise_xor", "x ^ y, elementwise.");
        float none, int (map |a, b| Bits::xor(a, b)), bool (map |a, b| a ^ b);
    ShiftLeft = "shift_left", "<<", c "a_shl({x}, {y})", promoted("left_shift", "x << y, elementwise.");
        float none, int (map |a, b| Bits::shl(a, b)), bool none;
    ShiftRight = "shift_right", ">>", c "a_shr({x}, {y})", promoted("right_shift", "x >> y, elementwise (arithmetic for signed integers).");
        float none, int (map |a, b| Bits::shr(a, b)), bool none;
    /// Comparisons: result dtype bool.
    Eq = "eq", "==", c "({x} == {y})", promoted("equal", "x == y, elementwise.");
        float (test |a, b| a == b), int (test |a, b| a == b), bool (test |a, b| a == b);
    Ne = "ne", "!=", c "({x} != {y})", promoted("not_equal", "x != y, elementwise.");
        float (test |a, b| a != b), int (test |a, b| a != b), bool (test |a, b| a != b);
    Lt = "lt", "<", c "({x} < {y})", promoted("less", "x < y, elementwise.");
        float (test |a, b| a < b), int (test |a, b| a < b), bool (test |a, b| !a & b);
    Le = "le", "<=", c "({x} <= {y})", promoted("less_equal", "x <= y, elementwise.");
        float (test |a, b| a <= b), int (test |a, b| a <= b), bool (test |a, b| a <= b);
    Gt = "gt", ">", c "({x} > {y})", promoted("greater", "x > y, elementwise.");
        float (test |a, b| a > b), int (test |a, b| a > b), bool (test |a, b| a & !b);
    Ge = "ge", ">=", c "({x} >= {y})", promoted("greater_equal", "x >= y, elementwise.");
        float (test |a, b| a >= b), int (test |a, b| a >= b), bool (test |a, b| a >= b);
}

impl UnaryKernels for f32 {
    #[inline(always)]
    fn unary<V: UnaryFn<f32>>(op: UnaryOp, v: V) -> Option<V::Out> {
        op.on_f32(v)
    }
}

impl UnaryKernels for f64 {
    #[inline(always)]
    fn unary<V: UnaryFn<f64>>(op: UnaryOp, v: V) -> Option<V::Out> {
        op.on_f64(v)
    }
}

impl UnaryKernels for bool {
    #[inline(always)]
    fn unary<V: UnaryFn<bool>>(op: UnaryOp, v: V) -> Option<V::Out> {
        op.on_bool(v)
    }
}

/// 16-bit floats and narrow integers have no columns of their own: they
/// compute in f32 or i32 (`backend::Dispatch` widens them before a kernel
/// sees them).
macro_rules! computed_wider {
    ($($t:ty),*) => {$(
        impl UnaryKernels for $t {
            fn unary<V: UnaryFn<$t>>(_: UnaryOp, _: V) -> Option<V::Out> {
                None
            }
        }
        impl BinaryKernels for $t {
            fn binary<V: BinaryFn<$t>>(_: BinaryOp, _: V) -> Option<V::Out> {
                None
            }
        }
    )*};
}
computed_wider!(half::bf16, half::f16, i8, i16, u8, u16);

impl BinaryKernels for bool {
    #[inline(always)]
    fn binary<V: BinaryFn<bool>>(op: BinaryOp, v: V) -> Option<V::Out> {
        op.on_bool(v)
    }
}

macro_rules! float_binary {
    ($($t:ty),*) => {$(
        impl BinaryKernels for $t {
            #[inline(always)]
            fn binary<V: BinaryFn<$t>>(op: BinaryOp, v: V) -> Option<V::Out> {
                op.on_float(v)
            }
        }
    )*};
}
float_binary!(f32, f64);

macro_rules! int_columns {
    ($($t:ty),*) => {$(
        impl UnaryKernels for $t {
            #[inline(always)]
            fn unary<V: UnaryFn<$t>>(op: UnaryOp, v: V) -> Option<V::Out> {
                op.on_int(v)
            }
        }
        impl BinaryKernels for $t {
            #[inline(always)]
            fn binary<V: BinaryFn<$t>>(op: BinaryOp, v: V) -> Option<V::Out> {
                op.on_int(v)
            }
        }
    )*};
}
int_columns!(i32, i64, u32);
