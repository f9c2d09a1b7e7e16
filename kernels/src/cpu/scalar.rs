//! Scalar semantics of every elementwise op, per element type (NumPy/XLA rules).
//!
//! Kernels pass these functions as zero-sized fn items into generic loops, so
//! each op is inlined into its own loop and LLVM can vectorise it. The f32
//! transcendentals are `vmath`'s branch-free ones (which vectorise); f64 uses
//! std and libm.

use super::vmath;

/// Binary arithmetic shared by integers and floats.
pub trait Arith: Copy {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn div(a: Self, b: Self) -> Self;
    fn floor_div(a: Self, b: Self) -> Self;
    fn modulo(a: Self, b: Self) -> Self;
    fn pow(a: Self, b: Self) -> Self;
    /// NaN-propagating for floats (np.maximum).
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn atan2(a: Self, b: Self) -> Self;
    fn neg(a: Self) -> Self;
    fn abs(a: Self) -> Self;
    fn sign(a: Self) -> Self;
    const ZERO: Self;
    const ONE: Self;
    /// Identity of `max` (-inf, or the type's minimum).
    const LOWEST: Self;
    /// Identity of `min` (+inf, or the type's maximum).
    const HIGHEST: Self;
}

/// Bitwise ops and shifts on integers.
pub trait Bits: Copy {
    fn and(a: Self, b: Self) -> Self;
    fn or(a: Self, b: Self) -> Self;
    fn xor(a: Self, b: Self) -> Self;
    fn not(a: Self) -> Self;
    fn shl(a: Self, b: Self) -> Self;
    fn shr(a: Self, b: Self) -> Self;
}

macro_rules! int_common {
    ($t:ty) => {
        #[inline(always)]
        fn add(a: $t, b: $t) -> $t {
            a.wrapping_add(b)
        }
        #[inline(always)]
        fn sub(a: $t, b: $t) -> $t {
            a.wrapping_sub(b)
        }
        #[inline(always)]
        fn mul(a: $t, b: $t) -> $t {
            a.wrapping_mul(b)
        }
        #[inline(always)]
        fn max(a: $t, b: $t) -> $t {
            Ord::max(a, b)
        }
        #[inline(always)]
        fn min(a: $t, b: $t) -> $t {
            Ord::min(a, b)
        }
        #[inline]
        fn atan2(a: $t, b: $t) -> $t {
            (a as f64).atan2(b as f64) as $t
        }
        const ZERO: $t = 0;
        const ONE: $t = 1;
        const LOWEST: $t = <$t>::MIN;
        const HIGHEST: $t = <$t>::MAX;
    };
}

/// Integer power by squaring, wrapping on overflow; `exp` is non-negative.
#[inline]
fn int_pow<T: Arith>(mut base: T, mut exp: u64) -> T {
    let mut acc = T::ONE;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = T::mul(acc, base);
        }
        base = T::mul(base, base);
        exp >>= 1;
    }
    acc
}

