//! NCCL, the collective library of NVIDIA GPUs: the `Communicator` of a mesh
//! group whose devices are distinct physical CUDA GPUs, in this process (one
//! rank per GPU, each driven by its device worker) or across processes (one
//! process per GPU). The 128-byte unique id is made by the process holding
//! the group's first device and reaches the others through the job's byte
//! exchange (MPI), as NCCL's documentation recommends.
//!
//! The library is opened here with libloading rather than through cudarc's
//! `nccl` feature: cudarc's loader never tries `libnccl.so.2`, the only name
//! NCCL's packages ship, and it panics where a library is missing. Without a
//! GPU, the version, the unique id and its exchange still run (`gpu-info`
//! and the tests use them); making a communicator needs a CUDA device.

use super::super::{default_device, mesh_device, virtual_count, DeviceBuffer, GpuDevice};
use crate::collectives::{Aborted, CommResult, Communicator};
use crate::{process, Array, DType, ReduceOp};
use cudarc::driver::sys::{cuStreamQuery, cudaError_enum, CUstream};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

type Status = i32;
type RawComm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes, passed by value to `ncclCommInitRank`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UniqueId(pub [u8; 128]);

type Collective =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, RawComm, CUstream) -> Status;
type PointToPoint = unsafe extern "C" fn(*mut c_void, usize, i32, i32, RawComm, CUstream) -> Status;

/// The loaded library: the symbols of NCCL's C API that arr calls.
struct Lib {
    _lib: libloading::Library,
    get_version: unsafe extern "C" fn(*mut i32) -> Status,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> Status,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, i32, UniqueId, i32) -> Status,
    comm_abort: unsafe extern "C" fn(RawComm) -> Status,
    comm_get_async_error: unsafe extern "C" fn(RawComm, *mut Status) -> Status,
    get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
    group_start: unsafe extern "C" fn() -> Status,
    group_end: unsafe extern "C" fn() -> Status,
    all_reduce: Collective,
    reduce_scatter: Collective,
    send: PointToPoint,
    recv: PointToPoint,
}

/// The names NCCL is found under (its SONAME first).
const CANDIDATES: &[&str] = &["libnccl.so.2", "libnccl.so"];

fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        CANDIDATES
            .iter()
            .find_map(|name| load(name))
            .ok_or_else(|| "no NCCL library (libnccl.so.2) found on the library path".to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn load(name: &str) -> Option<Lib> {
    // SAFETY: opening NCCL runs no code of consequence; every symbol is
    // looked up with the signature of NCCL's `nccl.h` (2.x), and the library
    // stays open in `Lib` for as long as the process runs.
    unsafe {
        let lib = libloading::Library::new(name).ok()?;
        macro_rules! sym {
            ($name:literal) => {
                *lib.get(concat!($name, "\0").as_bytes()).ok()?
            };
        }
        Some(Lib {
            get_version: sym!("ncclGetVersion"),
            get_unique_id: sym!("ncclGetUniqueId"),
            comm_init_rank: sym!("ncclCommInitRank"),
            comm_abort: sym!("ncclCommAbort"),
            comm_get_async_error: sym!("ncclCommGetAsyncError"),
            get_error_string: sym!("ncclGetErrorString"),
            group_start: sym!("ncclGroupStart"),
            group_end: sym!("ncclGroupEnd"),
            all_reduce: sym!("ncclAllReduce"),
            reduce_scatter: sym!("ncclReduceScatter"),
            send: sym!("ncclSend"),
            recv: sym!("ncclRecv"),
            _lib: lib,
        })
    }
}

impl Lib {
    /// `status` as a result, with NCCL's words for a failure.
    fn check(&self, status: Status, what: &str) -> Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for every status.
        let text = unsafe {
            let p = (self.get_error_string)(status);
            if p.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(format!("{what} failed: {text} (NCCL status {status})"))
    }
}

/// NCCL's version, `major.minor.patch`.
pub fn version() -> Result<String, String> {
    let lib = lib()?;
    let mut code = 0;
    // SAFETY: writes one integer.
    lib.check(unsafe { (lib.get_version)(&mut code) }, "ncclGetVersion")?;
    Ok(format!(
        "{}.{}.{}",
        code / 10000,
        code % 10000 / 100,
        code % 100
    ))
}

/// A new unique id (works without a GPU).
pub fn unique_id() -> Result<UniqueId, String> {
    let lib = lib()?;
    let mut id = UniqueId([0; 128]);
    // SAFETY: writes the 128 bytes of `id`.
    lib.check(unsafe { (lib.get_unique_id)(&mut id) }, "ncclGetUniqueId")?;
    Ok(id)
}

/// The id every process of the job uses for one group: made by process
/// `root` (when it can: `id` is its own, `None` if it has no NCCL) and
/// handed to every process. Called by every process at the same point;
/// `None` when some process cannot take part, which every process learns.
pub fn share_id(root: usize, id: Option<UniqueId>, can: bool) -> Option<UniqueId> {
    let ok = can && (process::index() != root || id.is_some());
    let mut mine = vec![u8::from(ok)];
    if process::index() == root {
        if let Some(id) = id {
            mine.extend_from_slice(&id.0);
        }
    }
    let all = process::all_gather_bytes(mine, "the NCCL id exchange");
    if all.iter().any(|b| b.first() != Some(&1)) {
        return None;
    }
    all.get(root)?.get(1..129)?.try_into().ok().map(UniqueId)
}

/// NCCL's set-up across the job's processes, for `arr gpu-info` (every
/// process calls it): process 0's unique id must reach every process, then
/// every process's first CUDA GPU joins one communicator and an all-reduce
/// of the process indices must give their sum. Lines for process 0 to print.
pub fn check_job() -> Vec<String> {
    let n = process::count();
    let mut out = Vec::new();
    let made = (process::index() == 0).then(unique_id).and_then(Result::ok);
    let Some(id) = share_id(0, made, lib().is_ok()) else {
        let why = lib()
            .err()
            .unwrap_or_else(|| "ncclGetUniqueId failed".into());
        let all = process::all_gather_bytes(why.into_bytes(), "gpu-info");
        out.push("NCCL id exchange: not done: some process has no NCCL".into());
        for (p, w) in all.iter().enumerate() {
            out.push(format!("  process {p}: {}", String::from_utf8_lossy(w)));
        }
        return out;
    };
    let digest = <sha2::Sha256 as sha2::Digest>::digest(id.0)[..8].to_vec();
    let digests = process::all_gather_bytes(digest.clone(), "gpu-info");
    let same = digests.iter().all(|d| *d == digest);
    out.push(format!(
        "NCCL id exchange: process 0's unique id {} {n} process(es) ({})",
        if same {
            "reached all"
        } else {
            "did NOT reach all"
        },
        hex::encode(&digest)
    ));
    // Only when every process has a GPU: NCCL's set-up waits for every rank.
    let gpu = super::super::find("cuda").map_err(|e| e.to_string());
    let flags = process::all_gather_bytes(vec![u8::from(gpu.is_ok())], "gpu-info");
    let gpu = match gpu {
        Ok(g) if flags.iter().all(|f| f == &[1]) => g,
        _ => {
            let why = gpu.err().unwrap_or_else(|| "has a CUDA device".into());
            let all = process::all_gather_bytes(why.into_bytes(), "gpu-info");
            out.push("NCCL communicator: not made: every process needs a CUDA device".into());
            for (p, w) in all.iter().enumerate() {
                out.push(format!("  process {p}: {}", String::from_utf8_lossy(w)));
            }
            return out;
        }
    };
    let me = process::index();
    let result = NcclComm::new(id, n, &[(me, gpu)]).map(|c| {
        let x = Array::new(&[], crate::Buffer::F32(vec![me as f32]));
        c.all_reduce(me, ReduceOp::Sum, &x)
            .ok()
            .and_then(|y| y.buffer().ok().map(|b| b.to_le_bytes()))
    });
    let text = match result {
        Ok(Some(b)) if b[..] == ((n * (n - 1) / 2) as f32).to_le_bytes() => "ok".to_string(),
        Ok(b) => format!("wrong all-reduce result {b:?}"),
        Err(e) => e,
    };
    let all = process::all_gather_bytes(text.into_bytes(), "gpu-info");
    out.push(format!(
        "NCCL communicator of {n} process(es), one GPU each:"
    ));
    for (p, w) in all.iter().enumerate() {
        out.push(format!("  process {p}: {}", String::from_utf8_lossy(w)));
    }
    out
}

/// A communicator handle; NCCL allows one thread at a time per handle, and
/// each rank's handle is used only by that rank's device worker.
struct Handle(RawComm);
// SAFETY: see `Handle`: calls on one handle never overlap.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One rank of this process: its communicator and its GPU.
struct Rank {
    comm: Handle,
    gpu: &'static GpuDevice,
}

/// The NCCL communicator of one mesh group. Calls are queued on each GPU's
/// own stream, in order with its kernels, then waited for: a collective
/// that a peer never joins ends the job at the collective timeout, and an
/// interrupt stops the wait, rather than a later host read hanging.
pub struct NcclComm {
    size: usize,
    ranks: Vec<Option<Rank>>,
    sent: Vec<AtomicU64>,
    aborted: AtomicBool,
}

/// The NCCL communicator of the group of global `devices`, when NCCL
/// applies: the default device is a CUDA GPU (not virtual) and every rank
/// of this process has a GPU of its own. Every process calls it for every
/// group, in the same order (`process::group`).
pub fn group(devices: &[usize]) -> Option<Arc<dyn Communicator>> {
    let caller = default_device().filter(|d| d.kind() == "cuda" && virtual_count() == 1)?;
    if caller.driver.records_only() || devices.len() < 2 {
        return None;
    }
    let local: Vec<(usize, &'static GpuDevice)> = devices
        .iter()
        .enumerate()
        .filter(|(_, &d)| process::is_local(d))
        .map(|(rank, &d)| (rank, mesh_device(caller, d)))
        .collect();
    let distinct = local
        .iter()
        .all(|(r, g)| local.iter().all(|(s, h)| r == s || g.id != h.id));
    let can = distinct && lib().is_ok();
    let root = process::owner(devices[0]);
    let made = (process::index() == root && can)
        .then(unique_id)
        .and_then(Result::ok);
    let id = if process::is_multi() {
        share_id(root, made, can)?
    } else {
        made?
    };
    match NcclComm::new(id, devices.len(), &local) {
        Ok(c) => Some(Arc::new(c)),
        // The other processes made theirs: a group half on NCCL cannot run.
        Err(e) if process::is_multi() => process::abort(&format!("NCCL: {e}")),
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!("arr: NCCL made no communicator ({e}): collectives copy between the GPUs")
            });
            None
        }
    }
}

