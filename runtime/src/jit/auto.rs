//! Automatic JIT of hot regions: the interpreter counts the calls of each
//! function per argument signature, and the iterations of each `for` loop
//! over a `range`; past a threshold it traces the function (or the loop
//! body) into a graph, compiles it with the exact pipeline, and runs the
//! compiled code from then on. This module owns that state, the purity
//! rules, and the `:jit` report; the hooks are in `eval.rs`.
//!
//! Results are the same with the feature on or off, so a region is compiled
//! only if tracing it shows that it is pure and that its graph computes what
//! the interpreter would:
//!
//! * the exact pipeline (`passes::EXACT_PIPELINE`) computes every value with
//!   the same scalar operations, in the same order, as eager mode;
//! * Python scalars among the arguments are part of the signature (they are
//!   Python numbers, computed in f64, not traced f32 values);
//! * a builtin with an effect (`print`, files, clocks), a store to a global
//!   or to a variable of an enclosing function, or a change to a list or
//!   dict that existed before the trace, ends the attempt, and so does any
//!   error (a ConcretizationError from Python control flow on values, say);
//!   the region then stays interpreted, and the reason is kept for `:jit`;
//! * globals and closed-over variables that the trace read are *guards*:
//!   the compiled version runs only while they still hold the same values
//!   (arrays by identity), and otherwise the function is traced again.

use super::passes::EXACT_PIPELINE;
use super::{compile_with, Compiled};
use crate::code::{CallArg, Expr, ExprKind, FPart, FuncCode, Stmt, StmtKind, Target, Var};
use crate::error::{Error, ErrorKind, Result};
use crate::prim::{type_str, Aval};
use crate::tensor::Tensor;
use crate::value::{Key, Value, MAX_NESTING};
use arr_kernels::{Array, DType};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

/// Calls of one function with one signature (or iterations of one loop)
/// that run interpreted before the region is compiled.
pub const DEFAULT_THRESHOLD: u32 = 5;
/// Compiled versions kept per signature (each for other guard values).
const MAX_VARIANTS: usize = 4;
/// Compiles of one function after which it stays interpreted: its guards
/// keep failing (a global it reads changes on every call, say).
const MAX_COMPILES: usize = 8;

type Cell = Rc<RefCell<Option<Value>>>;

/// One piece of a value's description: its structure and its leaves.
/// Arrays are described by type in signatures and by identity in guards.
#[derive(Clone)]
enum Part {
    /// An array's type, and whether it is weakly typed.
    Type(Aval, bool),
    Same(Array),
    None,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(Rc<String>),
    DType(DType),
    Range(i64, i64, i64),
    Ellipsis,
    List(usize),
    Tuple(usize),
    Dict(Vec<Key>),
    /// A function, builtin, native function or module: by identity.
    Object(Value),
    /// A global that is not set.
    Unset,
}

fn same_object(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Function(x), Value::Function(y)) => Rc::ptr_eq(x, y),
        (Value::Builtin(x), Value::Builtin(y)) => Rc::ptr_eq(x, y),
        (Value::Native(x), Value::Native(y)) => Rc::ptr_eq(x, y),
        (Value::Module(x), Value::Module(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        use Part::*;
        match (self, other) {
            (Type(a, x), Type(b, y)) => a == b && x == y,
            (Same(a), Same(b)) => a.same(b),
            (None, None) | (Ellipsis, Ellipsis) | (Unset, Unset) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (DType(a), DType(b)) => a == b,
            (Range(a, b, c), Range(d, e, f)) => (a, b, c) == (d, e, f),
            (List(a), List(b)) | (Tuple(a), Tuple(b)) => a == b,
            (Dict(a), Dict(b)) => a == b,
            (Object(a), Object(b)) => same_object(a, b),
            _ => false,
        }
    }
}

/// How arrays are described.
#[derive(Clone, Copy, PartialEq)]
enum Arrays {
    /// By type, each one also a leaf (arguments and loop carries).
    ByType,
    /// By type, tracers included (a loop body's results).
    Traced,
    /// By identity (guards: the values a trace baked in).
    ByIdentity,
}

