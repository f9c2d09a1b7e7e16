//! Registers computed straight into their output stores: a fused kernel's
//! outputs equal the elementwise results wherever the stores come from
//! (fresh, or the buffer of an input nothing else holds) and whatever the
//! order of the loads and the stored operations in the body — including a
//! store that took the buffer of an input loaded only after the register
//! stored there is computed. Kernels larger than the private caches stream
//! their stores (non-temporal copies from scratch, rows starting at
//! unaligned addresses): the same results.

mod common;

use arr_kernels::cpu::Cpu;
use arr_kernels::{Backend, BinaryOp, DType, Kernel, KernelInput, KernelOutput, ScalarOp, UnaryOp};
use common::f32_array;

fn store(reg: usize) -> KernelOutput {
    KernelOutput { reg, reduce: None }
}

/// out0 = -x; out1 = out0 * y + x, with `y`'s load after `-x` in the body.
fn kernel(shape: &[usize]) -> Kernel {
    use ScalarOp::*;
    Kernel {
        shape: shape.to_vec(),
        dtype: DType::F32,
        inputs: vec![KernelInput::broadcast(DType::F32, shape, shape); 2],
        body: vec![
            Load(0),
            Unary(UnaryOp::Neg, 0),
            Load(1),
            Binary(BinaryOp::Mul, 1, 2),
            Binary(BinaryOp::Add, 3, 0),
        ],
        outputs: vec![store(1), store(4)],
        reduce_axes: 0,
    }
}

#[test]
fn stored_registers_equal_the_elementwise_results() {
    let streamed = [vec![2_100_003], vec![3, 700_001]];
    for shape in [vec![1], vec![7, 3], vec![1000], vec![3, 1025], vec![70_001]]
        .into_iter()
        .chain(streamed)
    {
        let (x, y) = (f32_array(&shape, 1), f32_array(&shape, 2));
        let n: usize = shape.iter().product();
        let want = |i: usize| {
            let (a, b) = (x.get_f64(i).unwrap() as f32, y.get_f64(i).unwrap() as f32);
            (-a, -a * b + a)
        };
        // Fresh stores; `y`'s buffer given up (it becomes store 0, written
        // by `-x` before `y` is loaded); both buffers given up.
        let cases = [
            (x.clone(), y.clone()),
            (x.clone(), f32_array(&shape, 2)),
            (f32_array(&shape, 1), f32_array(&shape, 2)),
        ];
        for (case, (a, b)) in cases.into_iter().enumerate() {
            let out = Cpu.run_kernel(&kernel(&shape), vec![a, b]);
            for i in 0..n {
                let (neg, fma) = want(i);
                assert_eq!(
                    out[0].get_f64(i).unwrap() as f32,
                    neg,
                    "case {case} {shape:?} [{i}]"
                );
                assert_eq!(
                    out[1].get_f64(i).unwrap() as f32,
                    fma,
                    "case {case} {shape:?} [{i}]"
                );
            }
        }
    }
}

/// sum(x * y) over rows (folded directly) and -y stored, with `x`'s
/// buffer given up to the store of -y: the sum reads `x` after -y is
/// written, so `x` must not be read from the store in place. The long rows
/// stream, each row's store starting at an address that is not aligned.
#[test]
fn sums_read_inputs_before_their_buffers_are_overwritten() {
    for cols in [1000, 700_001] {
        sum_and_store(cols);
    }
}

fn sum_and_store(cols: usize) {
    use arr_kernels::ReduceOp;
    use ScalarOp::*;
    let shape = [3, cols];
    let k = Kernel {
        shape: shape.to_vec(),
        dtype: DType::F32,
        inputs: vec![KernelInput::broadcast(DType::F32, &shape, &shape); 2],
        body: vec![
            Load(0),
            Load(1),
            Binary(BinaryOp::Mul, 0, 1),
            Unary(UnaryOp::Neg, 1),
        ],
        outputs: vec![
            KernelOutput {
                reg: 2,
                reduce: Some(ReduceOp::Sum),
            },
            store(3),
        ],
        reduce_axes: 1,
    };
    let (x, y) = (f32_array(&shape, 1), f32_array(&shape, 2));
    let out = Cpu.run_kernel(&k, vec![f32_array(&shape, 1), y.clone()]);
    for r in 0..3 {
        let want: f64 = (0..cols)
            .map(|i| {
                (x.get_f64(r * cols + i).unwrap() as f32 * y.get_f64(r * cols + i).unwrap() as f32)
                    as f64
            })
            .sum();
        let got = out[0].get_f64(r).unwrap();
        assert!(
            (got - want).abs() <= 1e-3 * (1.0 + want.abs()),
            "row {r}: {got} vs {want}"
        );
    }
    for i in 0..3 * cols {
        assert_eq!(out[1].get_f64(i).unwrap(), -y.get_f64(i).unwrap());
    }
}
