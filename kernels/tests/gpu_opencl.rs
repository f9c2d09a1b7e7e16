//! The GPU backend on OpenCL (PoCL in CI) against the CPU backend: every
//! op-table row on every dtype it accepts, reductions (one and two passes),
//! movement, indexing, sorting, scans, random bits and matrix products.
//! Without an OpenCL device the suite says SKIPPED, unless
//! `ARR_REQUIRE_OPENCL` is set (the test script sets it).

use arr_kernels::cpu::Cpu;
use arr_kernels::gpu::{self, GpuDevice};
use arr_kernels::{
    ArgReduceOp, Array, Backend, BinaryOp, Buffer, DType, DotDims, ReduceOp, ScanOp, ScatterMode,
    UnaryOp,
};

mod common;

fn device() -> Option<&'static GpuDevice> {
    match gpu::find("opencl") {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                std::env::var_os("ARR_REQUIRE_OPENCL").is_none(),
                "an OpenCL device is required: {e}"
            );
            skipped(&format!("no OpenCL device ({e})"));
            None
        }
    }
}

/// Values of every dtype with the awkward cases: zeros, negatives, NaN, inf.
fn sample(dtype: DType, n: usize, seed: u64) -> Array {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let f: Vec<f64> = (0..n)
        .map(|i| match i % 11 {
            0 => 0.0,
            1 => -1.0,
            2 => 2.0,
            _ => (next() % 2001) as f64 / 100.0 - 10.0,
        })
        .collect();
    let buf = match dtype {
        DType::Bool => Buffer::Bool(f.iter().map(|&v| v > 0.0).collect()),
        DType::I32 => Buffer::I32(f.iter().map(|&v| (v * 3.0) as i32).collect()),
        DType::I64 => Buffer::I64(f.iter().map(|&v| (v * 3.0) as i64).collect()),
        DType::U32 => Buffer::U32(f.iter().map(|&v| (v.abs() * 3.0) as u32).collect()),
        DType::F32 => Buffer::F32(
            f.iter()
                .enumerate()
                .map(|(i, &v)| if i % 13 == 12 { f32::NAN } else { v as f32 })
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            f.iter()
                .enumerate()
                .map(|(i, &v)| if i % 13 == 12 { f64::INFINITY } else { v })
                .collect(),
        ),
        // 16-bit floats: the f64 sample rounded (inexact values and ties included).
        half => return Cpu.convert(&sample(DType::F64, n, seed), half),
    };
    Array::new(&[n], buf)
}

/// Equal shapes and dtypes, and elements equal to a few ulps (NaN = NaN).
fn assert_close(what: &str, got: &Array, want: &Array) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let g = got.to_f64_vec().unwrap();
    let w = want.to_f64_vec().unwrap();
    // 16-bit results are f32 results rounded: a few f32 ulps may round to
    // the neighbouring 16-bit value.
    let tol = match want.dtype() {
        DType::F32 => 2e-6,
        DType::BF16 => 8e-3,
        DType::F16 => 1e-3,
        _ => 1e-12,
    };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * b.abs().max(1.0);
        assert!(ok, "{what}: element {i}: gpu {a} cpu {b}");
    }
}

#[test]
fn every_op_table_row_matches_the_cpu() {
    let Some(d) = device() else { return };
    // Complex numbers and narrow integers run on the CPU whatever device holds them.
    for dtype in DType::ALL.into_iter().filter(|d| d.in_gpu_kernels()) {
        let a = sample(dtype, 300, 1);
        let b = sample(dtype, 300, 2);
        for &op in UnaryOp::ALL {
            if op.accepts(dtype) {
                assert_close(
                    &format!("{} {dtype}", op.name()),
                    &d.unary(op, a.clone()),
                    &Cpu.unary(op, a.clone()),
                );
            }
        }
        for &op in BinaryOp::ALL {
            if op.accepts(dtype) {
                let b = if matches!(
                    op,
                    BinaryOp::ShiftLeft | BinaryOp::ShiftRight | BinaryOp::Pow
                ) && dtype.is_int()
                {
                    Cpu.binary(
                        BinaryOp::Mod,
                        b.clone(),
                        Array::new(
                            &[],
                            match dtype {
                                DType::I32 => Buffer::I32(vec![40]),
                                DType::I64 => Buffer::I64(vec![70]),
                                _ => Buffer::U32(vec![40]),
                            },
                        ),
                    )
                } else {
                    b.clone()
                };
                assert_close(
                    &format!("{} {dtype}", op.name()),
                    &d.binary(op, a.clone(), b.clone()),
                    &Cpu.binary(op, a.clone(), b),
                );
            }
        }
        for to in DType::ALL.into_iter().filter(|d| d.in_gpu_kernels()) {
            assert_close(
                &format!("convert {dtype} to {to}"),
                &d.convert(&a, to),
                &Cpu.convert(&a, to),
            );
        }
    }
}

