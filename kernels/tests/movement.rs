//! Data movement, dot_general, gather/scatter, sort and threefry against naive references.

mod common;

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{Array, Buffer, DType, DotDims, ScatterMode};
use common::*;
use proptest::prelude::*;

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..5)
}

/// A random permutation of 0..n from a seed.
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    let mut r = Lcg::new(seed);
    for i in (1..n).rev() {
        p.swap(i, r.next_u32() as usize % (i + 1));
    }
    p
}

proptest! {
    #[test]
    fn transpose_matches_naive(shape in shape_strategy(), seed in 0u64..1000) {
        let a = i32_array(&shape, seed, -100, 100);
        let perm = permutation(shape.len(), seed);
        let got = cpu::Cpu.transpose(&a, &perm);
        let oshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        prop_assert_eq!(got.shape(), &oshape[..]);
        for i in 0..got.len() {
            let oidx = unravel(i, &oshape);
            let mut idx = vec![0; shape.len()];
            for (k, &p) in perm.iter().enumerate() {
                idx[p] = oidx[k];
            }
            prop_assert_eq!(got.get_f64(i).unwrap(), a.get_f64(ravel(&idx, &shape)).unwrap());
        }
    }

    #[test]
    fn slice_and_rev_match_naive(shape in shape_strategy(), seed in 0u64..1000) {
        let a = f32_array(&shape, seed);
        let mut r = Lcg::new(seed);
        let mut start = vec![];
        let mut limit = vec![];
        let mut stride = vec![];
        for &n in &shape {
            let s = r.next_u32() as usize % (n + 1);
            let l = s + r.next_u32() as usize % (n - s + 1);
            start.push(s);
            limit.push(l);
            stride.push(1 + r.next_u32() as usize % 3);
        }
        let got = cpu::Cpu.slice(&a, &start, &limit, &stride);
        let oshape: Vec<usize> = (0..shape.len()).map(|d| (limit[d] - start[d]).div_ceil(stride[d])).collect();
        prop_assert_eq!(got.shape(), &oshape[..]);
        for i in 0..got.len() {
            let idx: Vec<usize> = unravel(i, &oshape).iter().enumerate().map(|(d, &k)| start[d] + k * stride[d]).collect();
            prop_assert_eq!(got.get_f64(i).unwrap(), a.get_f64(ravel(&idx, &shape)).unwrap());
        }
        let axes: Vec<usize> = (0..shape.len()).filter(|_| r.next_u32() & 1 == 1).collect();
        let got = cpu::Cpu.rev(&a, &axes);
        prop_assert_eq!(got.shape(), &shape[..]);
        for i in 0..got.len() {
            let mut idx = unravel(i, &shape);
            for &d in &axes {
                idx[d] = shape[d] - 1 - idx[d];
            }
            prop_assert_eq!(got.get_f64(i).unwrap(), a.get_f64(ravel(&idx, &shape)).unwrap());
        }
    }

    #[test]
    fn broadcast_pad_concat_match_naive(shape in prop::collection::vec(0usize..4, 1..4), seed in 0u64..1000) {
        let mut r = Lcg::new(seed);
        // broadcast_in_dim: put the input axes at increasing output positions, some as size 1.
        let small: Vec<usize> = shape.iter().map(|&n| if r.next_u32() & 1 == 1 { 1 } else { n }).collect();
        let a = i32_array(&small, seed, -9, 9);
        let out_shape: Vec<usize> = [2].iter().copied().chain(shape.iter().copied()).collect();
        let dims: Vec<usize> = (1..=shape.len()).collect();
        let got = cpu::Cpu.broadcast_in_dim(&a, &out_shape, &dims);
        prop_assert_eq!(got.shape(), &out_shape[..]);
        for i in 0..got.len() {
            let oidx = unravel(i, &out_shape);
            let idx: Vec<usize> = (0..small.len()).map(|d| if small[d] == 1 { 0 } else { oidx[d + 1] }).collect();
            prop_assert_eq!(got.get_f64(i).unwrap(), a.get_f64(ravel(&idx, &small)).unwrap());
        }
        // pad
        let b = i32_array(&shape, seed + 1, -9, 9);
        let lo: Vec<usize> = shape.iter().map(|_| r.next_u32() as usize % 3).collect();
        let hi: Vec<usize> = shape.iter().map(|_| r.next_u32() as usize % 3).collect();
        let interior: Vec<usize> = shape.iter().map(|_| r.next_u32() as usize % 3).collect();
        let value = Array::new(&[], Buffer::I32(vec![100]));
        let got = cpu::Cpu.pad(&b, &value, &lo, &hi, &interior);
        let pshape: Vec<usize> = (0..shape.len()).map(|d| lo[d] + hi[d] + shape[d] + shape[d].saturating_sub(1) * interior[d]).collect();
        prop_assert_eq!(got.shape(), &pshape[..]);
        let mut want = vec![100.0; size(&pshape)];
        for i in 0..b.len() {
            let idx = unravel(i, &shape);
            let p: Vec<usize> = (0..shape.len()).map(|d| lo[d] + idx[d] * (interior[d] + 1)).collect();
            want[ravel(&p, &pshape)] = b.get_f64(i).unwrap();
        }
        prop_assert_eq!(got.to_f64_vec().unwrap(), want);
        // concatenate along a random axis
        let axis = r.next_u32() as usize % shape.len();
        let mut s2 = shape.clone();
        s2[axis] = r.next_u32() as usize % 3;
        let c = i32_array(&s2, seed + 2, -9, 9);
        let got = cpu::Cpu.concatenate(&[b.clone(), c.clone()], axis);
        let mut cshape = shape.clone();
        cshape[axis] += s2[axis];
        prop_assert_eq!(got.shape(), &cshape[..]);
        for i in 0..got.len() {
            let mut idx = unravel(i, &cshape);
            let v = if idx[axis] < shape[axis] { b.get_f64(ravel(&idx, &shape)).unwrap() } else { idx[axis] -= shape[axis]; c.get_f64(ravel(&idx, &s2)).unwrap() };
            prop_assert_eq!(got.get_f64(i).unwrap(), v);
        }
    }

    #[test]
    fn dot_general_matches_naive(nb in 0usize..3, nm in 0usize..3, nk in 0usize..3, nn in 0usize..3, seed in 0u64..1000) {
        let mut r = Lcg::new(seed);
        let mut dim = || 1 + r.next_u32() as usize % 3;
        let batch: Vec<usize> = (0..nb.min(1)).map(|_| dim()).collect();
        let m: Vec<usize> = (0..nm).map(|_| dim()).collect();
        let k: Vec<usize> = (0..nk).map(|_| dim()).collect();
        let n: Vec<usize> = (0..nn).map(|_| dim()).collect();
        // Canonical layouts [batch, m, k] and [batch, k, n], then permuted.
        let lshape: Vec<usize> = batch.iter().chain(&m).chain(&k).copied().collect();
        let rshape: Vec<usize> = batch.iter().chain(&k).chain(&n).copied().collect();
        let lperm = permutation(lshape.len(), seed);
        let rperm = permutation(rshape.len(), seed + 1);
        let inv = |perm: &[usize]| { let mut v = vec![0; perm.len()]; for (i, &p) in perm.iter().enumerate() { v[p] = i; } v };
        let (linv, rinv) = (inv(&lperm), inv(&rperm));
        for dtype in [DType::F32, DType::F64, DType::I32] {
            let lc = cpu::Cpu.convert(&i32_array(&lshape, seed + 2, -4, 4), dtype);
            let rc = cpu::Cpu.convert(&i32_array(&rshape, seed + 3, -4, 4), dtype);
            let l = cpu::Cpu.transpose(&lc, &lperm);
            let rr = cpu::Cpu.transpose(&rc, &rperm);
            let nbt = batch.len();
            let dims = DotDims {
                lhs_batch: (0..nbt).map(|d| linv[d]).collect(),
                rhs_batch: (0..nbt).map(|d| rinv[d]).collect(),
                lhs_contract: (0..k.len()).map(|d| linv[nbt + m.len() + d]).collect(),
                rhs_contract: (0..k.len()).map(|d| rinv[nbt + d]).collect(),
            };
            let got = cpu::Cpu.dot_general(&l, &rr, &dims);
            // Free axes keep their order in the permuted operand.
            let mut lfree: Vec<usize> = (0..m.len()).map(|d| linv[nbt + d]).collect();
            lfree.sort();
            let mut rfree: Vec<usize> = (0..n.len()).map(|d| rinv[nbt + k.len() + d]).collect();
            rfree.sort();
            let oshape: Vec<usize> = batch.iter().copied().chain(lfree.iter().map(|&d| l.shape()[d])).chain(rfree.iter().map(|&d| rr.shape()[d])).collect();
            prop_assert_eq!(got.shape(), &oshape[..]);
            for i in 0..got.len() {
                let oidx = unravel(i, &oshape);
                let mut want = 0.0;
                for kk in 0..size(&k) {
                    let kidx = unravel(kk, &k);
                    let mut li = vec![0; l.ndim()];
                    let mut ri = vec![0; rr.ndim()];
                    for d in 0..nbt { li[dims.lhs_batch[d]] = oidx[d]; ri[dims.rhs_batch[d]] = oidx[d]; }
                    for (j, &d) in lfree.iter().enumerate() { li[d] = oidx[nbt + j]; }
                    for (j, &d) in rfree.iter().enumerate() { ri[d] = oidx[nbt + lfree.len() + j]; }
                    for d in 0..k.len() { li[dims.lhs_contract[d]] = kidx[d]; ri[dims.rhs_contract[d]] = kidx[d]; }
                    want += l.get_f64(ravel(&li, l.shape())).unwrap() * rr.get_f64(ravel(&ri, rr.shape())).unwrap();
                }
                prop_assert_eq!(got.get_f64(i).unwrap(), want, "{} at {}", dtype, i);
            }
        }
    }

    #[test]
    fn gather_scatter_match_naive(shape in prop::collection::vec(0usize..4, 1..4), ishape in prop::collection::vec(0usize..3, 0..3), axis_pick in 0usize..3, seed in 0u64..1000, wide in any::<bool>()) {
        let axis = axis_pick % shape.len();
        let a = i32_array(&shape, seed, -9, 9);
        let n = shape[axis];
        // Include out-of-range indices to exercise clamping and dropping.
        let idx = if wide { i64_array(&ishape, seed + 1, 0, n as i64 + 1) } else { i32_array(&ishape, seed + 1, 0, n as i32 + 1) };
        let oshape: Vec<usize> = shape[..axis].iter().chain(&ishape).chain(&shape[axis + 1..]).copied().collect();
        let got = cpu::Cpu.gather(&a, &idx, axis);
        prop_assert_eq!(got.shape(), &oshape[..]);
        let k = ishape.len();
        for i in 0..got.len() {
            let oidx = unravel(i, &oshape);
            let j = ravel(&oidx[axis..axis + k], &ishape);
            let t = (idx.buffer().unwrap().get_i64(j) as usize).min(n.saturating_sub(1));
            let mut src: Vec<usize> = oidx[..axis].to_vec();
            src.push(t);
            src.extend_from_slice(&oidx[axis + k..]);
            let want = if n == 0 { 0.0 } else { a.get_f64(ravel(&src, &shape)).unwrap() };
            prop_assert_eq!(got.get_f64(i).unwrap(), want);
        }
        let upd = i32_array(&oshape, seed + 2, -9, 9);
        for mode in [ScatterMode::Set, ScatterMode::Add] {
            let got = cpu::Cpu.scatter(&a, &idx, &upd, axis, mode);
            let mut want = a.to_f64_vec().unwrap();
            for i in 0..upd.len() {
                let oidx = unravel(i, &oshape);
                let j = ravel(&oidx[axis..axis + k], &ishape);
                let t = idx.buffer().unwrap().get_i64(j) as usize;
                if t >= n { continue; }
                let mut dst: Vec<usize> = oidx[..axis].to_vec();
                dst.push(t);
                dst.extend_from_slice(&oidx[axis + k..]);
                let p = ravel(&dst, &shape);
                want[p] = if mode == ScatterMode::Set { upd.get_f64(i).unwrap() } else { want[p] + upd.get_f64(i).unwrap() };
            }
            prop_assert_eq!(got.to_f64_vec().unwrap(), want);
        }
    }

    #[test]
    fn sort_and_argsort(shape in prop::collection::vec(0usize..6, 1..4), axis_pick in 0usize..3, seed in 0u64..1000) {
        let axis = axis_pick % shape.len();
        let mut a = f32_array(&shape, seed);
        // Ties and NaNs.
        let v: Vec<f32> = (0..a.len()).map(|i| if i % 7 == 3 { f32::NAN } else { a.get_f64(i).unwrap().round() as f32 }).collect();
        a = Array::new(&shape, Buffer::F32(v));
        let s = cpu::Cpu.sort(&a, axis);
        let order = cpu::Cpu.argsort(&a, axis);
        prop_assert_eq!(order.dtype(), DType::I32);
        let mut lane_shape = shape.clone();
        lane_shape[axis] = 1;
        for o in 0..size(&lane_shape) {
            let base = unravel(o, &lane_shape);
            let at = |k: usize| { let mut i = base.clone(); i[axis] = k; ravel(&i, &shape) };
            let mut lane: Vec<(f64, usize)> = (0..shape[axis]).map(|k| (a.get_f64(at(k)).unwrap(), k)).collect();
            lane.sort_by(|x, y| match (x.0.is_nan(), y.0.is_nan()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => x.0.partial_cmp(&y.0).unwrap(),
            });
            for (k, &(v, src)) in lane.iter().enumerate() {
                let got = s.get_f64(at(k)).unwrap();
                prop_assert!(got == v || (got.is_nan() && v.is_nan()));
                prop_assert_eq!(order.get_f64(at(k)).unwrap(), src as f64);
            }
        }
    }
}

