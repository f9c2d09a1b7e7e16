//! Everything that touches memory: dtypes, buffers, arrays and the CPU kernels.
//!
//! This crate never sees language values or primitives: callers (the runtime)
//! check shapes and dtypes first, so a kernel's preconditions are documented
//! and asserted, and a violation is a bug in the caller, not a user error.

pub mod array;
pub mod backend;
pub mod collectives;
pub mod complex;
pub mod cpu;
pub mod devices;
pub mod dtype;
pub mod gpu;
pub mod interrupt;
pub mod kernel;
pub mod limits;
pub mod memory;
#[cfg(feature = "mpi")]
mod mpi;
pub mod ops;
mod optable;
pub mod process;
pub mod sharding;

pub use array::{broadcast_shapes, strides_of, Array, Buffer, Flavour, Shape};
pub use backend::Backend;

/// Scalar reference functions that tests outside this crate check kernels
/// and random numbers against.
pub mod reference {
    pub use crate::cpu::{erf_inv_f32, erf_inv_f64, threefry_block};
}
pub use dtype::DType;

/// What a binary does first thing, before any thread starts (the process
/// environment is then safe to change): choose the BLAS kernels from the
/// CPU's features (`cpu::blas::core_type`).
pub fn prepare_process() {
    cpu::blas::choose_core_type();
}
/// The 16-bit float element types of `Buffer::BF16` and `Buffer::F16`.
pub use half::{bf16, f16};
pub use kernel::{Kernel, KernelInput, KernelOutput, MatmulKernel, MatmulOperand, ScalarOp};
pub use ops::{ArgReduceOp, BinaryOp, DotDims, ReduceOp, ScanOp, ScatterMode, UnaryOp};