macro_rules! signed_int {
    ($t:ty) => {
        impl Arith for $t {
            int_common!($t);
            /// Truncating; x / 0 = -1 as XLA.
            #[inline(always)]
            fn div(a: $t, b: $t) -> $t {
                if b == 0 {
                    -1
                } else {
                    a.wrapping_div(b)
                }
            }
            /// Flooring (Python `//`). x // 0 is jnp.floor_divide's: XLA's
            /// quotient -1, less one where the signs differ and XLA's
            /// remainder (x % 0 = x) is not 0: -1 for 0 // 0, else -2.
            #[inline(always)]
            fn floor_div(a: $t, b: $t) -> $t {
                if b == 0 {
                    return if a == 0 { -1 } else { -2 };
                }
                let q = a.wrapping_div(b);
                if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                }
            }
            /// Sign of the divisor (Python `%`); x % 0 = 0, as NumPy and
            /// `jnp.remainder` (which divides by 1 where the divisor is 0).
            #[inline(always)]
            fn modulo(a: $t, b: $t) -> $t {
                if b == 0 {
                    return 0;
                }
                let r = a.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) {
                    r.wrapping_add(b)
                } else {
                    r
                }
            }
            /// Negative exponents give 0, except for bases 1 and -1.
            #[inline]
            fn pow(a: $t, b: $t) -> $t {
                if b < 0 {
                    match a {
                        1 => 1,
                        -1 => {
                            if b & 1 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    }
                } else {
                    int_pow(a, b as u64)
                }
            }
            #[inline(always)]
            fn neg(a: $t) -> $t {
                a.wrapping_neg()
            }
            #[inline(always)]
            fn abs(a: $t) -> $t {
                a.wrapping_abs()
            }
            #[inline(always)]
            fn sign(a: $t) -> $t {
                a.signum()
            }
        }
        impl Bits for $t {
            #[inline(always)]
            fn and(a: $t, b: $t) -> $t {
                a & b
            }
            #[inline(always)]
            fn or(a: $t, b: $t) -> $t {
                a | b
            }
            #[inline(always)]
            fn xor(a: $t, b: $t) -> $t {
                a ^ b
            }
            #[inline(always)]
            fn not(a: $t) -> $t {
                !a
            }
            /// Shifts by a negative amount or at least the bit width give 0.
            #[inline(always)]
            fn shl(a: $t, b: $t) -> $t {
                if b < 0 || b >= <$t>::BITS as $t {
                    0
                } else {
                    a << b
                }
            }
            /// Arithmetic; out-of-range shifts give 0 or -1 by the sign of `a`.
            #[inline(always)]
            fn shr(a: $t, b: $t) -> $t {
                if b < 0 || b >= <$t>::BITS as $t {
                    if a < 0 {
                        -1
                    } else {
                        0
                    }
                } else {
                    a >> b
                }
            }
        }
    };
}

signed_int!(i32);
signed_int!(i64);

impl Arith for u32 {
    int_common!(u32);
    /// x / 0 = u32::MAX, as XLA.
    #[inline(always)]
    fn div(a: u32, b: u32) -> u32 {
        a.checked_div(b).unwrap_or(u32::MAX)
    }
    #[inline(always)]
    fn floor_div(a: u32, b: u32) -> u32 {
        Self::div(a, b)
    }
    /// x % 0 = 0, as for the signed types.
    #[inline(always)]
    fn modulo(a: u32, b: u32) -> u32 {
        a.checked_rem(b).unwrap_or(0)
    }
    #[inline]
    fn pow(a: u32, b: u32) -> u32 {
        int_pow(a, b as u64)
    }
    #[inline(always)]
    fn neg(a: u32) -> u32 {
        a.wrapping_neg()
    }
    #[inline(always)]
    fn abs(a: u32) -> u32 {
        a
    }
    #[inline(always)]
    fn sign(a: u32) -> u32 {
        (a != 0) as u32
    }
}

impl Bits for u32 {
    #[inline(always)]
    fn and(a: u32, b: u32) -> u32 {
        a & b
    }
    #[inline(always)]
    fn or(a: u32, b: u32) -> u32 {
        a | b
    }
    #[inline(always)]
    fn xor(a: u32, b: u32) -> u32 {
        a ^ b
    }
    #[inline(always)]
    fn not(a: u32) -> u32 {
        !a
    }
    #[inline(always)]
    fn shl(a: u32, b: u32) -> u32 {
        a.checked_shl(b).unwrap_or(0)
    }
    #[inline(always)]
    fn shr(a: u32, b: u32) -> u32 {
        a.checked_shr(b).unwrap_or(0)
    }
}