#[test]
fn conversions_to_and_from_16_bit_floats_give_the_cpus_bits() {
    let Some(d) = device() else { return };
    let xs: Vec<f64> = common::HALF_CASES
        .iter()
        .map(|c| c.0)
        .chain([f64::NAN, -f64::NAN])
        .collect();
    let f64s = Array::new(&[xs.len()], Buffer::F64(xs.clone()));
    let sources = [
        f64s.clone(),
        Cpu.convert(&f64s, DType::F32),
        Cpu.convert(&f64s, DType::I32),
        Cpu.convert(&f64s, DType::BF16),
        Cpu.convert(&f64s, DType::F16),
    ];
    for a in &sources {
        for to in DType::ALL.into_iter().filter(|d| d.in_gpu_kernels()) {
            let (got, want) = (d.convert(a, to), Cpu.convert(a, to));
            assert_eq!(
                got.buffer().unwrap().to_le_bytes(),
                want.buffer().unwrap().to_le_bytes(),
                "convert {} to {to}",
                a.dtype()
            );
        }
    }
}

#[test]
fn reductions_in_one_and_two_passes() {
    let Some(d) = device() else { return };
    for (shape, axes) in [
        (vec![7, 5, 3], vec![1]),
        (vec![4, 300_000], vec![1]),
        (vec![3, 4], vec![0, 1]),
        (vec![0, 3], vec![0]),
        (vec![3, 0], vec![1]),
        (vec![6, 5], vec![]),
    ] {
        for dtype in [DType::F32, DType::F64, DType::I32, DType::Bool, DType::U32] {
            let n = shape.iter().product();
            let a = sample(dtype, n, 3).reshape(&shape);
            for &op in ReduceOp::ALL {
                let want = Cpu.reduce(op, &a, &axes);
                let got = d.reduce(op, &a, &axes);
                if dtype == DType::F32 && op == ReduceOp::Sum || op == ReduceOp::Prod {
                    // Different summation orders: compare loosely.
                    let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
                    for (x, y) in g.iter().zip(&w) {
                        assert!(
                            (x.is_nan() && y.is_nan())
                                || (x - y).abs() <= 1e-3 * y.abs().max(1.0)
                                || x == y,
                            "{op:?} {dtype} {shape:?}: {x} vs {y}"
                        );
                    }
                } else {
                    assert_close(&format!("{op:?} {dtype} {shape:?} {axes:?}"), &got, &want);
                }
            }
        }
    }
}

