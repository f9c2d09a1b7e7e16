//! Reductions, arg-reductions and scans against naive multi-index loops.

mod common;

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{ArgReduceOp, Array, Buffer, DType, ReduceOp, ScanOp};
use common::*;
use proptest::prelude::*;

/// Naive reduce: fold every input element into its output slot.
fn naive_reduce(
    a: &Array,
    axes: &[usize],
    init: f64,
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<usize>, Vec<f64>) {
    let out_shape: Vec<usize> = (0..a.ndim())
        .filter(|d| !axes.contains(d))
        .map(|d| a.shape()[d])
        .collect();
    let mut out = vec![init; size(&out_shape)];
    for i in 0..a.len() {
        let idx = unravel(i, a.shape());
        let oidx: Vec<usize> = (0..a.ndim())
            .filter(|d| !axes.contains(d))
            .map(|d| idx[d])
            .collect();
        let o = ravel(&oidx, &out_shape);
        out[o] = f(out[o], a.get_f64(i).unwrap());
    }
    (out_shape, out)
}

fn shape_and_axes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(0usize..5, 0..5)
        .prop_flat_map(|shape| {
            let n = shape.len();
            (Just(shape), prop::collection::vec(any::<bool>(), n))
        })
        .prop_map(|(shape, pick)| {
            let axes = (0..shape.len()).filter(|&d| pick[d]).collect();
            (shape, axes)
        })
}

proptest! {
    #[test]
    fn reduce_matches_naive((shape, axes) in shape_and_axes(), seed in 0u64..1000) {
        let wide = i32_array(&shape, seed, -5, 5);
        // Products of many values stay exact (and in range) only for {-1, 0, 1}.
        let unit = i32_array(&shape, seed, -1, 1);
        for (op, init, f) in [
            (ReduceOp::Sum, 0.0, (|x, y| x + y) as fn(f64, f64) -> f64),
            (ReduceOp::Prod, 1.0, |x, y| x * y),
            (ReduceOp::Max, i32::MIN as f64, f64::max),
            (ReduceOp::Min, i32::MAX as f64, f64::min),
        ] {
            let a = if op == ReduceOp::Prod { &unit } else { &wide };
            let (oshape, want) = naive_reduce(a, &axes, init, f);
            for dtype in [DType::I32, DType::I64, DType::F32, DType::F64] {
                let x = cpu::Cpu.convert(a, dtype);
                let got = cpu::Cpu.reduce(op, &x, &axes);
                prop_assert_eq!(got.shape(), &oshape[..]);
                prop_assert_eq!(got.dtype(), dtype);
                for (i, &w) in want.iter().enumerate() {
                    let w = match (dtype, op) {
                        (DType::F32 | DType::F64, ReduceOp::Max) if w == i32::MIN as f64 => f64::NEG_INFINITY,
                        (DType::F32 | DType::F64, ReduceOp::Min) if w == i32::MAX as f64 => f64::INFINITY,
                        (DType::I64, ReduceOp::Max) if w == i32::MIN as f64 => i64::MIN as f64,
                        (DType::I64, ReduceOp::Min) if w == i32::MAX as f64 => i64::MAX as f64,
                        _ => w,
                    };
                    prop_assert_eq!(got.get_f64(i).unwrap(), w, "{:?} {} at {}", op, dtype, i);
                }
            }
        }
        let b = bool_array(&shape, seed);
        for (op, init, f) in [
            (ReduceOp::All, 1.0, f64::min as fn(f64, f64) -> f64),
            (ReduceOp::Any, 0.0, f64::max),
        ] {
            let (_, want) = naive_reduce(&b, &axes, init, f);
            prop_assert_eq!(cpu::Cpu.reduce(op, &b, &axes).to_f64_vec().unwrap(), want);
        }
    }

    #[test]
    fn float_sums_are_close((shape, axes) in shape_and_axes(), seed in 0u64..1000) {
        let a = f32_array(&shape, seed);
        let (_, want) = naive_reduce(&a, &axes, 0.0, |x, y| x + y);
        let got = cpu::Cpu.reduce(ReduceOp::Sum, &a, &axes);
        for (i, &w) in want.iter().enumerate() {
            prop_assert!((got.get_f64(i).unwrap() - w).abs() <= 1e-5 * (1.0 + w.abs()));
        }
    }

    #[test]
    fn scan_matches_naive(shape in prop::collection::vec(0usize..5, 1..4), axis_pick in 0usize..4, reverse in any::<bool>(), seed in 0u64..1000) {
        let axis = axis_pick % shape.len();
        let a = i32_array(&shape, seed, -5, 5);
        for (op, f) in [
            (ScanOp::Sum, (|x, y| x + y) as fn(f64, f64) -> f64),
            (ScanOp::Prod, |x, y| x * y),
            (ScanOp::Max, f64::max),
            (ScanOp::Min, f64::min),
        ] {
            let mut want = vec![0.0; a.len()];
            for (i, w) in want.iter_mut().enumerate() {
                let idx = unravel(i, &shape);
                let mut acc: Option<f64> = None;
                let range: Vec<usize> = if reverse { (idx[axis]..shape[axis]).rev().collect() } else { (0..=idx[axis]).collect() };
                for k in range {
                    let mut j = idx.clone();
                    j[axis] = k;
                    let v = a.get_f64(ravel(&j, &shape)).unwrap();
                    acc = Some(acc.map_or(v, |s| f(s, v)));
                }
                *w = acc.unwrap();
            }
            for dtype in [DType::I32, DType::F64] {
                let got = cpu::Cpu.scan(op, &cpu::Cpu.convert(&a, dtype), axis, reverse);
                prop_assert_eq!(got.shape(), &shape[..]);
                prop_assert_eq!(got.to_f64_vec().unwrap(), want.clone());
            }
        }
    }

    #[test]
    fn arg_reduce_matches_naive(shape in prop::collection::vec(1usize..5, 1..4), axis_pick in 0usize..4, seed in 0u64..1000) {
        let axis = axis_pick % shape.len();
        let a = i32_array(&shape, seed, -3, 3);
        let mut oshape = shape.clone();
        oshape.remove(axis);
        for (op, better) in [(ArgReduceOp::ArgMax, (|x, y| x > y) as fn(f64, f64) -> bool), (ArgReduceOp::ArgMin, |x, y| x < y)] {
            let got = cpu::Cpu.arg_reduce(op, &a, axis);
            prop_assert_eq!(got.dtype(), DType::I32);
            prop_assert_eq!(got.shape(), &oshape[..]);
            for o in 0..size(&oshape) {
                let mut idx = unravel(o, &oshape);
                idx.insert(axis, 0);
                let mut best = (0, a.get_f64(ravel(&idx, &shape)).unwrap());
                for k in 1..shape[axis] {
                    idx[axis] = k;
                    let v = a.get_f64(ravel(&idx, &shape)).unwrap();
                    if better(v, best.1) {
                        best = (k, v);
                    }
                }
                prop_assert_eq!(got.get_f64(o).unwrap(), best.0 as f64);
            }
        }
    }
}

