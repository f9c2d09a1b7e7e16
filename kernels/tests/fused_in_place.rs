//! Fused kernels write an output into an input's buffer when nothing else
//! holds it (a dead or donated value): the results equal those computed
//! into fresh buffers bit for bit, on random shapes (small and blocked over
//! all cores), with broadcast inputs (never reused), several outputs, and
//! reductions beside the stores; a shared input is never changed.

mod common;

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{BinaryOp, DType, Kernel, KernelInput, KernelOutput, ScalarOp, UnaryOp};
use common::{bits, f32_array, f64_array, fresh};
use proptest::prelude::*;

/// `(x * b + y, tanh(x) - y)` over `shape`, with `b` broadcast along the
/// last axis, and with `reduce` the row sums of the first beside it.
fn kernel(dtype: DType, shape: &[usize], reduce: bool) -> Kernel {
    let full = KernelInput::broadcast(dtype, shape, shape);
    let row = KernelInput::broadcast(dtype, &shape[shape.len() - 1..], shape);
    let mut outputs = vec![
        KernelOutput {
            reg: 4,
            reduce: None,
        },
        KernelOutput {
            reg: 6,
            reduce: None,
        },
    ];
    if reduce {
        outputs.push(KernelOutput {
            reg: 4,
            reduce: Some(arr_kernels::ReduceOp::Sum),
        });
    }
    Kernel {
        shape: shape.to_vec(),
        dtype,
        inputs: vec![full.clone(), row, full],
        body: vec![
            ScalarOp::Load(0),
            ScalarOp::Load(1),
            ScalarOp::Load(2),
            ScalarOp::Binary(BinaryOp::Mul, 0, 1),
            ScalarOp::Binary(BinaryOp::Add, 3, 2),
            ScalarOp::Unary(UnaryOp::Tanh, 0),
            ScalarOp::Binary(BinaryOp::Sub, 5, 2),
        ],
        outputs,
        reduce_axes: usize::from(reduce),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn outputs_in_input_buffers_equal_outputs_in_fresh_ones(
        f64_ in any::<bool>(),
        rows in 1usize..300,
        cols in 1usize..700,
        reduce in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let make = |shape: &[usize], s: u64| {
            if f64_ { f64_array(shape, s) } else { f32_array(shape, s) }
        };
        let shape = [rows, cols];
        let k = kernel(dtype, &shape, reduce);
        let (x, b, y) = (make(&shape, seed), make(&[cols], seed + 1), make(&shape, seed + 2));
        let keep = (bits(&x), bits(&y));
        // Shared inputs (the caller keeps x, b, y): fresh outputs.
        let want = cpu::Cpu.run_kernel(&k, vec![x.clone(), b.clone(), y.clone()]);
        prop_assert_eq!((bits(&x), bits(&y)), keep.clone());
        // Unshared inputs: x and y become the two stores, b is broadcast.
        let (ux, uy) = (fresh(&x), fresh(&y));
        let (ax, ay) = (ux.buffer_address().unwrap(), uy.buffer_address().unwrap());
        let got = cpu::Cpu.run_kernel(&k, vec![ux, fresh(&b), uy]);
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g.shape(), w.shape());
            prop_assert_eq!(bits(g), bits(w));
        }
        prop_assert_eq!(got[0].buffer_address().unwrap(), ax);
        prop_assert_eq!(got[1].buffer_address().unwrap(), ay);
    }
}