#[test]
fn big_transpose_and_sgemm() {
    let a = f32_array(&[70, 90], 1);
    let t = cpu::Cpu.transpose(&a, &[1, 0]);
    for i in 0..70 {
        for j in 0..90 {
            assert_eq!(
                t.get_f64(j * 70 + i).unwrap(),
                a.get_f64(i * 90 + j).unwrap()
            );
        }
    }
    let b = f32_array(&[90, 40], 2);
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![1],
        rhs_contract: vec![0],
    };
    let c = cpu::Cpu.dot_general(&a, &b, &dims);
    assert_eq!(c.shape(), &[70, 40]);
    for i in 0..70 {
        for j in 0..40 {
            let want: f64 = (0..90)
                .map(|k| a.get_f64(i * 90 + k).unwrap() * b.get_f64(k * 40 + j).unwrap())
                .sum();
            assert!((c.get_f64(i * 40 + j).unwrap() - want).abs() < 1e-3);
        }
    }
    // Zero-size contraction gives zeros; zero-size free axes give empty results.
    let e1 = Array::new(&[3, 0], Buffer::F32(vec![]));
    let e2 = Array::new(&[0, 2], Buffer::F32(vec![]));
    assert_eq!(
        cpu::Cpu.dot_general(&e1, &e2, &dims).to_f64_vec().unwrap(),
        [0.0; 6]
    );
    let bd = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![0],
        rhs_contract: vec![0],
    };
    let v = Array::new(&[3], Buffer::Bool(vec![true, false, true]));
    let w = Array::new(&[3], Buffer::Bool(vec![false, false, true]));
    assert_eq!(bools(&cpu::Cpu.dot_general(&v, &w, &bd)), &[true]);
}