/// Float-only elementwise functions.
pub trait Float: Arith {
    fn floor(a: Self) -> Self;
    fn ceil(a: Self) -> Self;
    fn round(a: Self) -> Self;
    fn exp(a: Self) -> Self;
    fn expm1(a: Self) -> Self;
    fn ln(a: Self) -> Self;
    fn ln_1p(a: Self) -> Self;
    fn sqrt(a: Self) -> Self;
    fn rsqrt(a: Self) -> Self;
    fn sin(a: Self) -> Self;
    fn cos(a: Self) -> Self;
    fn tan(a: Self) -> Self;
    fn asin(a: Self) -> Self;
    fn acos(a: Self) -> Self;
    fn atan(a: Self) -> Self;
    fn sinh(a: Self) -> Self;
    fn cosh(a: Self) -> Self;
    fn tanh(a: Self) -> Self;
    fn asinh(a: Self) -> Self;
    fn acosh(a: Self) -> Self;
    fn atanh(a: Self) -> Self;
    fn logistic(a: Self) -> Self;
    fn erf(a: Self) -> Self;
    fn erf_inv(a: Self) -> Self;
    fn is_finite(a: Self) -> bool;
    fn is_nan(a: Self) -> bool;
}

/// NumPy's `npy_divmod`: floor quotient and the remainder with the divisor's sign.
#[inline(always)]
fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let m = a % b;
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    let mut m = m;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (q, m)
}

/// The f64 transcendental functions by the names `float_impl!` calls.
mod std64 {
    #[inline]
    pub fn exp(a: f64) -> f64 {
        a.exp()
    }
    #[inline]
    pub fn expm1(a: f64) -> f64 {
        a.exp_m1()
    }
    #[inline]
    pub fn ln(a: f64) -> f64 {
        a.ln()
    }
    #[inline]
    pub fn ln_1p(a: f64) -> f64 {
        a.ln_1p()
    }
    #[inline]
    pub fn sin(a: f64) -> f64 {
        a.sin()
    }
    #[inline]
    pub fn cos(a: f64) -> f64 {
        a.cos()
    }
    #[inline]
    pub fn tanh(a: f64) -> f64 {
        a.tanh()
    }
    /// Uses exp of a non-positive argument only, so it never overflows.
    #[inline]
    pub fn logistic(a: f64) -> f64 {
        if a >= 0.0 {
            1.0 / (1.0 + (-a).exp())
        } else {
            let e = a.exp();
            e / (1.0 + e)
        }
    }
    #[inline]
    pub fn erf(a: f64) -> f64 {
        libm::erf(a)
    }
}