#[test]
fn movement_indexing_sorting_and_scans() {
    let Some(d) = device() else { return };
    let a = sample(DType::F32, 60, 4).reshape(&[3, 4, 5]);
    let i = sample(DType::I32, 60, 5).reshape(&[3, 4, 5]);
    for x in [&a, &i] {
        assert_close(
            "transpose",
            &d.transpose(x, &[2, 0, 1]),
            &Cpu.transpose(x, &[2, 0, 1]),
        );
        assert_close(
            "slice",
            &d.slice(x, &[1, 0, 1], &[3, 4, 5], &[1, 2, 3]),
            &Cpu.slice(x, &[1, 0, 1], &[3, 4, 5], &[1, 2, 3]),
        );
        assert_close("rev", &d.rev(x, &[0, 2]), &Cpu.rev(x, &[0, 2]));
        let v = Cpu.slice(&x.reshape(&[60]), &[7], &[8], &[1]).reshape(&[]);
        assert_close(
            "pad",
            &d.pad(x, &v, &[1, 0, 2], &[0, 3, 1], &[0, 1, 2]),
            &Cpu.pad(x, &v, &[1, 0, 2], &[0, 3, 1], &[0, 1, 2]),
        );
        assert_close(
            "concatenate",
            &d.concatenate(&[x.clone(), x.clone()], 1),
            &Cpu.concatenate(&[x.clone(), x.clone()], 1),
        );
        let row = Cpu
            .slice(x, &[0, 0, 0], &[1, 4, 1], &[1, 1, 1])
            .reshape(&[1, 4, 1]);
        assert_close(
            "broadcast_in_dim",
            &d.broadcast_in_dim(&row, &[2, 1, 4, 3], &[0, 2, 3]),
            &Cpu.broadcast_in_dim(&row, &[2, 1, 4, 3], &[0, 2, 3]),
        );
        for axis in 0..3 {
            assert_close("sort", &d.sort(x, axis), &Cpu.sort(x, axis));
            assert_close("argsort", &d.argsort(x, axis), &Cpu.argsort(x, axis));
            for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
                assert_close(
                    "arg_reduce",
                    &d.arg_reduce(op, x, axis),
                    &Cpu.arg_reduce(op, x, axis),
                );
            }
            for &op in ScanOp::ALL {
                for rev in [false, true] {
                    assert_close(
                        &format!("scan {op:?}"),
                        &d.scan(op, x, axis, rev),
                        &Cpu.scan(op, x, axis, rev),
                    );
                }
            }
        }
        let idx = Array::new(&[5], Buffer::I32(vec![2, 0, 9, 1, 2]));
        for axis in 0..3 {
            assert_close(
                "gather",
                &d.gather(x, &idx, axis),
                &Cpu.gather(x, &idx, axis),
            );
            let mut ushape = x.shape().to_vec();
            ushape[axis] = 5;
            let upd = sample(x.dtype(), ushape.iter().product(), 9).reshape(&ushape);
            for mode in [ScatterMode::Set, ScatterMode::Add] {
                assert_close(
                    "scatter",
                    &d.scatter(x, &idx, &upd, axis, mode),
                    &Cpu.scatter(x, &idx, &upd, axis, mode),
                );
            }
        }
    }
    assert_close(
        "iota",
        &d.iota(DType::I32, &[3, 4], 1),
        &Cpu.iota(DType::I32, &[3, 4], 1),
    );
    let k = Array::new(&[1], Buffer::U32(vec![42]));
    let x0 = Array::new(&[4], Buffer::U32(vec![0, 1, 2, 3]));
    let (g0, g1) = d.threefry2x32(&k, &k, &x0, &x0);
    let (c0, c1) = Cpu.threefry2x32(&k, &k, &x0, &x0);
    assert_close("threefry", &g0, &c0);
    assert_close("threefry", &g1, &c1);
}

#[test]
fn long_sorts_are_stable_with_nans_last() {
    let Some(d) = device() else { return };
    // Ties (values repeat every 7), NaNs and a length that is no power of two.
    let v: Vec<f32> = (0..5003)
        .map(|i| {
            if i % 97 == 5 {
                f32::NAN
            } else {
                ((i * 37) % 7) as f32 - 3.0
            }
        })
        .collect();
    let a = Array::new(&[5003], Buffer::F32(v));
    assert_close("sort", &d.sort(&a, 0), &Cpu.sort(&a, 0));
    assert_close("argsort", &d.argsort(&a, 0), &Cpu.argsort(&a, 0));
    let m = sample(DType::I32, 3 * 1000, 3).reshape(&[3, 1000]);
    assert_close("argsort rows", &d.argsort(&m, 1), &Cpu.argsort(&m, 1));
    assert_close("argsort columns", &d.argsort(&m, 0), &Cpu.argsort(&m, 0));
}

