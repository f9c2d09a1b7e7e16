//! The job's processes over MPI (the `mpi` feature): joining the ranks,
//! `MpiComm` — the `Communicator` of a mesh group that spans processes —
//! the job-wide byte exchange, and ending the job when anything fails.
//!
//! Every device worker thread makes its own MPI calls (MPI is initialised
//! with `MPI_THREAD_MULTIPLE`), as point-to-point messages whose tag names
//! the group and the pair of ranks, so groups running at once never take
//! each other's messages. Every wait is a non-blocking request polled
//! against `ARR_COLLECTIVE_TIMEOUT`: MPI cannot cancel a collective, so a
//! peer that never arrives (it died, skipped the collective, hangs) ends
//! the whole job with a message naming the collective, rather than leaving
//! every rank waiting forever. A panic ends the job the same way: left
//! alone it would wait in `MPI_Finalize` while its peers spin.

use crate::collectives::{combine, reduce_range, CommResult, Communicator};
use crate::process::{self, Place};
use crate::Backend as _;
use crate::{Array, Buffer, ReduceOp};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use mpi::Threading;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// MPI's state once joined: the universe (finalised by `finalize`), a
/// communicator for mesh groups' messages and one for job-wide exchanges,
/// so the two never match each other's messages.
struct Joined {
    place: Place,
    universe: Mutex<Option<mpi::environment::Universe>>,
    groups: SimpleCommunicator,
    world: SimpleCommunicator,
    /// The largest tag this MPI accepts (`MPI_TAG_UB`).
    tag_ub: i64,
}

// SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (checked in `init`),
// under which communicator handles may be used from any thread at once;
// the universe is only dropped (MPI_Finalize) through its mutex.
unsafe impl Send for Joined {}
// SAFETY: as above.
unsafe impl Sync for Joined {}

static JOINED: OnceLock<Joined> = OnceLock::new();

pub fn place() -> Option<Place> {
    JOINED.get().map(|j| j.place)
}

fn joined() -> &'static Joined {
    JOINED
        .get()
        .expect("MPI is joined before any cross-process collective")
}

/// Join the job's ranks (once). A process started without a launcher
/// joins as a job of one.
pub fn init() -> Result<(), String> {
    static INIT: Mutex<Option<Result<(), String>>> = Mutex::new(None);
    let mut done = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = &*done {
        return r.clone();
    }
    let r = join();
    *done = Some(r.clone());
    r
}

fn join() -> Result<(), String> {
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or("MPI was initialised already, outside arr")?;
    if threading < Threading::Multiple {
        return Err(format!(
            "this MPI offers only {threading:?} threads, and arr's device workers need \
             MPI_THREAD_MULTIPLE"
        ));
    }
    let world = universe.world();
    let place = Place {
        index: world.rank() as usize,
        count: world.size() as usize,
    };
    let joined = Joined {
        place,
        groups: world.duplicate(),
        world: world.duplicate(),
        tag_ub: tag_ub(&world),
        universe: Mutex::new(Some(universe)),
    };
    if JOINED.set(joined).is_err() {
        return Err("MPI was joined twice".into());
    }
    if place.count > 1 {
        end_the_job_on_panic();
    }
    Ok(())
}

/// `MPI_TAG_UB` of `comm` (at least 32767 by the standard).
fn tag_ub(comm: &SimpleCommunicator) -> i64 {
    use mpi::raw::AsRaw;
    let mut value: *mut std::os::raw::c_int = std::ptr::null_mut();
    let mut flag: std::os::raw::c_int = 0;
    // SAFETY: MPI_TAG_UB is a predefined attribute whose value is a pointer
    // to an int that MPI owns for as long as it is initialised; `value` and
    // `flag` are valid out-parameters.
    unsafe {
        mpi::ffi::MPI_Comm_get_attr(
            comm.as_raw(),
            mpi::ffi::MPI_TAG_UB as std::os::raw::c_int,
            (&mut value as *mut *mut std::os::raw::c_int).cast(),
            &mut flag,
        );
        if flag != 0 && !value.is_null() {
            return i64::from(*value);
        }
    }
    32767
}

