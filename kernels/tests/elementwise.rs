//! Elementwise kernels against naive references: broadcasting, dtypes,
//! integer and float division semantics, transcendental accuracy.

mod common;

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{broadcast_shapes, Array, BinaryOp, Buffer, DType, UnaryOp};
use common::*;
use proptest::prelude::*;

/// Naive broadcasting: `f(a[ia], b[ib])` per output multi-index, on f64 values.
fn naive_binary(a: &Array, b: &Array, f: impl Fn(f64, f64) -> f64) -> (Vec<usize>, Vec<f64>) {
    let shape = broadcast_shapes(a.shape(), b.shape()).unwrap().to_vec();
    let pick = |x: &Array, idx: &[usize]| -> usize {
        let off = shape.len() - x.ndim();
        let sub: Vec<usize> = (0..x.ndim())
            .map(|d| if x.shape()[d] == 1 { 0 } else { idx[d + off] })
            .collect();
        ravel(&sub, x.shape())
    };
    let vals = (0..size(&shape))
        .map(|i| {
            let idx = unravel(i, &shape);
            f(
                a.get_f64(pick(a, &idx)).unwrap(),
                b.get_f64(pick(b, &idx)).unwrap(),
            )
        })
        .collect();
    (shape, vals)
}

/// A shape and a second shape that broadcasts against it.
fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(0usize..4, 0..5)
        .prop_flat_map(|shape| {
            let n = shape.len();
            (
                Just(shape),
                prop::collection::vec(any::<bool>(), n),
                0..=n,
                any::<bool>(),
            )
        })
        .prop_map(|(shape, ones, drop, swap)| {
            let other: Vec<usize> = shape
                .iter()
                .zip(&ones)
                .map(|(&s, &one)| if one { 1 } else { s })
                .skip(drop)
                .collect();
            if swap {
                (other, shape)
            } else {
                (shape, other)
            }
        })
}

proptest! {
    #[test]
    fn binary_broadcasting_matches_naive((sa, sb) in broadcast_pair(), seed in 0u64..1000) {
        let a = f32_array(&sa, seed);
        let b = f32_array(&sb, seed + 1);
        for (op, f) in [
            (BinaryOp::Add, (|x, y| x + y) as fn(f64, f64) -> f64),
            (BinaryOp::Sub, |x, y| x - y),
            (BinaryOp::Mul, |x, y| x * y),
            (BinaryOp::Max, f64::max),
        ] {
            let (shape, want) = naive_binary(&a, &b, f);
            for (x, y) in [(a.clone(), b.clone()), (fresh(&a), b.clone()), (a.clone(), fresh(&b))] {
                let got = cpu::Cpu.binary(op, x, y);
                prop_assert_eq!(got.shape(), &shape[..]);
                for (i, &w) in want.iter().enumerate() {
                    prop_assert_eq!(got.get_f64(i).unwrap(), w as f32 as f64, "{:?} at {}", op, i);
                }
            }
        }
        let (shape, want) = naive_binary(&a, &b, |x, y| (x < y) as u8 as f64);
        let got = cpu::Cpu.binary(BinaryOp::Lt, a.clone(), b.clone());
        prop_assert_eq!(got.dtype(), DType::Bool);
        prop_assert_eq!(got.shape(), &shape[..]);
        prop_assert_eq!(got.to_f64_vec().unwrap(), want);
        let ia = i32_array(&sa, seed, -50, 50);
        let ib = i32_array(&sb, seed + 7, -50, 50);
        let (_, want) = naive_binary(&ia, &ib, |x, y| x * y - 0.0);
        prop_assert_eq!(cpu::Cpu.binary(BinaryOp::Mul, fresh(&ia), ib.clone()).to_f64_vec().unwrap(), want);
    }

    #[test]
    fn select_matches_naive((sa, sb) in broadcast_pair(), seed in 0u64..1000) {
        let c = bool_array(&sa, seed);
        let a = f32_array(&sb, seed + 1);
        let b = f32_array(&[], seed + 2);
        let got = cpu::Cpu.select(&c, &a, &b);
        let (shape, cond) = naive_binary(&c, &a, |c, _| c);
        let (_, av) = naive_binary(&c, &a, |_, a| a);
        prop_assert_eq!(got.shape(), &shape[..]);
        for i in 0..got.len() {
            prop_assert_eq!(got.get_f64(i).unwrap(), if cond[i] != 0.0 { av[i] } else { b.get_f64(0).unwrap() });
        }
    }
}

