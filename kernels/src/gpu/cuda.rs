//! The CUDA driver: the one module only an NVIDIA GPU executes (cudarc's
//! driver calls), plus NVRTC compilation, which also runs without a GPU so
//! the tests compile every rendered kernel. Everything else — rendering,
//! caching, memory pools, the backend — is shared with OpenCL.
//!
//! cudarc opens each CUDA library at run time and panics when one is
//! missing, so every entry point probes `is_culib_present` first and a
//! missing library or device is an ordinary error.

use super::render::{Dialect, Source, LOCAL};
use super::{Arg, Driver, Mem, Module};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::sync::Arc;

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

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), String> {
        let (s, _a) = slice(src).device_ptr(&self.stream);
        let (d, _b) = slice(dst).device_ptr(&self.stream);
        // SAFETY: both buffers hold at least `bytes` bytes; ordered on the stream.
        unsafe { cudarc::driver::result::memcpy_dtod_async(d, s, bytes, self.stream.cu_stream()) }
            .map_err(err)
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
}
