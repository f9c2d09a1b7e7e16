//! Vectorisable float32 transcendental functions.
//!
//! Each function is branch-free straight-line code on one `f32`: range
//! reduction with integer bit manipulation, a polynomial, and selects (plain
//! `if`s on values, which LLVM turns into blends). Inlined into a slice loop,
//! the loop auto-vectorises with the baseline SSE2 instruction set, where
//! libm costs a function call per element.
//!
//! The polynomials are minimax fits (Remez exchange on the reduced interval,
//! minimising the relative error of the final result, coefficients then
//! rounded to f32), derived for this module; the reductions are the classic
//! Cody–Waite ones. They use plain multiplies and adds: `f32::mul_add`
//! without the FMA target feature is a libm call per element, and without
//! FMA the results are the same on every x86-64.
//!
//! Every function handles the special values as std's f32 functions do
//! (NaN in, NaN out; infinities; overflow to inf and underflow to 0 for exp;
//! `ln(0) = -inf`, `ln(x < 0) = NaN`; signed zeros ...). The errors in the
//! comments are in ulps of the exact result (a relative error near 0),
//! measured on every f32 (see `kernels/tests/vmath.rs`).
//!
//! `sin` and `cos` reduce their argument with a four-part pi/2, accurate for
//! `|x| < TRIG_LIMIT`: `sin_in_range`/`cos_in_range` are the vectorisable
//! cores, and `sin`/`cos` fall back to libm beyond the limit, so a loop over
//! them does not vectorise.
//!
//! Use the slice versions, `NAME_into(src, out)` and `NAME_in_place(v)`, in
//! kernels: their loops are sure to vectorise (a generic loop handed a large
//! function as a fn item may keep it behind a call), they use AVX2 where the
//! CPU has it (twice the lanes, the same results), and sin and cos take
//! their vectorised path for every block of 256 elements without a finite
//! argument beyond `TRIG_LIMIT`.

/// 1.5 * 2^23: adding it rounds an `|x| < 2^22` to an integer, which is then
/// the low bits of the sum's representation.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `(round(x), round(x) as i32)`, ties to even; valid for `|x| < 2^22`.
#[inline(always)]
fn round_int(x: f32) -> (f32, i32) {
    let t = x + ROUND_MAGIC;
    let k = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    (t - ROUND_MAGIC, k)
}

/// `2^k` for `-126 <= k <= 127`.
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) << 23) as u32)
}

/// `x` with the sign of `s` xor-ed in.
#[inline(always)]
fn xor_sign(x: f32, s: f32) -> f32 {
    f32::from_bits(x.to_bits() ^ (s.to_bits() & 0x8000_0000))
}

/// `min(max(x, lo), hi)`, keeping NaN.
#[inline(always)]
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}

// ---- exp, expm1 ------------------------------------------------------------

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split for Cody–Waite: `LN2_HI` has 15 significant bits, so `k * LN2_HI`
/// is exact for `|k| < 512`.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;

/// `expm1(r)` for `|r| <= ln(2)/2`: `r + r^2/2 + r^3 P(r)`, relative error
/// of the fit 4e-10.
#[inline(always)]
fn expm1_poly(r: f32) -> f32 {
    let p = 1.984_393_2e-4;
    let p = p * r + 1.393_375_8e-3;
    let p = p * r + 8.333_421e-3;
    let p = p * r + 4.166_647_8e-2;
    let p = p * r + 1.666_666_6e-1;
    let r2 = r * r;
    r + (r2 * 0.5 + r2 * r * p)
}

/// `x = k ln2 + r` with `|r| <= ln(2)/2` (slightly more after rounding).
#[inline(always)]
fn reduce_ln2(x: f32) -> (f32, i32) {
    let (kf, k) = round_int(x * LOG2_E);
    ((x - kf * LN2_HI) - kf * LN2_LO, k)
}

/// e^x. Max error 0.93 ulp.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Beyond these the result overflows (89) or rounds to 0 (-104) anyway,
    // and k stays in [-150, 128]; NaN passes through.
    let x = clamp(x, -104.0, 89.0);
    let (r, k) = reduce_ln2(x);
    let p = 1.0 + expm1_poly(r);
    // 2^k in two halves, each a normal number: results in the subnormal
    // range and near overflow are rounded once, by the last multiply.
    let k1 = k >> 1;
    p * pow2i(k1) * pow2i(k - k1)
}

