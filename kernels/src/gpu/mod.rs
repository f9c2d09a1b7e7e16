//! GPU devices: the machinery every GPU backend shares — device memory with a
//! caching allocator, the compile cache, the device list and the default
//! device — over a small `Driver` trait that each runtime (OpenCL, CUDA)
//! implements. The `Backend` implementation over any driver is `backend.rs`;
//! the kernels it launches come from one renderer (`render.rs`).
//!
//! Launches are asynchronous on one in-order queue per device; host reads
//! (`download`) wait for them. Freed device buffers go back to their
//! device's pool by size class and are reused, so a program in a loop
//! allocates nothing after its first step.

pub mod backend;
pub mod cache;
pub mod cuda;
pub mod opencl;
pub mod record;
pub mod render;

use crate::{Buffer, DType};
use render::{Dialect, Source};
use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A runtime's handle of device memory.
pub type Mem = Box<dyn Any + Send + Sync>;
/// A runtime's handle of a compiled module with one kernel.
pub type Module = Arc<dyn Any + Send + Sync>;

/// An argument of a launch.
pub enum Arg<'a> {
    Mem(&'a DeviceBuffer),
    I64(i64),
}

/// What a GPU runtime provides; everything else is shared. Errors are the
/// runtime's messages.
pub trait Driver: Send + Sync {
    fn dialect(&self) -> Dialect;
    /// The device's name as the runtime reports it.
    fn describe(&self) -> String;
    /// Compiler and device identity, part of the on-disk cache key.
    fn compiler_id(&self) -> String;
    /// Compile a source; the binary (when the runtime gives one) is what
    /// `load` takes back from the disk cache.
    fn build(&self, src: &Source) -> Result<(Module, Option<Vec<u8>>), String>;
    fn load(&self, src: &Source, binary: &[u8]) -> Result<Module, String>;
    fn alloc(&self, bytes: usize) -> Result<Mem, String>;
    fn upload(&self, mem: &Mem, data: &[u8]) -> Result<(), String>;
    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), String>;
    /// The memory space the device's buffers live in: devices with one
    /// key (the virtual devices of one GPU) `copy` between each other's
    /// buffers without the host. `None`: transfers go through the host.
    fn memory_space(&self) -> Option<usize> {
        None
    }
    /// Copy `bytes` from `src`, a buffer of a device of this one's memory
    /// space whose launches have finished, into `dst`, in order with this
    /// device's launches.
    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), String> {
        let _ = (src, dst, bytes);
        Err("this device copies only through the host".into())
    }
    /// Launch `groups` groups of `render::LOCAL` threads.
    fn launch(&self, module: &Module, args: &[Arg], groups: usize) -> Result<(), String>;
    /// Wait for every launch queued so far.
    fn synchronize(&self) -> Result<(), String>;
    /// A library matrix product (cuBLAS) for `call`, when the runtime has
    /// one for its dtype and layout; `None` (the default) or an error: the
    /// rendered GEMM template runs instead.
    fn gemm(&self, call: &GemmCall) -> Option<Result<(), String>> {
        let _ = call;
        None
    }
    /// Whether `gemm` may take products of `dtype` (asked before operands
    /// are laid out for a product only a library would run).
    fn has_gemm(&self, dtype: DType) -> bool {
        let _ = dtype;
        false
    }
    /// A device that records kernels instead of running them (`record`):
    /// its "compiles" are not counted.
    fn records_only(&self) -> bool {
        false
    }
    /// The driver itself, for the runtime's own code (NCCL needs the CUDA
    /// stream behind a device).
    fn as_any(&self) -> &dyn Any;
}

/// `C[b] = A[b] · B[b]` for `b < batch`: row-major `m × n` output, the
/// operands read with element strides (batch, row, column).
pub struct GemmCall<'a> {
    pub dtype: crate::DType,
    pub a: &'a DeviceBuffer,
    pub b: &'a DeviceBuffer,
    pub c: &'a DeviceBuffer,
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a_strides: [i64; 3],
    pub b_strides: [i64; 3],
}

/// Freed device buffers by size class, and the bytes in use and cached.
#[derive(Default)]
pub struct Pool {
    free: Mutex<HashMap<usize, Vec<Mem>>>,
    pub in_use: AtomicU64,
    pub cached: AtomicU64,
}

