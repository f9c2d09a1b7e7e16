//! The CUDA driver: the one module only an NVIDIA GPU executes (cudarc's
//! driver calls, cuBLAS's strided-batched products and NCCL's collectives,
//! `nccl.rs`), plus NVRTC compilation, which also runs without a GPU so the
//! tests compile every rendered kernel. Everything else — rendering,
//! caching, memory pools, the backend — is shared with OpenCL.
//!
//! cudarc opens each CUDA library at run time and panics when one is
//! missing, so every entry point probes `is_culib_present` first and a
//! missing library or device is an ordinary error.

use super::render::{Dialect, Source, LOCAL};
use super::{Arg, Driver, GemmCall, Mem, Module};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::sync::Arc;

pub mod nccl;

/// The architecture kernels are compiled for when no device says (Hopper).
pub const DEFAULT_ARCH: &str = "sm_90";

/// Whether the NVRTC library can be opened (`LD_LIBRARY_PATH` or ldconfig).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

fn driver_present() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Compile CUDA C to PTX for `arch`; NVRTC's log on failure.
pub fn compile(src: &str, arch: &'static str) -> Result<String, String> {
    if !nvrtc_present() {
        return Err("no NVRTC library (libnvrtc.so) found on the library path".into());
    }
    let opts = CompileOptions {
        arch: Some(arch),
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(src, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
            Err(log.to_string_lossy().into_owned())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// NVRTC's version, `major.minor`.
pub fn nvrtc_version() -> Option<String> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; the call writes two integers.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then(|| format!("{major}.{minor}"))
}

/// The CUDA driver behind `gpu` (a device of this module's `probe`).
fn cuda_of(gpu: &super::GpuDevice) -> &Cuda {
    gpu.driver
        .as_any()
        .downcast_ref::<Cuda>()
        .expect("a CUDA device")
}

/// Make `gpu`'s context current on this thread (NCCL works on the current one).
fn bind(gpu: &super::GpuDevice) -> Result<(), String> {
    cuda_of(gpu).ctx.bind_to_thread().map_err(err)
}

/// The stream `gpu`'s launches are queued on.
fn stream(gpu: &super::GpuDevice) -> cudarc::driver::sys::CUstream {
    cuda_of(gpu).stream.cu_stream()
}

/// The device address of `buf`, a buffer of `gpu`. Each GPU a
/// communicator uses has one stream, so the event cudarc records when the
/// guard drops needs no later point.
fn device_ptr(gpu: &super::GpuDevice, buf: &super::DeviceBuffer) -> u64 {
    let d = cuda_of(gpu);
    let (p, _sync) = slice(buf.mem()).device_ptr(&d.stream);
    p
}

/// The CUDA libraries this process finds, with their versions or what was
/// looked for: the driver, NVRTC, cuBLAS and NCCL.
pub fn libraries() -> Vec<(&'static str, Result<String, String>)> {
    let driver = if driver_present() {
        let mut v = 0;
        // SAFETY: the library is present; the call writes one integer.
        let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
        match r {
            cudarc::driver::sys::cudaError_enum::CUDA_SUCCESS => {
                Ok(format!("{}.{}", v / 1000, v % 1000 / 10))
            }
            e => Err(format!("{e:?}")),
        }
    } else {
        Err("no libcuda.so on the library path".into())
    };
    let nvrtc = nvrtc_version().ok_or_else(|| "no libnvrtc.so on the library path".to_string());
    // SAFETY: only tries to open the library.
    let cublas = if unsafe { cudarc::cublas::sys::is_culib_present() } {
        Ok("present".to_string())
    } else {
        Err("no libcublas.so on the library path".into())
    };
    vec![
        ("CUDA driver", driver),
        ("NVRTC", nvrtc),
        ("cuBLAS", cublas),
        ("NCCL", nccl::version()),
    ]
}

/// The CUDA devices, or what was looked for.
pub fn probe() -> Result<Vec<Box<dyn Driver>>, String> {
    if !driver_present() {
        return Err("no CUDA driver library (libcuda.so) found on the library path".into());
    }
    let n = CudaContext::device_count()
        .map_err(|e| format!("the CUDA driver found no device ({e:?})"))?;
    let mut out: Vec<Box<dyn Driver>> = Vec::new();
    for ordinal in 0..n.max(0) as usize {
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("cuda:{ordinal}: {e:?}"))?;
        let (major, minor) = ctx.compute_capability().map_err(|e| format!("{e:?}"))?;
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        for k in 0..super::virtual_count() {
            let name = super::virtual_name(ctx.name().unwrap_or_default(), k);
            // Virtual devices of one GPU: a stream each.
            let stream = if k == 0 {
                ctx.default_stream()
            } else {
                ctx.new_stream().map_err(err)?
            };
            out.push(Box::new(Cuda {
                ctx: ctx.clone(),
                stream,
                name,
                arch,
                blas: std::sync::OnceLock::new(),
            }));
        }
    }
    Ok(out)
}

struct Cuda {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    arch: &'static str,
    /// cuBLAS on this device's stream, made on the first product (`None`
    /// when the library is missing: the GEMM template runs).
    blas: std::sync::OnceLock<Option<CudaBlas>>,
}

impl Cuda {
    /// cuBLAS on this device's stream, made on first use.
    fn blas(&self) -> Option<&CudaBlas> {
        self.blas
            .get_or_init(|| {
                // SAFETY: only tries to open the library.
                let present = unsafe { cudarc::cublas::sys::is_culib_present() };
                present
                    .then(|| CudaBlas::new(self.stream.clone()).ok())
                    .flatten()
            })
            .as_ref()
    }
}

/// A row-major `nr × nc` operand with element strides (`rs`, `cs`) as
/// cuBLAS sees it: its column-major transpose (`N`, leading dimension `rs`)
/// or itself (`T`, leading dimension `cs`); a stride along an axis of size
/// 1 does not matter. `None` when neither axis is unit-stride.
fn column_major(rs: i64, cs: i64, nr: usize, nc: usize) -> Option<(cublasOperation_t, i32)> {
    let (nr, nc) = (nr as i64, nc as i64);
    if cs == 1 || nc == 1 {
        let ld = if nr == 1 { nc.max(1) } else { rs };
        if ld >= nc.max(1) {
            return Some((cublasOperation_t::CUBLAS_OP_N, i32::try_from(ld).ok()?));
        }
    }
    if rs == 1 || nr == 1 {
        let ld = if nc == 1 { nr.max(1) } else { cs };
        if ld >= nr.max(1) {
            return Some((cublasOperation_t::CUBLAS_OP_T, i32::try_from(ld).ok()?));
        }
    }
    None
}

fn slice(m: &Mem) -> &CudaSlice<u8> {
    m.downcast_ref::<CudaSlice<u8>>().expect("a CUDA buffer")
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

impl Cuda {
    fn load_ptx(&self, src: &Source, ptx: String) -> Result<Module, String> {
        let module = self.ctx.load_module(Ptx::from_src(ptx)).map_err(err)?;
        let f: CudaFunction = module.load_function(&src.name).map_err(err)?;
        Ok(Arc::new(f))
    }
}

impl Driver for Cuda {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn dialect(&self) -> Dialect {
        Dialect::Cuda
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn compiler_id(&self) -> String {
        format!(
            "nvrtc {} {}",
            nvrtc_version().unwrap_or_default(),
            self.arch
        )
    }

    fn build(&self, src: &Source) -> Result<(Module, Option<Vec<u8>>), String> {
        let ptx = compile(&src.text, self.arch)?;
        Ok((self.load_ptx(src, ptx.clone())?, Some(ptx.into_bytes())))
    }

    fn load(&self, src: &Source, binary: &[u8]) -> Result<Module, String> {
        self.load_ptx(src, String::from_utf8(binary.to_vec()).map_err(err)?)
    }

    fn alloc(&self, bytes: usize) -> Result<Mem, String> {
        // SAFETY: the pool only hands out buffers that a kernel or an upload
        // writes before anything reads them.
        let s = unsafe { self.stream.alloc::<u8>(bytes) }.map_err(err)?;
        Ok(Box::new(s))
    }

    fn upload(&self, m: &Mem, data: &[u8]) -> Result<(), String> {
        let (ptr, _sync) = slice(m).device_ptr(&self.stream);
        self.stream.synchronize().map_err(err)?;
        // SAFETY: the buffer holds at least `data.len()` bytes; synchronous.
        unsafe { cudarc::driver::result::memcpy_htod_sync(ptr, data) }.map_err(err)
    }

    fn download(&self, m: &Mem, out: &mut [u8]) -> Result<(), String> {
        let (ptr, _sync) = slice(m).device_ptr(&self.stream);
        self.stream.synchronize().map_err(err)?;
        // SAFETY: the buffer holds at least `out.len()` bytes; synchronous,
        // after every launch on the stream.
        unsafe { cudarc::driver::result::memcpy_dtoh_sync(out, ptr) }.map_err(err)
    }

    fn launch(&self, module: &Module, args: &[Arg], groups: usize) -> Result<(), String> {
        let f = module
            .downcast_ref::<CudaFunction>()
            .expect("a CUDA function");
        let mut b = self.stream.launch_builder(f);
        for a in args {
            match a {
                Arg::Mem(d) => b.arg(slice(d.mem())),
                Arg::I64(x) => b.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (groups as u32, 1, 1),
            block_dim: (LOCAL as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the rendered kernel's parameters in
        // order and type (device pointers, then 64-bit integers).
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(err)
    }

    fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(err)
    }

    fn memory_space(&self) -> Option<usize> {
        Some(Arc::as_ptr(&self.ctx) as usize)
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), String> {
        let (from, _a) = slice(src).device_ptr(&self.stream);
        let (to, _b) = slice(dst).device_ptr(&self.stream);
        // SAFETY: both buffers are this context's and hold at least `bytes`;
        // queued on this device's stream after its launches.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(to, from, bytes, self.stream.cu_stream())
        }
        .map_err(err)
    }

    fn has_gemm(&self, dtype: crate::DType) -> bool {
        use crate::DType;
        matches!(dtype, DType::F32 | DType::F64 | DType::BF16 | DType::F16) && self.blas().is_some()
    }

    /// Row-major `C = A·B` is column-major `Cᵀ = Bᵀ·Aᵀ`: the operands swap.
    fn gemm(&self, g: &GemmCall) -> Option<Result<(), String>> {
        use crate::DType;
        let blas = self.blas()?;
        let (op_b, ld_b) = column_major(g.b_strides[1], g.b_strides[2], g.k, g.n)?;
        let (op_a, ld_a) = column_major(g.a_strides[1], g.a_strides[2], g.m, g.k)?;
        let int = |x: usize| i32::try_from(x).ok();
        let (m, n, k, batch) = (int(g.m)?, int(g.n)?, int(g.k)?, int(g.batch)?);
        let (a, _x) = slice(g.a.mem()).device_ptr(&self.stream);
        let (b, _y) = slice(g.b.mem()).device_ptr(&self.stream);
        let (c, _z) = slice(g.c.mem()).device_ptr(&self.stream);
        let stride_c = (g.m * g.n) as i64;
        // SAFETY: the pointers are device buffers of this stream holding the
        // operands and the m×n×batch output; strides and leading dimensions
        // describe them (cuBLAS checks the dimensions and reports errors).
        let r = unsafe {
            match g.dtype {
                DType::F32 => cudarc::cublas::result::sgemm_strided_batched(
                    *blas.handle(),
                    op_b,
                    op_a,
                    n,
                    m,
                    k,
                    &1.0f32,
                    b as *const f32,
                    ld_b,
                    g.b_strides[0],
                    a as *const f32,
                    ld_a,
                    g.a_strides[0],
                    &0.0f32,
                    c as *mut f32,
                    n.max(1),
                    stride_c,
                    batch,
                ),
                DType::F64 => cudarc::cublas::result::dgemm_strided_batched(
                    *blas.handle(),
                    op_b,
                    op_a,
                    n,
                    m,
                    k,
                    &1.0f64,
                    b as *const f64,
                    ld_b,
                    g.b_strides[0],
                    a as *const f64,
                    ld_a,
                    g.a_strides[0],
                    &0.0f64,
                    c as *mut f64,
                    n.max(1),
                    stride_c,
                    batch,
                ),
                // 16-bit operands and output, f32 accumulation (tensor cores):
                // one rounding of the f32 sum, as the widened product gives.
                DType::BF16 | DType::F16 => {
                    use cudarc::cublas::sys::{
                        cublasComputeType_t, cublasGemmAlgo_t, cublasStatus_t, cudaDataType,
                    };
                    let t = if g.dtype == DType::BF16 {
                        cudaDataType::CUDA_R_16BF
                    } else {
                        cudaDataType::CUDA_R_16F
                    };
                    let (one, zero) = (1.0f32, 0.0f32);
                    let status = cudarc::cublas::sys::cublasGemmStridedBatchedEx(
                        *blas.handle(),
                        op_b,
                        op_a,
                        n,
                        m,
                        k,
                        (&one as *const f32).cast(),
                        b as *const std::ffi::c_void,
                        t,
                        ld_b,
                        g.b_strides[0],
                        a as *const std::ffi::c_void,
                        t,
                        ld_a,
                        g.a_strides[0],
                        (&zero as *const f32).cast(),
                        c as *mut std::ffi::c_void,
                        t,
                        n.max(1),
                        stride_c,
                        batch,
                        cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    );
                    match status {
                        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
                        e => return Some(Err(format!("cublasGemmStridedBatchedEx: {e:?}"))),
                    }
                }
                _ => return None,
            }
        };
        Some(r.map_err(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cuBLAS's column-major `C = op(A)·op(B)`, on the host.
    #[allow(clippy::too_many_arguments)]
    fn cublas_reference(
        (oa, ob): (cublasOperation_t, cublasOperation_t),
        (m, n, k): (usize, usize, usize),
        a: &[f64],
        lda: usize,
        b: &[f64],
        ldb: usize,
        ldc: usize,
    ) -> Vec<f64> {
        let at = |x: &[f64], op: cublasOperation_t, ld: usize, i: usize, l: usize| match op {
            cublasOperation_t::CUBLAS_OP_N => x[i + l * ld],
            _ => x[l + i * ld],
        };
        let mut c = vec![0.0; ldc * n];
        for i in 0..m {
            for j in 0..n {
                c[i + j * ldc] = (0..k)
                    .map(|l| at(a, oa, lda, i, l) * at(b, ob, ldb, l, j))
                    .sum();
            }
        }
        c
    }

    /// The operand swap and the leading dimensions `gemm` passes give the
    /// row-major product, for plain and transposed storage of each operand
    /// and for axes of size 1.
    #[test]
    fn row_major_products_through_column_major_calls() {
        for (m, n, k) in [(3, 4, 5), (1, 4, 5), (3, 1, 5), (3, 4, 1), (1, 1, 1)] {
            for a_t in [false, true] {
                for b_t in [false, true] {
                    let a: Vec<f64> = (0..m * k).map(|x| x as f64 + 1.0).collect();
                    let b: Vec<f64> = (0..k * n).map(|x| (x as f64) * 0.5 - 2.0).collect();
                    // Element (r, c) of A is a[r * sam + c * sak].
                    let (sam, sak) = if a_t { (1, m as i64) } else { (k as i64, 1) };
                    let (sbk, sbn) = if b_t { (1, k as i64) } else { (n as i64, 1) };
                    let want: Vec<f64> = (0..m * n)
                        .map(|i| {
                            let (r, c) = (i / n, i % n);
                            (0..k)
                                .map(|l| {
                                    a[r * sam as usize + l * sak as usize]
                                        * b[l * sbk as usize + c * sbn as usize]
                                })
                                .sum()
                        })
                        .collect();
                    let (ob, ldb) = column_major(sbk, sbn, k, n).unwrap();
                    let (oa, lda) = column_major(sam, sak, m, k).unwrap();
                    let ct = cublas_reference(
                        (ob, oa),
                        (n, m, k),
                        &b,
                        ldb as usize,
                        &a,
                        lda as usize,
                        n,
                    );
                    assert_eq!(ct, want, "{m}x{n}x{k} a_t {a_t} b_t {b_t}");
                }
            }
        }
        assert!(
            column_major(10, 3, 4, 5).is_none(),
            "no unit stride: the template runs"
        );
    }
}