/// e^x - 1, accurate near 0. Max error 1.40 ulp.
#[inline(always)]
pub fn expm1(x: f32) -> f32 {
    // Below -18 the result rounds to -1; above 89 it overflows.
    let xc = clamp(x, -18.0, 89.0);
    let (r, k) = reduce_ln2(xc);
    let q = expm1_poly(r);
    // k in [-26, 128]; 2^(k-1) is a normal number.
    let half = pow2i(k - 1);
    // 2^k (1 + q) - 1: for small k as 2^k q + (2^k - 1), where 2^k - 1 is
    // exact; for large k the -1 does not matter (and 2^k may overflow).
    let two_k = half + half;
    let small = two_k * q + (two_k - 1.0);
    let large = (1.0 + q) * half * 2.0;
    let y = if k > 24 { large } else { small };
    // k == 0 returns the polynomial itself: exact for tiny x.
    let y = if k == 0 { q } else { y };
    // The polynomial turns -0 into +0.
    if x == 0.0 {
        x
    } else {
        y
    }
}

// ---- ln, ln_1p -------------------------------------------------------------

/// `ln(1 + f)` for `f` in `[sqrt(1/2) - 1, sqrt(2) - 1]`, without the `f` term:
/// `-f^2/2 + f^3 P(f)`. Relative error of the fit 6e-9.
#[inline(always)]
fn ln1p_tail(f: f32) -> f32 {
    let p = -7.635_652e-2;
    let p = p * f + 1.276_332_4e-1;
    let p = p * f - 1.316_058_2e-1;
    let p = p * f + 1.420_155_3e-1;
    let p = p * f - 1.662_329_9e-1;
    let p = p * f + 2.000_123_4e-1;
    let p = p * f - 2.500_082_3e-1;
    let p = p * f + 3.333_333e-1;
    let f2 = f * f;
    f2 * f * p - 0.5 * f2
}

/// Bits of sqrt(1/2) rounded down.
const SQRT_HALF_BITS: i32 = 0x3F35_04F3;

/// `x = 2^e * m` with `m` in `[sqrt(1/2), sqrt(2))`, for positive normal `x`.
#[inline(always)]
fn split_exponent(x: f32) -> (i32, f32) {
    let bits = x.to_bits() as i32;
    let e = bits.wrapping_sub(SQRT_HALF_BITS) >> 23;
    (e, f32::from_bits(bits.wrapping_sub(e << 23) as u32))
}

/// Natural logarithm. Max error 0.90 ulp.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    // Subnormals: scale into the normal range first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let (e, m) = split_exponent(xs);
    let e = if tiny { e - 23 } else { e };
    let ef = e as f32;
    let f = m - 1.0;
    let y = (f + (ln1p_tail(f) + ef * LN2_LO)) + ef * LN2_HI;
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    let y = if x < 0.0 { f32::NAN } else { y };
    // +inf and NaN return themselves.
    if x < f32::INFINITY {
        y
    } else {
        x
    }
}

/// `ln(1 + x)`, accurate near 0. Max error 0.94 ulp.
#[inline(always)]
pub fn ln_1p(x: f32) -> f32 {
    let u = 1.0 + x;
    // The rounding error of u: (1 + x) = u + c exactly (Fast2Sum, larger
    // operand first).
    let c = if x.abs() <= 1.0 {
        x - (u - 1.0)
    } else {
        1.0 - (u - x)
    };
    // u >= 2^-24 for x > -1, always normal.
    let (e, m) = split_exponent(u);
    let ef = e as f32;
    let f = m - 1.0;
    // ln(u + c) = ln(u) + ln(1 + c/u) ~= ln(u) + c/u
    let y = (f + (ln1p_tail(f) + (c / u + ef * LN2_LO))) + ef * LN2_HI;
    // Tiny x (and -0, subnormals): ln(1 + x) rounds to x.
    let y = if x.abs() < 5.960_464_5e-8 { x } else { y };
    let y = if x == -1.0 { f32::NEG_INFINITY } else { y };
    let y = if x < -1.0 { f32::NAN } else { y };
    if x < f32::INFINITY {
        y
    } else {
        x
    }
}

