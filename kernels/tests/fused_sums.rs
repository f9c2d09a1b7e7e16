//! A sum's last binary operation is folded as it is computed (the CPU
//! executor never stores that register): the sums equal, bit for bit, the
//! same kernel's sums over the stored register, for short and long rows,
//! one row and many, float and comparison operations.

mod common;

use arr_kernels::cpu::Cpu;
use arr_kernels::{
    Backend, BinaryOp, DType, Kernel, KernelInput, KernelOutput, ReduceOp, ScalarOp,
};
use common::{bits, f32_array, f64_array};

/// `sum(op(x, y))` over the last axis; with `store`, the register of
/// `op(x, y)` is also an output, so it must be computed and kept.
fn kernel(dtype: DType, shape: &[usize], op: BinaryOp, store: bool) -> Kernel {
    use ScalarOp::*;
    let mut outputs = vec![KernelOutput {
        reg: 2,
        reduce: Some(ReduceOp::Sum),
    }];
    if store {
        outputs.push(KernelOutput {
            reg: 2,
            reduce: None,
        });
    }
    Kernel {
        shape: shape.to_vec(),
        dtype,
        inputs: vec![KernelInput::broadcast(dtype, shape, shape); 2],
        body: vec![Load(0), Load(1), Binary(op, 0, 1)],
        outputs,
        reduce_axes: 1,
    }
}

#[test]
fn folding_a_sums_last_operation_keeps_its_bits() {
    for dtype in [DType::F32, DType::F64] {
        for shape in [
            vec![1, 1],
            vec![3, 31],
            vec![5, 1000],
            vec![2, 1025],
            vec![1, 100_003],
            vec![3000, 64],
        ] {
            let input = |seed| match dtype {
                DType::F32 => f32_array(&shape, seed),
                _ => f64_array(&shape, seed),
            };
            let (x, y) = (input(1), input(2));
            for op in [BinaryOp::Mul, BinaryOp::Sub, BinaryOp::Max, BinaryOp::Lt] {
                let direct = Cpu.run_kernel(
                    &kernel(dtype, &shape, op, false),
                    vec![x.clone(), y.clone()],
                );
                let stored =
                    Cpu.run_kernel(&kernel(dtype, &shape, op, true), vec![x.clone(), y.clone()]);
                assert_eq!(direct.len(), 1);
                assert_eq!(
                    bits(&direct[0]),
                    bits(&stored[0]),
                    "{dtype:?} {shape:?} {op:?}"
                );
                // The sum is the sum: against an f64 sum of the stored values.
                let (rows, n) = (shape[0], shape[1]);
                for r in 0..rows {
                    let want: f64 = (0..n).map(|i| stored[1].get_f64(r * n + i).unwrap()).sum();
                    let got = direct[0].get_f64(r).unwrap();
                    let tol = 1e-5
                        * (1.0
                            + (0..n)
                                .map(|i| stored[1].get_f64(r * n + i).unwrap().abs())
                                .sum::<f64>());
                    assert!(
                        (got - want).abs() <= tol,
                        "{dtype:?} {shape:?} {op:?} row {r}: {got} vs {want}"
                    );
                }
            }
        }
    }
}
