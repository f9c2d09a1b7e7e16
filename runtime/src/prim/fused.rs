//! `fused` and `fused_matmul`: kernels made by `jit`'s fusion pass (a run of
//! elementwise operations and reductions; a product with an elementwise
//! epilogue), with their shapes and evaluation. They exist only in
//! compiled graphs, made after every transformation and after sharded
//! jit's partitioner have run, so no transformation and no partitioning
//! applies to them: each of those rules is an error, here beside the others.

use super::{device, Aval, Avals, Outs, Prim};
use crate::error::{Error, ErrorKind, Result};
use crate::jit::partition::Local;
use crate::tensor::Tensor;
use crate::transform::batch::Bdims;
use crate::transform::jvp::Tangents;
use arr_kernels::Backend as _;
use arr_kernels::{DType, Kernel, MatmulKernel};
use std::sync::Arc;

pub fn shape_fused(k: &Kernel, args: &[Aval]) -> Result<Avals> {
    let fits = args.len() == k.inputs.len()
        && args
            .iter()
            .zip(&k.inputs)
            .all(|(a, i)| a.dtype == i.dtype && a.shape[..] == i.shape[..]);
    if !fits {
        return Err(Error::type_error(
            "fused kernel: operands do not match the kernel's inputs",
        ));
    }
    Ok((0..k.outputs.len())
        .map(|j| Aval {
            shape: k.output_shape(j).into(),
            dtype: k.dtype,
        })
        .collect())
}

pub fn shape_fused_matmul(k: &MatmulKernel, args: &[Aval]) -> Result<Avals> {
    let e = &k.epilogue;
    let matches =
        |a: &Aval, dtype: DType, shape: &[usize]| a.dtype == dtype && a.shape[..] == shape[..];
    let fits = args.len() == e.inputs.len() + 1
        && matches(&args[0], k.lhs.dtype, &k.lhs.shape)
        && matches(&args[1], k.rhs.dtype, &k.rhs.shape)
        && (0..e.inputs.len()).all(|i| {
            k.operand_of_input(i)
                .is_none_or(|o| matches(&args[o], e.inputs[i].dtype, &e.inputs[i].shape))
        });
    if !fits {
        return Err(Error::type_error(
            "fused matmul: operands do not match the kernel's inputs",
        ));
    }
    // The product's own type, as dot_general's rule gives it.
    let dot = Prim::DotGeneral(k.dims.clone()).shape_rule(&args[..2])?;
    if dot[0].dtype != e.dtype || dot[0].shape[..] != e.shape[..] {
        return Err(Error::type_error(
            "fused matmul: the product's type is not the epilogue's",
        ));
    }
    Ok((0..e.outputs.len())
        .map(|j| Aval {
            shape: k.output_shape(j).into(),
            dtype: e.dtype,
        })
        .collect())
}

pub fn eval_fused(k: &Arc<Kernel>, args: super::Arrays) -> Result<Outs> {
    let device = device(&args);
    Ok(device
        .run_kernel(k, args.into_vec())
        .into_iter()
        .map(Tensor::from)
        .collect())
}

pub fn eval_fused_matmul(k: &Arc<MatmulKernel>, args: super::Arrays) -> Result<Outs> {
    let device = device(&args);
    Ok(device
        .matmul_kernel(k, args.into_vec())
        .into_iter()
        .map(Tensor::from)
        .collect())
}

fn fused_error() -> Error {
    Error::new(
        ErrorKind::TransformError,
        "a fused kernel cannot be transformed: transformations apply before fusion",
    )
}

pub fn jvp_fused() -> Result<(Outs, Tangents)> {
    Err(fused_error())
}

pub fn transpose_fused() -> Result<Vec<Option<Tensor>>> {
    Err(fused_error())
}

pub fn batch_fused() -> Result<(Outs, Bdims)> {
    Err(fused_error())
}

pub fn partition_fused() -> Result<Vec<Local>> {
    Err(Error::new(
        ErrorKind::TransformError,
        "a fused kernel cannot be partitioned: sharded jit partitions before fusion",
    ))
}
