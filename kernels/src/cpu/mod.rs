//! The CPU backend: eager one-op kernels, multi-threaded above a size
//! threshold. It is the reference semantics of every operation of the
//! `Backend` trait (`crate::backend`, where the contract is written).

pub mod blas;
pub(crate) mod elem;
mod elementwise;
mod fused;
mod index;
mod linalg;
mod random;
mod reduce;
pub(crate) mod scalar;
mod shape;
mod sort;
pub mod vmath;

pub use random::threefry_block;
pub(crate) use scalar::Arith;
pub use scalar::{erf_inv_f32, erf_inv_f64};
pub use shape::assemble_blocks;

use crate::backend::Backend;
use crate::kernel::{Kernel, MatmulKernel};
use crate::{ArgReduceOp, Array, BinaryOp, DType, DotDims, ReduceOp, ScanOp, ScatterMode, UnaryOp};

/// The CPU device kind; its methods run on all cores (device workers run
/// them on their own thread).
pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn matmul_library(&self) -> String {
        blas::backend_name()
    }
    fn release_cached_buffers(&self) {
        elem::release_pooled_buffers()
    }
    fn unary(&self, op: UnaryOp, a: Array) -> Array {
        elementwise::unary(op, a)
    }
    fn binary(&self, op: BinaryOp, a: Array, b: Array) -> Array {
        elementwise::binary(op, a, b)
    }
    fn select(&self, cond: &Array, a: &Array, b: &Array) -> Array {
        elementwise::select(cond, a, b)
    }
    fn convert(&self, a: &Array, dtype: DType) -> Array {
        elementwise::convert(a, dtype)
    }
    fn reduce(&self, op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
        reduce::reduce(op, a, axes)
    }
    fn arg_reduce(&self, op: ArgReduceOp, a: &Array, axis: usize) -> Array {
        reduce::arg_reduce(op, a, axis)
    }
    fn scan(&self, op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
        reduce::scan(op, a, axis, reverse)
    }
    fn dot_general(&self, a: &Array, b: &Array, dims: &DotDims) -> Array {
        linalg::dot_general(a, b, dims)
    }
    fn run_kernel(&self, k: &Kernel, inputs: Vec<Array>) -> Vec<Array> {
        fused::run_kernel(k, inputs)
    }
    fn matmul_kernel(&self, k: &MatmulKernel, inputs: Vec<Array>) -> Vec<Array> {
        linalg::matmul_kernel(k, inputs)
    }
    fn transpose(&self, a: &Array, perm: &[usize]) -> Array {
        shape::transpose(a, perm)
    }
    fn broadcast_in_dim(&self, a: &Array, shape: &[usize], dims: &[usize]) -> Array {
        shape::broadcast_in_dim(a, shape, dims)
    }
    fn slice(&self, a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array {
        shape::slice(a, start, limit, stride)
    }
    fn rev(&self, a: &Array, axes: &[usize]) -> Array {
        shape::rev(a, axes)
    }
    fn pad(
        &self,
        a: &Array,
        value: &Array,
        lo: &[usize],
        hi: &[usize],
        interior: &[usize],
    ) -> Array {
        shape::pad(a, value, lo, hi, interior)
    }
    fn concatenate(&self, arrays: &[Array], axis: usize) -> Array {
        shape::concatenate(arrays, axis)
    }
    fn gather(&self, a: &Array, indices: &Array, axis: usize) -> Array {
        index::gather(a, indices, axis)
    }
    fn scatter(
        &self,
        a: &Array,
        indices: &Array,
        updates: &Array,
        axis: usize,
        mode: ScatterMode,
    ) -> Array {
        index::scatter(a, indices, updates, axis, mode)
    }
    fn iota(&self, dtype: DType, shape: &[usize], dim: usize) -> Array {
        shape::iota(dtype, shape, dim)
    }
    fn sort(&self, a: &Array, axis: usize) -> Array {
        sort::sort(a, axis)
    }
    fn argsort(&self, a: &Array, axis: usize) -> Array {
        sort::argsort(a, axis)
    }
    fn threefry2x32(&self, k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array) {
        random::threefry2x32(k0, k1, x0, x1)
    }
}