#[test]
fn iota_and_zero_d() {
    let i = cpu::Cpu.iota(DType::I32, &[2, 3], 1);
    assert_eq!(i32s(&i), &[0, 1, 2, 0, 1, 2]);
    let f = cpu::Cpu.iota(DType::F32, &[3, 2], 0);
    assert_eq!(f32s(&f), &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
    let s = Array::scalar_f32(5.0);
    assert_eq!(cpu::Cpu.transpose(&s, &[]).to_f64_vec().unwrap(), [5.0]);
    assert_eq!(cpu::Cpu.rev(&s, &[]).to_f64_vec().unwrap(), [5.0]);
    assert_eq!(
        cpu::Cpu.slice(&s, &[], &[], &[]).to_f64_vec().unwrap(),
        [5.0]
    );
    assert_eq!(
        cpu::Cpu
            .broadcast_in_dim(&s, &[2, 2], &[])
            .to_f64_vec()
            .unwrap(),
        [5.0; 4]
    );
    let zero = Array::scalar_f32(0.0);
    assert_eq!(
        cpu::Cpu.pad(&s, &zero, &[], &[], &[]).to_f64_vec().unwrap(),
        [5.0]
    );
    let d = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![],
        rhs_contract: vec![],
    };
    assert_eq!(
        cpu::Cpu.dot_general(&s, &s, &d).to_f64_vec().unwrap(),
        [25.0]
    );
}

