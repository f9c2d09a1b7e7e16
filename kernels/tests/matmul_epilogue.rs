//! Matrix products with an epilogue (`MatmulKernel`) against the product
//! and the epilogue run one after the other: equal bit for bit, on random
//! shapes (row counts not multiples of the panels', empty contractions,
//! batches, transposed operands), float32 and float64, broadcast biases.

mod common;

use arr_kernels::cpu;
use arr_kernels::Backend;
use arr_kernels::{
    Array, BinaryOp, Buffer, DType, DotDims, Kernel, KernelInput, KernelOutput, MatmulKernel,
    MatmulOperand, ScalarOp, UnaryOp,
};
use common::{bits, size, Lcg};
use proptest::prelude::*;

/// Values in [-1, 1) of `dtype`.
fn array(dtype: DType, shape: &[usize], seed: u64) -> Array {
    let mut r = Lcg::new(seed);
    let v: Vec<f64> = (0..size(shape)).map(|_| r.uniform() * 2.0 - 1.0).collect();
    let buf = match dtype {
        DType::F32 => Buffer::F32(v.iter().map(|&x| x as f32).collect()),
        _ => Buffer::F64(v),
    };
    Array::new(shape, buf)
}

/// The epilogue `t = tanh(p + bias); (t, max(t * 2 - p, 0))` over a product
/// of `shape`; `bias` is `(n,)` or `(m, 1)` (the last two axes).
fn epilogue(dtype: DType, shape: &[usize], bias: &[usize], product: usize) -> Kernel {
    let p = KernelInput::broadcast(dtype, shape, shape);
    let b = KernelInput::broadcast(dtype, bias, shape);
    let (ip, ib) = if product == 0 { (0, 1) } else { (1, 0) };
    let mut inputs = vec![p.clone(), b.clone()];
    inputs[ip] = p;
    inputs[ib] = b;
    Kernel {
        shape: shape.to_vec(),
        dtype,
        inputs,
        body: vec![
            ScalarOp::Load(ip),
            ScalarOp::Load(ib),
            ScalarOp::Binary(BinaryOp::Add, 0, 1),
            ScalarOp::Unary(UnaryOp::Tanh, 2),
            ScalarOp::Const(2.0),
            ScalarOp::Binary(BinaryOp::Mul, 3, 4),
            ScalarOp::Binary(BinaryOp::Sub, 5, 0),
            ScalarOp::Const(0.0),
            ScalarOp::Binary(BinaryOp::Max, 6, 7),
        ],
        outputs: vec![
            KernelOutput {
                reg: 3,
                reduce: None,
            },
            KernelOutput {
                reg: 8,
                reduce: None,
            },
        ],
        reduce_axes: 0,
    }
}

/// `batch x m x k` times `batch x k x n` (rhs stored `n x k` when
/// `rhs_t`), with the epilogue; checked against dot_general + run_kernel.
#[allow(clippy::too_many_arguments)]
fn check(
    dtype: DType,
    batch: Option<usize>,
    m: usize,
    k: usize,
    n: usize,
    rhs_t: bool,
    col_bias: bool,
    full_bias: bool,
    product: usize,
    seed: u64,
) {
    let nb = batch.map_or(0, |_| 1);
    let lead: Vec<usize> = batch.into_iter().collect();
    let lhs_shape: Vec<usize> = lead.iter().copied().chain([m, k]).collect();
    let rhs_shape: Vec<usize> = if rhs_t {
        lead.iter().copied().chain([n, k]).collect()
    } else {
        lead.iter().copied().chain([k, n]).collect()
    };
    let dims = DotDims {
        lhs_batch: (0..nb).collect(),
        rhs_batch: (0..nb).collect(),
        lhs_contract: vec![nb + 1],
        rhs_contract: vec![if rhs_t { nb + 1 } else { nb }],
    };
    let out_shape: Vec<usize> = lead.iter().copied().chain([m, n]).collect();
    let bias_shape = match (full_bias, col_bias) {
        (true, _) => out_shape.clone(),
        (false, true) => vec![m, 1],
        (false, false) => vec![n],
    };
    let a = array(dtype, &lhs_shape, seed);
    let b = array(dtype, &rhs_shape, seed + 1);
    let bias = array(dtype, &bias_shape, seed + 2);
    let mk = MatmulKernel {
        lhs: MatmulOperand {
            dtype,
            shape: lhs_shape.clone(),
        },
        rhs: MatmulOperand {
            dtype,
            shape: rhs_shape.clone(),
        },
        dims: dims.clone(),
        epilogue: epilogue(dtype, &out_shape, &bias_shape, product),
        product,
    };
    assert!(mk.is_well_formed());
    // A full-size bias held nowhere else gives its buffer to an output.
    let (got, reused) = if full_bias {
        let own = common::fresh(&bias);
        let at = own.buffer_address().unwrap();
        let got = cpu::Cpu.matmul_kernel(&mk, vec![a.clone(), b.clone(), own]);
        let reused = got[0].buffer_address().unwrap() == at;
        (got, reused)
    } else {
        let got = cpu::Cpu.matmul_kernel(&mk, vec![a.clone(), b.clone(), bias.clone()]);
        (got, true)
    };
    assert!(reused, "the unshared bias's buffer was not reused");
    let prod = cpu::Cpu.dot_general(&a, &b, &dims);
    let ins: Vec<Array> = if product == 0 {
        vec![prod, bias.clone()]
    } else {
        vec![bias.clone(), prod]
    };
    let want = cpu::Cpu.run_kernel(&mk.epilogue, ins);
    assert_eq!(got.len(), 2);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.shape(), w.shape());
        assert_eq!(g.dtype(), dtype);
        assert!(
            bits(g) == bits(w),
            "{dtype} batch {batch:?} {m}x{k}x{n} rhs_t {rhs_t}: fused and unfused differ"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn epilogue_equals_product_then_kernel(
        f64_ in any::<bool>(),
        batch in prop::option::of(1usize..4),
        m in 1usize..300,
        k in 0usize..160,
        n in 1usize..300,
        rhs_t in any::<bool>(),
        col_bias in any::<bool>(),
        full_bias in any::<bool>(),
        product in 0usize..2,
        seed in 0u64..1000,
    ) {
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        check(dtype, batch, m, k, n, rhs_t, col_bias, full_bias, product, seed);
    }
}

/// Sizes that take every path: one small product, row panels on all
/// threads (the last one shorter), BLAS, many small batches, a few large.
#[test]
fn epilogue_on_every_path() {
    for dtype in [DType::F32, DType::F64] {
        for (batch, m, k, n) in [
            (None, 3, 5, 4),
            (None, 1000, 64, 700),
            (None, 517, 300, 130),
            (None, 64, 512, 2000),
            (Some(12), 50, 40, 60),
            (Some(2), 300, 200, 150),
        ] {
            check(dtype, batch, m, k, n, false, false, false, 0, 7);
            check(dtype, batch, m, k, n, true, true, false, 1, 8);
            check(dtype, batch, m, k, n, false, false, true, 1, 9);
        }
    }
}

/// The same sizes through matrixmultiply's row panels (where a BLAS is
/// loaded, large products above went to it): this test binary again, in a
/// child process with the BLAS off and three threads.
#[test]
fn epilogue_on_every_path_without_blas() {
    if std::env::var("ARR_BLAS").as_deref() == Ok("off") {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["epilogue_on_every_path", "--exact", "--test-threads=1"])
        .env("ARR_BLAS", "off")
        .env("RAYON_NUM_THREADS", "3")
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
