//! Throwaway timing harness: `cargo run --release -p arr-kernels --example timing`.

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{Array, BinaryOp, Buffer, DotDims, ReduceOp, UnaryOp};
use std::time::Instant;

fn time(name: &str, reps: usize, mut f: impl FnMut()) {
    f();
    let mut best = f64::INFINITY;
    let mut total = 0.0;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        let dt = t.elapsed().as_secs_f64();
        best = best.min(dt);
        total += dt;
    }
    println!(
        "{name:40} best {:9.3} ms  mean {:9.3} ms",
        best * 1e3,
        total / reps as f64 * 1e3
    );
}

fn main() {
    let n = 10_000_000;
    let x = Array::new(
        &[n],
        Buffer::F32((0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect()),
    );
    let s = Array::scalar_f32(2.0);
    time("binary mul x*x (10M f32)", 20, || {
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Mul, x.clone(), x.clone()));
    });
    time("binary add t+s fresh (10M f32)", 20, || {
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Add, x.clone(), s.clone()));
    });
    let mut copies: Vec<Array> = (0..21)
        .map(|_| Array::new(&[n], (*x.buffer().unwrap()).clone()))
        .collect();
    time("binary add t+s in place (10M f32)", 20, || {
        let t = copies.pop().unwrap();
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Add, t, s.clone()));
    });
    time("unary exp (10M f32)", 10, || {
        std::hint::black_box(cpu::Cpu.unary(UnaryOp::Exp, x.clone()));
    });
    time("reduce sum all (10M f32)", 20, || {
        std::hint::black_box(cpu::Cpu.reduce(ReduceOp::Sum, &x, &[0]));
    });
    let m = x.reshape(&[10_000, 1000]);
    time("reduce sum axis 1 [10000,1000]", 20, || {
        std::hint::black_box(cpu::Cpu.reduce(ReduceOp::Sum, &m, &[1]));
    });
    time("reduce sum axis 0 [10000,1000]", 20, || {
        std::hint::black_box(cpu::Cpu.reduce(ReduceOp::Sum, &m, &[0]));
    });
    time("reduce max all (10M f32)", 20, || {
        std::hint::black_box(cpu::Cpu.reduce(ReduceOp::Max, &m, &[0, 1]));
    });
    let m2 = x.reshape(&[2500, 4000]);
    time("transpose [2500,4000]", 10, || {
        std::hint::black_box(cpu::Cpu.transpose(&m2, &[1, 0]));
    });
    let row = Array::new(&[1000], Buffer::F32(vec![1.0; 1000]));
    time("broadcast add [10000,1000]+[1000]", 20, || {
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Add, m.clone(), row.clone()));
    });
    let k = 1024;
    let a = Array::new(
        &[k, k],
        Buffer::F32((0..k * k).map(|i| (i % 13) as f32).collect()),
    );
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![1],
        rhs_contract: vec![0],
    };
    time("sgemm 1024^2", 10, || {
        std::hint::black_box(cpu::Cpu.dot_general(&a, &a, &dims));
    });
    let small = Array::new(&[100], Buffer::F32(vec![1.5; 100]));
    per_call("binary mul 100 elems", || {
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Mul, small.clone(), small.clone()));
    });
    let two = Array::scalar_f32(2.0);
    per_call("binary mul 100 elems by scalar", || {
        std::hint::black_box(cpu::Cpu.binary(BinaryOp::Mul, small.clone(), two.clone()));
    });
    per_call("reduce sum 100 elems", || {
        std::hint::black_box(cpu::Cpu.reduce(ReduceOp::Sum, &small, &[0]));
    });
    per_call("unary neg 100 elems", || {
        std::hint::black_box(cpu::Cpu.unary(UnaryOp::Neg, small.clone()));
    });
    per_call("Array::new 100 elems (baseline)", || {
        std::hint::black_box(Array::new(&[100], Buffer::F32(vec![0.0; 100])));
    });
}

fn per_call(name: &str, mut f: impl FnMut()) {
    let reps = 1_000_000;
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    println!(
        "{name:40} {:9.1} ns/call",
        t.elapsed().as_secs_f64() * 1e9 / reps as f64
    );
}