#[test]
fn threefry_known_answers() {
    let u = |x: u32| Array::new(&[], Buffer::U32(vec![x]));
    for (k0, k1, x0, x1, y0, y1) in [
        (0, 0, 0, 0, 0x6b200159u32, 0x99ba4efeu32),
        (
            0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7,
        ),
        (
            0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0,
        ),
    ] {
        let (a, b) = cpu::Cpu.threefry2x32(&u(k0), &u(k1), &u(x0), &u(x1));
        assert_eq!(
            (
                a.buffer().unwrap().get_i64(0) as u32,
                b.buffer().unwrap().get_i64(0) as u32
            ),
            (y0, y1)
        );
        assert_eq!(cpu::threefry_block(k0, k1, x0, x1), (y0, y1));
    }
    // Elementwise over arrays (large enough to go parallel), keys broadcast.
    let n = 100_000u32;
    let x0 = Array::new(&[n as usize], Buffer::U32((0..n).collect()));
    let x1 = Array::new(&[n as usize], Buffer::U32((0..n).map(|i| i * 3).collect()));
    let (a, b) = cpu::Cpu.threefry2x32(&u(7), &u(9), &x0, &x1);
    for i in [0usize, 1, 4097, 99_999] {
        let want = cpu::threefry_block(7, 9, i as u32, i as u32 * 3);
        assert_eq!(
            (
                a.buffer().unwrap().get_i64(i) as u32,
                b.buffer().unwrap().get_i64(i) as u32
            ),
            want
        );
    }
}