// ---- sin, cos ----------------------------------------------------------------

/// pi/2 in four parts: the first three have at most 11 significant bits, so
/// `j * PIO2_k` is exact for `|j| < 2^13`; the sum is pi/2 to within 2^-63,
/// enough to reduce every float below `TRIG_LIMIT` (the hardest, 252.898...,
/// lies 2^-27.8 from a multiple of pi/2) to full relative precision.
const PIO2_1: f32 = 1.570_312_5;
const PIO2_2: f32 = 4.837_513e-4;
const PIO2_3: f32 = 7.549_533_6e-8;
const PIO2_4: f32 = 2.563_344e-12;

/// `sin_in_range`, `cos_in_range` and the slice functions are accurate for
/// `|x|` below this; beyond it `sin` and `cos` call libm.
pub const TRIG_LIMIT: f32 = 12_800.0;

/// `x = j pi/2 + r + r_lo`, `|r| <= pi/4` (slightly more after rounding),
/// `r_lo` the rounding error of `r`; returns `(r, r_lo, j)`.
#[inline(always)]
fn reduce_pio2(x: f32) -> (f32, f32, i32) {
    let (jf, j) = round_int(x * std::f32::consts::FRAC_2_PI);
    // Exact: Sterbenz's lemma, and then the granularity of the operands.
    let t = (x - jf * PIO2_1) - jf * PIO2_2;
    // Exact product; the difference is rounded, its error recovered as in
    // Fast2Sum.
    let p3 = jf * PIO2_3;
    let r = t - p3;
    let r_lo = ((t - r) - p3) - jf * PIO2_4;
    (r, r_lo, j)
}

/// `sin(r) - r` on `|r| <= pi/4`, `z = r^2`: `r^3 P(z)`; fit error 4e-9
/// relative to sin(r).
#[inline(always)]
fn sin_tail(r: f32, z: f32) -> f32 {
    let p = -1.951_445_4e-4;
    let p = p * z + 8.332_155e-3;
    let p = p * z - 1.666_665_5e-1;
    r * z * p
}

/// `cos(r) - (1 - z/2)` on `|r| <= pi/4`, `z = r^2`: `z^2 P(z)`; fit error
/// 1e-10 relative to cos(r).
#[inline(always)]
fn cos_tail(z: f32) -> f32 {
    let p = 2.443_221e-5;
    let p = p * z - 1.388_730_8e-3;
    let p = p * z + 4.166_664_6e-2;
    z * z * p
}

/// sin or cos of `x` by quadrant: `shift` 0 for sin, 1 for cos.
#[inline(always)]
fn sincos(x: f32, shift: i32) -> f32 {
    let (r, r_lo, j) = reduce_pio2(x);
    let j = j.wrapping_add(shift);
    let z = r * r;
    let st = sin_tail(r, z);
    let ct = cos_tail(z);
    // 1 - z/2 and its rounding error (exact, as Fast2Sum).
    let h = 0.5 * z;
    let head = 1.0 - h;
    let head_err = (1.0 - head) - h;
    // The small terms are summed first, so each result is rounded once
    // more; r_lo enters to first order (sin' = cos, cos' = -sin).
    let s = r + (st + r_lo * (head + ct));
    let c = head + ((head_err + ct) - r_lo * (r + st));
    let y = if j & 1 == 0 { s } else { c };
    // Quadrants 2 and 3 negate.
    f32::from_bits(y.to_bits() ^ (((j & 2) as u32) << 30))
}

