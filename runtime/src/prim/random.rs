//! `threefry2x32`, the counter-based random bit generator under `random.*`
//! (two u32 outputs from two key words and two counter words), with all
//! its rules: shapes, evaluation, JVP, transpose, batching, partitioning.

use super::{bind, device, not_linear, zero_tangents, Aval, Avals, Outs, Prim};
use crate::error::{Error, Result};
use crate::jit::partition::{Local, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::{to_front, Bdims};
use crate::transform::jvp::Tangents;
use arr_kernels::Backend as _;
use arr_kernels::{Array, DType};
use smallvec::smallvec;

pub fn shape_threefry2x32(args: &[Aval]) -> Result<Avals> {
    if args
        .iter()
        .any(|a| a.dtype != DType::U32 || a.shape != args[0].shape)
    {
        return Err(Error::type_error(
            "threefry2x32 needs four u32 arrays of one shape",
        ));
    }
    let out = Aval {
        shape: args[0].shape.clone(),
        dtype: DType::U32,
    };
    Ok(smallvec![out.clone(), out])
}

pub fn eval_threefry2x32(args: &[Array]) -> Result<Outs> {
    let (a, b) = device(args).threefry2x32(&args[0], &args[1], &args[2], &args[3]);
    Ok(smallvec![a.into(), b.into()])
}

/// Bits of u32 operands: no tangent.
pub fn jvp_threefry2x32(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    zero_tangents(prim, p)
}

pub fn transpose_threefry2x32(prim: &Prim) -> Result<Vec<Option<Tensor>>> {
    Err(not_linear(prim))
}

/// Elementwise over its four operands: all batched at the front.
pub fn batch_threefry2x32(
    prim: &Prim,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let args = (0..4)
        .map(|i| to_front(&v[i], d[i], size))
        .collect::<Result<Vec<_>>>()?;
    Ok((bind(prim, args)?, vec![Some(0), Some(0)]))
}

/// Runs replicated, on whole keys and counters.
pub fn partition_threefry2x32(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}
