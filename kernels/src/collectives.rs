//! Collectives between the devices of one mesh axis: the `Communicator`
//! interface, and `ThreadComm`, which runs real algorithms between device
//! worker threads in one process (a two-round shared-memory all-reduce and
//! all-gather, a ring reduce-scatter, pairwise all-to-all, point-to-point
//! permutes).
//!
//! The interface is what NCCL (GPUs) and MPI (processes) implement next:
//! every call is made by each rank with its own buffer (SPMD), blocks until
//! the peers it needs have called, and counts the bytes the rank sent.
//! Arrays of one call have the same shape and dtype on every rank (the
//! caller's shape rules guarantee it).

use crate::cpu::Arith;
use crate::Backend;
use crate::{cpu, Array, BinaryOp, Buffer, ReduceOp};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A collective could not finish: another rank failed and aborted the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aborted;

pub type CommResult<T> = Result<T, Aborted>;

/// The collective operations, called by every rank of the group.
pub trait Communicator: Send + Sync {
    /// Number of ranks.
    fn size(&self) -> usize;
    /// `op` over every rank's `x`, elementwise; every rank gets the result.
    fn all_reduce(&self, rank: usize, op: ReduceOp, x: &Array) -> CommResult<Array> {
        Ok(self
            .all_reduce_many(rank, op, std::slice::from_ref(x))?
            .swap_remove(0))
    }
    /// One all-reduce of several arrays (the gradients of a model, say): a
    /// transport decides how to group them (NCCL in one group call, MPI by
    /// packing into buckets); the results are those of one call per array.
    fn all_reduce_many(&self, rank: usize, op: ReduceOp, xs: &[Array]) -> CommResult<Vec<Array>>;
    /// Every rank's `x`, in rank order.
    fn all_gather(&self, rank: usize, x: &Array) -> CommResult<Vec<Array>>;
    /// `parts[j]` of every rank is reduced with `op` into rank `j`'s result.
    fn reduce_scatter(&self, rank: usize, op: ReduceOp, parts: &[Array]) -> CommResult<Array>;
    /// `parts[j]` goes to rank `j`; the result holds what each rank sent here, by source.
    fn all_to_all(&self, rank: usize, parts: &[Array]) -> CommResult<Vec<Array>>;
    /// Send `x` to `to` (if any) and receive from `from` (if any).
    fn send_recv(
        &self,
        rank: usize,
        x: &Array,
        to: Option<usize>,
        from: Option<usize>,
    ) -> CommResult<Option<Array>>;
    /// Bytes rank `rank` has sent so far.
    fn bytes_sent(&self, rank: usize) -> u64;
    /// Called by a rank that fails: every call waiting now or later returns
    /// `Aborted`, so the other ranks stop instead of waiting forever.
    fn abort(&self);
}