impl NcclComm {
    /// The communicator of `size` ranks whose `local` ones are this
    /// process's, made in one NCCL group (required when one process holds
    /// several ranks).
    pub fn new(
        id: UniqueId,
        size: usize,
        local: &[(usize, &'static GpuDevice)],
    ) -> Result<NcclComm, String> {
        let lib = lib()?;
        let n = i32::try_from(size).map_err(|_| format!("{size} ranks"))?;
        let mut ranks: Vec<Option<Rank>> = (0..size).map(|_| None).collect();
        let mut raw = vec![std::ptr::null_mut(); local.len()];
        // SAFETY: the group brackets the init calls; each writes one handle.
        unsafe {
            lib.check((lib.group_start)(), "ncclGroupStart")?;
            for (slot, &(rank, gpu)) in raw.iter_mut().zip(local) {
                super::bind(gpu)?;
                let status = (lib.comm_init_rank)(slot, n, id, rank as i32);
                lib.check(status, &format!("ncclCommInitRank on {}", gpu.label()))?;
            }
            lib.check((lib.group_end)(), "ncclGroupEnd (making the communicators)")?;
        }
        for (comm, &(rank, gpu)) in raw.into_iter().zip(local) {
            ranks[rank] = Some(Rank {
                comm: Handle(comm),
                gpu,
            });
        }
        Ok(NcclComm {
            size,
            ranks,
            sent: (0..size).map(|_| AtomicU64::new(0)).collect(),
            aborted: AtomicBool::new(false),
        })
    }

    fn rank(&self, rank: usize) -> CommResult<&Rank> {
        if self.aborted.load(Ordering::Relaxed) {
            return Err(Aborted);
        }
        Ok(self.ranks[rank].as_ref().expect("a rank of this process"))
    }

    /// Queue `calls` (one NCCL group) on the rank's stream and wait for it.
    fn run(
        &self,
        r: &Rank,
        rank: usize,
        bytes: usize,
        calls: impl FnOnce(&Lib, RawComm, CUstream) -> Status,
    ) -> CommResult<()> {
        let lib = lib().expect("loaded when the communicator was made");
        let stream = super::stream(r.gpu);
        let what = crate::collectives::context().unwrap_or_else(|| "a collective".into());
        // SAFETY: the group brackets the calls; the buffers they name stay
        // alive until `wait` sees the stream finish them.
        let queued = unsafe {
            lib.check((lib.group_start)(), "ncclGroupStart")
                .and_then(|()| super::bind(r.gpu))
                .and_then(|()| lib.check(calls(lib, r.comm.0, stream), &what))
                .and_then(|()| lib.check((lib.group_end)(), &what))
        };
        if let Err(e) = queued {
            process::abort(&format!("NCCL on {}: {e}", r.gpu.label()));
        }
        self.sent[rank].fetch_add(bytes as u64, Ordering::Relaxed);
        self.wait(lib, r, stream, &what)
    }

    /// Wait for the rank's stream, polling: NCCL's asynchronous errors end
    /// the job, as do the collective timeout and an interrupt (a peer cannot
    /// be left half-way through a collective).
    fn wait(&self, lib: &Lib, r: &Rank, stream: CUstream, what: &str) -> CommResult<()> {
        let deadline = Instant::now() + process::collective_timeout();
        let mut spins = 0u64;
        loop {
            // SAFETY: a query of a live stream.
            match unsafe { cuStreamQuery(stream) } {
                cudaError_enum::CUDA_SUCCESS => return Ok(()),
                cudaError_enum::CUDA_ERROR_NOT_READY => {}
                e => process::abort(&format!("{} failed in {what}: {e:?}", r.gpu.label())),
            }
            if self.aborted.load(Ordering::Relaxed) {
                return Err(Aborted);
            }
            let mut status = 0;
            // SAFETY: writes one status of a live communicator.
            unsafe { (lib.comm_get_async_error)(r.comm.0, &mut status) };
            if let Err(e) = lib.check(status, what) {
                process::abort(&format!("NCCL on {}: {e}", r.gpu.label()));
            }
            if crate::interrupt::requested() {
                process::abort(&format!("KeyboardInterrupt: {what}"));
            }
            if Instant::now() > deadline {
                process::abort(&format!(
                    "{what} did not complete within {:?} on {} (a peer never joined it)",
                    process::collective_timeout(),
                    r.gpu.label()
                ));
            }
            spins += 1;
            if spins > 64 {
                std::thread::sleep(Duration::from_micros(spins.min(1000)));
            }
        }
    }
}

/// NCCL's element type of `dtype` and its operation for `op` (bool
/// reductions are or/and over bytes holding 0 or 1).
fn nccl_type(dtype: DType) -> i32 {
    match dtype {
        DType::Bool | DType::U8 => 1,
        DType::I8 => 0,
        // No 16-bit integer type in NCCL: moved as float16 bits (sums of
        // narrow integers run widened to i32).
        DType::I16 | DType::U16 => 6,
        DType::I32 => 2,
        DType::U32 => 3,
        DType::I64 => 4,
        DType::F16 => 6,
        DType::F32 => 7,
        DType::F64 => 8,
        DType::BF16 => 9,
        // Moved as their bits (ncclUint64): gathers, all-to-alls and
        // permutes are right; a sum of complex numbers is not (the
        // partitioner never places one on NCCL: complex work runs on the CPU).
        DType::C64 => 5,
    }
}

fn nccl_op(dtype: DType, op: ReduceOp) -> i32 {
    match (op, dtype) {
        (ReduceOp::Max | ReduceOp::Any, _) | (ReduceOp::Sum, DType::Bool) => 2,
        (ReduceOp::Min | ReduceOp::All, _) | (ReduceOp::Prod, DType::Bool) => 3,
        (ReduceOp::Sum, _) => 0,
        (ReduceOp::Prod, _) => 1,
    }
}

fn elements(a: &Array) -> usize {
    a.shape().iter().product()
}

/// A device pointer of `buf` (on `gpu`).
fn ptr(gpu: &GpuDevice, buf: &DeviceBuffer) -> *mut c_void {
    super::device_ptr(gpu, buf) as *mut c_void
}

impl Communicator for NcclComm {
    fn size(&self) -> usize {
        self.size
    }

    fn all_reduce_many(&self, rank: usize, op: ReduceOp, xs: &[Array]) -> CommResult<Vec<Array>> {
        let r = self.rank(rank)?;
        let ins: Vec<_> = xs.iter().map(|x| r.gpu.input(x)).collect();
        let outs: Vec<_> = ins.iter().map(|b| r.gpu.alloc(b.bytes)).collect();
        let bytes = ins.iter().map(|b| b.bytes).sum();
        self.run(r, rank, bytes, |lib, comm, stream| {
            for ((x, i), o) in xs.iter().zip(&ins).zip(&outs) {
                let (t, o2) = (nccl_type(x.dtype()), nccl_op(x.dtype(), op));
                // SAFETY: both buffers hold `elements(x)` elements of `t`.
                let s = unsafe {
                    (lib.all_reduce)(
                        ptr(r.gpu, i),
                        ptr(r.gpu, o),
                        elements(x),
                        t,
                        o2,
                        comm,
                        stream,
                    )
                };
                if s != 0 {
                    return s;
                }
            }
            0
        })?;
        Ok(xs
            .iter()
            .zip(outs)
            .map(|(x, o)| Array::on_gpu(x.shape(), x.dtype(), o))
            .collect())
    }

    fn all_gather(&self, rank: usize, x: &Array) -> CommResult<Vec<Array>> {
        let parts = vec![x.clone(); self.size];
        self.all_to_all(rank, &parts)
    }

    fn reduce_scatter(&self, rank: usize, op: ReduceOp, parts: &[Array]) -> CommResult<Array> {
        let r = self.rank(rank)?;
        let flat: Vec<Array> = parts.iter().map(|p| p.reshape(&[elements(p)])).collect();
        let whole = crate::Backend::concatenate(r.gpu, &flat, 0);
        let (src, part) = (r.gpu.input(&whole), &parts[rank]);
        let out = r.gpu.alloc(src.bytes / self.size.max(1));
        let (t, o) = (nccl_type(part.dtype()), nccl_op(part.dtype(), op));
        self.run(r, rank, src.bytes, |lib, comm, stream| {
            // SAFETY: `src` holds `size` parts of `elements(part)` elements.
            unsafe {
                (lib.reduce_scatter)(
                    ptr(r.gpu, &src),
                    ptr(r.gpu, &out),
                    elements(part),
                    t,
                    o,
                    comm,
                    stream,
                )
            }
        })?;
        Ok(Array::on_gpu(part.shape(), part.dtype(), out))
    }

    fn all_to_all(&self, rank: usize, parts: &[Array]) -> CommResult<Vec<Array>> {
        let r = self.rank(rank)?;
        let ins: Vec<_> = parts.iter().map(|p| r.gpu.input(p)).collect();
        let outs: Vec<_> = ins.iter().map(|b| r.gpu.alloc(b.bytes)).collect();
        let bytes = ins
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != rank)
            .map(|(_, b)| b.bytes)
            .sum();
        self.run(r, rank, bytes, |lib, comm, stream| {
            for (peer, p) in parts.iter().enumerate().filter(|&(j, _)| j != rank) {
                let (n, t) = (elements(p), nccl_type(p.dtype()));
                // SAFETY: every part holds `n` elements of `t` (same shapes on every rank).
                let s =
                    unsafe {
                        (lib.send)(ptr(r.gpu, &ins[peer]), n, t, peer as i32, comm, stream).max(
                            (lib.recv)(ptr(r.gpu, &outs[peer]), n, t, peer as i32, comm, stream),
                        )
                    };
                if s != 0 {
                    return s;
                }
            }
            0
        })?;
        Ok(parts
            .iter()
            .zip(outs)
            .enumerate()
            .map(|(j, (p, o))| {
                if j == rank {
                    p.clone()
                } else {
                    Array::on_gpu(p.shape(), p.dtype(), o)
                }
            })
            .collect())
    }

    fn send_recv(
        &self,
        rank: usize,
        x: &Array,
        to: Option<usize>,
        from: Option<usize>,
    ) -> CommResult<Option<Array>> {
        let r = self.rank(rank)?;
        if to.is_none() && from.is_none() {
            return Ok(None);
        }
        let src = r.gpu.input(x);
        let out = r.gpu.alloc(src.bytes);
        let (n, t) = (elements(x), nccl_type(x.dtype()));
        let sent = if to.is_some() { src.bytes } else { 0 };
        self.run(r, rank, sent, |lib, comm, stream| {
            // SAFETY: both buffers hold `n` elements of `t`.
            unsafe {
                let s = to.map_or(0, |p| {
                    (lib.send)(ptr(r.gpu, &src), n, t, p as i32, comm, stream)
                });
                let q = from.map_or(0, |p| {
                    (lib.recv)(ptr(r.gpu, &out), n, t, p as i32, comm, stream)
                });
                s.max(q)
            }
        })?;
        Ok(from.map(|_| Array::on_gpu(x.shape(), x.dtype(), out)))
    }

    fn bytes_sent(&self, rank: usize) -> u64 {
        self.sent[rank].load(Ordering::Relaxed)
    }

    fn abort(&self) {
        if self.aborted.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Ok(lib) = lib() {
            for r in self.ranks.iter().flatten() {
                // SAFETY: aborting a live communicator makes its queued
                // operations fail; the handle is not used for calls after.
                unsafe { (lib.comm_abort)(r.comm.0) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With NCCL on the library path (the test command installs it): its
    /// version, and unique ids of 128 bytes, a new one each time, made
    /// without a GPU.
    #[test]
    fn version_and_unique_ids_without_a_gpu() {
        let Ok(v) = version() else {
            assert!(
                std::env::var("ARR_REQUIRE_NCCL").is_err(),
                "{:?}",
                lib().err()
            );
            return;
        };
        assert!(v.starts_with("2."), "{v}");
        let (a, b) = (unique_id().unwrap(), unique_id().unwrap());
        assert_ne!(a, b);
        assert!(a.0.iter().any(|&x| x != 0));
        // One process: the id is its own.
        assert_eq!(share_id(0, Some(a), true), Some(a));
        assert_eq!(share_id(0, None, false), None);
    }

    #[test]
    fn element_types_and_operations() {
        assert_eq!(nccl_type(DType::BF16), 9);
        assert_eq!(nccl_op(DType::Bool, ReduceOp::Sum), 2, "or");
        assert_eq!(nccl_op(DType::F32, ReduceOp::Sum), 0);
        assert_eq!(nccl_op(DType::I32, ReduceOp::Min), 3);
    }
}
