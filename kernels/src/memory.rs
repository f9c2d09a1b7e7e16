//! The bytes the process holds live and the budget they must stay under: a
//! counting allocator the `arr` binary installs, and the check that the
//! interpreter makes at its safe points (every call, loop iteration and
//! array operation). `limits` refuses one impossible request; this catches
//! memory spent by many small ones (a list of 10⁸ lists), which would
//! otherwise end in an aborted allocation or the kernel's OOM killer, so
//! that it too is the language's MemoryError, with every variable kept.

use crate::limits;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Live heap bytes, counted by `Counting` (0 where it is not installed),
/// less what threads have counted and not yet added (`PENDING`).
static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// This thread's allocations less its frees since it last added them
    /// to `LIVE`. One shared counter written by every allocation would
    /// bounce its cache line between the cores that eight device workers
    /// allocate on; each thread adds its count once it passes `FLUSH`.
    /// (Const-initialised and without a destructor, so the allocator may
    /// read it at any time: nothing is allocated or registered.)
    static PENDING: Cell<isize> = const { Cell::new(0) };
}

/// The most one thread's count lags behind: far below the budget's `STEP`.
const FLUSH: isize = 256 << 10;

/// Whether allocations also count towards `PEAK` (`measure_peak`).
static MEASURING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated less bytes freed since the measure began, and its maximum.
static NET: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// The most bytes allocated at once during `f`, beyond what was live before
/// it (the bench's peak-memory row; the allocator stays the one the `arr`
/// binary runs with, so the timed rows measure what users run).
pub fn measure_peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
    NET.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    MEASURING.store(true, Ordering::SeqCst);
    let r = f();
    MEASURING.store(false, Ordering::SeqCst);
    (r, PEAK.load(Ordering::SeqCst).max(0) as usize)
}

/// Count `delta` bytes allocated (negative: freed).
#[inline]
fn count(delta: isize) {
    if MEASURING.load(Ordering::Relaxed) {
        let now = NET.fetch_add(delta, Ordering::SeqCst) + delta;
        PEAK.fetch_max(now, Ordering::SeqCst);
    }
    // (`try_with`: an allocation must never panic; should the slot be gone,
    // the count goes straight to `LIVE`.)
    let flush = PENDING
        .try_with(|p| {
            let v = p.get() + delta;
            if v.abs() >= FLUSH {
                p.set(0);
                v
            } else {
                p.set(v);
                0
            }
        })
        .unwrap_or(delta);
    if flush != 0 {
        LIVE.fetch_add(flush, Ordering::Relaxed);
    }
}

/// The live bytes at which the next full check happens: the safe points
/// only compare two numbers until the heap has grown by `STEP`.
static NEXT_CHECK: AtomicUsize = AtomicUsize::new(STEP);

/// Growth between full checks (each reads a few `/proc` files).
const STEP: usize = 64 << 20;

/// What must stay free: the system's available memory, or the room left
/// under the address-space limit (`ulimit -v`), below this is exhausted.
/// It leaves space for the error to be reported and the values dropped.
const RESERVE: usize = 256 << 20;

/// The system allocator, counting the bytes it hands out. The count is a
/// thread-local addition per allocation (see `PENDING`); the budget is not
/// checked here, where nothing may allocate or fail, but at the
/// interpreter's safe points.
pub struct Counting;

// SAFETY: every call goes to `System` unchanged; only the count is added.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Heap bytes live now (0 without `Counting`), to within `FLUSH` a thread.
/// (Frees counted before the allocations another thread has not added
/// yet could make the sum negative for a moment.)
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed).max(0) as usize
}

/// Why the memory budget is spent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Exhausted {
    /// Live bytes past the user's limit (`ARR_MEMORY_LIMIT`, `set_memory_limit`).
    OverLimit { live: usize, limit: usize },
    /// The machine (or the control group) has less than `RESERVE` left.
    LowMemory { live: usize, free: usize },
    /// The address space in use is within `RESERVE` of `ulimit -v`.
    AddressSpace { mapped: usize, max: usize },
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let e = |b: usize| b as f64;
        match *self {
            Exhausted::OverLimit { live, limit } => write!(
                f,
                "the session holds {:.1e} bytes, over the memory limit of {limit} bytes",
                e(live)
            ),
            Exhausted::LowMemory { live, free } => write!(
                f,
                "the session holds {:.1e} bytes and the machine has only {:.1e} bytes left",
                e(live),
                e(free)
            ),
            Exhausted::AddressSpace { mapped, max } => write!(
                f,
                "the process maps {:.1e} bytes of its address-space limit of {:.1e} (ulimit -v)",
                e(mapped),
                e(max)
            ),
        }
    }
}

/// Whether the budget is spent: one comparison until the heap has grown
/// by a step since the last full check. After a spent verdict the next
/// full check comes sooner (a quarter step), so a program that goes on
/// growing is stopped again, and one that freed its memory goes on.
#[inline]
pub fn exhausted() -> Option<Exhausted> {
    let live = live_bytes();
    if live < NEXT_CHECK.load(Ordering::Relaxed) {
        return None;
    }
    check(live)
}

#[cold]
fn check(live: usize) -> Option<Exhausted> {
    let limit = limits::user_limit();
    let verdict = if let Some(limit) = limit.filter(|&l| live > l) {
        Some(Exhausted::OverLimit { live, limit })
    } else if let Some(free) = limits::available_bytes().filter(|&f| f < RESERVE) {
        Some(Exhausted::LowMemory { live, free })
    } else {
        match (mapped_bytes(), address_space_limit()) {
            (Some(mapped), Some(max)) if mapped.saturating_add(RESERVE) > max => {
                Some(Exhausted::AddressSpace { mapped, max })
            }
            _ => None,
        }
    };
    // A small user limit is checked in smaller steps, so it is not overshot by much.
    let step = limit.map_or(STEP, |l| STEP.min(l / 16).max(1 << 20));
    let step = if verdict.is_some() { step / 4 } else { step };
    NEXT_CHECK.store(live.saturating_add(step), Ordering::Relaxed);
    verdict
}

/// The process's virtual size (`VmSize`), which `ulimit -v` bounds.
fn mapped_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    limits::kib_field(&status, "VmSize:")
}

/// The soft address-space limit (`ulimit -v`), read once; None if unlimited.
fn address_space_limit() -> Option<usize> {
    static LIMIT: OnceLock<Option<usize>> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))?;
        line["Max address space".len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}