#[test]
fn large_broadcasts_use_threads_and_agree() {
    let a = f32_array(&[300, 257], 1);
    let row = f32_array(&[257], 2);
    let col = f32_array(&[300, 1], 3);
    for b in [&row, &col] {
        let got = cpu::Cpu.binary(BinaryOp::Sub, a.clone(), b.clone());
        let (_, want) = naive_binary(&a, b, |x, y| x - y);
        assert_eq!(
            got.to_f64_vec().unwrap(),
            want.iter().map(|&w| w as f32 as f64).collect::<Vec<_>>()
        );
        let got = cpu::Cpu.binary(BinaryOp::Sub, b.clone(), fresh(&a));
        let (_, want) = naive_binary(b, &a, |x, y| x - y);
        assert_eq!(
            got.to_f64_vec().unwrap(),
            want.iter().map(|&w| w as f32 as f64).collect::<Vec<_>>()
        );
    }
    let big = f32_array(&[100_000], 4);
    let got = cpu::Cpu.binary(BinaryOp::Mul, fresh(&big), Array::scalar_f32(3.0));
    for i in 0..big.len() {
        assert_eq!(
            got.get_f64(i).unwrap(),
            (big.get_f64(i).unwrap() as f32 * 3.0) as f64
        );
    }
}

#[test]
fn in_place_reuse_keeps_the_buffer() {
    let x = fresh(&f32_array(&[64], 5));
    let ptr = x.buffer_address().unwrap();
    let y = cpu::Cpu.binary(BinaryOp::Add, x, Array::scalar_f32(1.0));
    assert_eq!(y.buffer_address().unwrap(), ptr);
    let z = cpu::Cpu.unary(UnaryOp::Exp, y);
    assert_eq!(z.buffer_address().unwrap(), ptr);
    // A shared input must not be modified.
    let s = f32_array(&[8], 6);
    let keep = s.clone();
    let _ = cpu::Cpu.binary(BinaryOp::Add, s.clone(), Array::scalar_f32(1.0));
    assert!(same(&s, &keep));
    assert_eq!(
        s.get_f64(0).unwrap(),
        f32_array(&[8], 6).get_f64(0).unwrap()
    );
}

#[test]
fn zero_d_and_empty() {
    let a = Array::scalar_f32(2.0);
    let b = Array::new(&[0, 3], Buffer::F32(vec![]));
    assert_eq!(
        cpu::Cpu
            .binary(BinaryOp::Add, a.clone(), a.clone())
            .get_f64(0)
            .unwrap(),
        4.0
    );
    let e = cpu::Cpu.binary(BinaryOp::Add, a.clone(), b.clone());
    assert_eq!(e.shape(), &[0, 3]);
    assert_eq!(cpu::Cpu.binary(BinaryOp::Eq, b.clone(), a).shape(), &[0, 3]);
    assert_eq!(cpu::Cpu.unary(UnaryOp::Sin, b.clone()).shape(), &[0, 3]);
    assert_eq!(cpu::Cpu.convert(&b, DType::I32).shape(), &[0, 3]);
}

fn i32_op(op: BinaryOp, x: i32, y: i32) -> i32 {
    let r = cpu::Cpu.binary(
        op,
        Array::new(&[], Buffer::I32(vec![x])),
        Array::new(&[], Buffer::I32(vec![y])),
    );
    i32s(&r)[0]
}