#[test]
fn matrix_products() {
    let Some(d) = device() else { return };
    let cases = [
        (
            vec![17, 33],
            vec![33, 9],
            DotDims {
                lhs_batch: vec![],
                rhs_batch: vec![],
                lhs_contract: vec![1],
                rhs_contract: vec![0],
            },
        ),
        (
            vec![33, 17],
            vec![9, 33],
            DotDims {
                lhs_batch: vec![],
                rhs_batch: vec![],
                lhs_contract: vec![0],
                rhs_contract: vec![1],
            },
        ),
        (
            vec![2, 5, 6, 3],
            vec![2, 3, 4],
            DotDims {
                lhs_batch: vec![0],
                rhs_batch: vec![0],
                lhs_contract: vec![3],
                rhs_contract: vec![1],
            },
        ),
        (
            vec![4, 3, 5],
            vec![5, 4, 2],
            DotDims {
                lhs_batch: vec![0],
                rhs_batch: vec![1],
                lhs_contract: vec![2],
                rhs_contract: vec![0],
            },
        ),
        (
            vec![3, 0],
            vec![0, 4],
            DotDims {
                lhs_batch: vec![],
                rhs_batch: vec![],
                lhs_contract: vec![1],
                rhs_contract: vec![0],
            },
        ),
    ];
    for dtype in [DType::F32, DType::F64, DType::I32] {
        for (sa, sb, dims) in &cases {
            let a = sample(dtype, sa.iter().product(), 6).reshape(sa);
            let b = sample(dtype, sb.iter().product(), 7).reshape(sb);
            let got = d.dot_general(&a, &b, dims);
            let want = Cpu.dot_general(&a, &b, dims);
            let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
            assert_eq!(got.shape(), want.shape());
            for (x, y) in g.iter().zip(&w) {
                assert!(
                    (x.is_nan() && y.is_nan())
                        || x == y
                        || (x - y).abs() <= 1e-4 * y.abs().max(1.0),
                    "{dtype} {sa:?}x{sb:?}: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn results_stay_on_the_device_until_read() {
    let Some(d) = device() else { return };
    let a = sample(DType::F32, 1000, 8);
    let launches = d.launches.load(std::sync::atomic::Ordering::Relaxed);
    let b = d.unary(UnaryOp::Exp, a.clone());
    let c = d.binary(BinaryOp::Add, b.clone(), a.clone());
    assert_eq!(c.home(), Some(d.id));
    assert!(d.launches.load(std::sync::atomic::Ordering::Relaxed) >= launches + 2);
    assert_close(
        "chain",
        &c,
        &Cpu.binary(BinaryOp::Add, Cpu.unary(UnaryOp::Exp, a.clone()), a),
    );
}

mod fused {
    use super::*;
    use arr_kernels::{Kernel, KernelInput, KernelOutput, ScalarOp};
    use proptest::prelude::*;

    /// A random fused kernel: 1–3 axes, three inputs each broadcast along
    /// a random set of axes, a chain of well-conditioned ops (every op's
    /// operands are earlier registers), the last register stored and, when
    /// `reduce`, reduced too (sum or max) over the trailing axis.
    fn kernel_strategy() -> impl Strategy<Value = (Kernel, u64)> {
        let shape = prop::collection::vec(1usize..24, 1..4);
        let masks = prop::collection::vec(prop::collection::vec(any::<bool>(), 3), 3);
        let ops = prop::collection::vec(
            (
                0usize..10,
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
            ),
            2..9,
        );
        (
            shape,
            masks,
            ops,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0u64..1000,
        )
            .prop_map(|(shape, masks, ops, reduce, max, f64_regs, seed)| {
                let dtype = if f64_regs { DType::F64 } else { DType::F32 };
                let inputs: Vec<KernelInput> = masks
                    .iter()
                    .map(|m| {
                        let s: Vec<usize> = shape
                            .iter()
                            .enumerate()
                            .map(|(i, &n)| if m[i % 3] { n } else { 1 })
                            .collect();
                        KernelInput::broadcast(dtype, &s, &shape)
                    })
                    .collect();
                let mut body = vec![ScalarOp::Load(0), ScalarOp::Load(1), ScalarOp::Load(2)];
                for (op, a, b) in ops {
                    let n = body.len();
                    let (a, b) = (a.index(n), b.index(n));
                    let op = match op {
                        0 => ScalarOp::Binary(BinaryOp::Add, a, b),
                        1 => ScalarOp::Binary(BinaryOp::Sub, a, b),
                        2 => ScalarOp::Binary(BinaryOp::Mul, a, b),
                        3 => ScalarOp::Binary(BinaryOp::Max, a, b),
                        4 => ScalarOp::Unary(UnaryOp::Tanh, a),
                        5 => ScalarOp::Unary(UnaryOp::Logistic, a),
                        6 => ScalarOp::Unary(UnaryOp::Neg, a),
                        7 => ScalarOp::Unary(UnaryOp::Sin, a),
                        8 => ScalarOp::Const(0.5),
                        _ => {
                            body.push(ScalarOp::Binary(BinaryOp::Lt, a, b));
                            ScalarOp::Select(n, a, b)
                        }
                    };
                    body.push(op);
                }
                let last = body.len() - 1;
                let mut outputs = vec![KernelOutput {
                    reg: last,
                    reduce: None,
                }];
                if reduce {
                    outputs.push(KernelOutput {
                        reg: last,
                        reduce: Some(if max { ReduceOp::Max } else { ReduceOp::Sum }),
                    });
                }
                let k = Kernel {
                    shape,
                    dtype,
                    inputs,
                    body,
                    outputs,
                    reduce_axes: usize::from(reduce),
                };
                (k, seed)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn fused_kernels_match_the_cpu((k, seed) in kernel_strategy()) {
            let Some(d) = device() else { return Ok(()) };
            let inputs: Vec<Array> = k
                .inputs
                .iter()
                .enumerate()
                .map(|(i, inp)| {
                    let n: usize = inp.shape.iter().product();
                    Cpu.convert(&sample(DType::F64, n, seed + i as u64).reshape(&inp.shape), k.dtype)
                })
                .collect();
            let want = Cpu.run_kernel(&k, inputs.clone());
            let got = d.run_kernel(&k, inputs);
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g.shape(), w.shape());
                let (g, w) = (g.to_f64_vec().unwrap(), w.to_f64_vec().unwrap());
                for (x, y) in g.iter().zip(&w) {
                    prop_assert!((x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-4 * y.abs().max(1.0), "{} vs {} in\n{}", x, y, k);
                }
            }
        }
    }
}

/// Say on the terminal that a part was skipped (written past the test
/// harness's capture, so a plain `cargo test` shows it).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

#[test]
fn operands_on_two_devices_are_an_error_naming_both_unless_one_is_a_scalar() {
    let Some(d) = device() else { return };
    let other = gpu::recorder(gpu::render::Dialect::Cuda);
    let host = sample(DType::F32, 8, 1);
    let here = Array::on_gpu(&[8], DType::F32, d.upload(&host.buffer().unwrap()));
    let there = Array::on_gpu(&[8], DType::F32, other.upload(&host.buffer().unwrap()));
    let e = arr_kernels::backend::check_devices([&here, &there]).unwrap_err();
    assert!(e.contains(&d.label()) && e.contains(&other.label()), "{e}");
    let scalar = Array::on_gpu(&[], DType::F32, other.upload(&Buffer::F32(vec![1.0])));
    assert!(arr_kernels::backend::check_devices([&here, &scalar]).is_ok());
    assert!(
        arr_kernels::backend::check_devices([&here, &host]).is_ok(),
        "host arrays follow"
    );
}

/// A kernel that reads a reduction back along its row (softmax) runs on the
/// device as `Kernel::in_phases` and agrees with the CPU's row-at-a-time run.
#[test]
fn kernels_reading_row_values_match_the_cpu() {
    let Some(d) = device() else { return };
    let shape = [37, 50];
    let k = common::softmax_kernel(DType::F32, &shape);
    let x = Cpu.convert(&sample(DType::F64, 37 * 50, 5).reshape(&shape), DType::F32);
    let want = Cpu.run_kernel(&k, vec![x.clone()]);
    let got = d.run_kernel(&k, vec![x]);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.shape(), w.shape());
        let (g, w) = (g.to_f64_vec().unwrap(), w.to_f64_vec().unwrap());
        for (x, y) in g.iter().zip(&w) {
            assert!(
                (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-5 * y.abs().max(1.0),
                "{x} vs {y}"
            );
        }
    }
}
