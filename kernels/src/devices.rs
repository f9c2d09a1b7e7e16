//! The virtual CPU devices of this process: how many there are, running a
//! function on several of them at once (one worker thread each), and what
//! each one is doing (steps, time computing and in collectives, bytes sent,
//! memory resident) for the mesh views.
//!
//! Devices share the host's cores: a device is an execution context with
//! its own accounting, as JAX's `--xla_force_host_platform_device_count`
//! devices are, so SPMD programs run and can be inspected on one machine.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;

/// What one device has done since the process started (or `reset_stats`).
#[derive(Default, Debug)]
pub struct DeviceStats {
    /// SPMD programs run (a pmap call is one step on each of its devices).
    pub steps: AtomicU64,
    pub compute_ns: AtomicU64,
    /// Time inside collectives, waiting for peers included.
    pub collective_ns: AtomicU64,
    pub bytes_sent: AtomicU64,
    /// Bytes of arrays resident on the device (shards placed there).
    pub resident_bytes: AtomicU64,
}

/// A snapshot of one device's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceSnapshot {
    pub id: usize,
    pub steps: u64,
    pub compute_ms: f64,
    pub collective_ms: f64,
    pub bytes_sent: u64,
    pub resident_bytes: u64,
}

/// The default number of devices: `ARR_DEVICES`, else 8. (The binary
/// refuses a bad `ARR_DEVICES` at start-up, through `env_count`.)
fn default_count() -> usize {
    env_count().ok().flatten().unwrap_or(8)
}

/// `ARR_DEVICES` if set, or why it is not a number of devices.
pub fn env_count() -> Result<Option<usize>, String> {
    match std::env::var("ARR_DEVICES") {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| (1..=MAX_DEVICES).contains(&n))
            .map(Some)
            .ok_or_else(|| {
                format!("ARR_DEVICES={v:?}: expected a number of devices from 1 to {MAX_DEVICES}")
            }),
    }
}

/// More virtual devices than this is a typo, not a mesh.
pub const MAX_DEVICES: usize = 1024;

fn count_cell() -> &'static AtomicUsize {
    static COUNT: OnceLock<AtomicUsize> = OnceLock::new();
    COUNT.get_or_init(|| AtomicUsize::new(default_count()))
}

fn stats_table() -> &'static RwLock<Vec<Arc<DeviceStats>>> {
    static STATS: RwLock<Vec<Arc<DeviceStats>>> = RwLock::new(Vec::new());
    &STATS
}

/// How many devices there are, in every process of the job.
pub fn count() -> usize {
    local_count() * crate::process::count()
}

/// How many devices this process holds.
pub fn local_count() -> usize {
    count_cell().load(Ordering::Relaxed)
}

/// Change the number of devices of this process (1..=MAX_DEVICES), at run time.
pub fn set_count(n: usize) -> Result<(), String> {
    if !(1..=MAX_DEVICES).contains(&n) {
        return Err(format!(
            "the number of devices must be between 1 and {MAX_DEVICES}, not {n}"
        ));
    }
    count_cell().store(n, Ordering::Relaxed);
    Ok(())
}

/// Device `id`'s counters (created on first use).
pub fn stats(id: usize) -> Arc<DeviceStats> {
    if let Some(s) = stats_table()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(id)
    {
        return s.clone();
    }
    let mut t = stats_table().write().unwrap_or_else(|e| e.into_inner());
    while t.len() <= id {
        t.push(Arc::default());
    }
    t[id].clone()
}

/// Snapshots of the first `n` devices.
pub fn snapshot(n: usize) -> Vec<DeviceSnapshot> {
    (0..n)
        .map(|id| {
            let s = stats(id);
            DeviceSnapshot {
                id,
                steps: s.steps.load(Ordering::Relaxed),
                compute_ms: s.compute_ns.load(Ordering::Relaxed) as f64 / 1e6,
                collective_ms: s.collective_ns.load(Ordering::Relaxed) as f64 / 1e6,
                bytes_sent: s.bytes_sent.load(Ordering::Relaxed),
                resident_bytes: s.resident_bytes.load(Ordering::Relaxed),
            }
        })
        .collect()
}

