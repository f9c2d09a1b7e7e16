//! Snapshots of rendered CUDA C and OpenCL C (`UPDATE_EXPECT=1` rewrites
//! them after review), and the property that both dialects come from one
//! rendering: the texts differ only in the dialect table's spellings.

use arr_kernels::gpu::render::{template, Dialect, Loop, Out, Split, View};
use arr_kernels::{BinaryOp, DType, ReduceOp, ScalarOp, UnaryOp};
use expect_test::expect_file;

/// `tanh(x + b) * 2` with `b` broadcast along rows and a strided `x`, and
/// its row sums: a fused elementwise kernel and a reduction of it.
fn fused(reduce: bool) -> Loop {
    let space = vec![4, 8];
    Loop {
        space: space.clone(),
        reg: DType::F32,
        inputs: vec![
            View {
                dtype: DType::F32,
                offset: 0,
                strides: vec![1, 4],
            },
            View::broadcast(DType::F32, &[8], &space),
        ],
        body: vec![
            ScalarOp::Load(0),
            ScalarOp::Load(1),
            ScalarOp::Binary(BinaryOp::Add, 0, 1),
            ScalarOp::Unary(UnaryOp::Tanh, 2),
            ScalarOp::Const(2.0),
            ScalarOp::Binary(BinaryOp::Mul, 3, 4),
        ],
        outputs: vec![Out {
            reg: 5,
            reduce: reduce.then_some(ReduceOp::Sum),
            dtype: DType::F32,
            view: None,
        }],
        reduce_axes: reduce as usize,
    }
}

#[test]
fn fused_elementwise_kernel() {
    let one = Split { parts: 1, chunk: 8 };
    expect_file!["snapshots/elementwise.cu"]
        .assert_eq(&fused(false).render(Dialect::Cuda, one).text);
    expect_file!["snapshots/elementwise.cl"]
        .assert_eq(&fused(false).render(Dialect::OpenCl, one).text);
}

#[test]
fn reduction_kernel() {
    let one = Split { parts: 1, chunk: 8 };
    expect_file!["snapshots/reduce.cu"].assert_eq(&fused(true).render(Dialect::Cuda, one).text);
    expect_file!["snapshots/reduce.cl"].assert_eq(&fused(true).render(Dialect::OpenCl, one).text);
}

#[test]
fn matrix_product_kernel() {
    expect_file!["snapshots/gemm.cu"]
        .assert_eq(&template::gemm(Dialect::Cuda, DType::F32, None).text);
    expect_file!["snapshots/gemm.cl"]
        .assert_eq(&template::gemm(Dialect::OpenCl, DType::F32, None).text);
}

#[test]
fn reductions_shuffle_on_cuda_and_use_local_memory_on_opencl() {
    let one = Split { parts: 1, chunk: 8 };
    let cuda = fused(true).render(Dialect::Cuda, one).text;
    let cl = fused(true).render(Dialect::OpenCl, one).text;
    assert!(
        cuda.contains("__shfl_xor_sync")
            && cuda.contains("__shared__")
            && cuda.contains("__syncthreads()")
    );
    assert!(
        !cl.contains("shfl")
            && cl.contains("__local")
            && cl.contains("barrier(CLK_LOCAL_MEM_FENCE)")
    );
    // f32 math is spelled with CUDA's f suffix, OpenCL's overloads stay.
    assert!(cuda.contains("tanhf(") && !cl.contains("tanhf("));
}

#[test]
fn splits_fill_the_device_and_cover_every_element() {
    for (rows, len) in [(1, 10_000_000), (3, 100_000), (1000, 50), (1, 0), (0, 10)] {
        let s = arr_kernels::gpu::render::split(rows, len);
        assert!(s.parts >= 1 && s.chunk >= 1, "{rows}x{len}: {s:?}");
        assert!(
            s.parts * s.chunk >= len,
            "{rows}x{len}: {s:?} misses elements"
        );
        assert!(
            (s.parts - 1) * s.chunk < len.max(1),
            "{rows}x{len}: {s:?} has an empty part"
        );
    }
    assert!(arr_kernels::gpu::render::split(1, 10_000_000).parts > 1);
}

#[test]
fn contiguous_four_byte_operands_take_the_vector_path() {
    let space = vec![1000];
    let l = Loop {
        space: space.clone(),
        reg: DType::F32,
        inputs: vec![
            View::contiguous(DType::F32, &space),
            View::broadcast(DType::F32, &[], &space),
        ],
        body: vec![
            ScalarOp::Load(0),
            ScalarOp::Load(1),
            ScalarOp::Binary(BinaryOp::Mul, 0, 1),
        ],
        outputs: vec![Out {
            reg: 2,
            reduce: None,
            dtype: DType::F32,
            view: None,
        }],
        reduce_axes: 0,
    };
    let one = Split { parts: 1, chunk: 1 };
    expect_file!["snapshots/vector.cu"].assert_eq(&l.render(Dialect::Cuda, one).text);
    expect_file!["snapshots/vector.cl"].assert_eq(&l.render(Dialect::OpenCl, one).text);
    // A bool output (one byte) or a strided input keeps the scalar loop.
    let mut b = l.clone();
    b.outputs[0].dtype = DType::Bool;
    assert!(!b.render(Dialect::OpenCl, one).text.contains("vstore4"));
}

/// Every op-table row on every dtype it accepts compiles as CUDA C for sm_90
/// (NVRTC needs no GPU), also the ops no conformance case reaches.
#[test]
fn every_op_compiles_under_nvrtc() {
    use arr_kernels::gpu::{cuda, render::every_elementwise_op};
    if !cuda::nvrtc_present() {
        assert!(
            std::env::var_os("ARR_REQUIRE_NVRTC").is_none(),
            "NVRTC is required (libnvrtc.so.13 on LD_LIBRARY_PATH)"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: NVRTC compile of every op: no libnvrtc on the library path"
        );
        return;
    }
    let kernels = every_elementwise_op(Dialect::Cuda);
    assert!(kernels.len() > 100, "{} kernels", kernels.len());
    let bad: Vec<String> = kernels
        .iter()
        .filter_map(|(name, src)| {
            cuda::compile(&src.text, cuda::DEFAULT_ARCH)
                .err()
                .map(|log| format!("{name}: {log}"))
        })
        .collect();
    assert!(bad.is_empty(), "NVRTC rejects:\n{}", bad.join("\n"));
}