fn python_floordiv(x: i64, y: i64) -> i64 {
    let q = x / y;
    if (x % y != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

#[test]
fn integer_division_semantics() {
    for x in -20i32..=20 {
        for y in -7i32..=7 {
            let div = i32_op(BinaryOp::Div, x, y);
            let fdiv = i32_op(BinaryOp::FloorDiv, x, y);
            let md = i32_op(BinaryOp::Mod, x, y);
            if y == 0 {
                // x % 0 is 0, as NumPy and jnp.remainder; x / 0 is XLA's -1;
                // x // 0 is jnp.floor_divide's (-1 adjusted by the sign test).
                let floor = if x == 0 { -1 } else { -2 };
                assert_eq!((div, fdiv, md), (-1, floor, 0));
                continue;
            }
            assert_eq!(div, x / y, "{x} / {y}");
            assert_eq!(
                fdiv as i64,
                python_floordiv(x as i64, y as i64),
                "{x} // {y}"
            );
            assert_eq!(md, x - y * fdiv, "{x} % {y}");
            assert!(md == 0 || (md < 0) == (y < 0));
        }
    }
    // Wrapping instead of panicking.
    assert_eq!(i32_op(BinaryOp::Div, i32::MIN, -1), i32::MIN);
    assert_eq!(i32_op(BinaryOp::FloorDiv, i32::MIN, -1), i32::MIN);
    assert_eq!(i32_op(BinaryOp::Mod, i32::MIN, -1), 0);
    assert_eq!(i32_op(BinaryOp::Add, i32::MAX, 1), i32::MIN);
    assert_eq!(i32_op(BinaryOp::Mul, i32::MAX, 2), -2);
    // Powers.
    assert_eq!(i32_op(BinaryOp::Pow, 3, 4), 81);
    assert_eq!(i32_op(BinaryOp::Pow, -2, 3), -8);
    assert_eq!(i32_op(BinaryOp::Pow, 2, 31), i32::MIN);
    assert_eq!(i32_op(BinaryOp::Pow, 2, -1), 0);
    assert_eq!(i32_op(BinaryOp::Pow, 1, -5), 1);
    assert_eq!(i32_op(BinaryOp::Pow, -1, -5), -1);
    assert_eq!(i32_op(BinaryOp::Pow, -1, -4), 1);
    assert_eq!(i32_op(BinaryOp::Pow, 0, 0), 1);
    // Shifts.
    assert_eq!(i32_op(BinaryOp::ShiftLeft, 1, 31), i32::MIN);
    assert_eq!(i32_op(BinaryOp::ShiftLeft, 1, 32), 0);
    assert_eq!(i32_op(BinaryOp::ShiftLeft, 1, -1), 0);
    assert_eq!(i32_op(BinaryOp::ShiftRight, -8, 1), -4);
    assert_eq!(i32_op(BinaryOp::ShiftRight, -8, 40), -1);
    assert_eq!(i32_op(BinaryOp::ShiftRight, 8, 40), 0);
    assert_eq!(i32_op(BinaryOp::And, 12, 10), 8);
    assert_eq!(i32_op(BinaryOp::Or, 12, 10), 14);
    assert_eq!(i32_op(BinaryOp::Xor, 12, 10), 6);
    let neg = cpu::Cpu.unary(
        UnaryOp::Abs,
        Array::new(&[2], Buffer::I32(vec![i32::MIN, -3])),
    );
    assert_eq!(i32s(&neg), &[i32::MIN, 3]);
    let not = cpu::Cpu.unary(UnaryOp::Not, Array::new(&[1], Buffer::I32(vec![5])));
    assert_eq!(i32s(&not), &[!5]);
}

#[test]
fn unsigned_and_i64_semantics() {
    let u = |op, x: u32, y: u32| -> u32 {
        let r = cpu::Cpu.binary(
            op,
            Array::new(&[], Buffer::U32(vec![x])),
            Array::new(&[], Buffer::U32(vec![y])),
        );
        r.buffer().unwrap().get_i64(0) as u32
    };
    assert_eq!(u(BinaryOp::Div, 7, 0), u32::MAX);
    assert_eq!(u(BinaryOp::FloorDiv, 7, 2), 3);
    assert_eq!(u(BinaryOp::Mod, 7, 0), 0);
    assert_eq!(u(BinaryOp::Sub, 0, 1), u32::MAX);
    assert_eq!(u(BinaryOp::ShiftRight, u32::MAX, 31), 1);
    assert_eq!(u(BinaryOp::ShiftRight, u32::MAX, 32), 0);
    let l = |op, x: i64, y: i64| -> i64 {
        let r = cpu::Cpu.binary(
            op,
            Array::new(&[], Buffer::I64(vec![x])),
            Array::new(&[], Buffer::I64(vec![y])),
        );
        r.buffer().unwrap().get_i64(0)
    };
    assert_eq!(l(BinaryOp::FloorDiv, -7, 2), -4);
    assert_eq!(l(BinaryOp::Mod, -7, 2), 1);
    assert_eq!(l(BinaryOp::Mod, 7, -2), -1);
    assert_eq!(l(BinaryOp::Div, i64::MIN, -1), i64::MIN);
    assert_eq!(l(BinaryOp::ShiftLeft, 1, 63), i64::MIN);
    assert_eq!(l(BinaryOp::ShiftLeft, 1, 64), 0);
}

fn f64_op(op: BinaryOp, x: f64, y: f64) -> f64 {
    cpu::Cpu
        .binary(
            op,
            Array::new(&[], Buffer::F64(vec![x])),
            Array::new(&[], Buffer::F64(vec![y])),
        )
        .get_f64(0)
        .unwrap()
}

fn f32_op(op: BinaryOp, x: f32, y: f32) -> f32 {
    cpu::Cpu
        .binary(op, Array::scalar_f32(x), Array::scalar_f32(y))
        .get_f64(0)
        .unwrap() as f32
}

#[test]
fn float_division_semantics() {
    // Values from Python: -7.5 % 2 == 0.5, 7.5 % -2 == -0.5, -7.5 // 2 == -4.0.
    for (x, y, q, m) in [
        (-7.5, 2.0, -4.0, 0.5),
        (7.5, -2.0, -4.0, -0.5),
        (7.5, 2.0, 3.0, 1.5),
        (-7.5, -2.0, 3.0, -1.5),
        (6.0, 3.0, 2.0, 0.0),
        (-6.0, 3.0, -2.0, 0.0),
        (1.0, 0.1, 9.0, 0.09999999999999995),
    ] {
        assert_eq!(f64_op(BinaryOp::FloorDiv, x, y), q, "{x} // {y}");
        assert_eq!(f64_op(BinaryOp::Mod, x, y), m, "{x} % {y}");
        assert_eq!(f32_op(BinaryOp::FloorDiv, x as f32, y as f32), q as f32);
    }
    assert!(f64_op(BinaryOp::Mod, 1.0, 0.0).is_nan());
    assert_eq!(f64_op(BinaryOp::FloorDiv, 1.0, 0.0), f64::INFINITY);
    assert_eq!(
        f64_op(BinaryOp::Mod, 6.0, -3.0).to_bits(),
        (-0.0f64).to_bits()
    );
    assert!(f32_op(BinaryOp::Max, f32::NAN, 1.0).is_nan());
    assert!(f32_op(BinaryOp::Max, 1.0, f32::NAN).is_nan());
    assert!(f32_op(BinaryOp::Min, 1.0, f32::NAN).is_nan());
    assert_eq!(f32_op(BinaryOp::Max, 1.0, 2.0), 2.0);
    assert_eq!(f32_op(BinaryOp::Pow, 2.0, 0.5), 2f32.sqrt());
    assert_eq!(f32_op(BinaryOp::Atan2, 1.0, -1.0), 1f32.atan2(-1.0));
}

#[test]
fn bool_ops() {
    let t = Array::new(&[4], Buffer::Bool(vec![true, true, false, false]));
    let u = Array::new(&[4], Buffer::Bool(vec![true, false, true, false]));
    let run = |op| bools(&cpu::Cpu.binary(op, t.clone(), u.clone())).to_vec();
    assert_eq!(run(BinaryOp::And), [true, false, false, false]);
    assert_eq!(run(BinaryOp::Or), [true, true, true, false]);
    assert_eq!(run(BinaryOp::Xor), [false, true, true, false]);
    assert_eq!(run(BinaryOp::Max), [true, true, true, false]);
    assert_eq!(run(BinaryOp::Min), [true, false, false, false]);
    assert_eq!(run(BinaryOp::Gt), [false, true, false, false]);
    assert_eq!(run(BinaryOp::Eq), [true, false, false, true]);
    assert_eq!(
        bools(&cpu::Cpu.unary(UnaryOp::Not, t.clone())),
        &[false, false, true, true]
    );
}

#[test]
fn special_float_unaries() {
    let x = Array::new(
        &[7],
        Buffer::F32(vec![0.5, 1.5, 2.5, -0.5, -2.5, f32::NAN, -3.0]),
    );
    let r = cpu::Cpu.unary(UnaryOp::Round, x.clone());
    assert_eq!(&f32s(&r)[..5], &[0.0, 2.0, 2.0, -0.0, -2.0]);
    let s = cpu::Cpu.unary(UnaryOp::Sign, x.clone());
    assert!(f32s(&s)[5].is_nan());
    assert_eq!(f32s(&s)[6], -1.0);
    let big = Array::new(&[4], Buffer::F32(vec![-1000.0, -100.0, 100.0, 1000.0]));
    let l = cpu::Cpu.unary(UnaryOp::Logistic, big);
    assert_eq!(f32s(&l), &[0.0, (-100f64).exp() as f32, 1.0, 1.0]);
    let fin = cpu::Cpu.unary(
        UnaryOp::IsFinite,
        Array::new(&[3], Buffer::F32(vec![1.0, f32::INFINITY, f32::NAN])),
    );
    assert_eq!(bools(&fin), &[true, false, false]);
    let nan = cpu::Cpu.unary(
        UnaryOp::IsNan,
        Array::new(&[3], Buffer::F32(vec![1.0, f32::INFINITY, f32::NAN])),
    );
    assert_eq!(bools(&nan), &[false, false, true]);
    let rs = cpu::Cpu.unary(UnaryOp::Rsqrt, Array::scalar_f32(4.0));
    assert_eq!(rs.get_f64(0).unwrap(), 0.5);
    let i = cpu::Cpu.unary(UnaryOp::IsNan, Array::new(&[1], Buffer::I32(vec![3])));
    assert_eq!(bools(&i), &[false]);
}

/// Distance in units in the last place between an f32 result and the exact (f64) value.
fn ulps(got: f32, want: f64) -> f64 {
    if got.is_nan() && want.is_nan() {
        return 0.0;
    }
    if got as f64 == want {
        return 0.0;
    }
    let w = want as f32;
    if w.is_infinite() || got.is_infinite() {
        return if w == got { 0.0 } else { f64::INFINITY };
    }
    let ulp = (f32::from_bits(w.abs().to_bits() + 1) - w.abs()) as f64;
    (got as f64 - want).abs() / ulp
}

#[test]
fn f32_transcendentals_within_a_few_ulp() {
    type F = fn(f64) -> f64;
    let cases: [(UnaryOp, F, f64, f64); 22] = [
        (UnaryOp::Exp, f64::exp, -80.0, 80.0),
        (UnaryOp::Expm1, f64::exp_m1, -10.0, 10.0),
        (UnaryOp::Log, f64::ln, 1e-30, 1e30),
        (UnaryOp::Log1p, f64::ln_1p, -0.99, 100.0),
        (UnaryOp::Sqrt, f64::sqrt, 0.0, 1e10),
        (UnaryOp::Rsqrt, |x| 1.0 / x.sqrt(), 1e-10, 1e10),
        (UnaryOp::Sin, f64::sin, -100.0, 100.0),
        (UnaryOp::Cos, f64::cos, -100.0, 100.0),
        (UnaryOp::Tan, f64::tan, -1.5, 1.5),
        (UnaryOp::Asin, f64::asin, -1.0, 1.0),
        (UnaryOp::Acos, f64::acos, -1.0, 1.0),
        (UnaryOp::Atan, f64::atan, -100.0, 100.0),
        (UnaryOp::Sinh, f64::sinh, -20.0, 20.0),
        (UnaryOp::Cosh, f64::cosh, -20.0, 20.0),
        (UnaryOp::Tanh, f64::tanh, -20.0, 20.0),
        (UnaryOp::Asinh, f64::asinh, -100.0, 100.0),
        (UnaryOp::Acosh, f64::acosh, 1.0, 100.0),
        (UnaryOp::Atanh, f64::atanh, -0.99, 0.99),
        (UnaryOp::Logistic, |x| 1.0 / (1.0 + (-x).exp()), -50.0, 50.0),
        (UnaryOp::Erf, libm::erf, -5.0, 5.0),
        (UnaryOp::Floor, f64::floor, -100.0, 100.0),
        (UnaryOp::Ceil, f64::ceil, -100.0, 100.0),
    ];
    let mut rng = Lcg::new(42);
    for (op, reference, lo, hi) in cases {
        let xs: Vec<f32> = (0..4000)
            .map(|_| (lo + (hi - lo) * rng.uniform()) as f32)
            .collect();
        let got = cpu::Cpu.unary(op, Array::new(&[xs.len()], Buffer::F32(xs.clone())));
        for (&x, g) in xs.iter().zip(f32s(&got)) {
            let want = reference(x as f64);
            // Tan and the hyperbolics amplify argument error; allow 4 ulp.
            assert!(
                ulps(g, want) <= 4.0,
                "{op:?}({x}) = {g}, want {want} ({} ulp)",
                ulps(g, want)
            );
        }
    }
}

#[test]
fn erf_inv_inverts_erf() {
    let mut rng = Lcg::new(7);
    for _ in 0..2000 {
        let y = rng.uniform() * 2.0 - 1.0;
        let x32 = cpu::erf_inv_f32(y as f32);
        assert!(
            (libm::erf(x32 as f64) - y as f32 as f64).abs() < 2e-6 * (1.0 + x32.abs() as f64),
            "erfinv({y}) = {x32}"
        );
        let x64 = cpu::erf_inv_f64(y);
        assert!((libm::erf(x64) - y).abs() < 1e-15, "erfinv64({y}) = {x64}");
    }
    for y in [1e-12, 1.0 - 1e-12, -(1.0 - 1e-15), 0.999_999] {
        let x = cpu::erf_inv_f64(y);
        // Compare in the tail's own terms: erfc(x) against the exact 1 - y.
        let (back, want) = if y > 0.5 {
            (libm::erfc(x), 1.0 - y)
        } else {
            (libm::erf(x.abs()), y.abs())
        };
        assert!(
            (back - want).abs() <= 1e-13 * want,
            "erfinv64({y}) = {x}: {back} vs {want}"
        );
    }
    assert_eq!(cpu::erf_inv_f32(1.0), f32::INFINITY);
    assert_eq!(cpu::erf_inv_f32(-1.0), f32::NEG_INFINITY);
    assert!(cpu::erf_inv_f32(1.5).is_nan());
    assert_eq!(cpu::erf_inv_f64(0.0), 0.0);
    let a = cpu::Cpu.unary(
        UnaryOp::ErfInv,
        Array::new(&[2], Buffer::F64(vec![0.5, -0.5])),
    );
    assert!((a.get_f64(0).unwrap() - 0.476_936_276_204_469_9).abs() < 1e-15);
    assert_eq!(a.get_f64(1).unwrap(), -a.get_f64(0).unwrap());
}

#[test]
fn convert_semantics() {
    let f = Array::new(
        &[6],
        Buffer::F32(vec![1.9, -1.9, f32::NAN, 1e20, -1e20, 0.0]),
    );
    assert_eq!(
        i32s(&cpu::Cpu.convert(&f, DType::I32)),
        &[1, -1, 0, i32::MAX, i32::MIN, 0]
    );
    assert_eq!(
        bools(&cpu::Cpu.convert(&f, DType::Bool)),
        &[true, true, true, true, true, false]
    );
    let b = Array::new(&[2], Buffer::Bool(vec![true, false]));
    assert_eq!(f32s(&cpu::Cpu.convert(&b, DType::F32)), &[1.0, 0.0]);
    let u = Array::new(&[1], Buffer::U32(vec![u32::MAX]));
    assert_eq!(i32s(&cpu::Cpu.convert(&u, DType::I32)), &[-1]);
    for from in DType::ALL {
        for to in DType::ALL {
            let a = small_array(from, &[2, 3], 3);
            let c = cpu::Cpu.convert(&a, to);
            assert_eq!(c.dtype(), to);
            assert_eq!(c.shape(), &[2, 3]);
            for i in 0..6 {
                let v = a.get_f64(i).unwrap();
                let want = match to {
                    DType::Bool => (v != 0.0) as u8 as f64,
                    DType::U32 if from.is_inexact() => (v.max(0.0) as i64 as u32) as f64,
                    DType::U32 => (v as i64 as u32) as f64,
                    // Floats saturate, integers wrap.
                    DType::U8 if from.is_inexact() => (v as u8) as f64,
                    DType::U16 if from.is_inexact() => (v as u16) as f64,
                    DType::I8 if from.is_inexact() => (v as i8) as f64,
                    DType::I16 if from.is_inexact() => (v as i16) as f64,
                    DType::U8 => (v as i64 as u8) as f64,
                    DType::U16 => (v as i64 as u16) as f64,
                    DType::I8 => (v as i64 as i8) as f64,
                    DType::I16 => (v as i64 as i16) as f64,
                    _ => v,
                };
                assert_eq!(c.get_f64(i).unwrap(), want, "{from} -> {to}");
            }
        }
    }
}

/// The bits of a 16-bit float array.
fn half_bits(a: &Array) -> Vec<u16> {
    match &*a.buffer().unwrap() {
        Buffer::BF16(v) => v.iter().map(|x| x.to_bits()).collect(),
        Buffer::F16(v) => v.iter().map(|x| x.to_bits()).collect(),
        b => panic!("expected a 16-bit float, got {}", b.dtype()),
    }
}

#[test]
fn conversions_to_16_bit_floats_round_once_to_nearest_even() {
    let xs: Vec<f64> = HALF_CASES.iter().map(|c| c.0).collect();
    let f64s = Array::new(&[xs.len()], Buffer::F64(xs.clone()));
    let bf: Vec<u16> = HALF_CASES.iter().map(|c| c.1).collect();
    let h: Vec<u16> = HALF_CASES.iter().map(|c| c.2).collect();
    assert_eq!(
        half_bits(&cpu::Cpu.convert(&f64s, DType::BF16)),
        bf,
        "f64 -> bf16"
    );
    assert_eq!(
        half_bits(&cpu::Cpu.convert(&f64s, DType::F16)),
        h,
        "f64 -> f16"
    );
    // From f32, the cases that f32 holds exactly round the same.
    let exact: Vec<usize> = (0..xs.len())
        .filter(|&i| xs[i] as f32 as f64 == xs[i])
        .collect();
    let singles = Array::new(
        &[exact.len()],
        Buffer::F32(exact.iter().map(|&i| xs[i] as f32).collect()),
    );
    let pick = |v: &[u16]| exact.iter().map(|&i| v[i]).collect::<Vec<_>>();
    assert_eq!(
        half_bits(&cpu::Cpu.convert(&singles, DType::BF16)),
        pick(&bf)
    );
    assert_eq!(half_bits(&cpu::Cpu.convert(&singles, DType::F16)), pick(&h));
    // NaN stays NaN (quiet, sign kept); back to f32 is exact.
    let nan = Array::new(&[2], Buffer::F64(vec![f64::NAN, -f64::NAN]));
    for to in [DType::BF16, DType::F16] {
        let back = cpu::Cpu.convert(&cpu::Cpu.convert(&nan, to), DType::F32);
        assert!(f32s(&back).iter().all(|x| x.is_nan()), "{to}");
        let round = cpu::Cpu.convert(&cpu::Cpu.convert(&f64s, to), DType::F64);
        let again = cpu::Cpu.convert(&round, to);
        assert_eq!(
            half_bits(&again),
            half_bits(&cpu::Cpu.convert(&f64s, to)),
            "{to} round trip"
        );
    }
}

#[test]
fn arithmetic_on_16_bit_floats_rounds_each_result_once_from_f32() {
    // 1 + 2^-8 is a bf16 tie: in f32 the sum is exact, then rounds to even.
    let one = Array::new(&[2], Buffer::BF16(vec![arr_kernels::bf16::ONE; 2]));
    let small = cpu::Cpu.convert(
        &Array::new(&[2], Buffer::F32(vec![1.0 / 256.0, 3.0 / 256.0])),
        DType::BF16,
    );
    let sum = cpu::Cpu.binary(BinaryOp::Add, one.clone(), small.clone());
    assert_eq!(half_bits(&sum), vec![0x3f80, 0x3f82]);
    // A sum of many small terms accumulates in f32, not in bf16 (where
    // 256 + 1 == 256 and the total would stop at 256).
    let ones = Array::new(&[1000], Buffer::BF16(vec![arr_kernels::bf16::ONE; 1000]));
    let total = cpu::Cpu.reduce(arr_kernels::ReduceOp::Sum, &ones, &[0]);
    assert_eq!(total.dtype(), DType::BF16);
    assert_eq!(total.get_f64(0).unwrap(), 1000.0);
    // Comparisons give bool; indices stay i32.
    let lt = cpu::Cpu.binary(BinaryOp::Lt, one, small);
    assert_eq!(bools(&lt), &[false, false]);
}

#[test]
fn every_dtype_binary_arith() {
    for dtype in [DType::I32, DType::I64, DType::U32, DType::F32, DType::F64] {
        let a = small_array(dtype, &[3, 4], 1);
        let b = small_array(dtype, &[4], 2);
        for (op, f) in [
            (BinaryOp::Add, (|x, y| x + y) as fn(f64, f64) -> f64),
            (BinaryOp::Mul, |x, y| x * y),
            (BinaryOp::Max, f64::max),
            (BinaryOp::Min, f64::min),
        ] {
            let got = cpu::Cpu.binary(op, a.clone(), b.clone());
            let (_, want) = naive_binary(&a, &b, f);
            assert_eq!(got.to_f64_vec().unwrap(), want, "{op:?} {dtype}");
        }
        let got = cpu::Cpu.binary(BinaryOp::Ge, a.clone(), b.clone());
        let (_, want) = naive_binary(&a, &b, |x, y| (x >= y) as u8 as f64);
        assert_eq!(got.to_f64_vec().unwrap(), want);
    }
}