/// The size class of an allocation: powers of two up to 1 MiB, then whole
/// MiB (at most 1/16 wasted there); never 0 bytes (OpenCL refuses those).
fn size_class(bytes: usize) -> usize {
    const MIB: usize = 1 << 20;
    if bytes <= MIB {
        bytes.max(256).next_power_of_two()
    } else {
        bytes.div_ceil(MIB) * MIB
    }
}

/// Elements of one array on one device. Dropping the last handle gives the
/// memory back to the device's pool.
pub struct DeviceBuffer {
    pub device: usize,
    /// The bytes the array's elements take (its class may be larger).
    pub bytes: usize,
    class: usize,
    mem: Option<Mem>,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer({} bytes on device {})",
            self.bytes, self.device
        )
    }
}

impl DeviceBuffer {
    pub fn mem(&self) -> &Mem {
        self.mem.as_ref().expect("live until dropped")
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Some(m) = self.mem.take() {
            self.pool
                .in_use
                .fetch_sub(self.class as u64, Ordering::Relaxed);
            self.pool
                .cached
                .fetch_add(self.class as u64, Ordering::Relaxed);
            self.pool
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(self.class)
                .or_default()
                .push(m);
        }
    }
}

/// One GPU device: its driver, memory pool and compile cache.
pub struct GpuDevice {
    /// Index in `devices()`.
    pub id: usize,
    /// Index among the devices of its kind (`cuda:0`, `opencl:1`).
    pub ordinal: usize,
    pub driver: Box<dyn Driver>,
    pub pool: Arc<Pool>,
    pub cache: cache::Cache,
    pub launches: AtomicU64,
    /// Arrays copied here from another device of its memory space, without
    /// the host (collectives over virtual devices).
    pub device_copies: AtomicU64,
}

impl GpuDevice {
    pub fn kind(&self) -> &'static str {
        self.driver.dialect().name()
    }

    /// `cuda:0`, `opencl:0`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.kind(), self.ordinal)
    }

    /// A buffer of at least `bytes` bytes, reused from the pool when one of
    /// its class is free.
    pub fn alloc(&self, bytes: usize) -> Arc<DeviceBuffer> {
        let class = size_class(bytes);
        let reused = self
            .pool
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&class)
            .and_then(Vec::pop);
        let mem = match reused {
            Some(m) => {
                self.pool.cached.fetch_sub(class as u64, Ordering::Relaxed);
                m
            }
            None => match self.driver.alloc(class) {
                Ok(m) => m,
                Err(first) => {
                    // Out of memory: give the cached blocks back and retry once.
                    self.release_cached();
                    self.driver.alloc(class).unwrap_or_else(|e| {
                        panic!(
                            "{}: cannot allocate {bytes} bytes: {e} (first try: {first})",
                            self.label()
                        )
                    })
                }
            },
        };
        self.pool.in_use.fetch_add(class as u64, Ordering::Relaxed);
        Arc::new(DeviceBuffer {
            device: self.id,
            bytes,
            class,
            mem: Some(mem),
            pool: self.pool.clone(),
        })
    }

    /// Wait for every launch queued on the device.
    pub fn synchronize(&self) {
        self.check(self.driver.synchronize(), "synchronize");
    }

    pub fn release_cached(&self) {
        let mut free = self.pool.free.lock().unwrap_or_else(|e| e.into_inner());
        free.clear();
        self.pool.cached.store(0, Ordering::Relaxed);
    }

    /// Copy a host buffer to the device.
    pub fn upload(&self, buf: &Buffer) -> Arc<DeviceBuffer> {
        let bytes = host_bytes(buf);
        let d = self.alloc(bytes.len());
        if !bytes.is_empty() {
            self.check(self.driver.upload(d.mem(), &bytes), "upload");
        }
        d
    }

    /// A copy here of `src`, a buffer of device `from`, by the devices
    /// themselves when they share a memory space (`None`: they do not).
    pub fn copy_from(&self, from: &GpuDevice, src: &DeviceBuffer) -> Option<Arc<DeviceBuffer>> {
        let space = self.driver.memory_space()?;
        if from.driver.memory_space() != Some(space) {
            return None;
        }
        // The source's own launches (which wrote it) finish first: the
        // devices' queues are not ordered with each other.
        from.synchronize();
        let d = self.alloc(src.bytes);
        if src.bytes > 0 {
            self.check(
                self.driver.copy(src.mem(), d.mem(), src.bytes),
                "device copy",
            );
        }
        self.device_copies.fetch_add(1, Ordering::Relaxed);
        Some(d)
    }

    /// Copy a device buffer of `len` elements of `dtype` to the host,
    /// after every launch before it.
    pub fn download(&self, d: &DeviceBuffer, dtype: DType, len: usize) -> Buffer {
        let mut bytes = vec![0u8; len * dtype.size_bytes()];
        if !bytes.is_empty() {
            self.check(self.driver.download(d.mem(), &mut bytes), "download");
        }
        Buffer::from_le_bytes(dtype, &bytes).expect("whole elements")
    }

    /// A compiled module of `src`: from memory, from disk, or compiled now.
    pub fn module(&self, src: &Source) -> Module {
        self.cache.get(&*self.driver, src).unwrap_or_else(|e| {
            panic!(
                "{}: kernel {} does not compile: {e}\n{}",
                self.label(),
                src.name,
                src.text
            )
        })
    }

    pub fn launch(&self, src: &Source, args: &[Arg], groups: usize) {
        let m = self.module(src);
        self.launches.fetch_add(1, Ordering::Relaxed);
        self.check(self.driver.launch(&m, args, groups), &src.name);
    }

    /// A runtime failure is a device fault, not a user error: the backend
    /// interface has no error path, so it becomes a panic the language
    /// reports with the statement that ran.
    fn check(&self, r: Result<(), String>, what: &str) {
        if let Err(e) = r {
            panic!("{}: {what} failed: {e}", self.label());
        }
    }
}

