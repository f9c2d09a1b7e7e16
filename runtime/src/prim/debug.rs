//! `debug_callback`: the one primitive with an effect (`jax.debug.print`,
//! `jax.debug.callback`), and all its rules.
//!
//! The primitive has no outputs; its operands are the array leaves the
//! callback receives. It carries only a number: the callback itself (an arr
//! function, a format string) lives in this thread's registry, because a
//! primitive travels to device workers and into compiled graphs, while arr
//! values belong to the interpreter's thread. Evaluating the primitive, on
//! any thread, queues the call with its concrete operands; the interpreter
//! runs the queue (`run_pending`) as soon as the builtin or compiled
//! function that evaluated it returns, so the output lands where `print`'s
//! would, between the statements around the call, every time a compiled
//! function runs rather than once when it is traced.
//!
//! Rules: JVP calls back with the primal values and has no tangents;
//! nothing is linear, so transposition has nothing to do; `vmap` calls
//! back once per example, as JAX does; a sharded `jit` gathers the whole
//! operands and calls back once; `pmap` and `shard_map` once per device. The jit passes never
//! remove, merge or fold it (`Prim::has_effect`).

use super::{bind, Args, Avals, Outs, Prim};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::Interp;
use crate::jit::partition::{Local, Spmd};
use crate::tensor::Tensor;
use crate::transform::batch::Bdims;
use crate::transform::jvp::Tangents;
use crate::transform::linear::LinIn;
use arr_kernels::Array;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

/// What the IR calls the primitive: `debug_print` for `jax.debug.print`,
/// `debug_callback` for `jax.debug.callback`, as JAX's jaxprs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Print,
    Callback,
}

/// The primitive's parameter: which registered callback it calls. Two
/// primitives are equal only if they call the same registration.
#[derive(Clone, Debug)]
pub struct Callback {
    pub id: u64,
    pub kind: Kind,
    pub ordered: bool,
    /// The interpreter thread whose registry holds the function.
    owner: ThreadId,
    /// In a sharded jit's device program: the one device that calls back
    /// (JAX prints a sharded jit's values once, whole).
    only_on: Option<usize>,
}

impl PartialEq for Callback {
    fn eq(&self, other: &Callback) -> bool {
        self.id == other.id
    }
}

/// What runs when the primitive is evaluated: the interpreter and the
/// concrete operands.
pub type Fun = Rc<dyn Fn(&mut Interp, Vec<Array>) -> Result<()>>;

/// A callback that sees every device's operands of one call at once (a
/// `print` in an eager `shard_map` shows each device's block): the queuing
/// device and its operands, by device.
pub type GatherFun = Rc<dyn Fn(&mut Interp, Vec<(Option<usize>, Vec<Array>)>) -> Result<()>>;

#[derive(Clone)]
enum Registered {
    /// Called once per queued evaluation.
    Each(Fun),
    /// Called once per call of the program, with all devices' evaluations.
    Gathered(GatherFun),
}

thread_local! {
    /// The functions of the primitives made on this thread; an entry goes
    /// when no primitive (graph, compiled function) refers to it any more.
    static REGISTRY: RefCell<HashMap<u64, (Weak<Callback>, Registered)>> = RefCell::new(HashMap::new());
    /// The registry's size after its last sweep of dead entries.
    static SWEPT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

type Queued = (Arc<Callback>, Option<usize>, Vec<Array>);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Calls queued by evaluations on any thread, run by their owner's interpreter.
/// Each call with the device worker that queued it (`None`: the interpreter's thread).
static QUEUE: Mutex<Vec<Queued>> = Mutex::new(Vec::new());
/// The queue's length, read without the lock after every builtin call.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// Register `f` on this thread: the primitive that calls it.
pub fn register(kind: Kind, ordered: bool, f: Fun) -> Prim {
    register_as(kind, ordered, Registered::Each(f))
}

/// Register `f`, called with every device's operands of one call (see
/// [`GatherFun`]).
pub fn register_gathered(f: GatherFun) -> Prim {
    register_as(Kind::Print, false, Registered::Gathered(f))
}

fn register_as(kind: Kind, ordered: bool, f: Registered) -> Prim {
    let cb = Arc::new(Callback {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        kind,
        ordered,
        owner: std::thread::current().id(),
        only_on: None,
    });
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        // Sweep when the registry doubled since the last sweep: a function
        // traced again and again does not grow it without bound.
        if r.len() >= 2 * SWEPT.with(|s| s.get()).max(64) {
            r.retain(|_, (w, _)| w.strong_count() > 0);
            SWEPT.with(|s| s.set(r.len()));
        }
        r.insert(cb.id, (Arc::downgrade(&cb), f));
    });
    Prim::DebugCallback(cb)
}