/// `Arith` and `Float` for a float type; `$m` is the module of its
/// transcendental functions (`exp`, `expm1`, `ln`, `ln_1p`, `sin`, `cos`,
/// `tanh`, `logistic`, `erf`).
macro_rules! float_impl {
    ($t:ty, $m:ident) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a + b
            }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t {
                a - b
            }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t {
                a * b
            }
            #[inline(always)]
            fn div(a: $t, b: $t) -> $t {
                a / b
            }
            /// As NumPy's `floor_divide` (computed via `npy_divmod`).
            #[inline]
            fn floor_div(a: $t, b: $t) -> $t {
                float_divmod_t(a, b).0
            }
            /// As NumPy's `mod`: the result has the divisor's sign.
            #[inline]
            fn modulo(a: $t, b: $t) -> $t {
                float_divmod_t(a, b).1
            }
            #[inline]
            fn pow(a: $t, b: $t) -> $t {
                a.powf(b)
            }
            #[inline(always)]
            fn max(a: $t, b: $t) -> $t {
                if a > b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min(a: $t, b: $t) -> $t {
                if a < b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            #[inline]
            fn atan2(a: $t, b: $t) -> $t {
                a.atan2(b)
            }
            #[inline(always)]
            fn neg(a: $t) -> $t {
                -a
            }
            #[inline(always)]
            fn abs(a: $t) -> $t {
                a.abs()
            }
            /// NaN stays NaN and zeros keep their sign.
            #[inline(always)]
            fn sign(a: $t) -> $t {
                if a > 0.0 {
                    1.0
                } else if a < 0.0 {
                    -1.0
                } else {
                    a
                }
            }
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const LOWEST: $t = <$t>::NEG_INFINITY;
            const HIGHEST: $t = <$t>::INFINITY;
        }

        impl Float for $t {
            #[inline(always)]
            fn floor(a: $t) -> $t {
                a.floor()
            }
            #[inline(always)]
            fn ceil(a: $t) -> $t {
                a.ceil()
            }
            #[inline(always)]
            fn round(a: $t) -> $t {
                a.round_ties_even()
            }
            #[inline(always)]
            fn exp(a: $t) -> $t {
                $m::exp(a)
            }
            #[inline(always)]
            fn expm1(a: $t) -> $t {
                $m::expm1(a)
            }
            #[inline(always)]
            fn ln(a: $t) -> $t {
                $m::ln(a)
            }
            #[inline(always)]
            fn ln_1p(a: $t) -> $t {
                $m::ln_1p(a)
            }
            #[inline(always)]
            fn sqrt(a: $t) -> $t {
                a.sqrt()
            }
            #[inline(always)]
            fn rsqrt(a: $t) -> $t {
                1.0 / a.sqrt()
            }
            #[inline(always)]
            fn sin(a: $t) -> $t {
                $m::sin(a)
            }
            #[inline(always)]
            fn cos(a: $t) -> $t {
                $m::cos(a)
            }
            #[inline]
            fn tan(a: $t) -> $t {
                a.tan()
            }
            #[inline]
            fn asin(a: $t) -> $t {
                a.asin()
            }
            #[inline]
            fn acos(a: $t) -> $t {
                a.acos()
            }
            #[inline]
            fn atan(a: $t) -> $t {
                a.atan()
            }
            #[inline]
            fn sinh(a: $t) -> $t {
                a.sinh()
            }
            #[inline]
            fn cosh(a: $t) -> $t {
                a.cosh()
            }
            #[inline(always)]
            fn tanh(a: $t) -> $t {
                $m::tanh(a)
            }
            /// Evaluated in f64: std's f32 version is composed of other
            /// functions and loses up to ~5 ulp.
            #[inline]
            fn asinh(a: $t) -> $t {
                (a as f64).asinh() as $t
            }
            /// Evaluated in f64: std's f32 version is composed of other
            /// functions and loses up to ~5 ulp.
            #[inline]
            fn acosh(a: $t) -> $t {
                (a as f64).acosh() as $t
            }
            /// Evaluated in f64: std's f32 version is composed of other
            /// functions and loses up to ~5 ulp.
            #[inline]
            fn atanh(a: $t) -> $t {
                (a as f64).atanh() as $t
            }
            #[inline(always)]
            fn logistic(a: $t) -> $t {
                $m::logistic(a)
            }
            #[inline(always)]
            fn erf(a: $t) -> $t {
                $m::erf(a)
            }
            #[inline]
            fn erf_inv(a: $t) -> $t {
                erf_inv_t(a)
            }
            #[inline(always)]
            fn is_finite(a: $t) -> bool {
                a.is_finite()
            }
            #[inline(always)]
            fn is_nan(a: $t) -> bool {
                a.is_nan()
            }
        }
    };
}

float_impl!(f32, vmath);
float_impl!(f64, std64);

/// Per-type helpers the macro above calls by one name.
trait FloatHelpers: Sized {
    fn divmod(a: Self, b: Self) -> (Self, Self);
    fn erf_inv_impl(a: Self) -> Self;
}

impl FloatHelpers for f32 {
    #[inline]
    fn divmod(a: f32, b: f32) -> (f32, f32) {
        // f64 holds every f32 exactly and fmod is exact, so the remainder is
        // exact; the quotient steps match NumPy's float32 loop except in
        // pathological double-rounding cases.
        let (q, m) = float_divmod(a as f64, b as f64);
        (q as f32, m as f32)
    }
    fn erf_inv_impl(a: f32) -> f32 {
        erf_inv_f32(a)
    }
}