/// The bytes of a host buffer as the device stores them (bool as 0/1 bytes).
fn host_bytes(buf: &Buffer) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    match buf {
        Buffer::Bool(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::I8(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::I16(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::U8(v) => Cow::Borrowed(v),
        Buffer::U16(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::I32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::I64(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::U32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::BF16(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::F16(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::F32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::F64(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        Buffer::C64(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
    }
}

/// What probing found: the devices, and for each runtime that gave none,
/// what was looked for and why it failed.
pub struct Probe {
    /// The real devices, then the two recorders (CUDA, OpenCL).
    all: Vec<GpuDevice>,
    real: usize,
    pub missing: Vec<(&'static str, String)>,
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The GPU devices of this process, found the first time anything asks
/// (OpenCL platforms, then CUDA devices); never a panic when a runtime is
/// missing.
pub fn probe() -> &'static Probe {
    PROBE.get_or_init(|| {
        let mut drivers: Vec<Box<dyn Driver>> = Vec::new();
        let mut missing = Vec::new();
        for (kind, found) in [("cuda", cuda::probe()), ("opencl", opencl::probe())] {
            match found {
                Ok(d) if !d.is_empty() => drivers.extend(d),
                Ok(_) => missing.push((kind, "no devices".to_string())),
                Err(e) => missing.push((kind, e)),
            }
        }
        let real = drivers.len();
        drivers.push(Box::new(record::Recorder {
            dialect: Dialect::Cuda,
        }));
        drivers.push(Box::new(record::Recorder {
            dialect: Dialect::OpenCl,
        }));
        let mut all = Vec::new();
        for driver in drivers {
            let id = all.len();
            let ordinal = all
                .iter()
                .filter(|d: &&GpuDevice| d.kind() == driver.dialect().name())
                .count();
            all.push(GpuDevice {
                id,
                ordinal,
                driver,
                pool: Arc::default(),
                cache: cache::Cache::default(),
                launches: AtomicU64::new(0),
                device_copies: AtomicU64::new(0),
            });
        }
        Probe { all, real, missing }
    })
}

/// The GPU devices, if something has asked for them already (views that
/// must not load GPU runtimes by themselves).
pub fn devices_if_probed() -> &'static [GpuDevice] {
    PROBE.get().map_or(&[], |p| &p.all[..p.real])
}

/// The GPU devices of this machine.
pub fn devices() -> &'static [GpuDevice] {
    let p = probe();
    &p.all[..p.real]
}

/// A device by id (a recorder too).
pub fn device(id: usize) -> &'static GpuDevice {
    &probe().all[id]
}

/// The recorder of a dialect (`record::record`).
pub fn recorder(d: Dialect) -> &'static GpuDevice {
    let p = probe();
    &p.all[p.real + if d == Dialect::Cuda { 0 } else { 1 }]
}

/// The device a user names: `cuda`, `opencl` (the first of the kind) or
/// `cuda:1`; an error says what was looked for when there is none.
pub fn find(name: &str) -> Result<&'static GpuDevice, String> {
    let (kind, ordinal) = match name.split_once(':') {
        Some((k, n)) => (
            k,
            n.parse::<usize>()
                .map_err(|_| format!("bad device name {name:?}: expected kind:number"))?,
        ),
        None => (name, 0),
    };
    if kind != "cuda" && kind != "opencl" {
        return Err(format!(
            "unknown device kind {kind:?}: expected cpu, cuda or opencl"
        ));
    }
    let p = probe();
    let of_kind: Vec<&GpuDevice> = devices().iter().filter(|d| d.kind() == kind).collect();
    if let Some(d) = of_kind.get(ordinal) {
        return Ok(d);
    }
    if !of_kind.is_empty() {
        return Err(format!(
            "no device {name}: this machine has {} {kind} device(s)",
            of_kind.len()
        ));
    }
    let why = p
        .missing
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, w)| w.clone())
        .unwrap_or_default();
    Err(format!("no {kind} device: {why}"))
}

/// How many virtual devices each physical GPU is (`ARR_GPU_VIRTUAL`,
/// default 1): each has its own queue (stream) and memory pool, so a mesh
/// of several devices runs on one GPU as on several.
pub fn virtual_count() -> usize {
    std::env::var("ARR_GPU_VIRTUAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .clamp(1, 64)
}

fn virtual_name(name: String, k: usize) -> String {
    match virtual_count() {
        1 => name,
        n => format!("{name} (virtual {} of {n})", k + 1),
    }
}

/// The GPU device that mesh device `id` runs on when the program was
/// started on `caller`: the devices of its kind in turn (a recorder stays
/// itself).
pub fn mesh_device(caller: &'static GpuDevice, id: usize) -> &'static GpuDevice {
    let same: Vec<&GpuDevice> = devices()
        .iter()
        .filter(|d| d.kind() == caller.kind())
        .collect();
    if caller.driver.records_only() || same.is_empty() {
        return caller;
    }
    same[id % same.len()]
}

/// 0: the CPU; `k + 1`: GPU device `k`.
static PROCESS_DEFAULT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's default device where it set one (a session's
    /// `set_default_device`), else the process's.
    static THREAD_DEFAULT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Where operations with no device operand run: `None` is the CPU.
pub fn default_device() -> Option<&'static GpuDevice> {
    let code = THREAD_DEFAULT
        .with(|d| d.get())
        .unwrap_or_else(|| PROCESS_DEFAULT.load(Ordering::Relaxed));
    code.checked_sub(1).map(device)
}

/// Set this thread's default device by code (see `THREAD_DEFAULT`),
/// returning the one before.
fn swap_thread_default(code: Option<usize>) -> Option<usize> {
    THREAD_DEFAULT.with(|t| t.replace(code))
}

/// Set this thread's default device (`None`: the CPU).
pub fn set_thread_default(d: Option<&GpuDevice>) {
    THREAD_DEFAULT.with(|t| t.set(Some(d.map_or(0, |d| d.id + 1))));
}

/// Set the default device of every thread that has not set its own.
pub fn set_process_default(d: Option<&GpuDevice>) {
    PROCESS_DEFAULT.store(d.map_or(0, |d| d.id + 1), Ordering::Relaxed);
}

pub use cache::Stats as CompileStats;

/// Compile counters of every device (for `jit_stats()` and `:kernels`).
pub fn compile_stats() -> CompileStats {
    cache::stats()
}
