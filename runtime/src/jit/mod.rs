//! `jit`: trace a function once per input signature, optimise the graph
//! with the pass pipeline (`passes.rs`), and run the result with the
//! executor (`exec.rs`). Each jitted function has a cache keyed by its
//! signature (input types, pytree structure, static argument values) and a
//! record of every compile with its reason, so nobody has to guess why a
//! function recompiled.
//!
//! Under a transformation (`grad(jit(f))`, `vmap(jit(f))`) a jitted
//! function is traced through like any other: the transformation sees its
//! primitives, and the outer `jit` (if any) compiles the whole.

pub mod auto;
pub mod exec;
pub mod fuse;

pub mod partition;
pub mod passes;
pub mod remat;

use crate::error::Result;
use crate::prim::{type_str, Aval};
use crate::tensor::Tensor;
use crate::transform::graph::{self, Graph};
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Instant;

/// What a compiled entry is keyed by.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub avals: Vec<Aval>,
    /// A description of each argument's leaves, for messages ("x", "p['w']").
    pub names: Vec<String>,
    /// The pytree structure and the static arguments' values, as text.
    pub statics: Vec<(String, String)>,
}

/// A compiled function: the optimised graph, its constants, and the graph
/// as traced (for `:ir --pass`).
pub struct Compiled {
    pub traced: Arc<Graph>,
    pub graph: Arc<Graph>,
    pub consts: Vec<Tensor>,
    /// Where each variable of `graph` is read for the last time.
    last_use: Vec<usize>,
}

impl Compiled {
    pub fn run(&self, args: Vec<Tensor>) -> Result<Vec<Tensor>> {
        let outs = exec::run(&self.graph, &self.last_use, &self.consts, args)?;
        Ok(mark_weak(outs, &self.traced.weak_outs))
    }

    /// Where each variable of `graph` is read for the last time (for
    /// running the graph elsewhere, as `pmap`'s device workers do).
    pub fn last_use(&self) -> &[usize] {
        &self.last_use
    }
}

/// Outputs weakly typed where the traced function gave them so (`weak`:
/// one flag an output; empty for none).
pub fn mark_weak(outs: Vec<Tensor>, weak: &[bool]) -> Vec<Tensor> {
    if weak.is_empty() {
        return outs;
    }
    crate::tensor::weakened_each(outs, weak).collect()
}

/// One compile: why it happened, how long it took, how much it removed.
#[derive(Clone, Debug)]
pub struct CompileRecord {
    pub reason: String,
    pub ms: f64,
    pub eqns_traced: usize,
    pub eqns_compiled: usize,
    /// The GPU compile cache during the compile and its first run (the
    /// kernels are compiled when first launched): sources compiled, and
    /// modules found in memory or on disk. Zero on the CPU, which runs the
    /// kernel IR without compiling it.
    pub kernels: arr_kernels::gpu::CompileStats,
}

/// The cache of one jitted function.
pub struct Cache {
    pub name: String,
    entries: Vec<(Signature, Rc<Compiled>)>,
    pub records: Vec<CompileRecord>,
}

thread_local! {
    /// Every live jitted function's cache, for `jit_stats()`.
    static REGISTRY: RefCell<Vec<Weak<RefCell<Cache>>>> = const { RefCell::new(Vec::new()) };
}

/// A new, registered cache for a jitted function called `name`.
pub fn new_cache(name: &str) -> Rc<RefCell<Cache>> {
    let c = Rc::new(RefCell::new(Cache {
        name: name.to_string(),
        entries: Vec::new(),
        records: Vec::new(),
    }));
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        r.retain(|w| w.strong_count() > 0);
        r.push(Rc::downgrade(&c));
    });
    c
}

/// The caches of all live jitted functions.
pub fn all_caches() -> Vec<Rc<RefCell<Cache>>> {
    REGISTRY.with(|r| r.borrow().iter().filter_map(Weak::upgrade).collect())
}

impl Cache {
    pub fn lookup(&self, sig: &Signature) -> Option<Rc<Compiled>> {
        self.entries
            .iter()
            .find(|(s, _)| s == sig)
            .map(|(_, c)| c.clone())
    }

    /// Why `sig` needs a compile: the first call, or what differs from the
    /// most recent signature.
    pub fn reason(&self, sig: &Signature) -> String {
        let Some((last, _)) = self.entries.last() else {
            return "first call".into();
        };
        let mut why = Vec::new();
        for (a, b) in last.statics.iter().zip(&sig.statics) {
            if a != b {
                why.push(format!("{} changed: {} -> {}", b.0, a.1, b.1));
            }
        }
        if last.avals.len() != sig.avals.len() {
            why.push(format!(
                "number of array arguments changed: {} -> {}",
                last.avals.len(),
                sig.avals.len()
            ));
        } else {
            for ((a, b), name) in last.avals.iter().zip(&sig.avals).zip(&sig.names) {
                if a != b {
                    why.push(format!(
                        "{name} changed type: {} -> {}",
                        type_str(&a.shape, a.dtype),
                        type_str(&b.shape, b.dtype)
                    ));
                }
            }
        }
        if why.is_empty() {
            "a signature not seen before".into()
        } else {
            why.join("; ")
        }
    }

