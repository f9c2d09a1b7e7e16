//! complex64: the element type, which ops it takes, and the CPU kernels
//! that differ from the real ones (results of another dtype, products and
//! sums over the parts, FFTs).
//!
//! A complex64 is a pair of f32 (`C64`), stored interleaved as NumPy and
//! XLA store it. Elementwise arithmetic runs through the op table's kernels
//! like any other dtype (`UnaryKernels`/`BinaryKernels` below: sums,
//! products and quotients in f32 as XLA computes them, the transcendental
//! functions in f64 and rounded once). Fused kernels and GPU code never see
//! a complex number: `jit` leaves complex work unfused, and `Dispatch` runs
//! it on the CPU whatever device holds the operands.

use crate::cpu::elem::Elem;
use crate::optable::{BinaryFn, BinaryKernels, UnaryFn, UnaryKernels};
use crate::{Array, BinaryOp, Buffer, DType, DotDims, ReduceOp, UnaryOp};
use num_complex::Complex;

/// One complex64 number. Ordered lexicographically (real part first), as
/// NumPy sorts complex arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct C64 {
    pub re: f32,
    pub im: f32,
}

// SAFETY: two f32 fields, `repr(C)`, no padding: every bit pattern is a
// valid C64, as bytemuck's `Pod` requires (device copies move its bytes).
unsafe impl bytemuck::Zeroable for C64 {}
unsafe impl bytemuck::Pod for C64 {}

impl C64 {
    pub fn new(re: f32, im: f32) -> C64 {
        C64 { re, im }
    }

    fn wide(self) -> Complex<f64> {
        Complex::new(self.re as f64, self.im as f64)
    }

    fn narrow(z: Complex<f64>) -> C64 {
        C64::new(z.re as f32, z.im as f32)
    }

    /// `f` computed in f64 and rounded once.
    #[inline]
    fn via_f64(self, f: impl Fn(Complex<f64>) -> Complex<f64>) -> C64 {
        C64::narrow(f(self.wide()))
    }
}

/// The unary ops defined on complex numbers.
pub fn accepts_unary(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Neg | Abs
            | Sign
            | Round
            | Exp
            | Expm1
            | Log
            | Log1p
            | Sqrt
            | Rsqrt
            | Sin
            | Cos
            | Tan
            | Sinh
            | Cosh
            | Tanh
            | Asin
            | Acos
            | Atan
            | Asinh
            | Acosh
            | Atanh
            | IsFinite
            | IsNan
            | Real
            | Imag
            | Conj
    )
}

/// The binary ops defined on complex numbers (no ordering: NumPy's
/// lexicographic `<` on complex is not JAX's, which refuses it).
pub fn accepts_binary(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(op, Add | Sub | Mul | Div | Pow | Eq | Ne)
}

/// The unary ops whose result on a complex operand is real (f32).
pub fn to_real(op: UnaryOp) -> bool {
    matches!(op, UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag)
}

