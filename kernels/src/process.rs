//! The processes of a job: which one this is, how many there are, which
//! devices each holds, and the job-wide operations — exchanging bytes
//! between processes, communicators for mesh groups that span processes,
//! ending the whole job with a message. Over MPI (`mpi.rs`) when arr is
//! built with the `mpi` feature and started by an MPI launcher; otherwise
//! the job is this one process.
//!
//! Devices are numbered globally: process p holds devices
//! `p * local_count .. (p + 1) * local_count`, as JAX numbers them, so a
//! mesh over the global device list spans every process and each process
//! runs the blocks of its own devices.

use crate::collectives::{Communicator, ThreadComm};
use crate::{Array, Buffer, DType};
use std::sync::Arc;
use std::time::Duration;

/// This process's place in the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub index: usize,
    pub count: usize,
}

/// Whether an MPI launcher (mpirun, srun) started this process as one of
/// several: its environment names the job's size.
pub fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var(v).is_ok_and(|s| s.trim().parse::<usize>().is_ok_and(|n| n > 1)))
}

/// Join the other processes of the job (idempotent): over MPI when built
/// with it; else an error if a launcher started several processes, which
/// would each run the whole program alone.
pub fn init() -> Result<Place, String> {
    #[cfg(feature = "mpi")]
    {
        crate::mpi::init().map(|()| place())
    }
    #[cfg(not(feature = "mpi"))]
    {
        if launched_by_mpi() {
            return Err(
                "this arr was built without MPI, so the processes mpirun started \
                 cannot form one job: build it with `cargo build --release --features mpi`"
                    .into(),
            );
        }
        Ok(place())
    }
}

/// This process's index and the number of processes (0 of 1 until `init`).
pub fn place() -> Place {
    #[cfg(feature = "mpi")]
    if let Some(p) = crate::mpi::place() {
        return p;
    }
    Place { index: 0, count: 1 }
}

pub fn index() -> usize {
    place().index
}

pub fn count() -> usize {
    place().count
}

/// Whether the job has several processes.
pub fn is_multi() -> bool {
    count() > 1
}

/// The process that holds global device `id`.
pub fn owner(id: usize) -> usize {
    id / crate::devices::local_count()
}

/// Whether this process holds global device `id`.
pub fn is_local(id: usize) -> bool {
    owner(id) == index()
}

