//! The backend interface: every operation a device must run, with its
//! contract. The CPU backend (`cpu::Cpu`) is the reference semantics; a GPU
//! backend implements the same trait and is tested against it. Callers
//! outside this crate reach kernels only through the backend of the device
//! their arrays live on (`backend::of`), never by naming `cpu`.
//!
//! 16-bit floats (bfloat16, float16) are stored as 16 bits and computed in
//! f32, as JAX computes them on CPUs: callers get a backend wrapped in
//! `Dispatch`, which widens 16-bit operands of every arithmetic operation
//! to f32 and rounds the result back (one rounding per operation; sums and
//! products accumulate in f32). The 8- and 16-bit integers compute in i32
//! the same way (wrapping back, as NumPy's narrow arithmetic wraps), and
//! complex numbers compute on the CPU whatever device holds them
//! (`complex.rs`). A backend itself therefore meets 16-bit
//! floats only in conversions and in operations that move elements
//! (`select`, `transpose`, `broadcast_in_dim`, `slice`, `rev`, `pad`,
//! `concatenate`, `gather`).
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
    /// `x % 0 == 0` (NumPy, `jnp.remainder`); negative powers are 0 except for bases 1 and -1; shifts
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

    /// `dot_general` of two operands of one 16-bit float dtype, summed in
    /// f32 and rounded once, where the backend has a library product for
    /// them (cuBLAS); `None` (the default): `Dispatch` widens the operands
    /// to f32 and rounds the f32 product, which is the same arithmetic.
    fn half_dot(&self, a: &Array, b: &Array, dims: &DotDims) -> Option<Array> {
        let _ = (a, b, dims);
        None
    }

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

    /// The 1-D discrete Fourier transform of every row along the last
    /// axis (`complex::fft`). Computed on the host by default.
    fn fft(&self, a: &Array, kind: crate::complex::FftKind, n: usize) -> Array {
        crate::complex::fft(a, kind, n)
    }

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
pub fn of<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Dispatch<'static> {
    // A mesh device's worker computes on its own (virtual) GPU device;
    // operands from elsewhere are copied to it.
    if crate::devices::on_device_worker() {
        if let Some(d) = crate::gpu::default_device() {
            return Dispatch(d);
        }
    }
    for a in arrays {
        if let Some(home) = a.home() {
            return Dispatch(crate::gpu::device(home));
        }
    }
    default()
}

/// The backend of operations with no array operand (`iota`, creation).
pub fn default() -> Dispatch<'static> {
    match crate::gpu::default_device() {
        Some(d) => Dispatch(d),
        None => Dispatch(&crate::cpu::Cpu),
    }
}

/// A backend as callers use it: 16-bit float operands of arithmetic are
/// computed in f32 on it and the results rounded back (see the module
/// docs); everything else goes straight through.
#[derive(Clone, Copy)]
pub struct Dispatch<'b>(pub &'b dyn Backend);

/// The narrow dtype among `arrays` (a 16-bit float or an 8/16-bit
/// integer), if one is: a backend hands arithmetic on those to `Dispatch`,
/// which computes in `DType::computed_as`.
pub fn narrow_of<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Option<DType> {
    arrays
        .into_iter()
        .map(Array::dtype)
        .find(|d| d.computed_as().is_some())
}

/// Whether any of `arrays` is complex (complex arithmetic runs on the CPU).
fn any_complex<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> bool {
    arrays.into_iter().any(|a| a.dtype() == DType::C64)
}

impl Dispatch<'_> {
    /// The backend that computes on `arrays`: the CPU for complex numbers
    /// (GPU kernels have no complex registers), else this one.
    fn computing<'a>(&self, arrays: impl IntoIterator<Item = &'a Array>) -> &dyn Backend {
        if any_complex(arrays) {
            &crate::cpu::Cpu
        } else {
            self.0
        }
    }

    /// `a` in the dtype it computes in (f32 for a 16-bit float, i32 for a
    /// narrow integer), else itself.
    fn widen(&self, a: &Array) -> Array {
        match a.dtype().computed_as() {
            Some(wide) => self.0.convert(a, wide),
            None => a.clone(),
        }
    }

    /// A wide result rounded (or wrapped) back to `half`; other dtypes
    /// (bool, indices) stay.
    fn narrow(&self, r: Array, half: DType) -> Array {
        if Some(r.dtype()) == half.computed_as() {
            self.0.convert(&r, half)
        } else {
            r
        }
    }

    fn widen_all(&self, inputs: &[Array]) -> Vec<Array> {
        inputs.iter().map(|a| self.widen(a)).collect()
    }
}

/// `k` reading its 16-bit inputs as the f32 arrays `Dispatch::widen` makes
/// of them (registers are f32 or f64 and convert what they load).
fn with_f32_inputs(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    for input in &mut k.inputs {
        if input.dtype.is_half() {
            input.dtype = DType::F32;
        }
    }
    k
}

