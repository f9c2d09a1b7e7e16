//! The CPU backend: eager one-op kernels, multi-threaded above a size threshold.
//!
//! This is the reference semantics of every operation. Preconditions (equal
//! dtypes, valid axes, broadcast-compatible shapes) are checked by the caller.

mod blas;
pub(crate) mod elem;
mod elementwise;
mod fused;
mod index;
mod linalg;
mod random;
mod reduce;
mod scalar;
mod shape;
mod sort;
pub mod vmath;

pub use blas::backend_name as gemm_backend;
pub use elem::release_pooled_buffers;
pub use fused::run_kernel;
pub use random::threefry_block;
pub(crate) use scalar::Arith;
pub use scalar::{erf_inv_f32, erf_inv_f64};
pub use shape::assemble_blocks;

use crate::{ArgReduceOp, Array, BinaryOp, DType, DotDims, ReduceOp, ScanOp, ScatterMode, UnaryOp};

/// Elementwise `op(a)`. Dtype: same as `a`, bool for predicates.
/// Float-only ops (exp, sin, ...) are only called on float arrays.
/// May reuse `a`'s buffer when it is not shared.
pub fn unary(op: UnaryOp, a: Array) -> Array {
    elementwise::unary(op, a)
}

/// Elementwise `op(a, b)` with NumPy broadcasting. `a` and `b` have the same
/// dtype; the result has it too, or bool for comparisons. May reuse an input buffer.
///
/// Integer conventions (never a panic): add/sub/mul/pow wrap; `Div` truncates
/// and `x / 0` is -1 (signed) or `u32::MAX`; `FloorDiv` floors with the same
/// `x // 0`; `Mod` takes the divisor's sign and `x % 0 == x`; negative powers
/// are 0 except for bases 1 and -1; shifts by a negative amount or at least
/// the bit width give 0 (-1 for an arithmetic right shift of a negative).
/// Floats follow NumPy (`Mod`/`FloorDiv` via `npy_divmod`, NaN-propagating
/// `Max`/`Min`). On bool, Add/Max/Or are `or`, Mul/Min/And are `and`, Sub/Xor `xor`.
pub fn binary(op: BinaryOp, a: Array, b: Array) -> Array {
    elementwise::binary(op, a, b)
}

/// `where(cond, a, b)` with broadcasting of all three; `cond` is bool, `a` and `b` share a dtype.
pub fn select(cond: &Array, a: &Array, b: &Array) -> Array {
    elementwise::select(cond, a, b)
}

/// Convert element type (float to int truncates toward zero, as NumPy's astype).
pub fn convert(a: &Array, dtype: DType) -> Array {
    elementwise::convert(a, dtype)
}

/// Reduce over `axes` (sorted, unique, in range), removing them from the shape.
/// Empty reductions give the identity (0, 1, -inf/MIN, +inf/MAX, true, false).
/// On bool, Sum/Max act as Any and Prod/Min as All; All/Any on numbers test `!= 0`.
pub fn reduce(op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
    reduce::reduce(op, a, axes)
}

/// Index of the first max/min along `axis` (removed from the shape); result i32.
/// The first NaN counts as both (as NumPy); an empty axis gives index 0.
pub fn arg_reduce(op: ArgReduceOp, a: &Array, axis: usize) -> Array {
    reduce::arg_reduce(op, a, axis)
}

/// Inclusive scan along `axis`; `reverse` scans from the end.
pub fn scan(op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
    reduce::scan(op, a, axis, reverse)
}

/// Generalised dot product. Result axes: batch, lhs free, rhs free.
pub fn dot_general(a: &Array, b: &Array, dims: &DotDims) -> Array {
    linalg::dot_general(a, b, dims)
}

/// A matrix product and its elementwise epilogue (`crate::kernel::MatmulKernel`)
/// on `lhs`, `rhs`, then the epilogue's other inputs. Each output equals
/// `run_kernel` of the epilogue on `dot_general`'s result, bit for bit.
/// An epilogue input held nowhere else may be overwritten by an output.
pub fn matmul_kernel(k: &crate::kernel::MatmulKernel, inputs: Vec<Array>) -> Vec<Array> {
    linalg::matmul_kernel(k, inputs)
}

/// Permute axes: result axis `i` is input axis `perm[i]`.
pub fn transpose(a: &Array, perm: &[usize]) -> Array {
    shape::transpose(a, perm)
}

/// Broadcast `a` into `shape`; input axis `i` becomes output axis `dims[i]`
/// (its size equals the output's or is 1).
pub fn broadcast_in_dim(a: &Array, shape: &[usize], dims: &[usize]) -> Array {
    shape::broadcast_in_dim(a, shape, dims)
}

/// Strided slice: `start[i] <= limit[i]`, `stride[i] >= 1`, output size
/// `ceil((limit - start) / stride)` per axis.
pub fn slice(a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array {
    shape::slice(a, start, limit, stride)
}

/// Reverse the order of elements along each of `axes`.
pub fn rev(a: &Array, axes: &[usize]) -> Array {
    shape::rev(a, axes)
}

/// Pad with `value` (a 0-d array of `a`'s dtype): `lo`/`hi` elements before and
/// after each axis and `interior` between elements (the transpose of a strided slice).
pub fn pad(a: &Array, value: &Array, lo: &[usize], hi: &[usize], interior: &[usize]) -> Array {
    shape::pad(a, value, lo, hi, interior)
}

/// Join arrays of one dtype along `axis`; other axes equal.
pub fn concatenate(arrays: &[Array], axis: usize) -> Array {
    shape::concatenate(arrays, axis)
}

/// `take(a, indices, axis)`: result shape `a.shape[:axis] + indices.shape + a.shape[axis+1:]`.
/// Indices are i32 or i64, already non-negative; out-of-range ones are clamped.
/// Taking from an empty axis gives zeros.
pub fn gather(a: &Array, indices: &Array, axis: usize) -> Array {
    index::gather(a, indices, axis)
}

/// The transpose of `gather`: a copy of `a` where, for every index position,
/// the slice `updates[..., j, ...]` is set into (or added to) `a` at `indices[j]`
/// along `axis`. `updates.shape == a.shape[:axis] + indices.shape + a.shape[axis+1:]`.
/// With `Set` and repeated indices the last update wins. Out-of-range indices are dropped.
pub fn scatter(
    a: &Array,
    indices: &Array,
    updates: &Array,
    axis: usize,
    mode: ScatterMode,
) -> Array {
    index::scatter(a, indices, updates, axis, mode)
}

/// `0, 1, 2, ...` along `dim`, broadcast over the other axes of `shape`.
pub fn iota(dtype: DType, shape: &[usize], dim: usize) -> Array {
    shape::iota(dtype, shape, dim)
}

/// Stable ascending sort along `axis` (NaNs last).
pub fn sort(a: &Array, axis: usize) -> Array {
    sort::sort(a, axis)
}

/// Indices (i32) that stably sort `a` along `axis`.
pub fn argsort(a: &Array, axis: usize) -> Array {
    sort::argsort(a, axis)
}

/// The Threefry-2x32 block cipher (20 rounds, as JAX's `threefry2x32`),
/// elementwise over u32 arrays of one shape: key `(k0, k1)`, counter `(x0, x1)`.
/// Single-element inputs are also accepted and used at every position.
pub fn threefry2x32(k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array) {
    random::threefry2x32(k0, k1, x0, x1)
}