#[test]
fn large_inputs_take_the_parallel_paths() {
    use arr_kernels::{ReduceOp, ScanOp};
    let a = i32_array(&[200, 300], 11, -5, 5);
    for axis in [0, 1] {
        for reverse in [false, true] {
            let got = cpu::Cpu.scan(ScanOp::Sum, &a, axis, reverse);
            for i in (0..a.len()).step_by(997) {
                let idx = unravel(i, a.shape());
                let range: Vec<usize> = if reverse {
                    (idx[axis]..a.shape()[axis]).collect()
                } else {
                    (0..=idx[axis]).collect()
                };
                let want: f64 = range
                    .iter()
                    .map(|&k| {
                        let mut j = idx.clone();
                        j[axis] = k;
                        a.get_f64(ravel(&j, a.shape())).unwrap()
                    })
                    .sum();
                assert_eq!(got.get_f64(i).unwrap(), want);
            }
        }
    }
    let idx = i32_array(&[500], 12, 0, 199);
    let g = cpu::Cpu.gather(&a, &idx, 0);
    assert_eq!(g.shape(), &[500, 300]);
    for (j, &r) in i32s(&idx).iter().enumerate().step_by(37) {
        assert_eq!(
            g.get_f64(j * 300 + 7).unwrap(),
            a.get_f64(r as usize * 300 + 7).unwrap()
        );
    }
    let upd = i32_array(&[200, 500], 13, 1, 1);
    let cols = i32_array(&[500], 14, 0, 299);
    let s = cpu::Cpu.scatter(&a, &cols, &upd, 1, ScatterMode::Add);
    let total = |x: &Array| {
        cpu::Cpu
            .reduce(ReduceOp::Sum, &cpu::Cpu.convert(x, DType::I64), &[0, 1])
            .get_f64(0)
            .unwrap()
    };
    assert_eq!(total(&s), total(&a) + 200.0 * 500.0);
    let sorted = cpu::Cpu.sort(&a, 0);
    let order = cpu::Cpu.argsort(&a, 0);
    for c in (0..300).step_by(29) {
        for r in 1..200 {
            assert!(
                sorted.get_f64(r * 300 + c).unwrap() >= sorted.get_f64((r - 1) * 300 + c).unwrap()
            );
            let src = order.get_f64(r * 300 + c).unwrap() as usize;
            assert_eq!(
                sorted.get_f64(r * 300 + c).unwrap(),
                a.get_f64(src * 300 + c).unwrap()
            );
        }
    }
    let cond = bool_array(&[200, 300], 15);
    let sel = cpu::Cpu.select(&cond, &a, &Array::new(&[300], Buffer::I32(vec![-100; 300])));
    for i in (0..a.len()).step_by(101) {
        assert_eq!(
            sel.get_f64(i).unwrap(),
            if bools(&cond)[i] {
                a.get_f64(i).unwrap()
            } else {
                -100.0
            }
        );
    }
    let f = cpu::Cpu.convert(&a, DType::F64);
    assert_eq!(f.to_f64_vec().unwrap(), a.to_f64_vec().unwrap());
}