/// Whether some evaluation queued a call (of any thread's interpreter).
#[inline]
pub fn pending() -> bool {
    QUEUED.load(Ordering::Relaxed) > 0
}

/// Run the queued calls of this thread's callbacks, in the order they were
/// queued, those of device workers (`pmap`, `shard_map`) by device, so that
/// the output does not depend on the threads' timing. The first error stops
/// the rest (they are dropped, as the computation that queued them failed too).
pub fn run_pending(interp: &mut Interp) -> Result<()> {
    let me = std::thread::current().id();
    let mut mine: Vec<Queued> = {
        let mut q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
        let (mine, others): (Vec<_>, Vec<_>) = q.drain(..).partition(|(cb, ..)| cb.owner == me);
        *q = others;
        QUEUED.store(q.len(), Ordering::Relaxed);
        mine
    };
    mine.sort_by_key(|(_, device, _)| *device);
    // The k-th evaluation of a callback on each device belong to one call.
    let mut seen: HashMap<(u64, Option<usize>), usize> = HashMap::new();
    let calls: Vec<usize> = mine
        .iter()
        .map(|(cb, device, _)| {
            let k = seen.entry((cb.id, *device)).or_insert(0);
            *k += 1;
            *k - 1
        })
        .collect();
    let mut gathered: std::collections::HashSet<(u64, usize)> = Default::default();
    for (i, (cb, _, arrays)) in mine.iter().enumerate() {
        let f = REGISTRY.with(|r| r.borrow().get(&cb.id).map(|(_, f)| f.clone()));
        match f {
            Some(Registered::Each(f)) => f(interp, arrays.clone())?,
            Some(Registered::Gathered(f)) => {
                if !gathered.insert((cb.id, calls[i])) {
                    continue;
                }
                let all = mine
                    .iter()
                    .zip(&calls)
                    .filter(|((c, ..), &k)| c.id == cb.id && k == calls[i])
                    .map(|((_, device, arrays), _)| (*device, arrays.clone()))
                    .collect();
                f(interp, all)?
            }
            None => {
                return Err(Error::new(
                    ErrorKind::RuntimeError,
                    "a debug callback ran after its function was lost",
                ))
            }
        }
    }
    Ok(())
}

pub fn name(cb: &Callback) -> &'static str {
    match cb.kind {
        Kind::Print => "debug_print",
        Kind::Callback => "debug_callback",
    }
}

pub fn params(cb: &Callback) -> String {
    format!("ordered={}", if cb.ordered { "True" } else { "False" })
}

/// No outputs, whatever the operands.
pub fn shape_debug_callback() -> Result<Avals> {
    Ok(Avals::new())
}

/// Queue the call; the owner's interpreter runs it (`run_pending`).
pub fn eval_debug_callback(cb: &Arc<Callback>, args: Args) -> Result<Outs> {
    let device = arr_kernels::devices::current_device();
    if cb.only_on.is_some() && device.is_some() && device != cb.only_on {
        return Ok(Outs::new());
    }
    let arrays = super::arrays(args).into_vec();
    let mut q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    q.push((cb.clone(), device, arrays));
    QUEUED.store(q.len(), Ordering::Relaxed);
    Ok(Outs::new())
}

/// The callback sees the primal values; there is nothing to differentiate.
pub fn jvp_debug_callback(prim: &Prim, p: &[Tensor]) -> Result<(Outs, Tangents)> {
    bind(prim, p.to_vec())?;
    Ok((Outs::new(), Tangents::new()))
}

/// Never applied to a tangent (the JVP passes none), so no operand gets a cotangent.
pub fn transpose_debug_callback(ins: &[LinIn]) -> Result<Vec<Option<Tensor>>> {
    Ok(vec![None; ins.len()])
}

/// One call per example, in order: example `i` of each batched operand
/// (the unbatched ones as they are), as JAX calls back under `vmap`.
pub fn batch_debug_callback(
    prim: &Prim,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    for i in 0..size {
        let args = v
            .iter()
            .zip(d)
            .map(|(x, d)| match d {
                Some(d) => crate::transform::ops::index_along(x, *d, i),
                None => Ok(x.clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        bind(prim, args)?;
    }
    Ok((Outs::new(), Bdims::new()))
}

/// The whole operands, called back by the mesh's first device only.
pub fn partition_debug_callback(cb: &Callback, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    let once = Prim::DebugCallback(Arc::new(Callback {
        only_on: cx.mesh().devices.first().copied(),
        ..*cb
    }));
    cx.replicated(&once, ins)
}
