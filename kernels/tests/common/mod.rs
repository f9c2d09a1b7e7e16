//! Shared helpers for the kernel tests: multi-index arithmetic and test data.
#![allow(dead_code)]

use arr_kernels::Backend;
use arr_kernels::{Array, Buffer, DType};

/// Multi-index of flat position `i` in `shape` (row-major).
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// Flat position of a multi-index in `shape` (row-major).
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

pub fn size(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Deterministic pseudo-random numbers (a 64-bit LCG, high bits).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.next_u32() as f64 / 4294967296.0
    }
}

pub fn f32_array(shape: &[usize], seed: u64) -> Array {
    let mut r = Lcg::new(seed);
    Array::new(
        shape,
        Buffer::F32(
            (0..size(shape))
                .map(|_| (r.uniform() * 20.0 - 10.0) as f32)
                .collect(),
        ),
    )
}

pub fn f64_array(shape: &[usize], seed: u64) -> Array {
    let mut r = Lcg::new(seed);
    Array::new(
        shape,
        Buffer::F64(
            (0..size(shape))
                .map(|_| r.uniform() * 20.0 - 10.0)
                .collect(),
        ),
    )
}

pub fn i32_array(shape: &[usize], seed: u64, lo: i32, hi: i32) -> Array {
    let mut r = Lcg::new(seed);
    let span = (hi as i64 - lo as i64 + 1) as u64;
    Array::new(
        shape,
        Buffer::I32(
            (0..size(shape))
                .map(|_| (lo as i64 + (r.next_u32() as u64 % span) as i64) as i32)
                .collect(),
        ),
    )
}

pub fn i64_array(shape: &[usize], seed: u64, lo: i64, hi: i64) -> Array {
    let mut r = Lcg::new(seed);
    let span = (hi - lo + 1) as u64;
    Array::new(
        shape,
        Buffer::I64(
            (0..size(shape))
                .map(|_| lo + (r.next_u32() as u64 % span) as i64)
                .collect(),
        ),
    )
}

pub fn u32_array(shape: &[usize], seed: u64, hi: u32) -> Array {
    let mut r = Lcg::new(seed);
    Array::new(
        shape,
        Buffer::U32((0..size(shape)).map(|_| r.next_u32() % (hi + 1)).collect()),
    )
}

pub fn bool_array(shape: &[usize], seed: u64) -> Array {
    let mut r = Lcg::new(seed);
    Array::new(
        shape,
        Buffer::Bool((0..size(shape)).map(|_| r.next_u32() & 1 == 1).collect()),
    )
}

/// An array of `dtype` with small values (exact in every dtype).
pub fn small_array(dtype: DType, shape: &[usize], seed: u64) -> Array {
    match dtype {
        DType::Bool => bool_array(shape, seed),
        DType::I32 => i32_array(shape, seed, -9, 9),
        DType::I64 => i64_array(shape, seed, -9, 9),
        DType::U32 => u32_array(shape, seed, 9),
        DType::U8 | DType::U16 => arr_kernels::cpu::Cpu.convert(&u32_array(shape, seed, 9), dtype),
        d => arr_kernels::cpu::Cpu.convert(&i32_array(shape, seed, -9, 9), d),
    }
}

pub fn f32s(a: &Array) -> Vec<f32> {
    match &*a.buffer().unwrap() {
        Buffer::F32(v) => v.clone(),
        b => panic!("expected f32, got {}", b.dtype()),
    }
}

pub fn i32s(a: &Array) -> Vec<i32> {
    match &*a.buffer().unwrap() {
        Buffer::I32(v) => v.clone(),
        b => panic!("expected i32, got {}", b.dtype()),
    }
}

pub fn bools(a: &Array) -> Vec<bool> {
    match &*a.buffer().unwrap() {
        Buffer::Bool(v) => v.clone(),
        b => panic!("expected bool, got {}", b.dtype()),
    }
}

/// Element `i` as an exact value for comparisons across dtypes (NaN-aware equality via bits).
pub fn same(a: &Array, b: &Array) -> bool {
    a.shape() == b.shape()
        && a.dtype() == b.dtype()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get_f64(i).unwrap(), b.get_f64(i).unwrap());
            x == y || (x.is_nan() && y.is_nan())
        })
}

/// Every element's bits (as f64), for comparisons bit for bit.
pub fn bits(a: &Array) -> Vec<u64> {
    (0..a.len())
        .map(|i| a.get_f64(i).unwrap().to_bits())
        .collect()
}

/// Copy an array so its buffer is unshared (exercises in-place reuse).
pub fn fresh(a: &Array) -> Array {
    Array::new(a.shape(), (*a.buffer().unwrap()).clone())
}

/// Values whose 16-bit roundings are easy to get wrong, as f64, with their
/// correctly rounded bfloat16 and float16 bits: ties to even, values just
/// above a tie that a detour through f32 turns into a tie, overflow,
/// subnormals, signed zero, infinities and NaN.
pub const HALF_CASES: &[(f64, u16, u16)] = &[
    (1.0, 0x3f80, 0x3c00),
    (-2.5, 0xc020, 0xc100),
    (1.0 + 1.0 / 256.0, 0x3f80, 0x3c04), // bf16 tie: to even
    (1.0 + 3.0 / 256.0, 0x3f82, 0x3c0c), // bf16 tie: to even (up)
    (
        1.0 + 1.0 / 256.0 + 1.0 / (1u64 << 40) as f64,
        0x3f81,
        0x3c04,
    ), // just above a bf16 tie
    (1.0 + 1.0 / 2048.0, 0x3f80, 0x3c00), // f16 tie: to even
    (
        1.0 + 1.0 / 2048.0 + 1.0 / (1u64 << 40) as f64,
        0x3f80,
        0x3c01,
    ), // just above an f16 tie
    (65504.0, 0x4780, 0x7bff),           // largest float16
    (65520.0, 0x4780, 0x7c00),           // float16 overflows to inf
    (1e-7, 0x33d7, 0x0002),              // a float16 subnormal
    (2.9802322387695312e-8, 0x3300, 0x0000), // half the least subnormal: to even (0)
    (-0.0, 0x8000, 0x8000),
    (f64::INFINITY, 0x7f80, 0x7c00),
    (f64::NEG_INFINITY, 0xff80, 0xfc00),
    (3.4e38, 0x7f80, 0x7c00), // rounds past bfloat16's largest
    (0.1, 0x3dcd, 0x2e66),
];

/// A kernel that reads its reductions back along the row (`ScalarOp::Reduced`):
/// softmax over the last axis; outputs (softmax, row max, row sum).
pub fn softmax_kernel(dtype: DType, shape: &[usize]) -> arr_kernels::Kernel {
    use arr_kernels::{BinaryOp, KernelInput, KernelOutput, ReduceOp, ScalarOp::*, UnaryOp};
    arr_kernels::Kernel {
        shape: shape.to_vec(),
        dtype,
        inputs: vec![KernelInput::broadcast(dtype, shape, shape)],
        body: vec![
            Load(0),
            Reduced(1),
            Binary(BinaryOp::Sub, 0, 1),
            Unary(UnaryOp::Exp, 2),
            Reduced(2),
            Binary(BinaryOp::Div, 3, 4),
        ],
        outputs: vec![
            KernelOutput {
                reg: 5,
                reduce: None,
            },
            KernelOutput {
                reg: 0,
                reduce: Some(ReduceOp::Max),
            },
            KernelOutput {
                reg: 3,
                reduce: Some(ReduceOp::Sum),
            },
        ],
        reduce_axes: 1,
    }
}