/// Large outputs may reuse the storage of dropped arrays: every kernel that
/// does so must overwrite every element.
#[test]
fn recycled_buffers_are_fully_overwritten() {
    let n = 1 << 21;
    let poison_len = |len: usize| {
        // As many as the pool keeps, so every pooled buffer is poisoned.
        for _ in 0..32 {
            drop(Array::new(&[len], Buffer::F32(vec![f32::NAN; len])));
        }
    };
    let poison = || poison_len(n);
    let x = f32_array(&[n / 512, 512], 21);
    let row = f32_array(&[512], 22);
    poison();
    let y = cpu::Cpu.binary(arr_kernels::BinaryOp::Add, x.clone(), row.clone());
    for i in 0..n {
        assert_eq!(
            y.get_f64(i).unwrap(),
            (x.get_f64(i).unwrap() as f32 + row.get_f64(i % 512).unwrap() as f32) as f64
        );
    }
    poison();
    let r = cpu::Cpu.rev(&x, &[0, 1]);
    assert!((0..n).all(|i| r.get_f64(i).unwrap() == x.get_f64(n - 1 - i).unwrap()));
    poison();
    let t = cpu::Cpu.transpose(&x, &[1, 0]);
    assert_eq!(
        cpu::Cpu.transpose(&t, &[1, 0]).to_f64_vec().unwrap(),
        x.to_f64_vec().unwrap()
    );
    poison();
    let e = cpu::Cpu.unary(arr_kernels::UnaryOp::Neg, x.clone());
    assert!((0..n).all(|i| e.get_f64(i).unwrap() == -x.get_f64(i).unwrap()));
    poison();
    let idx = Array::new(
        &[n / 512],
        Buffer::I32((0..(n / 512) as i32).rev().collect()),
    );
    let g = cpu::Cpu.gather(&x, &idx, 0);
    assert_eq!(
        g.to_f64_vec().unwrap(),
        cpu::Cpu.rev(&x, &[0]).to_f64_vec().unwrap()
    );
    poison_len(n / 2);
    let ones = Array::new(&[512, 1], Buffer::F32(vec![1.0; 512]));
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![1],
        rhs_contract: vec![0],
    };
    let big = cpu::Cpu.dot_general(
        &cpu::Cpu.transpose(&x, &[1, 0]),
        &Array::new(&[n / 512, 2048], Buffer::F32(vec![0.0; n * 4])),
        &dims,
    );
    assert!(big.to_f64_vec().unwrap().iter().all(|&v| v == 0.0));
    let s = cpu::Cpu.dot_general(&x, &ones, &dims);
    assert!(s.to_f64_vec().unwrap().iter().all(|v| v.is_finite()));
}

#[test]
fn batched_and_large_transposes() {
    for (shape, perm) in [
        (vec![3, 40, 50], vec![0, 2, 1]),
        (vec![40, 3, 50], vec![1, 2, 0]),
        (vec![9, 70], vec![1, 0]),
        (vec![2, 3, 33, 17], vec![1, 0, 3, 2]),
        (vec![300, 200], vec![1, 0]),
    ] {
        let a = i32_array(&shape, 5, -1000, 1000);
        let got = cpu::Cpu.transpose(&a, &perm);
        let oshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        for i in 0..got.len() {
            let oidx = unravel(i, &oshape);
            let mut idx = vec![0; shape.len()];
            for (k, &p) in perm.iter().enumerate() {
                idx[p] = oidx[k];
            }
            assert_eq!(
                got.get_f64(i).unwrap(),
                a.get_f64(ravel(&idx, &shape)).unwrap(),
                "{shape:?} {perm:?}"
            );
        }
    }
}