thread_local! {
    /// The device this thread works for, on device workers.
    static ON_DEVICE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Whether this thread is a device worker (one of several running at once,
/// so kernels with their own thread pools, like the BLAS, stay out).
pub fn on_device_worker() -> bool {
    current_device().is_some()
}

/// The id of the device this worker thread runs for.
pub fn current_device() -> Option<usize> {
    ON_DEVICE.with(|d| d.get())
}

/// Run `f(rank)` for every rank at once, rank r on device `ids[r]`, one
/// worker thread per rank, and return the results in rank order. Each
/// worker's time is counted as the device's compute time less what `f`
/// reports as collective time through the device's stats. A panic in one
/// worker is re-raised here.
///
/// The workers live as long as the process (one pool per number of ranks),
/// so a step pays no thread start-up and each worker keeps its warm stack
/// and allocator caches, as a device keeps its own stream.
pub fn run_spmd<R: Send>(ids: &[usize], f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    // Started where a GPU is the default: mesh device `id` runs on one of
    // that kind's (virtual) GPU devices.
    let gpu = crate::gpu::default_device();
    // The caller's interrupt flag: every worker polls it, so an interrupt
    // stops all ranks of the program together.
    let interrupt = crate::interrupt::current();
    let run = |rank: usize| {
        let id = ids[rank];
        let _interrupt = crate::interrupt::Scope::new(interrupt.clone());
        ON_DEVICE.with(|d| d.set(Some(id)));
        crate::gpu::set_thread_default(gpu.map(|g| crate::gpu::mesh_device(g, id)));
        let st = stats(id);
        let before = st.collective_ns.load(Ordering::Relaxed);
        let t = Instant::now();
        let r = f(rank);
        let total = t.elapsed().as_nanos() as u64;
        let coll = st.collective_ns.load(Ordering::Relaxed) - before;
        st.compute_ns
            .fetch_add(total.saturating_sub(coll), Ordering::Relaxed);
        st.steps.fetch_add(1, Ordering::Relaxed);
        r
    };
    let (pool, busy) = workers(ids.len());
    // One program at a time on a pool: two interleaved on its threads could
    // each wait in a collective for a rank queued behind the other's.
    let turn = if on_device_worker() {
        None
    } else {
        match busy.try_lock() {
            Ok(t) => Some(t),
            // A program that panicked held it; the pool itself is fine.
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    };
    if turn.is_none() {
        // From a device worker (a program started inside another one), or
        // while another session's program holds the pool: these ranks get
        // threads of their own.
        return std::thread::scope(|s| {
            let handles: Vec<_> = (0..ids.len())
                .map(|rank| {
                    let run = &run;
                    std::thread::Builder::new()
                        .stack_size(WORKER_STACK)
                        .spawn_scoped(s, move || run(rank))
                        .expect("spawn a device worker")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
    }
    // `broadcast` runs the closure once on every thread of the pool, each
    // on its own thread at the same time, which SPMD needs: a rank may wait
    // in a collective for all the others.
    pool.broadcast(|ctx| run(ctx.index()))
}

/// Evaluating a graph recurses; a worker gets room for deep programs.
const WORKER_STACK: usize = 64 << 20;

/// A pool of device workers, and the lock of the program running on it.
type Workers = (Arc<rayon::ThreadPool>, Arc<std::sync::Mutex<()>>);

/// The pool of `n` device workers, made on first use.
fn workers(n: usize) -> Workers {
    static POOLS: std::sync::Mutex<Vec<(usize, Workers)>> = std::sync::Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, w)) = pools.iter().find(|(k, _)| *k == n) {
        return w.clone();
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("device worker {i}"))
            .stack_size(WORKER_STACK)
            .build()
            .expect("start the device workers"),
    );
    let w = (pool, Arc::new(std::sync::Mutex::new(())));
    pools.push((n, w.clone()));
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::{Communicator, ThreadComm};
    use crate::{Array, Buffer, ReduceOp};

    /// Programs started at once from two threads (two sessions in one
    /// process) both finish: one runs on the pool, the other on threads of
    /// its own, and their collectives never wait on each other's ranks.
    #[test]
    fn concurrent_programs_do_not_wait_on_each_other() {
        let ids: Vec<usize> = (0..8).collect();
        std::thread::scope(|s| {
            for t in 0..3 {
                let ids = &ids;
                s.spawn(move || {
                    for step in 0..40 {
                        let comm = ThreadComm::new(8);
                        let out = run_spmd(ids, |r| {
                            let x =
                                Array::new(&[2], Buffer::F64(vec![r as f64, (t + step) as f64]));
                            comm.all_reduce(r, ReduceOp::Sum, &x)
                                .unwrap()
                                .to_f64_vec()
                                .unwrap()
                        });
                        for o in out {
                            assert_eq!(o, vec![28.0, 8.0 * (t + step) as f64]);
                        }
                    }
                });
            }
        });
    }
}