/// Describe `v` into `parts`, its arrays into `leaves`. False for values
/// that cannot be described (tracers, bound methods, slices): a region
/// that receives one is not compiled.
fn describe(v: &Value, arrays: Arrays, parts: &mut Vec<Part>, leaves: &mut Vec<Tensor>) -> bool {
    // Every value adds a part, so this also bounds the depth: a container
    // holding itself (or one too big to guard cheaply) stays interpreted.
    if parts.len() > MAX_NESTING {
        return false;
    }
    match v {
        Value::Array(t) => match (arrays, t) {
            // An array laid out over a mesh: its layout is not part of the
            // type the trace sees, and a compiled region could return a
            // result laid out otherwise than the interpreter's (a
            // `zeros_like` that no longer depends on its operand), so
            // regions over such arrays stay interpreted.
            (_, Tensor::Concrete(a)) if a.placement().is_some() => return false,
            // Typed PRNG keys: a trace sees their u32 words, not the key
            // type (shape `()`, dtype `key<fry>`), so a region over keys
            // would answer `shape` and return keys otherwise than the
            // interpreter does; it stays interpreted.
            (_, Tensor::Concrete(a)) if a.flavour() == arr_kernels::Flavour::Key => return false,
            (Arrays::Traced, _) | (Arrays::ByType, Tensor::Concrete(_)) => {
                parts.push(Part::Type(t.aval(), t.is_weak()));
                leaves.push(t.clone());
            }
            (Arrays::ByIdentity, Tensor::Concrete(a)) => parts.push(Part::Same(a.clone())),
            _ => return false,
        },
        Value::None => parts.push(Part::None),
        Value::Bool(b) => parts.push(Part::Bool(*b)),
        Value::Int(i) => parts.push(Part::Int(*i)),
        Value::Float(x) => parts.push(Part::Float(x.to_bits())),
        Value::Str(s) => parts.push(Part::Str(s.clone())),
        Value::DType(d) => parts.push(Part::DType(*d)),
        Value::Range(r) => parts.push(Part::Range(r.start, r.stop, r.step)),
        Value::Ellipsis => parts.push(Part::Ellipsis),
        // Meshes and other stdlib objects, classes and their instances
        // (mutable, with methods that may have effects): not described, so
        // not compiled.
        Value::Object(_) | Value::Class(_) | Value::Instance(_) => return false,
        Value::List(l) => {
            let l = l.borrow();
            parts.push(Part::List(l.len()));
            return l.iter().all(|x| describe(x, arrays, parts, leaves));
        }
        Value::Tuple(t) => {
            parts.push(Part::Tuple(t.len()));
            return t.iter().all(|x| describe(x, arrays, parts, leaves));
        }
        Value::Dict(d) => {
            let d = d.borrow();
            parts.push(Part::Dict(d.keys().cloned().collect()));
            return d.values().all(|x| describe(x, arrays, parts, leaves));
        }
        Value::Function(_) | Value::Builtin(_) | Value::Native(_) | Value::Module(_) => {
            parts.push(Part::Object(v.clone()))
        }
        Value::BoundMethod(_) | Value::Slice(_) => return false,
    }
    true
}

