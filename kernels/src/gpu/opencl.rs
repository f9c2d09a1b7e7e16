//! The OpenCL driver (opencl3, which opens `libOpenCL.so.1` at run time):
//! every non-NVIDIA device, and PoCL on the CPU in the tests. One context,
//! one in-order queue per device (per virtual device: `ARR_GPU_VIRTUAL`).

use super::render::{Dialect, Source, LOCAL};
use super::{Arg, Driver, Mem, Module};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem as _, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_mem, CL_BLOCKING};
use std::ptr;
use std::sync::{Arc, Mutex};

pub struct OpenCl {
    /// Shared by the virtual devices of one device, so that each reads the
    /// others' buffers (`copy`).
    context: Arc<Context>,
    queue: CommandQueue,
    name: String,
    id: String,
}

// SAFETY: OpenCL objects are reference-counted handles that the OpenCL
// specification makes thread-safe (every API call but clSetKernelArg, which
// `Compiled` guards with a mutex).
unsafe impl Send for OpenCl {}
// SAFETY: as above.
unsafe impl Sync for OpenCl {}

/// A built program and its one kernel; setting arguments and enqueueing is
/// one critical section, as kernel objects hold their arguments.
struct Compiled {
    _program: Program,
    kernel: Mutex<Kernel>,
}

// SAFETY: see `OpenCl`; the kernel object is only touched under its mutex.
unsafe impl Send for Compiled {}
// SAFETY: as above.
unsafe impl Sync for Compiled {}

struct ClMem(Buffer<u8>);

// SAFETY: memory objects are thread-safe OpenCL handles.
unsafe impl Send for ClMem {}
// SAFETY: as above.
unsafe impl Sync for ClMem {}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn cl_err(code: i32) -> String {
    opencl3::error_codes::ClError(code).to_string()
}

/// The OpenCL devices of every platform, or why there are none.
pub fn probe() -> Result<Vec<Box<dyn Driver>>, String> {
    let ids = opencl3::device::get_all_devices(CL_DEVICE_TYPE_ALL).map_err(|e| {
        if e.0 == -2000 {
            "no OpenCL library (looked for libOpenCL.so.1, or the library named by OPENCL_DYLIB_PATH)".to_string()
        } else {
            format!("no OpenCL platform found by the OpenCL loader ({e}); install a driver such as pocl-opencl-icd")
        }
    })?;
    let mut out: Vec<Box<dyn Driver>> = Vec::new();
    for id in ids {
        let device = Device::new(id);
        let context = Arc::new(Context::from_device(&device).map_err(err)?);
        for k in 0..super::virtual_count() {
            out.push(Box::new(OpenCl::new(&device, context.clone(), k)?));
        }
    }
    Ok(out)
}

impl OpenCl {
    /// Virtual device `k` of `device`: a queue of its own in the shared context.
    fn new(device: &Device, context: Arc<Context>, k: usize) -> Result<OpenCl, String> {
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, 0).map_err(err)?;
        let name = super::virtual_name(device.name().unwrap_or_default(), k);
        let id = format!(
            "{name} / {} / {}",
            device.version().unwrap_or_default(),
            device.driver_version().unwrap_or_default()
        );
        Ok(OpenCl {
            context,
            queue,
            name,
            id,
        })
    }
}

fn mem(m: &Mem) -> &Buffer<u8> {
    &m.downcast_ref::<ClMem>().expect("an OpenCL buffer").0
}

impl OpenCl {
    fn finish_build(&self, program: Program, src: &Source) -> Result<Module, String> {
        let kernel = Kernel::create(&program, &src.name).map_err(err)?;
        Ok(Arc::new(Compiled {
            _program: program,
            kernel: Mutex::new(kernel),
        }))
    }
}

impl Driver for OpenCl {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn dialect(&self) -> Dialect {
        Dialect::OpenCl
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn compiler_id(&self) -> String {
        self.id.clone()
    }

    fn build(&self, src: &Source) -> Result<(Module, Option<Vec<u8>>), String> {
        let program =
            Program::create_and_build_from_source(&self.context, &src.text, "-cl-std=CL1.2")?;
        let binary = program
            .get_binaries()
            .ok()
            .and_then(|b| b.into_iter().next());
        Ok((self.finish_build(program, src)?, binary))
    }

    fn load(&self, src: &Source, binary: &[u8]) -> Result<Module, String> {
        let program = Program::create_and_build_from_binary(&self.context, &[binary], "")?;
        self.finish_build(program, src)
    }

    fn alloc(&self, bytes: usize) -> Result<Mem, String> {
        // SAFETY: no host pointer is passed; the size is non-zero (the pool
        // rounds every request up to at least 256 bytes).
        let b = unsafe {
            Buffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, bytes, ptr::null_mut())
        }
        .map_err(err)?;
        Ok(Box::new(ClMem(b)))
    }

    fn upload(&self, m: &Mem, data: &[u8]) -> Result<(), String> {
        // SAFETY: a blocking write of `data`, which outlives the call, into a
        // buffer at least as large (allocations are rounded up). The raw call
        // because opencl3's wants the buffer mutably, and buffers are shared.
        let e = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                self.queue.get(),
                mem(m).get(),
                CL_BLOCKING,
                0,
                data.len(),
                data.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(cl_err)?;
        drop(Event::new(e));
        Ok(())
    }

    fn download(&self, m: &Mem, out: &mut [u8]) -> Result<(), String> {
        // SAFETY: a blocking read into `out`, which outlives the call; the
        // in-order queue runs it after every launch before it.
        unsafe {
            self.queue
                .enqueue_read_buffer(mem(m), CL_BLOCKING, 0, out, &[])
        }
        .map_err(err)?;
        Ok(())
    }

    fn launch(&self, module: &Module, args: &[Arg], groups: usize) -> Result<(), String> {
        let c = module.downcast_ref::<Compiled>().expect("an OpenCL module");
        let kernel = c.kernel.lock().unwrap_or_else(|e| e.into_inner());
        for (i, a) in args.iter().enumerate() {
            // SAFETY: argument `i` of the rendered kernel has exactly this
            // type: pointers first (cl_mem), then 64-bit integers.
            match a {
                Arg::Mem(d) => {
                    let m: cl_mem = mem(d.mem()).get();
                    unsafe { kernel.set_arg(i as u32, &m) }.map_err(err)?
                }
                Arg::I64(x) => unsafe { kernel.set_arg(i as u32, x) }.map_err(err)?,
            };
        }
        let global = groups * LOCAL;
        let local = LOCAL;
        // SAFETY: every argument was set above; sizes are one-dimensional.
        unsafe {
            self.queue
                .enqueue_nd_range_kernel(kernel.get(), 1, ptr::null(), &global, &local, &[])
        }
        .map_err(err)?;
        Ok(())
    }

    fn synchronize(&self) -> Result<(), String> {
        self.queue.finish().map_err(err)
    }

    fn memory_space(&self) -> Option<usize> {
        Some(Arc::as_ptr(&self.context) as usize)
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), String> {
        // SAFETY: both buffers belong to this context (one memory space)
        // and hold at least `bytes`; the in-order queue orders the copy
        // before later launches. The raw call because opencl3's wants the
        // destination mutably, and buffers are shared.
        let e = unsafe {
            opencl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                mem(src).get(),
                mem(dst).get(),
                0,
                0,
                bytes,
                0,
                ptr::null(),
            )
        }
        .map_err(cl_err)?;
        drop(Event::new(e));
        Ok(())
    }
}