thread_local! {
    /// The collective this thread calls next, in the caller's words.
    static CONTEXT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Name the collective this thread calls next (its primitive, mesh axis and
/// source line): a transport that cannot complete it says so in its words.
pub fn set_context(what: Option<String>) {
    CONTEXT.with(|c| *c.borrow_mut() = what);
}

/// What `set_context` said last on this thread.
pub fn context() -> Option<String> {
    CONTEXT.with(|c| c.borrow().clone())
}

/// One rank's inbox: messages by sender, in the order they were sent.
#[derive(Default)]
struct Inbox {
    queue: Mutex<VecDeque<(usize, Array)>>,
    ready: Condvar,
}

/// The collectives between threads of one process. Point-to-point messages
/// go through per-rank inboxes (permutes, all-to-all, the ring
/// reduce-scatter); all-reduce and all-gather use a shared board instead,
/// because the workers share memory: each rank posts its buffer (an `Arc`,
/// no copy), reduces its own 1/n of everyone's, posts that, and assembles —
/// two rounds where a ring needs 2(n-1) dependent steps, each waiting for a
/// neighbour thread to be scheduled. Each rank's byte count is what it
/// would send over a real link (2(n-1)/n of the buffer for an all-reduce).
pub struct ThreadComm {
    inboxes: Vec<Inbox>,
    sent: Vec<AtomicU64>,
    aborted: AtomicBool,
    /// Two boards, used by alternate rounds, so a fast rank can post to the
    /// next round while slow ones still read the last.
    boards: [Board; 2],
    /// How many board rounds each rank has started.
    rounds: Vec<AtomicU64>,
}

/// One round of `exchange`: every rank's posted arrays.
#[derive(Default)]
struct Board {
    state: Mutex<BoardState>,
    changed: Condvar,
}

#[derive(Default)]
struct BoardState {
    /// The round this board serves now (board b serves rounds b, b+2, ...).
    round: u64,
    slots: Vec<Option<Vec<Array>>>,
    /// What the first reader made of the slots, for every reader
    /// (`exchange_with`).
    shared: Option<Vec<Array>>,
    posted: usize,
    read: usize,
}

impl ThreadComm {
    pub fn new(size: usize) -> ThreadComm {
        assert!(size >= 1, "a communicator needs at least one rank");
        ThreadComm {
            inboxes: (0..size).map(|_| Inbox::default()).collect(),
            sent: (0..size).map(|_| AtomicU64::new(0)).collect(),
            aborted: AtomicBool::new(false),
            boards: [0, 1].map(|r| Board {
                state: Mutex::new(BoardState {
                    round: r,
                    slots: vec![None; size],
                    shared: None,
                    posted: 0,
                    read: 0,
                }),
                changed: Condvar::new(),
            }),
            rounds: (0..size).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Post `x` and get every rank's posted array, in rank order.
    fn exchange(&self, rank: usize, x: Array) -> CommResult<Vec<Array>> {
        self.exchange_with(rank, vec![x], |all| {
            all.iter().map(|v| v[0].clone()).collect()
        })
    }

    /// Post `xs` and get `make(every rank's posted arrays, in rank order)`.
    /// The first rank to read makes it and the others get the same arrays:
    /// in one process they need not each build a copy.
    fn exchange_with(
        &self,
        rank: usize,
        xs: Vec<Array>,
        make: impl FnOnce(&[Vec<Array>]) -> Vec<Array>,
    ) -> CommResult<Vec<Array>> {
        let n = self.size();
        let round = self.rounds[rank].fetch_add(1, Ordering::Relaxed);
        let board = &self.boards[(round % 2) as usize];
        let mut st = board.state.lock().unwrap_or_else(|e| e.into_inner());
        // Wait for the board to finish the round two before this one.
        while st.round != round {
            if self.stopped() {
                return Err(Aborted);
            }
            st = wait(&board.changed, st);
        }
        st.slots[rank] = Some(xs);
        st.posted += 1;
        if st.posted == n {
            board.changed.notify_all();
        }
        while st.posted < n {
            if self.stopped() {
                return Err(Aborted);
            }
            st = wait(&board.changed, st);
        }
        if st.shared.is_none() {
            let all: Vec<Vec<Array>> = st
                .slots
                .iter()
                .map(|s| s.clone().expect("posted"))
                .collect();
            st.shared = Some(make(&all));
        }
        let out = st.shared.clone().expect("made");
        st.read += 1;
        if st.read == n {
            // Everyone has read: free the slots for round + 2.
            st.slots.iter_mut().for_each(|s| *s = None);
            st.shared = None;
            st.posted = 0;
            st.read = 0;
            st.round += 2;
            board.changed.notify_all();
        }
        Ok(out)
    }

    /// Whether a waiting rank should give up: a peer failed, or the
    /// program was interrupted (the peers stop at the same request, so the
    /// one awaited may never come; the communicator is not used again).
    fn stopped(&self) -> bool {
        self.aborted.load(Ordering::SeqCst) || crate::interrupt::requested()
    }

    fn count_sent(&self, rank: usize, bytes: usize) {
        self.sent[rank].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn send(&self, from: usize, to: usize, x: Array) {
        let bytes = x.len() * x.dtype().size_bytes();
        self.sent[from].fetch_add(bytes as u64, Ordering::Relaxed);
        let inbox = &self.inboxes[to];
        inbox
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back((from, x));
        inbox.ready.notify_all();
    }

    /// The oldest message from `from` (messages between one pair arrive in order).
    fn recv(&self, rank: usize, from: usize) -> CommResult<Array> {
        let inbox = &self.inboxes[rank];
        let mut q = inbox.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(i) = q.iter().position(|(s, _)| *s == from) {
                return Ok(q.remove(i).expect("position is in range").1);
            }
            if self.stopped() {
                return Err(Aborted);
            }
            q = wait(&inbox.ready, q);
        }
    }

    fn right(&self, rank: usize) -> usize {
        (rank + 1) % self.size()
    }

    fn left(&self, rank: usize) -> usize {
        (rank + self.size() - 1) % self.size()
    }

    /// Ring reduce-scatter over `chunks` (one per rank, same shapes across
    /// ranks): afterwards `chunks[(rank + 1) % n]` holds the reduction over
    /// all ranks. n-1 steps; in each a rank sends one chunk to its right.
    fn ring_reduce_scatter(
        &self,
        rank: usize,
        op: ReduceOp,
        chunks: &mut [Array],
    ) -> CommResult<()> {
        let n = self.size();
        for step in 0..n - 1 {
            let send = (rank + n - step) % n;
            let recv = (rank + 2 * n - step - 1) % n;
            self.send(rank, self.right(rank), chunks[send].clone());
            let got = self.recv(rank, self.left(rank))?;
            chunks[recv] = combine(op, got, chunks[recv].clone());
        }
        Ok(())
    }
}

/// Wait for `cv`, waking now and then to look at the interrupt flag, which
/// nobody notifies the condition variable of.
fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait_timeout(guard, Duration::from_millis(20))
        .unwrap_or_else(|e| e.into_inner())
        .0
}

/// Elementwise `op` of two same-shaped arrays.
pub(crate) fn combine(op: ReduceOp, a: Array, b: Array) -> Array {
    let bop = match op {
        ReduceOp::Sum | ReduceOp::Any => BinaryOp::Add,
        ReduceOp::Prod | ReduceOp::All => BinaryOp::Mul,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
    };
    crate::backend::of([&a, &b]).binary(bop, a, b)
}

/// The GPU device this rank computes on, when its mesh runs on GPUs: its
/// reductions are then kernels there (peers' parts are copied to it).
fn rank_gpu() -> Option<&'static crate::gpu::GpuDevice> {
    crate::gpu::default_device().filter(|_| crate::devices::on_device_worker())
}

/// Elements `lo..hi` of the flat `parts` (one dtype) reduced with `op`
/// across the parts, in rank order: one pass per part over a range that
/// stays in cache, without first copying each part's range out.
pub(crate) fn reduce_range(op: ReduceOp, parts: &[&Array], lo: usize, hi: usize) -> Array {
    if let Some(d) = rank_gpu() {
        let flat = |p: &Array| d.slice(&p.reshape(&[p.len()]), &[lo], &[hi], &[1]);
        let mut acc = flat(parts[0]);
        for p in &parts[1..] {
            acc = combine(op, acc, flat(p));
        }
        return acc;
    }
    fn fold<T: Arith>(op: ReduceOp, parts: &[&[T]], lo: usize, hi: usize) -> Vec<T> {
        fn each<T: Copy>(parts: &[&[T]], lo: usize, hi: usize, f: fn(T, T) -> T) -> Vec<T> {
            let mut out = parts[0][lo..hi].to_vec();
            for p in &parts[1..] {
                for (o, &x) in out.iter_mut().zip(&p[lo..hi]) {
                    *o = f(*o, x);
                }
            }
            out
        }
        match op {
            ReduceOp::Sum | ReduceOp::Any => each(parts, lo, hi, T::add),
            ReduceOp::Prod | ReduceOp::All => each(parts, lo, hi, T::mul),
            ReduceOp::Max => each(parts, lo, hi, T::max),
            ReduceOp::Min => each(parts, lo, hi, T::min),
        }
    }
    let bufs: Vec<_> = parts.iter().map(|a| a.live()).collect();
    macro_rules! typed {
        ($variant:ident) => {{
            let xs: Vec<_> = bufs
                .iter()
                .map(|b| match &**b {
                    Buffer::$variant(v) => v.as_slice(),
                    _ => unreachable!("the parts of one all-reduce have one dtype"),
                })
                .collect();
            Buffer::$variant(fold(op, &xs, lo, hi))
        }};
    }
    let buf = match &*bufs[0] {
        Buffer::F32(_) => typed!(F32),
        Buffer::F64(_) => typed!(F64),
        Buffer::I32(_) => typed!(I32),
        Buffer::I64(_) => typed!(I64),
        Buffer::U32(_) => typed!(U32),
        Buffer::Bool(_)
        | Buffer::BF16(_)
        | Buffer::F16(_)
        | Buffer::C64(_)
        | Buffer::I8(_)
        | Buffer::I16(_)
        | Buffer::U8(_)
        | Buffer::U16(_) => {
            // Booleans (any, all), 16-bit floats (computed in f32) and
            // complex numbers
            // through the general elementwise kernels.
            let mut acc = cpu::Cpu.slice(parts[0], &[lo], &[hi], &[1]);
            for p in &parts[1..] {
                acc = combine(op, acc, cpu::Cpu.slice(p, &[lo], &[hi], &[1]));
            }
            return acc;
        }
    };
    Array::new(&[hi - lo], buf)
}

impl Communicator for ThreadComm {
    fn size(&self) -> usize {
        self.inboxes.len()
    }

    fn all_reduce_many(&self, rank: usize, op: ReduceOp, xs: &[Array]) -> CommResult<Vec<Array>> {
        let n = self.size();
        if n == 1 {
            return Ok(xs.to_vec());
        }
        let bytes: usize = xs.iter().map(|x| x.len() * x.dtype().size_bytes()).sum();
        // Round 1: everyone's buffers (no copies); this rank reduces its
        // 1/n of each, reading the peers' buffers in place.
        let flat: Vec<Array> = xs.iter().map(|x| x.reshape(&[x.len()])).collect();
        let all = self.exchange_with(rank, flat, |all| all.concat())?;
        self.count_sent(rank, bytes * (n - 1) / n);
        let mine: Vec<Array> = (0..xs.len())
            .map(|k| {
                let len = xs[k].len();
                let (lo, hi) = (len * rank / n, len * (rank + 1) / n);
                let parts: Vec<&Array> = (0..n).map(|r| &all[r * xs.len() + k]).collect();
                reduce_range(op, &parts, lo, hi)
            })
            .collect();
        drop(all);
        // Round 2: everyone's reduced parts, put together once for all.
        let out = self.exchange_with(rank, mine, |parts| {
            xs.iter()
                .enumerate()
                .map(|(k, x)| {
                    let pieces: Vec<Array> = parts.iter().map(|p| p[k].clone()).collect();
                    crate::backend::of(&pieces)
                        .concatenate(&pieces, 0)
                        .reshape(x.shape())
                })
                .collect()
        })?;
        self.count_sent(rank, bytes * (n - 1) / n);
        Ok(out)
    }

    fn all_gather(&self, rank: usize, x: &Array) -> CommResult<Vec<Array>> {
        let n = self.size();
        let all = self.exchange(rank, x.clone())?;
        self.count_sent(rank, x.len() * x.dtype().size_bytes() * (n - 1));
        Ok(all)
    }

    fn reduce_scatter(&self, rank: usize, op: ReduceOp, parts: &[Array]) -> CommResult<Array> {
        let n = self.size();
        assert_eq!(parts.len(), n, "reduce_scatter takes one part per rank");
        if n == 1 {
            return Ok(parts[0].clone());
        }
        // The ring leaves rank r with chunk (r + 1) % n reduced; rotate so
        // that chunk is the part destined for r.
        let mut chunks: Vec<Array> = (0..n).map(|j| parts[(j + n - 1) % n].clone()).collect();
        self.ring_reduce_scatter(rank, op, &mut chunks)?;
        Ok(chunks[(rank + 1) % n].clone())
    }

    fn all_to_all(&self, rank: usize, parts: &[Array]) -> CommResult<Vec<Array>> {
        let n = self.size();
        assert_eq!(parts.len(), n, "all_to_all takes one part per rank");
        for (to, p) in parts.iter().enumerate() {
            if to != rank {
                self.send(rank, to, p.clone());
            }
        }
        (0..n)
            .map(|from| {
                if from == rank {
                    Ok(parts[rank].clone())
                } else {
                    self.recv(rank, from)
                }
            })
            .collect()
    }

    fn send_recv(
        &self,
        rank: usize,
        x: &Array,
        to: Option<usize>,
        from: Option<usize>,
    ) -> CommResult<Option<Array>> {
        if let Some(to) = to {
            self.send(rank, to, x.clone());
        }
        from.map(|from| self.recv(rank, from)).transpose()
    }

    fn bytes_sent(&self, rank: usize) -> u64 {
        self.sent[rank].load(Ordering::Relaxed)
    }

    fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        // Take each lock so no waiter misses the notification.
        for inbox in &self.inboxes {
            drop(inbox.queue.lock().unwrap_or_else(|e| e.into_inner()));
            inbox.ready.notify_all();
        }
        for board in &self.boards {
            drop(board.state.lock().unwrap_or_else(|e| e.into_inner()));
            board.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Buffer;

    fn on_ranks<R: Send>(n: usize, f: impl Fn(usize, &ThreadComm) -> R + Sync) -> Vec<R> {
        let comm = ThreadComm::new(n);
        std::thread::scope(|s| {
            let (f, comm) = (&f, &comm);
            let handles: Vec<_> = (0..n).map(|r| s.spawn(move || f(r, comm))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    fn vals(r: usize, len: usize) -> Array {
        Array::new(
            &[len],
            Buffer::F64((0..len).map(|i| (r * 100 + i) as f64).collect()),
        )
    }

    #[test]
    fn every_collective_on_1_to_8_ranks() {
        for n in [1, 2, 3, 4, 5, 8] {
            for len in [0, 1, 7, 16] {
                let out = on_ranks(n, |r, c| {
                    c.all_reduce(r, ReduceOp::Sum, &vals(r, len)).unwrap()
                });
                let want: Vec<f64> = (0..len)
                    .map(|i| (0..n).map(|r| (r * 100 + i) as f64).sum())
                    .collect();
                for o in &out {
                    assert_eq!(o.to_f64_vec().unwrap(), want, "all_reduce n={n} len={len}");
                }
                let out = on_ranks(n, |r, c| c.all_gather(r, &vals(r, len)).unwrap());
                for o in &out {
                    for (j, part) in o.iter().enumerate() {
                        assert_eq!(
                            part.to_f64_vec().unwrap(),
                            vals(j, len).to_f64_vec().unwrap()
                        );
                    }
                }
                let out = on_ranks(n, |r, c| {
                    let parts: Vec<Array> = (0..n).map(|j| vals(r + j, len)).collect();
                    (
                        c.reduce_scatter(r, ReduceOp::Max, &parts).unwrap(),
                        c.all_to_all(r, &parts).unwrap(),
                    )
                });
                for (r, (rs, a2a)) in out.iter().enumerate() {
                    assert_eq!(
                        rs.to_f64_vec().unwrap(),
                        vals(n - 1 + r, len).to_f64_vec().unwrap()
                    );
                    for (from, p) in a2a.iter().enumerate() {
                        assert_eq!(
                            p.to_f64_vec().unwrap(),
                            vals(from + r, len).to_f64_vec().unwrap()
                        );
                    }
                }
                // A ring shift.
                let out = on_ranks(n, |r, c| {
                    c.send_recv(r, &vals(r, len), Some((r + 1) % n), Some((r + n - 1) % n))
                        .unwrap()
                });
                for (r, o) in out.iter().enumerate() {
                    let want = vals((r + n - 1) % n, len).to_f64_vec().unwrap();
                    assert_eq!(o.as_ref().unwrap().to_f64_vec().unwrap(), want);
                }
            }
        }
    }

    #[test]
    fn all_reduce_many_equals_one_all_reduce_per_array() {
        for n in [1, 2, 3, 5, 8] {
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
                let make = |r: usize| {
                    vec![
                        vals(r, 7),
                        Array::new(
                            &[2, 3],
                            Buffer::I32((0..6).map(|i| (i * r) as i32 - 4).collect()),
                        ),
                        vals(r + 3, 0),
                        Array::new(&[], Buffer::F32(vec![r as f32 - 1.5])),
                    ]
                };
                let many = on_ranks(n, |r, c| c.all_reduce_many(r, op, &make(r)).unwrap());
                let one = on_ranks(n, |r, c| {
                    make(r)
                        .iter()
                        .map(|x| c.all_reduce(r, op, x).unwrap())
                        .collect::<Vec<_>>()
                });
                for (m, o) in many.iter().zip(&one) {
                    for (a, b) in m.iter().zip(o) {
                        assert_eq!(a.shape(), b.shape());
                        assert_eq!(a.buffer().unwrap(), b.buffer().unwrap(), "n={n} {op:?}");
                    }
                }
                // Each element is the reduction over the ranks, in rank order.
                let want: Vec<f64> = (0..7)
                    .map(|i| {
                        let xs = (0..n).map(|r| (r * 100 + i) as f64);
                        match op {
                            ReduceOp::Sum => xs.sum(),
                            ReduceOp::Prod => xs.product(),
                            ReduceOp::Max => xs.fold(f64::MIN, f64::max),
                            _ => xs.fold(f64::MAX, f64::min),
                        }
                    })
                    .collect();
                assert_eq!(many[0][0].to_f64_vec().unwrap(), want);
            }
        }
    }

    #[test]
    fn all_reduce_sends_2_n_minus_1_over_n_of_the_buffer() {
        let n = 4;
        let comm = ThreadComm::new(n);
        std::thread::scope(|s| {
            for r in 0..n {
                let comm = &comm;
                s.spawn(move || comm.all_reduce(r, ReduceOp::Sum, &vals(r, 400)).unwrap());
            }
        });
        // 400 f64 = 3200 bytes; 2 * 3/4 of it per rank.
        for r in 0..n {
            assert_eq!(comm.bytes_sent(r), 4800);
        }
    }

    #[test]
    fn an_interrupt_wakes_a_rank_waiting_for_its_peers() {
        let comm = ThreadComm::new(2);
        let flag = crate::interrupt::Flag::default();
        let _scope = crate::interrupt::Scope::new(Some(flag.clone()));
        let f = flag.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            f.store(true, Ordering::Relaxed);
        });
        // Rank 1 never calls: only the interrupt ends the wait.
        let r = comm.all_reduce(0, ReduceOp::Sum, &vals(0, 4)).map(|_| ());
        assert_eq!(r, Err(Aborted));
        setter.join().unwrap();
    }

    #[test]
    fn a_failed_rank_aborts_the_others() {
        let out = on_ranks(3, |r, c| {
            if r == 1 {
                c.abort();
                return Err(Aborted);
            }
            c.all_reduce(r, ReduceOp::Sum, &vals(r, 10)).map(|_| ())
        });
        assert_eq!(out, vec![Err(Aborted); 3]);
    }
}