/// A copy of `v` whose arrays are the next items of `leaves`, with new lists
/// and dicts (so the original containers are never touched).
fn rebuild(v: &Value, leaves: &mut impl Iterator<Item = Tensor>) -> Value {
    match v {
        Value::Array(_) => Value::Array(leaves.next().expect("one leaf per array")),
        Value::List(l) => Value::list(l.borrow().iter().map(|x| rebuild(x, leaves)).collect()),
        Value::Tuple(t) => Value::tuple(t.iter().map(|x| rebuild(x, leaves)).collect()),
        Value::Dict(d) => Value::dict(
            d.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), rebuild(x, leaves)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The arrays of `v`, in the order `rebuild` consumes them, as tensors
/// (traced or not); None if `v` holds something a compiled region cannot
/// return (a function made inside it, say).
fn output_leaves(v: &Value, out: &mut Vec<Tensor>) -> bool {
    output_leaves_at(v, out, 0)
}

fn output_leaves_at(v: &Value, out: &mut Vec<Tensor>, depth: usize) -> bool {
    // A result holding itself cannot be rebuilt: the region stays interpreted.
    if depth > MAX_NESTING {
        return false;
    }
    let output_leaves = |x: &Value, out: &mut Vec<Tensor>| output_leaves_at(x, out, depth + 1);
    match v {
        Value::Array(t) => out.push(t.clone()),
        Value::None
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::DType(_)
        | Value::Range(_)
        | Value::Ellipsis => {}
        Value::List(l) => return l.borrow().iter().all(|x| output_leaves(x, out)),
        Value::Tuple(t) => return t.iter().all(|x| output_leaves(x, out)),
        Value::Dict(d) => return d.borrow().values().all(|x| output_leaves(x, out)),
        Value::Function(_)
        | Value::Builtin(_)
        | Value::Native(_)
        | Value::Module(_)
        | Value::BoundMethod(_)
        | Value::Object(_)
        | Value::Class(_)
        | Value::Instance(_)
        | Value::Slice(_) => return false,
    }
    true
}

fn container_id(v: &Value) -> Option<usize> {
    v.container_id()
}

/// A value the compiled code baked in, which must still hold for it to run.
enum Guard {
    Global { id: usize, parts: Vec<Part> },
    Cell { cell: Cell, parts: Vec<Part> },
}

fn describe_slot(v: Option<&Value>) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    match v {
        None => parts.push(Part::Unset),
        Some(v) => {
            if !describe(v, Arrays::ByIdentity, &mut parts, &mut Vec::new()) {
                return None;
            }
        }
    }
    Some(parts)
}

impl Guard {
    fn holds(&self, globals: &[Option<Value>]) -> bool {
        match self {
            Guard::Global { id, parts } => {
                describe_slot(globals.get(*id).and_then(Option::as_ref)).as_ref() == Some(parts)
            }
            Guard::Cell { cell, parts } => {
                describe_slot(cell.borrow().as_ref()).as_ref() == Some(parts)
            }
        }
    }
}

/// What a trace for auto-JIT records, and what it must not touch.
#[derive(Default)]
pub struct TraceState {
    guards: Vec<Guard>,
    seen_globals: FxHashSet<usize>,
    seen_cells: FxHashSet<usize>,
    /// Cells of frames created during the trace.
    fresh_cells: FxHashSet<usize>,
    /// Generators created during the trace (only these may be stepped:
    /// one made before it would not be advanced by the compiled code).
    fresh_generators: FxHashSet<usize>,
    /// Lists and dicts that existed before the trace.
    old: FxHashSet<usize>,
    /// Whether reads of globals and outer cells become guards (functions;
    /// a loop's compiled body lives only while the loop runs).
    guard_reads: bool,
    /// Globals the trace may assign (a loop's carried variables).
    writable_globals: FxHashSet<usize>,
}

impl TraceState {
    /// Remember every list and dict reachable from `v` as pre-existing.
    fn mark_old(&mut self, v: &Value) {
        if let Some(id) = container_id(v) {
            if !self.old.insert(id) {
                return;
            }
        }
        match v {
            Value::List(l) => l.borrow().iter().for_each(|x| self.mark_old(x)),
            Value::Dict(d) => d.borrow().values().for_each(|x| self.mark_old(x)),
            Value::Tuple(t) => t.iter().for_each(|x| self.mark_old(x)),
            Value::Function(f) => f.defaults.iter().flatten().for_each(|x| self.mark_old(x)),
            Value::BoundMethod(m) => self.mark_old(&m.0),
            _ => {}
        }
    }
}

/// The outcome of one attempt, for `:jit`.
pub struct Record {
    /// "function f (file:line)" or "loop (file:line)".
    pub region: String,
    /// After how many calls or iterations.
    pub after: u32,
    /// "calls" or "iterations".
    pub unit: &'static str,
    /// The argument or carry types.
    pub signature: String,
    pub outcome: Outcome,
}

pub enum Outcome {
    Compiled {
        ms: f64,
        eqns_traced: usize,
        eqns_compiled: usize,
        kernels: usize,
    },
    Interpreted(String),
}

struct Variant {
    /// The closure's free cells the trace was made for.
    cells: Vec<usize>,
    guards: Vec<Guard>,
    compiled: Rc<Compiled>,
    /// The result with placeholder arrays, rebuilt around the outputs.
    template: Value,
}

struct SigEntry {
    parts: Vec<Part>,
    calls: u32,
    variants: Vec<Variant>,
    refused: bool,
}

/// What a counted region is: a function's code, or a transformation (as
/// text, nested ones included) of a function's code.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RegionKey {
    transforms: String,
    code: usize,
}

struct FuncEntry {
    /// Kept alive so that the code's address (in the key) is not reused.
    _code: Rc<FuncCode>,
    sigs: Vec<SigEntry>,
    compiles: usize,
    refused: bool,
}

/// The interpreter's automatic-JIT state.
pub struct AutoJit {
    pub enabled: bool,
    pub threshold: u32,
    /// Set while a region is traced for auto-JIT (the hooks in `eval.rs`
    /// check it).
    pub tracing: Option<TraceState>,
    funcs: FxHashMap<RegionKey, FuncEntry>,
    /// Loops that stay interpreted, by statement address. (Should the code
    /// be freed and the address reused, another loop stays interpreted:
    /// slower, never wrong.)
    refused_loops: FxHashSet<usize>,
    pub records: Vec<Record>,
}

impl Default for AutoJit {
    fn default() -> AutoJit {
        AutoJit {
            enabled: true,
            threshold: DEFAULT_THRESHOLD,
            tracing: None,
            funcs: FxHashMap::default(),
            refused_loops: FxHashSet::default(),
            records: Vec::new(),
        }
    }
}

/// An error that ends an auto-JIT trace (never shown to the user: the
/// region runs interpreted, and `:jit` shows the reason).
pub fn not_pure(what: impl Into<String>) -> Error {
    Error::new(ErrorKind::TransformError, what.into())
}

fn types_text(leaves: &[Tensor]) -> String {
    let t: Vec<String> = leaves
        .iter()
        .map(|t| {
            let a = t.aval();
            type_str(&a.shape, a.dtype)
        })
        .collect();
    format!("({})", t.join(", "))
}