fn mul(a: C64, b: C64) -> C64 {
    C64::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

impl UnaryKernels for C64 {
    fn unary<V: UnaryFn<C64>>(op: UnaryOp, v: V) -> Option<V::Out> {
        use UnaryOp::*;
        Some(match op {
            Neg => v.map(|z| C64::new(-z.re, -z.im)),
            Conj => v.map(|z| C64::new(z.re, -z.im)),
            // NumPy's (and JAX's) sign of a complex number: z / |z|.
            Sign => v.map(|z| {
                let r = abs(z);
                if r == 0.0 {
                    C64::default()
                } else {
                    C64::new(z.re / r, z.im / r)
                }
            }),
            Round => v.map(|z| C64::new(z.re.round_ties_even(), z.im.round_ties_even())),
            Exp => v.map(|z| z.via_f64(|w| w.exp())),
            Expm1 => v.map(|z| z.via_f64(|w| w.exp() - 1.0)),
            Log => v.map(|z| z.via_f64(|w| w.ln())),
            Log1p => v.map(|z| z.via_f64(|w| (w + 1.0).ln())),
            Sqrt => v.map(|z| z.via_f64(|w| w.sqrt())),
            Rsqrt => v.map(|z| z.via_f64(|w| w.sqrt().inv())),
            Sin => v.map(|z| z.via_f64(|w| w.sin())),
            Cos => v.map(|z| z.via_f64(|w| w.cos())),
            Tan => v.map(|z| z.via_f64(|w| w.tan())),
            Sinh => v.map(|z| z.via_f64(|w| w.sinh())),
            Cosh => v.map(|z| z.via_f64(|w| w.cosh())),
            Tanh => v.map(|z| z.via_f64(|w| w.tanh())),
            Asin => v.map(|z| z.via_f64(|w| w.asin())),
            Acos => v.map(|z| z.via_f64(|w| w.acos())),
            Atan => v.map(|z| z.via_f64(|w| w.atan())),
            Asinh => v.map(|z| z.via_f64(|w| w.asinh())),
            Acosh => v.map(|z| z.via_f64(|w| w.acosh())),
            Atanh => v.map(|z| z.via_f64(|w| w.atanh())),
            IsFinite => v.test(|z| z.re.is_finite() && z.im.is_finite()),
            IsNan => v.test(|z| z.re.is_nan() || z.im.is_nan()),
            _ => return None,
        })
    }
}

impl BinaryKernels for C64 {
    fn binary<V: BinaryFn<C64>>(op: BinaryOp, v: V) -> Option<V::Out> {
        use BinaryOp::*;
        Some(match op {
            Add => v.map(|a, b| C64::new(a.re + b.re, a.im + b.im)),
            Sub => v.map(|a, b| C64::new(a.re - b.re, a.im - b.im)),
            Mul => v.map(mul),
            Div => v.map(|a, b| C64::narrow(a.wide() / b.wide())),
            Pow => v.map(|a, b| {
                // 0 ** w is 1 for w == 0, else 0 (num-complex's powc
                // takes the log of 0).
                if a.re == 0.0 && a.im == 0.0 {
                    let one = b.re == 0.0 && b.im == 0.0;
                    C64::new(one as u8 as f32, 0.0)
                } else {
                    C64::narrow(a.wide().powc(b.wide()))
                }
            }),
            Eq => v.test(|a, b| a == b),
            Ne => v.test(|a, b| a != b),
            _ => return None,
        })
    }
}

/// The real and imaginary parts of a complex array, as f32 arrays.
pub fn parts(a: &Array) -> (Array, Array) {
    let buf = a.buffer().expect("a live array");
    let z = C64::slice(&buf);
    let re = z.iter().map(|z| z.re).collect();
    let im = z.iter().map(|z| z.im).collect();
    (
        Array::new(a.shape(), Buffer::F32(re)),
        Array::new(a.shape(), Buffer::F32(im)),
    )
}

/// The complex array `re + i im` of two f32 arrays of one shape.
pub fn join(re: &Array, im: &Array) -> Array {
    assert_eq!(re.shape(), im.shape(), "complex parts of different shapes");
    let (rb, ib) = (re.buffer().expect("live"), im.buffer().expect("live"));
    let z = f32::slice(&rb)
        .iter()
        .zip(f32::slice(&ib))
        .map(|(&re, &im)| C64::new(re, im))
        .collect();
    Array::new(re.shape(), Buffer::C64(z))
}

/// |z| as XLA computes it (so results agree with JAX's to the bit):
/// `max * sqrt(1 + (min / max)²)` in f32, and `min` where that is NaN
/// (zero, infinities, NaN).
fn abs(z: C64) -> f32 {
    let (a, b) = (z.re.abs(), z.im.abs());
    let (max, min) = if a >= b { (a, b) } else { (b, a) };
    let r = min / max;
    let result = max * (1.0 + r * r).sqrt();
    if result.is_nan() {
        min
    } else {
        result
    }
}

/// `op` of a complex array whose result is real (`to_real`).
pub fn unary_to_real(op: UnaryOp, a: &Array) -> Array {
    let buf = a.buffer().expect("a live array");
    let z = C64::slice(&buf);
    let f: fn(C64) -> f32 = match op {
        UnaryOp::Abs => abs,
        UnaryOp::Real => |z| z.re,
        UnaryOp::Imag => |z| z.im,
        _ => unreachable!("{} has a complex result", op.name()),
    };
    Array::new(a.shape(), Buffer::F32(z.iter().map(|&z| f(z)).collect()))
}

/// A real backend operation applied to both parts (sums, cumulative sums:
/// linear operations that act on each part alone).
fn on_parts(a: &Array, f: impl Fn(&Array) -> Array) -> Array {
    let (re, im) = parts(a);
    join(&f(&re), &f(&im))
}

pub fn reduce(op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
    let cpu = crate::cpu::Cpu;
    match op {
        ReduceOp::Sum => on_parts(a, |p| crate::Backend::reduce(&cpu, op, p, axes)),
        ReduceOp::Prod => {
            // Move the reduced axes last, then multiply along each row.
            let keep: Vec<usize> = (0..a.ndim()).filter(|d| !axes.contains(d)).collect();
            let perm: Vec<usize> = keep.iter().chain(axes).copied().collect();
            let moved = crate::Backend::transpose(&cpu, a, &perm);
            let out_shape: Vec<usize> = keep.iter().map(|&d| a.shape()[d]).collect();
            let row: usize = axes.iter().map(|&d| a.shape()[d]).product();
            let buf = moved.buffer().expect("live");
            let z = C64::slice(&buf);
            let out: Vec<C64> = if row == 0 {
                vec![C64::new(1.0, 0.0); out_shape.iter().product()]
            } else {
                z.chunks(row)
                    .map(|r| r.iter().fold(C64::new(1.0, 0.0), |p, &x| mul(p, x)))
                    .collect()
            };
            Array::new(&out_shape, Buffer::C64(out))
        }
        ReduceOp::Max | ReduceOp::Min | ReduceOp::All | ReduceOp::Any => {
            panic!("{op:?} is not defined on complex64 (checked by the caller)")
        }
    }
}

/// A complex product as four real ones (the library GEMM on each).
pub fn dot_general(a: &Array, b: &Array, dims: &DotDims) -> Array {
    let cpu = crate::cpu::Cpu;
    let dot = |x: &Array, y: &Array| crate::Backend::dot_general(&cpu, x, y, dims);
    let parts_of = |x: &Array| {
        if x.dtype() == DType::C64 {
            parts(x)
        } else {
            let re = crate::Backend::convert(&cpu, x, DType::F32);
            let im = Array::zeros(DType::F32, x.shape());
            (re, im)
        }
    };
    let ((ar, ai), (br, bi)) = (parts_of(a), parts_of(b));
    let sub = |x, y| crate::Backend::binary(&cpu, BinaryOp::Sub, x, y);
    let add = |x, y| crate::Backend::binary(&cpu, BinaryOp::Add, x, y);
    let re = sub(dot(&ar, &br), dot(&ai, &bi));
    let im = add(dot(&ar, &bi), dot(&ai, &br));
    join(&re, &im)
}

/// Which transform `fft` computes, as `lax.fft`'s `fft_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftKind {
    /// complex → complex, forward.
    Fft,
    /// complex → complex, inverse (scaled by 1/n).
    Ifft,
    /// real → complex: the `n/2 + 1` non-negative frequencies.
    Rfft,
    /// complex (`n/2 + 1` frequencies) → real of length `n`.
    Irfft,
}

