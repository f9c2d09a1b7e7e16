//! The backend interface: every operation a device must run, with its
//! contract. The CPU backend (`cpu::Cpu`) is the reference semantics; a GPU
//! backend implements the same trait and is tested against it. Callers
//! outside this crate reach kernels only through the backend of the device
//! their arrays live on (`backend::of`), never by naming `cpu`.
//!
//! Preconditions (equal dtypes, valid axes, broadcast-compatible shapes,
//! ops defined on the operands' dtype by the op table) are checked by the
//! caller: the shape rules. A backend may overwrite the buffer of an input
//! it takes by value when no other array holds it.

use crate::kernel::{Kernel, MatmulKernel};
use crate::{ArgReduceOp, Array, BinaryOp, DType, DotDims, ReduceOp, ScanOp, ScatterMode, UnaryOp};

pub trait Backend: Send + Sync {
    /// The device kind, as users name it (`cpu`).
    fn name(&self) -> &'static str;

    /// The library large matrix products run on (for benchmark headers).
    fn matmul_library(&self) -> String;

    /// Give back the freed buffers the allocator keeps for reuse.
    fn release_cached_buffers(&self);

    /// Elementwise `op(a)`: the row of `op` in the op table. Dtype: `a`'s,
    /// or bool for predicates.
    fn unary(&self, op: UnaryOp, a: Array) -> Array;

    /// Elementwise `op(a, b)` with NumPy broadcasting; `a` and `b` share a
    /// dtype, and the result has it too, or bool for comparisons.
    ///
    /// Integer conventions (never a panic): add/sub/mul/pow wrap; `Div`
    /// truncates and `x / 0` is -1 (signed) or `u32::MAX`; `FloorDiv` floors
    /// with the same `x // 0`; `Mod` takes the divisor's sign and
    /// `x % 0 == x`; negative powers are 0 except for bases 1 and -1; shifts
    /// by a negative amount or at least the bit width give 0 (-1 for an
    /// arithmetic right shift of a negative). Floats follow NumPy
    /// (`Mod`/`FloorDiv` via `npy_divmod`, NaN-propagating `Max`/`Min`).
    fn binary(&self, op: BinaryOp, a: Array, b: Array) -> Array;

    /// `where(cond, a, b)` with broadcasting of all three; `cond` is bool,
    /// `a` and `b` share a dtype.
    fn select(&self, cond: &Array, a: &Array, b: &Array) -> Array;

    /// Convert element type (float to int truncates toward zero and
    /// saturates, NaN becomes 0; integers wrap; bool is 0/1).
    fn convert(&self, a: &Array, dtype: DType) -> Array;

    /// Reduce over `axes` (sorted, unique, in range), removing them from the
    /// shape. Empty reductions give the identity (0, 1, -inf/MIN, +inf/MAX,
    /// true, false). On bool, Sum/Max act as Any and Prod/Min as All.
    fn reduce(&self, op: ReduceOp, a: &Array, axes: &[usize]) -> Array;

    /// Index (i32) of the first max/min along `axis` (removed from the
    /// shape). The first NaN counts as both, as NumPy; an empty axis gives 0.
    fn arg_reduce(&self, op: ArgReduceOp, a: &Array, axis: usize) -> Array;

