//! The discrete Fourier transform primitive (`lax.fft` over the last axis:
//! FFT, IFFT, RFFT, IRFFT) and all its rules. Every kind is linear, so a
//! tangent goes through the transform itself; the transposes are JAX's
//! (the DFT matrix is symmetric, so FFT and IFFT transpose to themselves).
//! `jnp.fft`'s n-dimensional and axis-taking functions are sugar over it
//! (`surface.arr`).

use super::{
    batched_at_front, bind1, device, for_linear, one_out, one_type, ty, Arrays, Aval, Avals, Outs,
    Prim,
};
use crate::error::{Error, Result};
use crate::jit::partition::{Local, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::{to_front, Bdims};
use crate::transform::linear::LinIn;
use crate::transform::ops::*;
use arr_kernels::complex::FftKind;
use arr_kernels::{Backend as _, DType};

/// The length of the transform's last axis in and out.
fn lengths(kind: FftKind, n: usize) -> (usize, usize) {
    match kind {
        FftKind::Fft | FftKind::Ifft => (n, n),
        FftKind::Rfft => (n, n / 2 + 1),
        FftKind::Irfft => (n / 2 + 1, n),
    }
}

pub fn shape_fft(kind: FftKind, n: usize, args: &[Aval]) -> Result<Avals> {
    let a = &args[0];
    let (want_in, out_len) = lengths(kind, n);
    let (in_dtype, out_dtype) = match kind {
        FftKind::Fft | FftKind::Ifft => (DType::C64, DType::C64),
        FftKind::Rfft => (DType::F32, DType::C64),
        FftKind::Irfft => (DType::C64, DType::F32),
    };
    if a.dtype != in_dtype {
        return Err(Error::type_error(format!(
            "fft: {} needs a {in_dtype} operand, got {}",
            kind.name(),
            ty(a)
        )));
    }
    match a.shape.last() {
        Some(&last) if last == want_in => {}
        _ => {
            return Err(Error::shape_error(format!(
                "fft: {} of length {n} needs a last axis of {want_in}, got {}",
                kind.name(),
                ty(a)
            )))
        }
    }
    let mut shape = a.shape.clone();
    *shape.last_mut().expect("checked") = out_len;
    one_type(shape, out_dtype)
}

pub fn eval_fft(kind: FftKind, n: usize, args: &Arrays) -> Result<Outs> {
    one_out(device(args).fft(&args[0], kind, n))
}

pub fn transpose_fft(
    kind: FftKind,
    n: usize,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    let fft = |kind, n, x: Tensor| bind1(&Prim::Fft { kind, n }, vec![x]);
    for_linear(ins, |_| match kind {
        FftKind::Fft | FftKind::Ifft => fft(kind, n, ct.clone()),
        // RFFT is slice(FFT(x + 0i)): its transpose is re(FFT(ct padded to n)).
        FftKind::Rfft => {
            let last = ct.ndim() - 1;
            let mut hi = vec![0; ct.ndim()];
            hi[last] = n - ct.shape()[last];
            let padded = bind1(
                &Prim::Pad {
                    lo: vec![0; ct.ndim()],
                    hi,
                    interior: vec![0; ct.ndim()],
                },
                vec![ct.clone(), lit(0.0, &ct)],
            )?;
            unary(arr_kernels::UnaryOp::Real, &fft(FftKind::Fft, n, padded)?)
        }
        // JAX's rule: conj(RFFT(ct) * mask / n), the mask counting each
        // frequency as often as the full spectrum holds it.
        FftKind::Irfft => {
            let x = fft(FftKind::Rfft, n, ct.clone())?;
            let m = x.shape()[x.ndim() - 1];
            let twice: Vec<f64> = (0..m)
                .map(|k| {
                    let edge = k == 0 || (n.is_multiple_of(2) && k == m - 1);
                    if edge {
                        1.0
                    } else {
                        2.0
                    }
                })
                .map(|w| w / n.max(1) as f64)
                .collect();
            let mask = Tensor::Concrete(arr_kernels::Array::new(
                &[m],
                arr_kernels::Buffer::C64(
                    twice
                        .iter()
                        .map(|&w| arr_kernels::complex::C64::new(w as f32, 0.0))
                        .collect(),
                ),
            ));
            let scaled = mul(&x, &broadcast_to(&mask, x.shape())?)?;
            unary(arr_kernels::UnaryOp::Conj, &scaled)
        }
    })
}

pub fn batch_fft(
    kind: FftKind,
    n: usize,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    batched_at_front(Prim::Fft { kind, n }, to_front(&v[0], d[0], size)?)
}

/// Each device transforms whole rows: the last axis is gathered, the
/// others keep their split.
pub fn partition_fft(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    let last = ins[0].1.len() - 1;
    cx.along_axis(prim, ins, last)
}