/// A panic prints its message as usual and then ends every process of the
/// job: unwinding would leave this one waiting in `MPI_Finalize` while its
/// peers wait for it in a collective, forever.
fn end_the_job_on_panic() {
    let before = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        before(info);
        let thread = std::thread::current();
        process::abort(&format!(
            "a panic on thread '{}' (a bug in arr) ends the job",
            thread.name().unwrap_or("unnamed")
        ));
    }));
}

/// End every process of the job, now.
pub fn abort() -> ! {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    let _ = std::io::stdout().flush();
    match JOINED.get() {
        Some(j) => j.world.abort(1),
        None => std::process::exit(1),
    }
}

/// Finalise MPI (the process's last MPI call).
pub fn finalize() {
    if let Some(j) = JOINED.get() {
        drop(j.universe.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The sequence number of the next mesh group (every process makes the
/// same groups in the same order, so numbers agree across processes).
pub fn next_group() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn doing(fallback: &str) -> String {
    crate::collectives::context().unwrap_or_else(|| fallback.to_string())
}

/// A test of failure handling (`ARR_TEST_FAULT=panic`, or `panic:P` for
/// process P only): the process panics at its first collective across
/// processes.
fn injected_fault() {
    static FAULT: OnceLock<bool> = OnceLock::new();
    let armed = || {
        let v = std::env::var("ARR_TEST_FAULT").unwrap_or_default();
        match v.strip_prefix("panic") {
            Some("") => true,
            Some(rank) => {
                rank.strip_prefix(':').and_then(|r| r.parse().ok()) == place().map(|p| p.index)
            }
            None => false,
        }
    };
    if *FAULT.get_or_init(armed) {
        panic!("ARR_TEST_FAULT=panic: a deliberate panic in a collective");
    }
}

/// Post every send and receive at once and wait until all complete,
/// polling; past the collective timeout, end the job naming `what` and the
/// processes still outstanding. Ranks are processes of `comm`.
fn exchange(
    comm: &SimpleCommunicator,
    sends: &[(usize, i32, &[u8])],
    recvs: &mut [(usize, i32, &mut [u8])],
    what: &dyn Fn(&[usize]) -> String,
) {
    let deadline = Instant::now() + process::collective_timeout();
    mpi::request::scope(|scope| {
        let mut pending = Vec::with_capacity(sends.len() + recvs.len());
        for &(to, tag, buf) in sends {
            let req = comm
                .process_at_rank(to as i32)
                .immediate_send_with_tag(scope, buf, tag);
            pending.push((to, req));
        }
        for (from, tag, buf) in recvs.iter_mut() {
            let req = comm
                .process_at_rank(*from as i32)
                .immediate_receive_into_with_tag(scope, &mut **buf, *tag);
            pending.push((*from, req));
        }
        let mut progressed = Instant::now();
        let mut naps = 0u64;
        while !pending.is_empty() {
            let before = pending.len();
            pending = pending
                .into_iter()
                .filter_map(|(p, r)| r.test().err().map(|r| (p, r)))
                .collect();
            if pending.is_empty() {
                break;
            }
            if pending.len() < before {
                (progressed, naps) = (Instant::now(), 0);
            }
            let interrupted = crate::interrupt::requested();
            if interrupted || Instant::now() > deadline {
                let mut waiting: Vec<usize> = pending.iter().map(|(p, _)| *p).collect();
                waiting.dedup();
                // Never returns: the requests are never dropped uncompleted.
                // An interrupt cannot leave the peers half-way through a
                // collective either: it ends the job, as a failure does.
                let why = what(&waiting);
                process::abort(&if interrupted {
                    format!("KeyboardInterrupt: {why}")
                } else {
                    why
                });
            }
            // MPI moves a large message's fragments only inside `test`, so
            // while data flows the loop must keep calling it: yield (not
            // sleep) for a few milliseconds after the last completion — a
            // 4 MB all-reduce took 28 ms with 1 ms naps, one per fragment.
            // Past that the peer is late (still computing, or gone): nap,
            // longer each time up to 250 µs, since ranks may share cores and
            // a spinning rank starves the one it waits for.
            if progressed.elapsed() < Duration::from_millis(5) {
                std::thread::yield_now();
            } else {
                naps += 1;
                std::thread::sleep(Duration::from_micros((naps * 10).min(250)));
            }
        }
    });
}

/// Every process's `bytes`, in process order.
pub fn all_gather_bytes(bytes: Vec<u8>, what: &str) -> Vec<Vec<u8>> {
    let j = joined();
    let (me, n) = (j.place.index, j.place.count);
    let timeout = |waiting: &[usize]| {
        format!(
            "{what}: processes {waiting:?} did not arrive within {:?} \
             (ARR_COLLECTIVE_TIMEOUT); ending the job",
            process::collective_timeout()
        )
    };
    let peers: Vec<usize> = (0..n).filter(|&p| p != me).collect();
    let len = (bytes.len() as u64).to_le_bytes();
    let mut lens = vec![[0u8; 8]; n];
    {
        let sends: Vec<(usize, i32, &[u8])> = peers.iter().map(|&p| (p, 0, &len[..])).collect();
        let mut recvs: Vec<(usize, i32, &mut [u8])> = lens
            .iter_mut()
            .enumerate()
            .filter(|(p, _)| *p != me)
            .map(|(p, b)| (p, 0, &mut b[..]))
            .collect();
        exchange(&j.world, &sends, &mut recvs, &timeout);
    }
    let mut all: Vec<Vec<u8>> = lens
        .iter()
        .map(|l| vec![0u8; u64::from_le_bytes(*l) as usize])
        .collect();
    {
        let sends: Vec<(usize, i32, &[u8])> = peers.iter().map(|&p| (p, 1, &bytes[..])).collect();
        let mut recvs: Vec<(usize, i32, &mut [u8])> = all
            .iter_mut()
            .enumerate()
            .filter(|(p, _)| *p != me)
            .map(|(p, b)| (p, 1, &mut b[..]))
            .collect();
        exchange(&j.world, &sends, &mut recvs, &timeout);
    }
    all[me] = bytes;
    all
}

/// The collectives of a mesh group whose devices live on several
/// processes: every rank (a device worker thread) exchanges its own
/// messages with its peers. The algorithms reduce in rank order, as
/// `ThreadComm` does, so results have the same bits as the in-process mesh.
pub struct MpiComm {
    /// The process of each rank, and its global device.
    procs: Vec<usize>,
    devices: Vec<usize>,
    /// This group's first tag; rank a's messages to rank b use `tag0 + a * n + b`.
    tag0: i64,
    sent: Vec<AtomicU64>,
}

impl MpiComm {
    pub fn new(procs: Vec<usize>, devices: Vec<usize>, seq: u64) -> MpiComm {
        let n = procs.len() as i64;
        // Groups of one run need distinct tags; groups of earlier runs have
        // finished every message, so the numbers may wrap.
        let slots = ((joined().tag_ub + 1) / (n * n)).max(1);
        let tag0 = (seq as i64 % slots) * n * n;
        MpiComm {
            sent: procs.iter().map(|_| AtomicU64::new(0)).collect(),
            procs,
            devices,
            tag0,
        }
    }

    fn tag(&self, from: usize, to: usize) -> i32 {
        (self.tag0 + (from * self.procs.len() + to) as i64) as i32
    }

    /// Send `parts[k]` to `to[k]` and receive one array like `like[k]` from
    /// `from[k]`: the received arrays, in the order of `from`.
    fn swap(
        &self,
        rank: usize,
        to: &[usize],
        parts: &[&Array],
        from: &[usize],
        like: &[&Array],
        op: &str,
    ) -> Vec<Array> {
        injected_fault();
        let payload: Vec<Vec<u8>> = parts.iter().map(|a| host_bytes(a)).collect();
        let sends: Vec<(usize, i32, &[u8])> = to
            .iter()
            .zip(&payload)
            .map(|(&t, b)| (self.procs[t], self.tag(rank, t), &b[..]))
            .collect();
        let sizes: Vec<usize> = like
            .iter()
            .map(|a| a.len() * a.dtype().size_bytes())
            .collect();
        let mut got: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s]).collect();
        let mut recvs: Vec<(usize, i32, &mut [u8])> = from
            .iter()
            .zip(got.iter_mut())
            .map(|(&f, b)| (self.procs[f], self.tag(f, rank), &mut b[..]))
            .collect();
        let what = |waiting: &[usize]| {
            let ranks: Vec<String> = (0..self.procs.len())
                .filter(|r| from.contains(r) && waiting.contains(&self.procs[*r]))
                .map(|r| format!("device {} on process {}", self.devices[r], self.procs[r]))
                .collect();
            format!(
                "{} on device {} did not complete within {:?} (ARR_COLLECTIVE_TIMEOUT): \
                 still waiting for {} (a process that died, never reached this \
                 collective, or runs another); ending the job",
                doing(op),
                self.devices[rank],
                process::collective_timeout(),
                ranks.join(", ")
            )
        };
        exchange(&joined().groups, &sends, &mut recvs, &what);
        let bytes: usize = payload.iter().map(Vec::len).sum();
        self.sent[rank].fetch_add(bytes as u64, Ordering::Relaxed);
        got.into_iter()
            .zip(like)
            .map(|(b, a)| {
                let buf = Buffer::from_le_bytes(a.dtype(), &b).expect("whole elements");
                Array::new(a.shape(), buf)
            })
            .collect()
    }

    fn others(&self, rank: usize) -> Vec<usize> {
        (0..self.procs.len()).filter(|&r| r != rank).collect()
    }
}

/// An array's elements as little-endian bytes.
fn host_bytes(a: &Array) -> Vec<u8> {
    a.buffer()
        .expect("a collective's operands are live")
        .to_le_bytes()
}

impl Communicator for MpiComm {
    fn size(&self) -> usize {
        self.procs.len()
    }

    /// Packs the arrays of each dtype into one buffer (a bucket), then
    /// reduce-scatter and all-gather in one exchange each: rank r reduces
    /// the r-th 1/n of every rank's bucket, in rank order, and sends it
    /// back — 2(n-1)/n of the bucket per rank, as a ring sends.
    fn all_reduce_many(&self, rank: usize, op: ReduceOp, xs: &[Array]) -> CommResult<Vec<Array>> {
        let n = self.size();
        let mut out: Vec<Option<Array>> = vec![None; xs.len()];
        let mut dtypes: Vec<crate::DType> = xs.iter().map(Array::dtype).collect();
        dtypes.dedup();
        dtypes.sort_by_key(|d| d.name());
        dtypes.dedup();
        for dtype in dtypes {
            let members: Vec<usize> = (0..xs.len()).filter(|&k| xs[k].dtype() == dtype).collect();
            let flat: Vec<Array> = members
                .iter()
                .map(|&k| xs[k].reshape(&[xs[k].len()]))
                .collect();
            let bucket = crate::backend::of(&flat).concatenate(&flat, 0);
            let len = bucket.len();
            let cut = |r: usize| (len * r / n, len * (r + 1) / n);
            let chunks: Vec<Array> = (0..n).map(|r| slice_flat(&bucket, cut(r))).collect();
            let others = self.others(rank);
            let to_send: Vec<&Array> = others.iter().map(|&r| &chunks[r]).collect();
            let like: Vec<&Array> = others.iter().map(|_| &chunks[rank]).collect();
            let got = self.swap(rank, &others, &to_send, &others, &like, "all-reduce");
            // Every rank's copy of my chunk, in rank order.
            let mut parts: Vec<&Array> = Vec::with_capacity(n);
            let mut it = got.iter();
            for r in 0..n {
                parts.push(if r == rank {
                    &chunks[rank]
                } else {
                    it.next().expect("one per peer")
                });
            }
            let mine = reduce_range(op, &parts, 0, chunks[rank].len());
            let to_send: Vec<&Array> = others.iter().map(|_| &mine).collect();
            let like: Vec<Array> = others
                .iter()
                .map(|&r| slice_flat(&bucket, cut(r)))
                .collect();
            let like_refs: Vec<&Array> = like.iter().collect();
            let got = self.swap(rank, &others, &to_send, &others, &like_refs, "all-reduce");
            let mut reduced: Vec<Array> = Vec::with_capacity(n);
            let mut it = got.into_iter();
            for r in 0..n {
                reduced.push(if r == rank {
                    mine.clone()
                } else {
                    it.next().expect("one per peer")
                });
            }
            let whole = crate::backend::of(&reduced).concatenate(&reduced, 0);
            let mut at = 0;
            for &k in &members {
                let len = xs[k].len();
                out[k] = Some(slice_flat(&whole, (at, at + len)).reshape(xs[k].shape()));
                at += len;
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.expect("every dtype reduced"))
            .collect())
    }

    fn all_gather(&self, rank: usize, x: &Array) -> CommResult<Vec<Array>> {
        let others = self.others(rank);
        let to_send: Vec<&Array> = others.iter().map(|_| x).collect();
        let got = self.swap(rank, &others, &to_send, &others, &to_send, "all-gather");
        let mut it = got.into_iter();
        Ok((0..self.size())
            .map(|r| {
                if r == rank {
                    x.clone()
                } else {
                    it.next().expect("one per peer")
                }
            })
            .collect())
    }

    fn reduce_scatter(&self, rank: usize, op: ReduceOp, parts: &[Array]) -> CommResult<Array> {
        let others = self.others(rank);
        let to_send: Vec<&Array> = others.iter().map(|&r| &parts[r]).collect();
        let like: Vec<&Array> = others.iter().map(|_| &parts[rank]).collect();
        let got = self.swap(rank, &others, &to_send, &others, &like, "reduce-scatter");
        let mut it = got.into_iter();
        let mine: Vec<Array> = (0..self.size())
            .map(|r| {
                if r == rank {
                    parts[rank].clone()
                } else {
                    it.next().expect("one per peer")
                }
            })
            .collect();
        // In the order a ring reduces (from the next rank round to this
        // one), so the bits are those of the in-process mesh.
        let n = self.size();
        let first = mine[(rank + 1) % n].clone();
        Ok((2..=n).fold(first, |acc, i| {
            combine(op, acc, mine[(rank + i) % n].clone())
        }))
    }

    fn all_to_all(&self, rank: usize, parts: &[Array]) -> CommResult<Vec<Array>> {
        let others = self.others(rank);
        let to_send: Vec<&Array> = others.iter().map(|&r| &parts[r]).collect();
        let like: Vec<&Array> = others.iter().map(|_| &parts[rank]).collect();
        let got = self.swap(rank, &others, &to_send, &others, &like, "all-to-all");
        let mut it = got.into_iter();
        Ok((0..self.size())
            .map(|r| {
                if r == rank {
                    parts[rank].clone()
                } else {
                    it.next().expect("one per peer")
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
        let to: Vec<usize> = to.into_iter().collect();
        let from: Vec<usize> = from.into_iter().collect();
        let to_send: Vec<&Array> = to.iter().map(|_| x).collect();
        let like: Vec<&Array> = from.iter().map(|_| x).collect();
        Ok(self
            .swap(rank, &to, &to_send, &from, &like, "permute")
            .pop())
    }

    fn bytes_sent(&self, rank: usize) -> u64 {
        self.sent[rank].load(Ordering::Relaxed)
    }

    /// A rank that fails ends the job: its peers on other processes cannot
    /// be told to stop waiting, and a job with a failed rank is over.
    fn abort(&self) {
        process::abort("a device failed during an SPMD program");
    }
}

/// Elements `lo..hi` of a one-axis array.
fn slice_flat(a: &Array, (lo, hi): (usize, usize)) -> Array {
    crate::backend::of([a]).slice(a, &[lo], &[hi], &[1])
}
