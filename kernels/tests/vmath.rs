//! Accuracy of the vectorisable f32 functions (`cpu::vmath`) against the f64
//! std/libm results, in ulps of the exact value (so near zero it is a
//! relative error), over dense sweeps of each function's useful range, a
//! sweep of the whole float range by bit pattern, and special values.
//!
//! The bounds are the maximum errors over every f32, measured once
//! exhaustively with the same measure (for sin and cos, every f32 below
//! `TRIG_LIMIT`), rounded up: exp 0.93 ulp, expm1 1.40, ln 0.90, ln_1p
//! 0.94, sin 0.84, cos 0.84, tanh 1.33, logistic 2.40, erf 1.34.

use arr_kernels::cpu::vmath;

/// The spacing of f32 values at `r` (the subnormal spacing below the normal range).
fn ulp_of(r: f64) -> f64 {
    let e = (((r.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-126);
    f64::from_bits(((e - 23 + 1023) as u64) << 52)
}

/// The error of `y` in ulps of the exact `r`; infinite when NaN-ness or an
/// infinity (of a result that overflows f32) disagree.
fn ulp_err(y: f32, r: f64) -> f64 {
    if r.is_nan() || y.is_nan() {
        return if r.is_nan() && y.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let r32 = r as f32;
    if r32.is_infinite() || y.is_infinite() {
        return if y == r32 { 0.0 } else { f64::INFINITY };
    }
    (y as f64 - r).abs() / ulp_of(r)
}

/// The largest error over `xs`, with its argument.
fn max_err(f: fn(f32) -> f32, r: fn(f64) -> f64, xs: impl Iterator<Item = f32>) -> (f64, f32) {
    xs.map(|x| (ulp_err(f(x), r(x as f64)), x))
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

const N: usize = 1_000_000;

/// `N` evenly spaced points of `[lo, hi]`.
fn linspace(lo: f64, hi: f64) -> impl Iterator<Item = f32> {
    (0..N).map(move |i| (lo + (hi - lo) * i as f64 / (N - 1) as f64) as f32)
}

/// `N` points spaced evenly in log scale over `[lo, hi]` (both positive).
fn geomspace(lo: f64, hi: f64) -> impl Iterator<Item = f32> {
    let (a, b) = (lo.ln(), hi.ln());
    (0..N).map(move |i| (a + (b - a) * i as f64 / (N - 1) as f64).exp() as f32)
}

/// About `N` floats of both signs, evenly spaced by bit pattern: every
/// binade from the subnormals to the largest finite.
fn all_binades() -> impl Iterator<Item = f32> {
    let step = (0x7f80_0000u32 / (N as u32 / 2)).max(1);
    (0..0x7f80_0000u32)
        .step_by(step as usize)
        .flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)])
}

fn check(
    name: &str,
    f: fn(f32) -> f32,
    r: fn(f64) -> f64,
    bound: f64,
    sweeps: Vec<Box<dyn Iterator<Item = f32>>>,
) {
    for (i, xs) in sweeps.into_iter().enumerate() {
        let (e, x) = max_err(f, r, xs);
        assert!(
            e <= bound,
            "{name}: sweep {i}: {e:.3} ulp > {bound} at x = {x:e}: {:e} vs {:e}",
            f(x),
            r(x as f64)
        );
    }
}

/// `f(x)` is exactly `want` (NaN matching NaN, zeros by sign).
#[track_caller]
fn exactly(f: fn(f32) -> f32, x: f32, want: f32) {
    let y = f(x);
    assert!(
        (y.is_nan() && want.is_nan()) || y.to_bits() == want.to_bits(),
        "f({x:e}) = {y:e}, want {want:e}"
    );
}

/// `f(x)` is within `bound` ulps of the f64 reference.
#[track_caller]
fn close(f: fn(f32) -> f32, r: fn(f64) -> f64, x: f32, bound: f64) {
    let e = ulp_err(f(x), r(x as f64));
    assert!(
        e <= bound,
        "f({x:e}) = {:e}, want {:e} ({e:.3} ulp)",
        f(x),
        r(x as f64)
    );
}

const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;
const TINY: f32 = 1e-45; // the smallest subnormal

#[test]
fn exp() {
    let f: fn(f32) -> f32 = vmath::exp;
    check(
        "exp",
        f,
        f64::exp,
        1.0,
        vec![
            Box::new(linspace(-100.0, 100.0)),
            Box::new(linspace(-1.0, 1.0)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, INF);
    exactly(f, -INF, 0.0);
    exactly(f, 0.0, 1.0);
    exactly(f, -0.0, 1.0);
    exactly(f, TINY, 1.0);
    exactly(f, 88.72284, INF);
    exactly(f, 89.0, INF);
    exactly(f, f32::MAX, INF);
    exactly(f, -104.0, 0.0);
    exactly(f, -f32::MAX, 0.0);
    close(f, f64::exp, 88.72283, 1.0);
    // Subnormal results.
    close(f, f64::exp, -100.0, 1.0);
    close(f, f64::exp, -103.2789, 1.0);
}

#[test]
fn expm1() {
    let f: fn(f32) -> f32 = vmath::expm1;
    check(
        "expm1",
        f,
        f64::exp_m1,
        1.5,
        vec![
            Box::new(linspace(-20.0, 20.0)),
            Box::new(linspace(-1e-3, 1e-3)),
            Box::new(linspace(-100.0, 100.0)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, INF);
    exactly(f, -INF, -1.0);
    exactly(f, 0.0, 0.0);
    exactly(f, -0.0, -0.0);
    exactly(f, 1e-30, 1e-30);
    exactly(f, -TINY, -TINY);
    exactly(f, -20.0, -1.0);
    exactly(f, 89.0, INF);
    exactly(f, -f32::MAX, -1.0);
    close(f, f64::exp_m1, 88.72283, 2.0);
}

#[test]
fn ln() {
    let f: fn(f32) -> f32 = vmath::ln;
    check(
        "ln",
        f,
        f64::ln,
        1.0,
        vec![
            Box::new(geomspace(1e-30, 1e30)),
            Box::new(linspace(0.0, 4.0)),
            Box::new(linspace(0.99, 1.01)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, INF);
    exactly(f, -INF, NAN);
    exactly(f, 0.0, -INF);
    exactly(f, -0.0, -INF);
    exactly(f, -1.0, NAN);
    exactly(f, -TINY, NAN);
    exactly(f, 1.0, 0.0);
    close(f, f64::ln, TINY, 1.0);
    close(f, f64::ln, f32::MIN_POSITIVE, 1.0);
    close(f, f64::ln, f32::MAX, 1.0);
}

#[test]
fn ln_1p() {
    let f: fn(f32) -> f32 = vmath::ln_1p;
    check(
        "ln_1p",
        f,
        f64::ln_1p,
        1.0,
        vec![
            Box::new(linspace(-1.0, 10.0)),
            Box::new(linspace(-1e-3, 1e-3)),
            Box::new(geomspace(1e-30, 1e30)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, INF);
    exactly(f, -INF, NAN);
    exactly(f, -1.0, -INF);
    exactly(f, -2.0, NAN);
    exactly(f, 0.0, 0.0);
    exactly(f, -0.0, -0.0);
    exactly(f, 1e-30, 1e-30);
    exactly(f, -TINY, -TINY);
    close(f, f64::ln_1p, -0.99999994, 1.0);
    close(f, f64::ln_1p, f32::MAX, 1.0);
}

#[test]
fn sin() {
    let f: fn(f32) -> f32 = vmath::sin_in_range;
    check(
        "sin",
        f,
        f64::sin,
        1.0,
        vec![
            Box::new(linspace(-1e4, 1e4)),
            Box::new(linspace(-10.0, 10.0)),
            Box::new(linspace(-1e-3, 1e-3)),
            Box::new(linspace(
                -vmath::TRIG_LIMIT as f64 * 0.999_99,
                vmath::TRIG_LIMIT as f64 * 0.999_99,
            )),
            Box::new(all_binades().filter(|x| x.abs() < vmath::TRIG_LIMIT)),
        ],
    );
    // Beyond the limit, `sin` falls back to libm.
    check(
        "sin",
        vmath::sin,
        f64::sin,
        1.0,
        vec![Box::new(all_binades()), Box::new(linspace(-1e6, 1e6))],
    );
    for f in [vmath::sin_in_range, vmath::sin] {
        exactly(f, NAN, NAN);
        exactly(f, INF, NAN);
        exactly(f, -INF, NAN);
        exactly(f, 0.0, 0.0);
        exactly(f, -0.0, -0.0);
        exactly(f, TINY, TINY);
        exactly(f, -1e-20, -1e-20);
        // Near multiples of pi: the result is the reduction's remainder.
        close(f, f64::sin, std::f32::consts::PI, 1.0);
        close(f, f64::sin, -std::f32::consts::PI, 1.0);
        // The float below 2^16 nearest a multiple of pi/2 (2^-27.8 away).
        close(f, f64::sin, 252.898_2, 1.0);
    }
    close(vmath::sin, f64::sin, 1e20, 1.0);
    close(vmath::sin, f64::sin, f32::MAX, 1.0);
}

#[test]
fn cos() {
    let f: fn(f32) -> f32 = vmath::cos_in_range;
    check(
        "cos",
        f,
        f64::cos,
        1.0,
        vec![
            Box::new(linspace(-1e4, 1e4)),
            Box::new(linspace(-10.0, 10.0)),
            Box::new(linspace(-1e-3, 1e-3)),
            Box::new(all_binades().filter(|x| x.abs() < vmath::TRIG_LIMIT)),
        ],
    );
    check(
        "cos",
        vmath::cos,
        f64::cos,
        1.0,
        vec![Box::new(all_binades()), Box::new(linspace(-1e6, 1e6))],
    );
    for f in [vmath::cos_in_range, vmath::cos] {
        exactly(f, NAN, NAN);
        exactly(f, INF, NAN);
        exactly(f, -INF, NAN);
        exactly(f, 0.0, 1.0);
        exactly(f, -0.0, 1.0);
        exactly(f, TINY, 1.0);
        close(f, f64::cos, std::f32::consts::FRAC_PI_2, 1.0);
        close(f, f64::cos, -std::f32::consts::FRAC_PI_2, 1.0);
        close(f, f64::cos, 3.0 * std::f32::consts::FRAC_PI_2, 1.0);
    }
    close(vmath::cos, f64::cos, 1e20, 1.0);
}

/// The slice functions agree with the scalar ones (for sin and cos, in
/// blocks with and without arguments beyond `TRIG_LIMIT`), in place and not.
#[test]
fn slices() {
    let mut xs: Vec<f32> = linspace(-2e4, 2e4).take(10_000).collect();
    xs.extend(linspace(-10.0, 10.0).step_by(100));
    xs.extend([NAN, INF, -INF, 0.0, -0.0, 1e30, -3e38, 12_799.99, 12_800.0]);
    xs.extend(linspace(-5.0, 5.0).step_by(1000));
    type Fns = (fn(&[f32], &mut [f32]), fn(&mut [f32]), fn(f32) -> f32);
    let fns: [Fns; 9] = [
        (vmath::sin_into, vmath::sin_in_place, vmath::sin),
        (vmath::cos_into, vmath::cos_in_place, vmath::cos),
        (vmath::exp_into, vmath::exp_in_place, vmath::exp),
        (vmath::expm1_into, vmath::expm1_in_place, vmath::expm1),
        (vmath::ln_into, vmath::ln_in_place, vmath::ln),
        (vmath::ln_1p_into, vmath::ln_1p_in_place, vmath::ln_1p),
        (vmath::tanh_into, vmath::tanh_in_place, vmath::tanh),
        (
            vmath::logistic_into,
            vmath::logistic_in_place,
            vmath::logistic,
        ),
        (vmath::erf_into, vmath::erf_in_place, vmath::erf),
    ];
    for (into, in_place, scalar) in fns {
        let mut out = vec![0.0; xs.len()];
        into(&xs, &mut out);
        let mut v = xs.clone();
        in_place(&mut v);
        for ((&x, &a), &b) in xs.iter().zip(&out).zip(&v) {
            let want = scalar(x);
            let same = |y: f32| y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan());
            assert!(
                same(a) && same(b),
                "at {x:e}: {a:e} / {b:e}, scalar {want:e}"
            );
        }
    }
}

#[test]
fn tanh() {
    let f: fn(f32) -> f32 = vmath::tanh;
    check(
        "tanh",
        f,
        f64::tanh,
        1.5,
        vec![
            Box::new(linspace(-10.0, 10.0)),
            Box::new(linspace(-1.0, 1.0)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, 1.0);
    exactly(f, -INF, -1.0);
    exactly(f, 0.0, 0.0);
    exactly(f, -0.0, -0.0);
    exactly(f, TINY, TINY);
    exactly(f, -1e-30, -1e-30);
    exactly(f, 9.1, 1.0);
    exactly(f, 20.0, 1.0);
    exactly(f, -20.0, -1.0);
    exactly(f, f32::MAX, 1.0);
}

fn logistic64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[test]
fn logistic() {
    let f: fn(f32) -> f32 = vmath::logistic;
    check(
        "logistic",
        f,
        logistic64,
        2.5,
        vec![
            Box::new(linspace(-100.0, 100.0)),
            Box::new(linspace(-10.0, 10.0)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, 1.0);
    exactly(f, -INF, 0.0);
    exactly(f, 0.0, 0.5);
    exactly(f, -0.0, 0.5);
    exactly(f, 100.0, 1.0);
    exactly(f, -105.0, 0.0);
    exactly(f, f32::MAX, 1.0);
    exactly(f, -f32::MAX, 0.0);
    // A subnormal result.
    close(f, logistic64, -100.0, 1.0);
}

#[test]
fn erf() {
    let f: fn(f32) -> f32 = vmath::erf;
    check(
        "erf",
        f,
        libm::erf,
        1.5,
        vec![
            Box::new(linspace(-5.0, 5.0)),
            Box::new(linspace(-1e-3, 1e-3)),
            Box::new(all_binades()),
        ],
    );
    exactly(f, NAN, NAN);
    exactly(f, INF, 1.0);
    exactly(f, -INF, -1.0);
    exactly(f, 0.0, 0.0);
    exactly(f, -0.0, -0.0);
    exactly(f, 4.0, 1.0);
    exactly(f, -10.0, -1.0);
    exactly(f, f32::MAX, 1.0);
    close(f, libm::erf, TINY, 1.0);
    close(f, libm::erf, 1e-30, 1.0);
}