impl FftKind {
    pub fn name(self) -> &'static str {
        match self {
            FftKind::Fft => "FFT",
            FftKind::Ifft => "IFFT",
            FftKind::Rfft => "RFFT",
            FftKind::Irfft => "IRFFT",
        }
    }
}

/// The 1-D transform of every row along the last axis; `n` is the length of
/// the transform (the input's last axis, except for `Irfft`, whose input
/// holds `n/2 + 1` frequencies).
pub fn fft(a: &Array, kind: FftKind, n: usize) -> Array {
    let buf = a.buffer().expect("a live array");
    let rows: usize = a.shape()[..a.ndim() - 1].iter().product();
    let mut out_shape = a.shape().to_vec();
    let last = out_shape.len() - 1;
    let mut planner = rustfft::FftPlanner::<f64>::new();
    let inverse = matches!(kind, FftKind::Ifft | FftKind::Irfft);
    let plan = if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    };
    let mut line = vec![Complex::<f64>::default(); n];
    let scale = if inverse && n > 0 {
        1.0 / n as f64
    } else {
        1.0
    };
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            let z = C64::slice(&buf);
            let mut out = Vec::with_capacity(z.len());
            for r in 0..rows {
                for (l, x) in line.iter_mut().zip(&z[r * n..(r + 1) * n]) {
                    *l = x.wide();
                }
                plan.process(&mut line);
                out.extend(line.iter().map(|&w| C64::narrow(w * scale)));
            }
            Array::new(&out_shape, Buffer::C64(out))
        }
        FftKind::Rfft => {
            let x = f32::slice(&buf);
            let half = n / 2 + 1;
            out_shape[last] = half;
            let mut out = Vec::with_capacity(rows * half);
            for r in 0..rows {
                for (l, &x) in line.iter_mut().zip(&x[r * n..(r + 1) * n]) {
                    *l = Complex::new(x as f64, 0.0);
                }
                plan.process(&mut line);
                out.extend(line[..half].iter().map(|&w| C64::narrow(w)));
            }
            Array::new(&out_shape, Buffer::C64(out))
        }
        FftKind::Irfft => {
            let z = C64::slice(&buf);
            let m = a.shape()[last];
            out_shape[last] = n;
            let mut out = Vec::with_capacity(rows * n);
            for r in 0..rows {
                let row = &z[r * m..(r + 1) * m];
                // The full spectrum from its non-negative half, as XLA's
                // IRFFT reads it: the imaginary parts of the zero (and the
                // Nyquist) frequency are ignored, missing ones are zero.
                for (k, l) in line.iter_mut().enumerate() {
                    let j = if k <= n / 2 { k } else { n - k };
                    let w = row.get(j).map_or(Complex::default(), |x| x.wide());
                    *l = if k <= n / 2 { w } else { w.conj() };
                }
                line[0].im = 0.0;
                if n.is_multiple_of(2) && n > 0 {
                    line[n / 2].im = 0.0;
                }
                plan.process(&mut line);
                out.extend(line.iter().map(|&w| (w.re * scale) as f32));
            }
            Array::new(&out_shape, Buffer::F32(out))
        }
    }
}