#[test]
fn empty_reductions_give_identities() {
    let e = Array::new(&[0, 3], Buffer::F32(vec![]));
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Sum, &e, &[0])
            .to_f64_vec()
            .unwrap(),
        [0.0; 3]
    );
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Prod, &e, &[0])
            .to_f64_vec()
            .unwrap(),
        [1.0; 3]
    );
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Max, &e, &[0])
            .to_f64_vec()
            .unwrap(),
        [f64::NEG_INFINITY; 3]
    );
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Min, &e, &[0, 1])
            .to_f64_vec()
            .unwrap(),
        [f64::INFINITY]
    );
    assert_eq!(cpu::Cpu.reduce(ReduceOp::Sum, &e, &[1]).shape(), &[0]);
    let ei = Array::new(&[0], Buffer::I32(vec![]));
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Max, &ei, &[0])
            .to_f64_vec()
            .unwrap(),
        [i32::MIN as f64]
    );
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Min, &ei, &[0])
            .to_f64_vec()
            .unwrap(),
        [i32::MAX as f64]
    );
    let eb = Array::new(&[0], Buffer::Bool(vec![]));
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::All, &eb, &[0])
            .to_f64_vec()
            .unwrap(),
        [1.0]
    );
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Any, &eb, &[0])
            .to_f64_vec()
            .unwrap(),
        [0.0]
    );
    let s = Array::scalar_f32(3.0);
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Sum, &s, &[])
            .to_f64_vec()
            .unwrap(),
        [3.0]
    );
    assert_eq!(
        cpu::Cpu
            .arg_reduce(
                ArgReduceOp::ArgMax,
                &Array::new(&[2, 0], Buffer::F32(vec![])),
                1
            )
            .to_f64_vec()
            .unwrap(),
        [0.0, 0.0]
    );
    assert_eq!(cpu::Cpu.scan(ScanOp::Sum, &e, 0, false).shape(), &[0, 3]);
}

