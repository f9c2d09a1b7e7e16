//! The interrupt signal that long-running work polls: the flag a front end
//! sets on Ctrl-C or a Jupyter `interrupt_request`, installed on each thread
//! that works for the session that owns it.
//!
//! The flag is the session's (two sessions in one process interrupt
//! separately), so it is per thread rather than process-wide: the session
//! installs it on its own thread, `devices::run_spmd` passes it on to the
//! device workers of a program, and a kernel that splits work over the
//! rayon threads takes a `Poll` of it along. Kernels never see a language
//! value, so an interrupted kernel does not raise anything: it stops its
//! outer loop early and returns an unfinished result, and the runtime, which
//! checks the flag after every kernel, reports `KeyboardInterrupt` instead
//! of using that result. Nothing here clears the flag: the session does,
//! once the interrupted statement has been reported, so every worker of a
//! program sees the same request.
//!
//! Polls are a relaxed atomic load; kernels poll between blocks of work of
//! about a millisecond (rows of a fused kernel, panels of a matrix product),
//! never per element.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A session's interrupt flag.
pub type Flag = Arc<AtomicBool>;

thread_local! {
    /// The flag of the session this thread works for.
    static FLAG: RefCell<Option<Flag>> = const { RefCell::new(None) };
}

/// Make `flag` this thread's interrupt flag; returns the one it replaces.
pub fn install(flag: Option<Flag>) -> Option<Flag> {
    FLAG.with(|f| std::mem::replace(&mut *f.borrow_mut(), flag))
}

/// This thread's interrupt flag, to pass on to threads working for it.
pub fn current() -> Option<Flag> {
    FLAG.with(|f| f.borrow().clone())
}

/// Whether an interrupt was requested for the work on this thread.
#[inline]
pub fn requested() -> bool {
    FLAG.with(|f| {
        f.borrow()
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    })
}

/// `flag` installed on this thread until the guard drops (a device worker
/// for the length of one program), then the previous one again.
pub struct Scope(Option<Flag>);

impl Scope {
    pub fn new(flag: Option<Flag>) -> Scope {
        Scope(install(flag))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        install(self.0.take());
    }
}

/// This thread's flag, taken along into a kernel's parallel loop (rayon's
/// threads do not have it installed).
#[derive(Clone, Default)]
pub struct Poll(Option<Flag>);

impl Poll {
    /// The flag of the calling thread.
    pub fn here() -> Poll {
        Poll(current())
    }

    /// Whether an interrupt was requested: the loop should stop.
    #[inline]
    pub fn requested(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_per_thread_and_scoped() {
        let flag: Flag = Arc::default();
        assert!(!requested());
        {
            let _s = Scope::new(Some(flag.clone()));
            assert!(!requested());
            flag.store(true, Ordering::Relaxed);
            assert!(requested());
            let poll = Poll::here();
            // Another thread has no flag of its own, but a Poll carries it.
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(!requested());
                    assert!(poll.requested());
                });
            });
        }
        assert!(!requested());
        assert!(current().is_none());
    }
}