/// The reason an attempt failed, with the line where it did.
pub fn reason(e: &Error) -> String {
    match &e.loc {
        Some(l) => format!("line {}: {}", l.line_col().line, e.message),
        None => e.message.clone(),
    }
}

fn count_kernels(c: &Compiled) -> usize {
    c.graph
        .eqns
        .iter()
        .filter(|e| {
            matches!(
                e.prim,
                crate::prim::Prim::Fused(_) | crate::prim::Prim::FusedMatmul(_)
            )
        })
        .count()
}

thread_local! {
    /// Whether this thread is tracing a region for automatic JIT, for code
    /// far from the interpreter (indexing) whose eager checks depend on
    /// values.
    static TRACING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a region is being traced for automatic JIT. Operations whose
/// eager form checks values (the bounds of an index array) end such a trace
/// with `not_pure` when the values are traced: compiled code could not
/// raise the interpreter's error.
pub fn tracing() -> bool {
    TRACING.with(|t| t.get())
}

impl AutoJit {
    fn start(&mut self, state: TraceState) {
        debug_assert!(self.tracing.is_none());
        self.tracing = Some(state);
        TRACING.with(|t| t.set(true));
    }

    fn stop(&mut self) -> TraceState {
        TRACING.with(|t| t.set(false));
        self.tracing.take().expect("tracing")
    }

    // ---- hooks called while tracing ----

    /// A global was read: guard its value (functions only, not loops).
    pub fn read_global(&mut self, id: usize, v: Option<&Value>) -> Result<()> {
        let t = self.tracing.as_mut().expect("tracing");
        if !t.seen_globals.insert(id) {
            return Ok(());
        }
        if t.writable_globals.contains(&id) {
            return Ok(());
        }
        if let Some(v) = v {
            t.mark_old(v);
        }
        if !t.guard_reads {
            return Ok(());
        }
        let parts = describe_slot(v).ok_or_else(|| not_pure("reads a global it cannot compare"))?;
        t.guards.push(Guard::Global { id, parts });
        Ok(())
    }

    /// A cell was read: if it belongs to a frame outside the trace, guard it.
    pub fn read_cell(&mut self, cell: &Cell) -> Result<()> {
        let t = self.tracing.as_mut().expect("tracing");
        let id = Rc::as_ptr(cell) as usize;
        if t.fresh_cells.contains(&id) || !t.seen_cells.insert(id) {
            return Ok(());
        }
        let v = cell.borrow();
        if let Some(v) = v.as_ref() {
            t.mark_old(v);
        }
        if !t.guard_reads {
            return Ok(());
        }
        let parts = describe_slot(v.as_ref())
            .ok_or_else(|| not_pure("reads a variable it cannot compare"))?;
        drop(v);
        t.guards.push(Guard::Cell {
            cell: cell.clone(),
            parts,
        });
        Ok(())
    }

    /// A global is stored: only a loop's carried globals may be.
    pub fn write_global(&self, id: usize, name: &str) -> Result<()> {
        let t = self.tracing.as_ref().expect("tracing");
        if t.writable_globals.contains(&id) {
            Ok(())
        } else {
            Err(not_pure(format!("assigns the global '{name}'")))
        }
    }

    /// A cell is stored: only cells of frames inside the trace may be.
    pub fn write_cell(&mut self, cell: &Cell, name: &str) -> Result<()> {
        let t = self.tracing.as_ref().expect("tracing");
        if t.fresh_cells.contains(&(Rc::as_ptr(cell) as usize)) {
            Ok(())
        } else {
            Err(not_pure(format!(
                "assigns '{name}', a variable of an enclosing function"
            )))
        }
    }

    /// New frames' cells: stores into them stay inside the trace.
    pub fn fresh_cells(&mut self, cells: &[Cell]) {
        let t = self.tracing.as_mut().expect("tracing");
        t.fresh_cells
            .extend(cells.iter().map(|c| Rc::as_ptr(c) as usize));
    }

    /// A generator is made during the trace (`id`: its address).
    pub fn fresh_generator(&mut self, id: usize) {
        let t = self.tracing.as_mut().expect("tracing");
        t.fresh_generators.insert(id);
    }

    /// A generator is stepped: only one made during the trace may be.
    pub fn step_generator(&self, id: usize) -> Result<()> {
        let t = self.tracing.as_ref().expect("tracing");
        if t.fresh_generators.contains(&id) {
            return Ok(());
        }
        Err(not_pure("steps a generator made before it"))
    }

    /// A list or dict is changed in place: only new ones may be.
    pub fn mutate(&self, container: &Value, how: &str) -> Result<()> {
        let t = self.tracing.as_ref().expect("tracing");
        match container_id(container) {
            Some(id) if t.old.contains(&id) => Err(not_pure(format!(
                "{how} a {} that existed before the call",
                container.type_name()
            ))),
            _ => Ok(()),
        }
    }

    /// The `:jit` report.
    pub fn report(&self) -> String {
        let mut out = format!(
            "automatic JIT is {} (after {} calls of a function with the same argument types, \
             or {} iterations of a loop)\n",
            if self.enabled { "on" } else { "off" },
            self.threshold,
            self.threshold
        );
        if self.records.is_empty() {
            out.push_str("nothing compiled or refused yet\n");
        }
        for r in &self.records {
            match &r.outcome {
                Outcome::Compiled {
                    ms,
                    eqns_traced,
                    eqns_compiled,
                    kernels,
                } => out.push_str(&format!(
                    "compiled     {} after {} {} for {}: {:.2} ms, {} equations -> {} ({} fused kernels)\n",
                    r.region, r.after, r.unit, r.signature, ms, eqns_traced, eqns_compiled, kernels
                )),
                Outcome::Interpreted(why) => out.push_str(&format!(
                    "interpreted  {} after {} {} for {}: {}\n",
                    r.region, r.after, r.unit, r.signature, why
                )),
            }
        }
        out
    }

    pub fn forget(&mut self) {
        self.funcs.clear();
        self.refused_loops.clear();
        self.records.clear();
    }
}

// ---- functions ----

/// A function value as a region: its key, its code, and its closure's cells.
/// None for builtins and natives that are not transformations of arr code.
pub fn region_of(f: &Value) -> Option<(RegionKey, Rc<FuncCode>, Vec<usize>)> {
    match f {
        Value::Function(func) => Some((
            RegionKey {
                transforms: String::new(),
                code: Rc::as_ptr(&func.code) as usize,
            },
            func.code.clone(),
            func.free_cells
                .iter()
                .map(|c| Rc::as_ptr(c) as usize)
                .collect(),
        )),
        Value::Native(n) => {
            let (t, of) = n.transform.as_ref()?;
            let (mut key, code, cells) = region_of(of)?;
            key.transforms = format!("{t} of {}", key.transforms);
            Some((key, code, cells))
        }
        _ => None,
    }
}

type Kwargs = Vec<(Rc<str>, Value)>;

/// The compiled version of a call of `f` (a function, or a transformation
/// of one: see `region_of`), if it is hot for this signature and compiles;
/// None to interpret it. `run` interprets the call (the tracing run).
pub fn call(
    interp: &mut crate::Interp,
    f: &Value,
    args: &[Value],
    kwargs: &[(Rc<str>, Value)],
    region: impl FnOnce() -> String,
    run: impl FnOnce(&mut crate::Interp, Vec<Value>, Kwargs) -> Result<Value>,
) -> Result<Option<Value>> {
    let Some((key, code, cells)) = region_of(f) else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    let mut leaves = Vec::new();
    for v in args {
        if !describe(v, Arrays::ByType, &mut parts, &mut leaves) {
            return Ok(None);
        }
    }
    for (k, v) in kwargs {
        parts.push(Part::Str(Rc::new(k.to_string())));
        if !describe(v, Arrays::ByType, &mut parts, &mut leaves) {
            return Ok(None);
        }
    }
    if leaves.is_empty() {
        return Ok(None);
    }
    let threshold = interp.auto.threshold;
    let entry = interp
        .auto
        .funcs
        .entry(key.clone())
        .or_insert_with(|| FuncEntry {
            _code: code,
            sigs: Vec::new(),
            compiles: 0,
            refused: false,
        });
    if entry.refused {
        return Ok(None);
    }
    let s = match entry.sigs.iter().position(|s| s.parts == parts) {
        Some(s) => s,
        None => {
            entry.sigs.push(SigEntry {
                parts,
                calls: 0,
                variants: Vec::new(),
                refused: false,
            });
            entry.sigs.len() - 1
        }
    };
    let sig = &mut entry.sigs[s];
    if sig.refused {
        return Ok(None);
    }
    sig.calls = sig.calls.saturating_add(1);
    let found = sig
        .variants
        .iter()
        .find(|v| v.cells == cells && v.guards.iter().all(|g| g.holds(&interp.globals)))
        .map(|v| (v.compiled.clone(), v.template.clone()));
    if let Some((compiled, template)) = found {
        let outs = compiled.run(leaves)?;
        return Ok(Some(rebuild(&template, &mut outs.into_iter())));
    }
    if sig.calls < threshold {
        return Ok(None);
    }
    let after = sig.calls;
    let compiles = entry.compiles;
    let signature = types_text(&leaves);
    if compiles >= MAX_COMPILES {
        entry.refused = true;
        interp.auto.records.push(Record {
            region: region(),
            after,
            unit: "calls",
            signature,
            outcome: Outcome::Interpreted(format!(
                "compiled {compiles} times: a global or closed-over value it reads keeps changing"
            )),
        });
        return Ok(None);
    }

    // Trace it.
    let mut state = TraceState {
        guard_reads: true,
        ..TraceState::default()
    };
    let avals: Vec<Aval> = leaves.iter().map(Tensor::aval).collect();
    let start = Instant::now();
    let template = RefCell::new(Value::None);
    interp.auto.start(state);
    let weak: Vec<bool> = leaves.iter().map(Tensor::is_weak).collect();
    let result = compile_with(EXACT_PIPELINE, &avals, |ts| {
        let mut it = crate::tensor::weakened_each(ts, &weak);
        let a: Vec<Value> = args.iter().map(|v| rebuild(v, &mut it)).collect();
        let kw: Kwargs = kwargs
            .iter()
            .map(|(k, v)| (k.clone(), rebuild(v, &mut it)))
            .collect();
        let t = interp.auto.tracing.as_mut().expect("tracing");
        a.iter().for_each(|v| t.mark_old(v));
        kw.iter().for_each(|(_, v)| t.mark_old(v));
        let out = run(interp, a, kw)?;
        let mut outs = Vec::new();
        if !output_leaves(&out, &mut outs) {
            return Err(not_pure("returns a function"));
        }
        let t = interp.auto.tracing.as_ref().expect("tracing");
        if returns_old(&out, &t.old) {
            return Err(not_pure(
                "returns a list or dict that existed before the call",
            ));
        }
        let placeholder = Tensor::Concrete(Array::scalar_f32(0.0));
        *template.borrow_mut() = rebuild(&out, &mut std::iter::repeat(placeholder));
        Ok(outs)
    });
    state = interp.auto.stop();
    let region = region();
    let entry = interp.auto.funcs.get_mut(&key).expect("entry");
    let sig = &mut entry.sigs[s];
    match result {
        Err(e) if e.kind == ErrorKind::KeyboardInterrupt => Err(e),
        Err(e) => {
            sig.refused = true;
            interp.auto.records.push(Record {
                region,
                after,
                unit: "calls",
                signature,
                outcome: Outcome::Interpreted(reason(&e)),
            });
            Ok(None)
        }
        Ok(compiled) => {
            let compiled = Rc::new(compiled);
            entry.compiles += 1;
            if sig.variants.len() >= MAX_VARIANTS {
                sig.variants.remove(0);
            }
            let template = template.into_inner();
            sig.variants.push(Variant {
                cells,
                guards: state.guards,
                compiled: compiled.clone(),
                template: template.clone(),
            });
            interp.auto.records.push(Record {
                region,
                after,
                unit: "calls",
                signature,
                outcome: compiled_outcome(&compiled, start),
            });
            let outs = compiled.run(leaves)?;
            Ok(Some(rebuild(&template, &mut outs.into_iter())))
        }
    }
}

/// Whether `v` is, or holds, one of the `old` containers.
fn returns_old(v: &Value, old: &FxHashSet<usize>) -> bool {
    returns_old_at(v, old, 0)
}

fn returns_old_at(v: &Value, old: &FxHashSet<usize>, depth: usize) -> bool {
    // Too deep to tell (a container holding itself): treat it as old, so the
    // region stays interpreted.
    if depth > MAX_NESTING || container_id(v).is_some_and(|id| old.contains(&id)) {
        return true;
    }
    let at = |x: &Value| returns_old_at(x, old, depth + 1);
    match v {
        Value::List(l) => l.borrow().iter().any(at),
        Value::Dict(d) => d.borrow().values().any(at),
        Value::Tuple(t) => t.iter().any(at),
        _ => false,
    }
}

// ---- loops ----

/// What a loop body assigns: the variables it carries from one iteration
/// to the next.
pub struct LoopPlan {
    pub carried: Vec<(Var, Rc<str>)>,
}

/// Whether a `for` loop over a range may be compiled, and what it carries.
/// The body must not read the loop variable (its value would be a traced
/// integer, whose arithmetic with Python floats is not Python's), nor
/// leave the loop early.
pub fn plan_loop(target: &Target, body: &[Stmt]) -> std::result::Result<LoopPlan, String> {
    let var = match target {
        Target::Var(v @ (Var::Local(_) | Var::Global(_)), _) => *v,
        _ => return Err("its loop variable is not a plain local or global variable".into()),
    };
    let mut plan = LoopPlan {
        carried: Vec::new(),
    };
    walk_stmts(body, var, 0, &mut plan)?;
    Ok(plan)
}

fn walk_stmts(
    body: &[Stmt],
    var: Var,
    depth: usize,
    plan: &mut LoopPlan,
) -> std::result::Result<(), String> {
    for s in body {
        let reads = |e: &Expr| -> std::result::Result<(), String> {
            if expr_reads(e, var) {
                Err("the body reads the loop variable".into())
            } else {
                Ok(())
            }
        };
        match &s.kind {
            StmtKind::Expr(e) => reads(e)?,
            StmtKind::Assign(targets, e) => {
                reads(e)?;
                for t in targets {
                    assigned(t, var, plan)?;
                }
            }
            StmtKind::Return(_) => return Err("the body returns".into()),
            StmtKind::Break | StmtKind::Continue if depth == 0 => {
                return Err("the body has break or continue".into())
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Pass => {}
            StmtKind::If(test, a, b) => {
                reads(test)?;
                walk_stmts(a, var, depth, plan)?;
                walk_stmts(b, var, depth, plan)?;
            }
            StmtKind::For(t, it, b, orelse) => {
                reads(it)?;
                assigned(t, var, plan)?;
                walk_stmts(b, var, depth + 1, plan)?;
                walk_stmts(orelse, var, depth, plan)?;
            }
            StmtKind::While(test, b, orelse) => {
                reads(test)?;
                walk_stmts(b, var, depth + 1, plan)?;
                walk_stmts(orelse, var, depth, plan)?;
            }
            StmtKind::Assert(e, m) => {
                reads(e)?;
                if let Some(m) = m {
                    reads(m)?;
                }
            }
            StmtKind::Raise(e, cause) => {
                for e in [e, cause].into_iter().flatten() {
                    reads(e)?;
                }
            }
            StmtKind::ImportStar(_) => return Err("the body imports names".into()),
            // Handlers could catch the tracer's own errors; managers and
            // `del` have effects: such loops stay interpreted.
            StmtKind::Try(_) => return Err("the body has a try statement".into()),
            StmtKind::With(..) => return Err("the body has a with statement".into()),
            StmtKind::Delete(_) => return Err("the body has a del statement".into()),
            StmtKind::ClassDef(_) => return Err("the body defines a class".into()),
        }
    }
    Ok(())
}

fn assigned(t: &Target, var: Var, plan: &mut LoopPlan) -> std::result::Result<(), String> {
    match t {
        Target::Var(v, name) => {
            if *v == var {
                return Err("the body assigns the loop variable".into());
            }
            if !plan.carried.iter().any(|(c, _)| c == v) {
                plan.carried.push((*v, name.clone()));
            }
        }
        Target::Unpack(ts, _, _) => {
            for t in ts {
                assigned(t, var, plan)?;
            }
        }
        Target::Subscript {
            obj, store, index, ..
        } => {
            if expr_reads(obj, var) || expr_reads(index, var) {
                return Err("the body reads the loop variable".into());
            }
            if let Some(s) = store {
                assigned(s, var, plan)?;
            }
        }
        Target::Attribute { .. } => return Err("the body assigns an attribute".into()),
    }
    Ok(())
}

/// Whether `e` reads the variable `var`.
fn expr_reads(e: &Expr, var: Var) -> bool {
    let r = |x: &Expr| expr_reads(x, var);
    match &e.kind {
        ExprKind::Const(_) | ExprKind::Import { .. } | ExprKind::ImportFrom { .. } => false,
        ExprKind::Load(v, _) => *v == var,
        ExprKind::List(xs) | ExprKind::Tuple(xs) => xs.iter().any(r),
        ExprKind::Dict(kvs) => kvs.iter().any(|(k, v)| k.as_ref().is_some_and(r) || r(v)),
        ExprKind::Set(xs) => xs.iter().any(r),
        // An assignment inside an expression would escape the carried
        // variables: answer "reads" so that such a loop stays interpreted.
        ExprKind::NamedExpr(..) => true,
        // So would a yielded value (the generator keeps it).
        ExprKind::Yield(..) => true,
        ExprKind::Starred(x) | ExprKind::Unary(_, x) | ExprKind::Attribute(x, _) => r(x),
        ExprKind::FString(parts) => parts.iter().any(|p| match p {
            FPart::Literal(_) => false,
            FPart::Hole { expr, .. } => r(expr),
        }),
        ExprKind::Binary(_, a, b) | ExprKind::Subscript(a, b) => r(a) || r(b),
        ExprKind::BoolOp(_, xs) => xs.iter().any(r),
        ExprKind::Compare(a, rest) => r(a) || rest.iter().any(|(_, x)| r(x)),
        ExprKind::IfExp(a, b, c) => r(a) || r(b) || r(c),
        ExprKind::MakeFunction {
            defaults,
            decorators,
            annotations,
            ..
        } => {
            defaults.iter().flatten().any(r)
                || decorators.iter().any(r)
                || annotations.iter().any(|(_, e, _)| r(e))
        }
        ExprKind::Call(f, args) => {
            r(f) || args.iter().any(|a| match a {
                CallArg::Positional(x)
                | CallArg::Starred(x)
                | CallArg::Keyword(_, x)
                | CallArg::DoubleStarred(x) => r(x),
            })
        }
        ExprKind::Slice(a, b, c) => [a, b, c].iter().any(|x| x.as_deref().is_some_and(r)),
        ExprKind::Comprehension {
            elt,
            value,
            generators,
        } => {
            r(elt)
                || value.as_deref().is_some_and(r)
                || generators.iter().any(|g| r(&g.iter) || g.ifs.iter().any(r))
        }
    }
}

/// The state of a loop being compiled: the carried values described, and
/// their arrays.
pub struct Carry {
    parts: Vec<Part>,
    pub leaves: Vec<Tensor>,
}

/// Describe the carried values (all must be set); None if one cannot be.
pub fn describe_carry(values: &[Option<Value>]) -> std::result::Result<Carry, String> {
    let mut parts = Vec::new();
    let mut leaves = Vec::new();
    for v in values {
        let Some(v) = v else {
            return Err("the body assigns a variable that is not set before the loop".into());
        };
        if !describe(v, Arrays::ByType, &mut parts, &mut leaves) {
            return Err(format!("the body assigns a {}", v.type_name()));
        }
    }
    if leaves.is_empty() {
        return Err("the body carries no arrays".into());
    }
    Ok(Carry { parts, leaves })
}

impl Carry {
    pub fn signature(&self) -> String {
        types_text(&self.leaves)
    }
}

impl AutoJit {
    /// Whether the loop statement at `key` was found not to compile.
    pub fn loop_refused(&self, key: usize) -> bool {
        self.refused_loops.contains(&key)
    }

    /// Begin tracing a loop body: `frame_values` (the frame's locals and
    /// cells) are pre-existing state; the carried cells and globals may be
    /// assigned.
    pub fn begin_loop_trace(&mut self, frame_values: &[Value], cells: &[Cell], globals: &[usize]) {
        let mut t = TraceState::default();
        frame_values.iter().for_each(|v| t.mark_old(v));
        t.fresh_cells
            .extend(cells.iter().map(|c| Rc::as_ptr(c) as usize));
        t.writable_globals.extend(globals.iter().copied());
        self.start(t);
    }

    pub fn end_trace(&mut self) {
        self.stop();
    }

    /// Record a loop's outcome; a refused loop is not tried again.
    pub fn loop_outcome(
        &mut self,
        key: usize,
        region: String,
        after: u32,
        signature: String,
        outcome: Outcome,
    ) {
        if matches!(outcome, Outcome::Interpreted(_)) {
            self.refused_loops.insert(key);
        }
        self.records.push(Record {
            region,
            after,
            unit: "iterations",
            signature,
            outcome,
        });
    }
}

/// Trace one iteration of a loop body and compile it. `body` runs the body
/// once on the carried values (rebuilt around tracers) and returns the
/// values the variables hold afterwards.
pub fn compile_loop(
    carry: &Carry,
    carried_values: &[Option<Value>],
    body: impl FnOnce(Vec<Value>) -> Result<Vec<Option<Value>>>,
) -> Result<Compiled> {
    let avals: Vec<Aval> = carry.leaves.iter().map(Tensor::aval).collect();
    let weak: Vec<bool> = carry.leaves.iter().map(Tensor::is_weak).collect();
    compile_with(EXACT_PIPELINE, &avals, |ts| {
        let mut it = crate::tensor::weakened_each(ts, &weak);
        let values: Vec<Value> = carried_values
            .iter()
            .map(|v| rebuild(v.as_ref().expect("set"), &mut it))
            .collect();
        let after = body(values)?;
        let mut parts = Vec::new();
        let mut outs = Vec::new();
        for v in &after {
            let Some(v) = v else {
                return Err(not_pure("the body deletes a variable"));
            };
            if !output_leaves(v, &mut outs) {
                return Err(not_pure(format!("the body assigns a {}", v.type_name())));
            }
            // The structure and Python values must come back unchanged.
            let mut ignore = Vec::new();
            if !describe(v, Arrays::Traced, &mut parts, &mut ignore) {
                return Err(not_pure(format!("the body assigns a {}", v.type_name())));
            }
        }
        if parts != carry.parts {
            return Err(not_pure(
                "the body changes the type of a carried value, or a Python number it carries",
            ));
        }
        Ok(outs)
    })
}

/// The carried values after the compiled iterations, rebuilt around `leaves`.
pub fn carried_after(carried_values: &[Option<Value>], leaves: Vec<Tensor>) -> Vec<Value> {
    let mut it = leaves.into_iter();
    carried_values
        .iter()
        .map(|v| rebuild(v.as_ref().expect("set"), &mut it))
        .collect()
}

/// The `:jit` outcome of a compiled region.
pub fn compiled_outcome(c: &Compiled, start: Instant) -> Outcome {
    Outcome::Compiled {
        ms: start.elapsed().as_secs_f64() * 1e3,
        eqns_traced: c.traced.eqns.len(),
        eqns_compiled: c.graph.eqns.len(),
        kernels: count_kernels(c),
    }
}