#[test]
fn nan_handling() {
    let a = Array::new(&[5], Buffer::F32(vec![1.0, f32::NAN, 5.0, f32::NAN, 7.0]));
    assert!(cpu::Cpu
        .reduce(ReduceOp::Max, &a, &[0])
        .get_f64(0)
        .unwrap()
        .is_nan());
    assert!(cpu::Cpu
        .reduce(ReduceOp::Min, &a, &[0])
        .get_f64(0)
        .unwrap()
        .is_nan());
    assert_eq!(
        cpu::Cpu
            .arg_reduce(ArgReduceOp::ArgMax, &a, 0)
            .get_f64(0)
            .unwrap(),
        1.0
    );
    assert_eq!(
        cpu::Cpu
            .arg_reduce(ArgReduceOp::ArgMin, &a, 0)
            .get_f64(0)
            .unwrap(),
        1.0
    );
    let long: Vec<f32> = (0..1000)
        .map(|i| if i == 777 { f32::NAN } else { i as f32 })
        .collect();
    let long = Array::new(&[1000], Buffer::F32(long));
    assert!(cpu::Cpu
        .reduce(ReduceOp::Max, &long, &[0])
        .get_f64(0)
        .unwrap()
        .is_nan());
    let col = long.reshape(&[1000, 1]);
    assert!(cpu::Cpu
        .reduce(ReduceOp::Max, &col, &[0])
        .get_f64(0)
        .unwrap()
        .is_nan());
    assert_eq!(
        cpu::Cpu
            .arg_reduce(ArgReduceOp::ArgMax, &col, 0)
            .get_f64(0)
            .unwrap(),
        777.0
    );
    let first = Array::new(&[4], Buffer::I32(vec![3, 9, 9, 1]));
    assert_eq!(
        cpu::Cpu
            .arg_reduce(ArgReduceOp::ArgMax, &first, 0)
            .get_f64(0)
            .unwrap(),
        1.0
    );
    let c = cpu::Cpu.scan(ScanOp::Max, &a, 0, false);
    assert_eq!(c.get_f64(0).unwrap(), 1.0);
    assert!(c.get_f64(2).unwrap().is_nan());
}

#[test]
fn large_reductions_along_each_axis() {
    let a = f32_array(&[300, 400], 9);
    for axes in [vec![0], vec![1], vec![0, 1]] {
        let (_, want) = naive_reduce(&a, &axes, 0.0, |x, y| x + y);
        let got = cpu::Cpu.reduce(ReduceOp::Sum, &a, &axes);
        for (i, &w) in want.iter().enumerate() {
            // f32 accumulates sequentially along leading axes, as NumPy does.
            assert!((got.get_f64(i).unwrap() - w).abs() <= 1e-3, "{axes:?}");
        }
        let (_, want) = naive_reduce(&a, &axes, f64::NEG_INFINITY, f64::max);
        assert_eq!(
            cpu::Cpu
                .reduce(ReduceOp::Max, &a, &axes)
                .to_f64_vec()
                .unwrap(),
            want
        );
    }
    let b = f32_array(&[2, 50_000, 2], 10);
    let (_, want) = naive_reduce(&b, &[0, 2], f64::INFINITY, f64::min);
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Min, &b, &[0, 2])
            .to_f64_vec()
            .unwrap(),
        want
    );
    let (_, want) = naive_reduce(&b, &[1], f64::INFINITY, f64::min);
    assert_eq!(
        cpu::Cpu
            .reduce(ReduceOp::Min, &b, &[1])
            .to_f64_vec()
            .unwrap(),
        want
    );
}

#[test]
fn sum_of_ten_million_f32_is_accurate() {
    let mut rng = Lcg::new(123);
    let v: Vec<f32> = (0..10_000_000).map(|_| rng.uniform() as f32).collect();
    let exact: f64 = v.iter().map(|&x| x as f64).sum();
    let a = Array::new(&[v.len()], Buffer::F32(v));
    let got = cpu::Cpu.reduce(ReduceOp::Sum, &a, &[0]).get_f64(0).unwrap();
    assert!(((got - exact) / exact).abs() < 1e-6, "{got} vs {exact}");
    // The same along a leading axis.
    let m = a.reshape(&[10_000, 1000]);
    let rows = cpu::Cpu.reduce(ReduceOp::Sum, &m, &[1]);
    let total: f64 = rows.to_f64_vec().unwrap().iter().sum();
    assert!(((total - exact) / exact).abs() < 1e-6);
}