/// sin(x) for `|x| < TRIG_LIMIT` (and NaN, ±inf). Max error 0.84 ulp.
#[inline(always)]
pub fn sin_in_range(x: f32) -> f32 {
    let y = sincos(x, 0);
    // The polynomial turns -0 into +0.
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// cos(x) for `|x| < TRIG_LIMIT` (and NaN, ±inf). Max error 0.84 ulp.
#[inline(always)]
pub fn cos_in_range(x: f32) -> f32 {
    sincos(x, 1)
}

/// Whether the vectorised path handles `x` (NaN and the infinities included).
#[inline(always)]
fn trig_in_range(x: f32) -> bool {
    !(x.abs() >= TRIG_LIMIT && x.abs() < f32::INFINITY)
}

/// sin(x) for every x; calls libm for `|x| >= TRIG_LIMIT`, so a loop of it
/// does not vectorise: use `sin_into`/`sin_in_place` on slices.
#[inline]
pub fn sin(x: f32) -> f32 {
    if trig_in_range(x) {
        sin_in_range(x)
    } else {
        libm::sinf(x)
    }
}

/// cos(x) for every x; see `sin`.
#[inline]
pub fn cos(x: f32) -> f32 {
    if trig_in_range(x) {
        cos_in_range(x)
    } else {
        libm::cosf(x)
    }
}

// ---- slice functions -----------------------------------------------------------

/// Elements per block of the sin and cos slice loops.
const TRIG_BLOCK: usize = 256;

#[inline(always)]
fn all_in_range(xs: &[f32]) -> bool {
    xs.iter().fold(true, |ok, &x| ok & trig_in_range(x))
}

/// The slice loops, written once and inlined into each instruction-set
/// variant of the public slice functions. Calling the `#[inline(always)]`
/// functions directly makes sure they are inlined into the loop (handed to
/// a generic loop as a fn item, a large function may stay behind a call).
mod loops {
    use super::*;

    /// `out[i] = f(src[i])`, with `f` called directly (inlined).
    macro_rules! map_into {
        ($src:expr, $out:expr, $f:expr) => {{
            let (src, out): (&[f32], &mut [f32]) = ($src, $out);
            assert_eq!(src.len(), out.len(), "slice lengths differ");
            for (o, &x) in out.iter_mut().zip(src) {
                *o = $f(x);
            }
        }};
    }

    macro_rules! map_in_place {
        ($v:expr, $f:expr) => {
            for x in $v.iter_mut() {
                *x = $f(*x);
            }
        };
    }

    macro_rules! plain {
        ($($f:ident, $into:ident, $in_place:ident;)*) => {$(
            #[inline(always)]
            pub fn $into(src: &[f32], out: &mut [f32]) {
                map_into!(src, out, $f)
            }
            #[inline(always)]
            pub fn $in_place(v: &mut [f32]) {
                map_in_place!(v, $f)
            }
        )*};
    }

    plain! {
        exp, exp_into, exp_in_place;
        expm1, expm1_into, expm1_in_place;
        ln, ln_into, ln_in_place;
        ln_1p, ln_1p_into, ln_1p_in_place;
        tanh, tanh_into, tanh_in_place;
        logistic, logistic_into, logistic_in_place;
        erf, erf_into, erf_in_place;
    }

    /// Blocks without huge arguments take the vectorised path, the others
    /// the one with libm's fallback.
    macro_rules! trig {
        ($($fast:ident, $full:ident, $into:ident, $in_place:ident;)*) => {$(
            #[inline(always)]
            pub fn $into(src: &[f32], out: &mut [f32]) {
                assert_eq!(src.len(), out.len(), "slice lengths differ");
                for (s, o) in src.chunks(TRIG_BLOCK).zip(out.chunks_mut(TRIG_BLOCK)) {
                    if all_in_range(s) {
                        map_into!(s, o, $fast);
                    } else {
                        map_into!(s, o, $full);
                    }
                }
            }
            #[inline(always)]
            pub fn $in_place(v: &mut [f32]) {
                for b in v.chunks_mut(TRIG_BLOCK) {
                    if all_in_range(b) {
                        map_in_place!(b, $fast);
                    } else {
                        map_in_place!(b, $full);
                    }
                }
            }
        )*};
    }

    trig! {
        sin_in_range, sin, sin_into, sin_in_place;
        cos_in_range, cos, cos_into, cos_in_place;
    }
}

/// Calls `$m!` with the name of every function that has slice versions,
/// and the names of those.
macro_rules! for_each_slice_fn {
    ($m:ident) => {
        $m! {
            exp, exp_into, exp_in_place;
            expm1, expm1_into, expm1_in_place;
            ln, ln_into, ln_in_place;
            ln_1p, ln_1p_into, ln_1p_in_place;
            sin, sin_into, sin_in_place;
            cos, cos_into, cos_in_place;
            tanh, tanh_into, tanh_in_place;
            logistic, logistic_into, logistic_in_place;
            erf, erf_into, erf_in_place;
        }
    };
}

/// The slice loops compiled for AVX2 (8 lanes instead of SSE2's 4). Without
/// FMA contraction every operation is the same IEEE operation as in the
/// baseline build, so the results are identical bit for bit.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    macro_rules! avx2 {
        ($($f:ident, $into:ident, $in_place:ident;)*) => {$(
            /// # Safety
            /// The CPU must support AVX2.
            #[target_feature(enable = "avx2")]
            pub unsafe fn $into(src: &[f32], out: &mut [f32]) {
                super::loops::$into(src, out)
            }
            /// # Safety
            /// The CPU must support AVX2.
            #[target_feature(enable = "avx2")]
            pub unsafe fn $in_place(v: &mut [f32]) {
                super::loops::$in_place(v)
            }
        )*};
    }
    for_each_slice_fn!(avx2);
}