    /// Inclusive scan along `axis`; `reverse` scans from the end.
    fn scan(&self, op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array;

    /// Generalised dot product. Result axes: batch, lhs free, rhs free.
    fn dot_general(&self, a: &Array, b: &Array, dims: &DotDims) -> Array;

    /// Permute axes: result axis `i` is input axis `perm[i]`.
    fn transpose(&self, a: &Array, perm: &[usize]) -> Array;

    /// Broadcast `a` into `shape`; input axis `i` becomes output axis
    /// `dims[i]` (its size equals the output's or is 1).
    fn broadcast_in_dim(&self, a: &Array, shape: &[usize], dims: &[usize]) -> Array;

    /// Strided slice: `start[i] <= limit[i]`, `stride[i] >= 1`, output size
    /// `ceil((limit - start) / stride)` per axis.
    fn slice(&self, a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array;

    /// Reverse the order of elements along each of `axes`.
    fn rev(&self, a: &Array, axes: &[usize]) -> Array;

    /// Pad with `value` (a 0-d array of `a`'s dtype): `lo`/`hi` elements
    /// before and after each axis and `interior` between elements.
    fn pad(
        &self,
        a: &Array,
        value: &Array,
        lo: &[usize],
        hi: &[usize],
        interior: &[usize],
    ) -> Array;

    /// Join arrays of one dtype along `axis`; other axes equal.
    fn concatenate(&self, arrays: &[Array], axis: usize) -> Array;

    /// `take(a, indices, axis)`: shape `a.shape[:axis] + indices.shape +
    /// a.shape[axis+1:]`. Indices are i32 or i64, non-negative; out-of-range
    /// ones are clamped; taking from an empty axis gives zeros.
    fn gather(&self, a: &Array, indices: &Array, axis: usize) -> Array;

    /// The transpose of `gather`: a copy of `a` with each slice of `updates`
    /// set into (or added to) `a` at its index along `axis`. With `Set` and
    /// repeated indices the last update wins; out-of-range ones are dropped.
    fn scatter(
        &self,
        a: &Array,
        indices: &Array,
        updates: &Array,
        axis: usize,
        mode: ScatterMode,
    ) -> Array;

    /// `0, 1, 2, ...` along `dim`, broadcast over the other axes of `shape`.
    fn iota(&self, dtype: DType, shape: &[usize], dim: usize) -> Array;

    /// Stable ascending sort along `axis` (NaNs last).
    fn sort(&self, a: &Array, axis: usize) -> Array;

    /// Indices (i32) that stably sort `a` along `axis`.
    fn argsort(&self, a: &Array, axis: usize) -> Array;

    /// The Threefry-2x32 block cipher (20 rounds, as JAX's), elementwise
    /// over u32 arrays of one shape; single-element inputs are used at every
    /// position.
    fn threefry2x32(&self, k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array);

    /// Run a fused kernel on its inputs (in order), returning its outputs.
    fn run_kernel(&self, k: &Kernel, inputs: Vec<Array>) -> Vec<Array>;

    /// A matrix product and its epilogue on `lhs`, `rhs`, then the
    /// epilogue's other inputs; each output equals `run_kernel` of the
    /// epilogue on `dot_general`'s result, bit for bit.
    fn matmul_kernel(&self, k: &MatmulKernel, inputs: Vec<Array>) -> Vec<Array>;
}

/// The backend that runs an operation on these operands: on a mesh
/// device's worker, the GPU device it runs on; else that of the GPU device
/// the first of them that lives on one lives on, else the default device's (the CPU unless `set_default_device` chose a GPU). Host arrays
/// go to the device (the copy is kept with them), as JAX's uncommitted
/// arrays follow their computation.
pub fn of<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> &'static dyn Backend {
    // A mesh device's worker computes on its own (virtual) GPU device;
    // operands from elsewhere are copied to it.
    if crate::devices::on_device_worker() {
        if let Some(d) = crate::gpu::default_device() {
            return d;
        }
    }
    for a in arrays {
        if let Some(home) = a.home() {
            return crate::gpu::device(home);
        }
    }
    default()
}

/// The backend of operations with no array operand (`iota`, creation).
pub fn default() -> &'static dyn Backend {
    match crate::gpu::default_device() {
        Some(d) => d,
        None => &crate::cpu::Cpu,
    }
}

/// The name of the device an array lives on: `cpu`, `opencl:0`, `cuda:1`.
pub fn device_name(a: &Array) -> String {
    match a.home() {
        Some(h) => crate::gpu::device(h).label(),
        None => "cpu".into(),
    }
}

/// An error naming both devices when operands live on two different GPU
/// devices (a single element may come from anywhere, as a scalar does).
pub fn check_devices<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<(), String> {
    // Inside a mesh program, values from outside it (captured constants)
    // move to the worker's device by themselves, as pmap's do in JAX.
    if crate::devices::on_device_worker() {
        return Ok(());
    }
    let mut first: Option<&Array> = None;
    for a in arrays {
        if a.home().is_none() || a.len() == 1 {
            continue;
        }
        match first {
            None => first = Some(a),
            Some(f) if f.home() != a.home() => {
                return Err(format!(
                    "operands live on different devices: {} and {}; move one with device_put",
                    device_name(f),
                    device_name(a)
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
