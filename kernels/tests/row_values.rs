//! Kernels that read a reduction back along its row (`ScalarOp::Reduced`):
//! the CPU executor's row-at-a-time run equals `Kernel::in_phases` (the
//! plain kernels other backends run) bit for bit, for softmax and layer
//! norm over short rows, rows of several blocks, one row and many.

mod common;

use arr_kernels::cpu::Cpu;
use arr_kernels::{
    Backend, BinaryOp, DType, Kernel, KernelInput, KernelOutput, ReduceOp, ScalarOp, UnaryOp,
};
use common::{bits, f32_array, f64_array, softmax_kernel as softmax};

/// Layer norm over the last axis, with a per-row value (`1/sqrt(var + eps)`)
/// as an output, as the backward pass keeps it.
fn layer_norm(dtype: DType, shape: &[usize]) -> Kernel {
    use ScalarOp::*;
    let n = shape[shape.len() - 1] as f64;
    Kernel {
        shape: shape.to_vec(),
        dtype,
        inputs: vec![KernelInput::broadcast(dtype, shape, shape)],
        body: vec![
            Load(0),
            Reduced(0),
            Const(n),
            Binary(BinaryOp::Div, 1, 2),
            Binary(BinaryOp::Sub, 0, 3),
            Binary(BinaryOp::Mul, 4, 4),
            Reduced(1),
            Binary(BinaryOp::Div, 6, 2),
            Const(1e-5),
            Binary(BinaryOp::Add, 7, 8),
            Unary(UnaryOp::Sqrt, 9),
            Binary(BinaryOp::Div, 4, 10),
        ],
        outputs: vec![
            KernelOutput {
                reg: 0,
                reduce: Some(ReduceOp::Sum),
            },
            KernelOutput {
                reg: 5,
                reduce: Some(ReduceOp::Sum),
            },
            KernelOutput {
                reg: 11,
                reduce: None,
            },
            KernelOutput {
                reg: 10,
                reduce: Some(ReduceOp::Max),
            },
        ],
        reduce_axes: 1,
    }
}

#[test]
fn row_at_a_time_equals_the_phases() {
    for dtype in [DType::F32, DType::F64] {
        for shape in [
            vec![1, 1],
            vec![3, 7],
            vec![2048, 64],
            vec![1, 3000],
            vec![5, 2, 1500],
        ] {
            for (name, k) in [
                ("softmax", softmax(dtype, &shape)),
                ("layer norm", layer_norm(dtype, &shape)),
            ] {
                assert!(k.reads_row_values() && k.row_values_well_formed(), "{k}");
                let x = if dtype == DType::F32 {
                    f32_array(&shape, 7)
                } else {
                    f64_array(&shape, 7)
                };
                let got = Cpu.run_kernel(&k, vec![x.clone()]);
                let want = k.in_phases(vec![x.clone()], &|k, ins| {
                    assert!(!k.reads_row_values());
                    Cpu.run_kernel(k, ins)
                });
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.shape(), w.shape(), "{name} {shape:?}");
                    assert_eq!(bits(g), bits(w), "{name} {dtype} {shape:?}");
                }
                // Softmax rows sum to one.
                if name == "softmax" {
                    let p = got[0].to_f64_vec().unwrap();
                    let row = shape[shape.len() - 1];
                    for r in p.chunks(row) {
                        let s: f64 = r.iter().sum();
                        assert!((s - 1.0).abs() < 1e-3, "{name} {shape:?}: {s}");
                    }
                }
            }
        }
    }
}

#[test]
fn malformed_row_values_are_recognised() {
    let mut k = softmax(DType::F32, &[4, 4]);
    // A store is not a reduction.
    k.body[1] = ScalarOp::Reduced(0);
    assert!(!k.row_values_well_formed());
    // A reduction read back before its register.
    let mut k = softmax(DType::F32, &[4, 4]);
    k.outputs[1].reg = 3;
    assert!(!k.row_values_well_formed());
}