/// The public slice functions: the AVX2 loop where the CPU has it, else
/// the baseline one.
macro_rules! dispatch {
    ($($f:ident, $into:ident, $in_place:ident;)*) => {$(
        #[doc = concat!("`out[i] = ", stringify!($f), "(src[i])`, vectorised.")]
        pub fn $into(src: &[f32], out: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the loop only needs AVX2, which this CPU has.
                return unsafe { avx2::$into(src, out) };
            }
            loops::$into(src, out)
        }

        #[doc = concat!("`v[i] = ", stringify!($f), "(v[i])`, vectorised.")]
        pub fn $in_place(v: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the loop only needs AVX2, which this CPU has.
                return unsafe { avx2::$in_place(v) };
            }
            loops::$in_place(v)
        }
    )*};
}

for_each_slice_fn!(dispatch);

// ---- tanh, logistic, erf -------------------------------------------------------

/// tanh. Max error 1.33 ulp.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 0.625: x + x^3 P(x^2), fit error 4e-9.
    let z = x * x;
    let p = -5.704_987e-3;
    let p = p * z + 2.063_908_8e-2;
    let p = p * z - 5.373_971_5e-2;
    let p = p * z + 1.333_144_2e-1;
    let p = p * z - 3.333_328e-1;
    let small = x + x * z * p;
    // Otherwise 1 - 2 / (e^2|x| + 1); beyond 9.1 that rounds to 1.
    let e = exp(2.0 * clamp(a, 0.0, 9.1));
    let large = xor_sign(1.0 - 2.0 / (e + 1.0), x);
    let y = if a < 0.625 { small } else { large };
    // The polynomial turns -0 into +0.
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// The logistic sigmoid 1 / (1 + e^-x), without overflow for any x.
/// Max error 2.40 ulp (exp's error, magnified where e^x and the result
/// sit at different places in their binades).
#[inline(always)]
pub fn logistic(x: f32) -> f32 {
    // e^-|x| <= 1; for x < 0 the result is e^x / (1 + e^x).
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// The error function. Max error 1.34 ulp.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 1: x (1 + P(x^2)), relative fit error 1.2e-9.
    let z = x * x;
    let p = 7.853_861e-5;
    let p = p * z - 8.010_194e-4;
    let p = p * z + 5.188_328e-3;
    let p = p * z - 2.685_381_3e-2;
    let p = p * z + 1.128_358_5e-1;
    let p = p * z - 3.761_262_6e-1;
    let p = p * z + 1.283_791_7e-1;
    let small = x + x * p;
    // 1 <= |x| < 4: erfc(x) = exp(R(x) - x^2) with R fitted on t = |x| - 2.5
    // (absolute error in erf 1e-9); beyond 4, erf rounds to ±1.
    let a4 = clamp(a, 1.0, 4.0);
    let t = a4 - 2.5;
    let q = 1.855_74e-4;
    let q = q * t - 1.559_972_4e-4;
    let q = q * t + 2.457_790_3e-3;
    let q = q * t - 1.071_776_4e-2;
    let q = q * t + 5.611_462_5e-2;
    let q = q * t - 3.526_939_7e-1;
    let q = q * t - 1.556_817_8;
    let large = xor_sign(1.0 - exp(q - a4 * a4), x);
    if a < 1.0 {
        small
    } else {
        large
    }
}