impl FloatHelpers for f64 {
    #[inline]
    fn divmod(a: f64, b: f64) -> (f64, f64) {
        float_divmod(a, b)
    }
    fn erf_inv_impl(a: f64) -> f64 {
        erf_inv_f64(a)
    }
}

#[inline(always)]
fn float_divmod_t<T: FloatHelpers>(a: T, b: T) -> (T, T) {
    T::divmod(a, b)
}

#[inline(always)]
fn erf_inv_t<T: FloatHelpers>(a: T) -> T {
    T::erf_inv_impl(a)
}

/// Giles' single-precision erfinv ("Approximating the erfinv function", 2010),
/// the approximation XLA and JAX use for f32. erfinv(±1) = ±inf, |x| > 1 is NaN.
/// `w = -ln((1 - x)(1 + x))` rather than XLA's `-log1p(-x * x)`: the factored
/// form is exact near |x| = 1, so results may differ from XLA's in the last ulp.
pub fn erf_inv_f32(x: f32) -> f32 {
    let ax = x.abs();
    if ax >= 1.0 {
        return if ax == 1.0 {
            x * f32::INFINITY
        } else {
            f32::NAN
        };
    }
    let mut w = -((1.0 - x) * (1.0 + x)).ln();
    let p = if w < 5.0 {
        w -= 2.5;
        let mut p = 2.810_226_4e-8_f32;
        p = p.mul_add(w, 3.432_739_4e-7);
        p = p.mul_add(w, -3.523_387_7e-6);
        p = p.mul_add(w, -4.391_506_5e-6);
        p = p.mul_add(w, 0.000_218_580_87);
        p = p.mul_add(w, -0.001_253_725);
        p = p.mul_add(w, -0.004_177_681_6);
        p = p.mul_add(w, 0.246_640_73);
        p.mul_add(w, 1.501_409_4)
    } else {
        w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_26_f32;
        p = p.mul_add(w, 0.000_100_950_56);
        p = p.mul_add(w, 0.001_349_343_2);
        p = p.mul_add(w, -0.003_673_428_4);
        p = p.mul_add(w, 0.005_739_507_7);
        p = p.mul_add(w, -0.007_622_461_3);
        p = p.mul_add(w, 0.009_438_870_5);
        p = p.mul_add(w, 1.001_674);
        p.mul_add(w, 2.832_976_8)
    };
    p * x
}

/// Double-precision erfinv: Giles' estimate refined by Newton steps on erf,
/// which converge quadratically from its ~1e-7 relative error.
pub fn erf_inv_f64(x: f64) -> f64 {
    let ax = x.abs();
    if ax >= 1.0 || x.is_nan() {
        return if ax == 1.0 {
            x * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    let mut y = erf_inv_f32(ax as f32) as f64;
    if !y.is_finite() {
        // ax rounds to 1 in f32; start from the largest finite f32 estimate.
        y = erf_inv_f32(0.999_999_94) as f64;
    }
    // Near 1 solve ln(erfc(y)) = ln(1 - ax) instead (1 - ax is exact there):
    // it keeps full relative precision in the tail and is nearly linear in y^2,
    // so Newton converges fast even from a poor start.
    let tail = 1.0 - ax;
    const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..8 {
        let step = if ax > 0.5 {
            let c = libm::erfc(y);
            let deriv = -TWO_OVER_SQRT_PI * (-y * y).exp() / c;
            (c.ln() - tail.ln()) / deriv
        } else {
            (libm::erf(y) - ax) / (TWO_OVER_SQRT_PI * (-y * y).exp())
        };
        if !step.is_finite() {
            break;
        }
        y -= step;
        if step.abs() <= 1e-17 * y.abs() {
            break;
        }
    }
    y.copysign(x)
}