    /// Add the GPU compile-cache events since `before` to the latest
    /// compile's record (called after its first run).
    pub fn note_kernels(&mut self, before: &arr_kernels::gpu::CompileStats) {
        if let Some(r) = self.records.last_mut() {
            r.kernels = arr_kernels::gpu::compile_stats().since(before);
        }
    }

    /// Trace `f` for `sig`, optimise, cache, and record why.
    pub fn compile(
        &mut self,
        sig: Signature,
        f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    ) -> Result<Rc<Compiled>> {
        let reason = self.reason(&sig);
        let start = Instant::now();
        let compiled = Rc::new(compile(&sig.avals, f)?);
        self.records.push(CompileRecord {
            reason,
            ms: start.elapsed().as_secs_f64() * 1e3,
            eqns_traced: compiled.traced.eqns.len(),
            eqns_compiled: compiled.graph.eqns.len(),
            kernels: Default::default(),
        });
        self.entries.push((sig, compiled.clone()));
        Ok(compiled)
    }
}

/// Trace `f` on arguments of these types and run the pass pipeline.
pub fn compile(
    avals: &[Aval],
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<Compiled> {
    compile_with(passes::PIPELINE, avals, f)
}

/// Trace `f` and run `pipeline` over the graph.
pub fn compile_with(
    pipeline: &'static [passes::Pass],
    avals: &[Aval],
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<Compiled> {
    let closed = graph::trace(avals, true, f)?;
    if let Err(e) = crate::prim::check_interrupt() {
        let n = closed.graph.eqns.len();
        drop_aside(closed.graph, n);
        return Err(e);
    }
    let graph = match optimise(pipeline, &closed.graph)
        .and_then(|g| crate::prim::check_interrupt().map(|()| g))
    {
        Ok(g) => g,
        Err(e) => {
            let n = closed.graph.eqns.len();
            drop_aside(closed.graph, n);
            return Err(e);
        }
    };
    Ok(Compiled {
        traced: closed.graph,
        last_use: exec::last_uses(&graph),
        graph: Arc::new(graph),
        consts: closed.consts,
    })
}

/// Free an abandoned graph (or its equations). One of millions of equations
/// (a long Python loop traced) takes seconds to free, so an interrupted
/// trace or compile frees it on a thread of its own and reports at once.
pub(crate) fn drop_aside(g: impl Send + 'static, eqns: usize) {
    if eqns < 10_000 {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("free a graph".into())
        .spawn(move || drop(g));
}

/// Graphs with this many equations are optimised on a compiler thread.
const BIG_GRAPH: usize = 20_000;

/// Run `pipeline` over `g`. A big graph (a long Python loop traced) takes
/// seconds per pass, so its passes run on a thread of their own while this
/// one waits, looking at the interrupt flag: an interrupt is reported at
/// once, and the compiler thread, told to stop too, ends after its pass.
fn optimise(pipeline: &'static [passes::Pass], g: &Arc<Graph>) -> Result<Graph> {
    use arr_kernels::interrupt;
    use std::sync::mpsc::RecvTimeoutError;
    if g.eqns.len() < BIG_GRAPH {
        return Ok(passes::run_passes(pipeline, g, None));
    }
    let cancel = interrupt::Flag::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let (graph, stop, device) = (
        g.clone(),
        cancel.clone(),
        arr_kernels::gpu::default_device(),
    );
    let spawned = std::thread::Builder::new()
        .name("arr compiler".into())
        .stack_size(COMPILER_STACK)
        .spawn(move || {
            let _stop = interrupt::Scope::new(Some(stop));
            // Constant folding runs kernels: on this thread's device.
            arr_kernels::gpu::set_thread_default(device);
            let _ = tx.send(passes::run_passes(pipeline, &graph, None));
        });
    let Ok(handle) = spawned else {
        return Ok(passes::run_passes(pipeline, g, None));
    };
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(10)) {
            Ok(out) => return Ok(out),
            Err(RecvTimeoutError::Timeout) => {
                if interrupt::requested() {
                    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(crate::error::Error::interrupted());
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                // The thread ended without a graph: a pass panicked.
                match handle.join() {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(()) => unreachable!("the compiler thread sends its graph before it ends"),
                }
            }
        }
    }
}

/// Passes recurse over nested graphs as the evaluator's thread does.
const COMPILER_STACK: usize = 256 << 20;