impl Backend for Dispatch<'_> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn matmul_library(&self) -> String {
        self.0.matmul_library()
    }
    fn release_cached_buffers(&self) {
        self.0.release_cached_buffers()
    }
    fn unary(&self, op: UnaryOp, a: Array) -> Array {
        match narrow_of([&a]) {
            Some(h) => self.narrow(self.0.unary(op, self.widen(&a)), h),
            None => self.computing([&a]).unary(op, a),
        }
    }
    fn binary(&self, op: BinaryOp, a: Array, b: Array) -> Array {
        match narrow_of([&a, &b]) {
            Some(h) => {
                // Unsigned operands floor as they truncate, and i32's x / 0
                // (-1) wraps to the unsigned x // 0 (the all-ones maximum);
                // i32's floor division would adjust it for the sign.
                let op = match (op, h) {
                    (BinaryOp::FloorDiv, DType::U8 | DType::U16) => BinaryOp::Div,
                    _ => op,
                };
                self.narrow(self.0.binary(op, self.widen(&a), self.widen(&b)), h)
            }
            None => self.computing([&a, &b]).binary(op, a, b),
        }
    }
    fn select(&self, cond: &Array, a: &Array, b: &Array) -> Array {
        self.0.select(cond, a, b)
    }
    fn convert(&self, a: &Array, dtype: DType) -> Array {
        if !dtype.in_gpu_kernels() || !a.dtype().in_gpu_kernels() {
            return crate::cpu::Cpu.convert(a, dtype);
        }
        self.0.convert(a, dtype)
    }
    fn fft(&self, a: &Array, kind: crate::complex::FftKind, n: usize) -> Array {
        self.0.fft(a, kind, n)
    }
    fn reduce(&self, op: ReduceOp, a: &Array, axes: &[usize]) -> Array {
        match narrow_of([a]) {
            Some(h) => self.narrow(self.0.reduce(op, &self.widen(a), axes), h),
            None => self.computing([a]).reduce(op, a, axes),
        }
    }
    fn arg_reduce(&self, op: ArgReduceOp, a: &Array, axis: usize) -> Array {
        self.0.arg_reduce(op, &self.widen(a), axis)
    }
    fn scan(&self, op: ScanOp, a: &Array, axis: usize, reverse: bool) -> Array {
        match narrow_of([a]) {
            Some(h) => self.narrow(self.0.scan(op, &self.widen(a), axis, reverse), h),
            None => self.computing([a]).scan(op, a, axis, reverse),
        }
    }
    fn dot_general(&self, a: &Array, b: &Array, dims: &DotDims) -> Array {
        if a.dtype() == b.dtype() && a.dtype().is_half() {
            if let Some(y) = self.0.half_dot(a, b, dims) {
                return y;
            }
        }
        match narrow_of([a, b]) {
            Some(h) => self.narrow(self.0.dot_general(&self.widen(a), &self.widen(b), dims), h),
            None => self.computing([a, b]).dot_general(a, b, dims),
        }
    }
    fn transpose(&self, a: &Array, perm: &[usize]) -> Array {
        self.0.transpose(a, perm)
    }
    fn broadcast_in_dim(&self, a: &Array, shape: &[usize], dims: &[usize]) -> Array {
        self.0.broadcast_in_dim(a, shape, dims)
    }
    fn slice(&self, a: &Array, start: &[usize], limit: &[usize], stride: &[usize]) -> Array {
        self.0.slice(a, start, limit, stride)
    }
    fn rev(&self, a: &Array, axes: &[usize]) -> Array {
        self.0.rev(a, axes)
    }
    fn pad(
        &self,
        a: &Array,
        value: &Array,
        lo: &[usize],
        hi: &[usize],
        interior: &[usize],
    ) -> Array {
        self.0.pad(a, value, lo, hi, interior)
    }
    fn concatenate(&self, arrays: &[Array], axis: usize) -> Array {
        self.0.concatenate(arrays, axis)
    }
    fn gather(&self, a: &Array, indices: &Array, axis: usize) -> Array {
        self.0.gather(a, indices, axis)
    }
    fn scatter(
        &self,
        a: &Array,
        indices: &Array,
        updates: &Array,
        axis: usize,
        mode: ScatterMode,
    ) -> Array {
        match narrow_of([a, updates]) {
            Some(h) => self.narrow(
                self.0
                    .scatter(&self.widen(a), indices, &self.widen(updates), axis, mode),
                h,
            ),
            None => self.0.scatter(a, indices, updates, axis, mode),
        }
    }
    fn iota(&self, dtype: DType, shape: &[usize], dim: usize) -> Array {
        if let Some(wide) = dtype.computed_as() {
            self.narrow(self.0.iota(wide, shape, dim), dtype)
        } else {
            self.0.iota(dtype, shape, dim)
        }
    }
    fn sort(&self, a: &Array, axis: usize) -> Array {
        match narrow_of([a]) {
            Some(h) => self.narrow(self.0.sort(&self.widen(a), axis), h),
            None => self.0.sort(a, axis),
        }
    }
    fn argsort(&self, a: &Array, axis: usize) -> Array {
        self.0.argsort(&self.widen(a), axis)
    }
    fn threefry2x32(&self, k0: &Array, k1: &Array, x0: &Array, x1: &Array) -> (Array, Array) {
        self.0.threefry2x32(k0, k1, x0, x1)
    }
    fn run_kernel(&self, k: &Kernel, inputs: Vec<Array>) -> Vec<Array> {
        if narrow_of(&inputs).is_none() {
            return self.0.run_kernel(k, inputs);
        }
        self.0
            .run_kernel(&with_f32_inputs(k), self.widen_all(&inputs))
    }
    fn matmul_kernel(&self, k: &MatmulKernel, inputs: Vec<Array>) -> Vec<Array> {
        if narrow_of(&inputs).is_none() {
            return self.0.matmul_kernel(k, inputs);
        }
        let mut k = k.clone();
        k.epilogue = with_f32_inputs(&k.epilogue);
        for operand in [&mut k.lhs, &mut k.rhs] {
            if operand.dtype.is_half() {
                operand.dtype = DType::F32;
            }
        }
        self.0.matmul_kernel(&k, self.widen_all(&inputs))
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