/// How long a collective across processes may wait for its peers before
/// the job ends: `ARR_COLLECTIVE_TIMEOUT` seconds, default 300.
pub fn collective_timeout() -> Duration {
    let s = std::env::var("ARR_COLLECTIVE_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(300.0);
    Duration::from_secs_f64(s)
}

/// End the whole job (every process) after printing `msg` with this
/// process's index; in a single process, exit with status 1.
pub fn abort(msg: &str) -> ! {
    let p = place();
    let text = format!("arr: process {} of {}: {msg}\n", p.index, p.count);
    // One write: the messages of several processes' devices must not interleave.
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    #[cfg(feature = "mpi")]
    crate::mpi::abort();
    #[cfg(not(feature = "mpi"))]
    std::process::exit(1)
}

/// The counters of every device of the job, in id order: each process
/// reports its own devices (called by every process at the same point).
pub fn device_snapshots() -> Vec<crate::devices::DeviceSnapshot> {
    let local = crate::devices::local_count();
    let first = index() * local;
    let mine: Vec<_> = crate::devices::snapshot(first + local).split_off(first);
    if !is_multi() {
        return mine;
    }
    let mut bytes = Vec::with_capacity(mine.len() * 48);
    for s in &mine {
        for word in [
            s.id as u64,
            s.steps,
            s.compute_ms.to_bits(),
            s.collective_ms.to_bits(),
            s.bytes_sent,
            s.resident_bytes,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    let all = all_gather_bytes(bytes, "mesh_report (the devices' counters)");
    all.iter()
        .flat_map(|b| b.chunks_exact(48))
        .map(|c| {
            let w = |i: usize| u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            crate::devices::DeviceSnapshot {
                id: w(0) as usize,
                steps: w(1),
                compute_ms: f64::from_bits(w(2)),
                collective_ms: f64::from_bits(w(3)),
                bytes_sent: w(4),
                resident_bytes: w(5),
            }
        })
        .collect()
}

/// Wait until every process reaches this point (`what` names it).
pub fn barrier(what: &str) {
    if is_multi() {
        all_gather_bytes(Vec::new(), what);
    }
}

/// Every process's `bytes`, in process order (called by every process at
/// the same point of the program; `what` names that point if a process
/// never arrives).
pub fn all_gather_bytes(bytes: Vec<u8>, what: &str) -> Vec<Vec<u8>> {
    #[cfg(feature = "mpi")]
    if is_multi() {
        return crate::mpi::all_gather_bytes(bytes, what);
    }
    let _ = what;
    vec![bytes]
}

/// The communicator of a group of devices (a mesh axis's group, a pmap's
/// devices): NCCL when they are distinct CUDA GPUs; else between threads
/// when one process holds them all, else across the processes that hold them. Every process makes every group of a run,
/// in the same order, including groups it holds no device of.
pub fn group(devices: &[usize]) -> Arc<dyn Communicator> {
    // Distinct physical CUDA GPUs (here or in other processes): NCCL.
    if let Some(c) = crate::gpu::cuda::nccl::group(devices) {
        return c;
    }
    #[cfg(feature = "mpi")]
    if is_multi() {
        let procs: Vec<usize> = devices.iter().map(|&d| owner(d)).collect();
        let seq = crate::mpi::next_group();
        if procs.iter().any(|&p| p != procs[0]) {
            return Arc::new(crate::mpi::MpiComm::new(procs, devices.to_vec(), seq));
        }
    }
    Arc::new(ThreadComm::new(devices.len()))
}

/// Finish the job's communication before the process exits (every process
/// calls it once, at the end).
pub fn finalize() {
    #[cfg(feature = "mpi")]
    crate::mpi::finalize();
}

// ---------------------------------------------------------------------------
// Arrays as bytes between processes.

/// Append `a` (dtype, shape, elements) to `out`.
pub fn encode_array(a: &Array, out: &mut Vec<u8>) -> Result<(), crate::array::Deleted> {
    let name = a.dtype().name().as_bytes();
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&(a.ndim() as u64).to_le_bytes());
    for &d in a.shape() {
        out.extend_from_slice(&(d as u64).to_le_bytes());
    }
    let bytes = a.buffer()?.to_le_bytes();
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&bytes);
    Ok(())
}

/// The array `encode_array` wrote at `*at`, moving `*at` past it; `None`
/// if the bytes are not such an array.
pub fn decode_array(bytes: &[u8], at: &mut usize) -> Option<Array> {
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = bytes.get(*at..at.checked_add(n)?)?;
        *at += n;
        Some(s)
    };
    let name_len = *take(1)?.first()? as usize;
    let dtype = DType::from_name(std::str::from_utf8(take(name_len)?).ok()?)?;
    let mut u64_at =
        || -> Option<usize> { usize::try_from(u64::from_le_bytes(take(8)?.try_into().ok()?)).ok() };
    let ndim = u64_at()?;
    let shape: Vec<usize> = (0..ndim).map(|_| u64_at()).collect::<Option<_>>()?;
    let len = u64_at()?;
    let buf = Buffer::from_le_bytes(dtype, take(len)?)?;
    (buf.len() == shape.iter().product::<usize>()).then(|| Array::new(&shape, buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_survive_their_bytes() {
        let a = Array::new(
            &[2, 3],
            Buffer::F32(vec![1.0, -2.5, 3.0, f32::NAN, 0.0, 7.0]),
        );
        let b = Array::new(&[], Buffer::I64(vec![-9]));
        let c = Array::new(&[0, 4], Buffer::Bool(vec![]));
        let mut bytes = Vec::new();
        for x in [&a, &b, &c] {
            encode_array(x, &mut bytes).unwrap();
        }
        let mut at = 0;
        for x in [&a, &b, &c] {
            let y = decode_array(&bytes, &mut at).unwrap();
            assert_eq!(y.shape(), x.shape());
            assert_eq!(y.dtype(), x.dtype());
            assert_eq!(
                y.buffer().unwrap().to_le_bytes(),
                x.buffer().unwrap().to_le_bytes()
            );
        }
        assert_eq!(at, bytes.len());
        assert!(decode_array(&bytes[..bytes.len() - 1], &mut 0).is_some());
        assert!(decode_array(&bytes[..5], &mut 0).is_none());
    }

    #[test]
    fn one_process_owns_every_device() {
        assert_eq!(place(), Place { index: 0, count: 1 });
        assert!(is_local(0) && is_local(crate::devices::count() - 1));
        assert_eq!(all_gather_bytes(vec![1, 2], "test"), vec![vec![1, 2]]);
    }
}
