//! The IR: a `Graph` of equations over the closed primitive set, how a
//! function is traced into one, its canonical text form, its type checker,
//! its evaluator, and partial evaluation (splitting a graph into the part
//! that can run now and the part that waits for unknown inputs).

use super::{owned_by, push, TraceKind};
use crate::error::{Error, ErrorKind, Result};
use crate::prim::{bind, type_str, Args, Aval, Outs, Prim};
use crate::tensor::{Tensor, Tracer, TracerKind};
use arr_kernels::sharding::Placement;
use arr_kernels::{Array, DType};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;
use std::sync::Arc;

/// A graph: typed variables (`types[v]` is the type of variable `v`),
/// inputs, equations in order, and outputs.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub types: Vec<Aval>,
    pub invars: Vec<usize>,
    pub eqns: Vec<Eqn>,
    pub outvars: Vec<Atom>,
    /// Which outputs the traced function gave weakly typed (JAX's
    /// `weak_type`; empty: none), for whoever runs the graph to restore.
    pub weak_outs: Vec<bool>,
}

/// An operand: a variable, or a literal 0-d constant.
#[derive(Clone, Debug)]
pub enum Atom {
    Var(usize),
    Lit(Array),
}

#[derive(Clone, Debug)]
pub struct Eqn {
    pub prim: Prim,
    pub inputs: Vec<Atom>,
    pub outputs: Vec<usize>,
    /// Where the source made it (`file:line`), when it was traced from
    /// arr code: what `:plan` shows beside a collective it causes.
    pub line: Option<Arc<str>>,
}

/// A graph with values for its first `consts.len()` inputs (what the traced
/// function closed over); the remaining inputs are the function's arguments.
#[derive(Clone, Debug)]
pub struct ClosedGraph {
    pub graph: Arc<Graph>,
    pub consts: Vec<Tensor>,
}

/// A sub-graph held by a primitive (`cond`, `while_loop`, `scan`). Compared
/// by identity: two primitives are equal when they hold the same graph.
#[derive(Clone, Debug)]
pub struct GraphRef(pub Arc<Graph>);

impl PartialEq for GraphRef {
    fn eq(&self, other: &GraphRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for GraphRef {
    type Target = Graph;
    fn deref(&self) -> &Graph {
        &self.0
    }
}

impl Graph {
    pub fn in_avals(&self) -> Vec<Aval> {
        self.invars.iter().map(|&v| self.types[v].clone()).collect()
    }

    pub fn atom_aval(&self, a: &Atom) -> Aval {
        match a {
            Atom::Var(v) => self.types[*v].clone(),
            Atom::Lit(x) => Aval::of(x),
        }
    }

    pub fn out_avals(&self) -> Vec<Aval> {
        self.outvars.iter().map(|a| self.atom_aval(a)).collect()
    }
}

/// What a graph trace accumulates.
#[derive(Default)]
pub struct Builder {
    types: Vec<Aval>,
    eqns: Vec<Eqn>,
    /// Values from outside the trace, each bound to an input variable.
    consts: Vec<(Tensor, usize)>,
    /// Identity of a const (its buffer or tracer pointer) → its variable.
    const_index: HashMap<usize, usize>,
}

impl Builder {
    fn new_var(&mut self, aval: Aval) -> usize {
        self.types.push(aval);
        self.types.len() - 1
    }

    /// The atom standing for an outside value: small concrete values inline,
    /// everything else as a constant input (once per distinct value).
    fn lift(&mut self, t: &Tensor) -> Atom {
        if let Tensor::Concrete(a) = t {
            // (A deleted scalar is an input like any array: reading it
            // when the graph runs reports the deletion.)
            if a.shape().is_empty() && a.deleted().is_none() {
                // A handle of the graph's own: the user may delete theirs.
                return Atom::Lit(a.pinned());
            }
        }
        // Concrete arrays of different shapes may share a buffer (reshape):
        // a variable is reused only when the types agree too.
        let key = match t {
            Tensor::Concrete(a) => match a.buffer() {
                Ok(b) => std::sync::Arc::as_ptr(&b) as usize,
                Err(_) => a.identity(),
            },
            Tensor::Traced(tr) => Rc::as_ptr(tr) as usize,
        };
        if let Some(&v) = self.const_index.get(&key) {
            if self.types[v] == t.aval() {
                return Atom::Var(v);
            }
        }
        let v = self.new_var(t.aval());
        self.consts.push((t.clone(), v));
        self.const_index.insert(key, v);
        Atom::Var(v)
    }
}

fn graph_tracer(
    level: usize,
    id: u64,
    var: usize,
    aval: Aval,
    placement: Option<Arc<Placement>>,
) -> Tensor {
    Tensor::Traced(Rc::new(Tracer {
        level,
        trace_id: id,
        aval,
        kind: TracerKind::Graph { var },
        placement,
        key: false,
        weak: false,
    }))
}

fn var_of(t: &Tensor) -> Option<usize> {
    match t {
        Tensor::Traced(tr) => match tr.kind {
            TracerKind::Graph { var } => Some(var),
            _ => None,
        },
        _ => None,
    }
}

/// The graph trace's interpretation of `bind`: check the types and record.
pub fn process(
    level: usize,
    id: u64,
    builder: &RefCell<Builder>,
    prim: &Prim,
    args: Args,
) -> Result<Outs> {
    // A check is an effect only `checkify` turns into values.
    if let Prim::Check(_) = prim {
        return Err(super::checkify::not_functionalized());
    }
    // Arithmetic on scalar constants (a power's exponent minus one, say) is
    // folded now rather than recorded; larger constant work is recorded.
    // Collectives are never folded: their values depend on the device.
    let scalar_consts = !matches!(prim, Prim::Collective(_))
        && args
            .iter()
            .all(|a| matches!(a, Tensor::Concrete(x) if x.len() <= 1));
    if scalar_consts && prim.subgraphs().is_empty() {
        let small = prim
            .shape_rule(&args.iter().map(Tensor::aval).collect::<Vec<_>>())?
            .iter()
            .all(|o| o.shape.iter().product::<usize>() <= 1);
        if small {
            return crate::prim::eval_concrete(prim, args);
        }
    }
    let mut b = builder.borrow_mut();
    let inputs: Vec<Atom> = args
        .iter()
        .map(|a| {
            if owned_by(a, level) {
                Atom::Var(var_of(a).expect("a graph tracer"))
            } else {
                b.lift(a)
            }
        })
        .collect();
    let in_avals: Vec<Aval> = args.iter().map(|a| a.aval()).collect();
    let out_avals = prim.shape_rule(&in_avals)?;
    // Sharded operands give the results the layouts of JAX's types.
    let ins: Vec<_> = args.iter().map(Tensor::placement).collect();
    let layouts = if ins.iter().any(Option::is_some) {
        crate::prim::layout::out_layouts(prim, &ins, &in_avals, &out_avals)?
    } else {
        vec![None; out_avals.len()]
    };
    let mut outs = Outs::new();
    let mut outputs = Vec::new();
    for (aval, layout) in out_avals.into_iter().zip(layouts) {
        let v = b.new_var(aval.clone());
        outputs.push(v);
        outs.push(graph_tracer(level, id, v, aval, layout));
    }
    b.eqns.push(Eqn {
        prim: prim.clone(),
        inputs,
        outputs,
        line: source_line(),
    });
    Ok(outs)
}

/// A statement's file and span, and its `file:line` text once made.
type Source = (Rc<arr_lang::SourceFile>, arr_lang::Span, Option<Arc<str>>);

thread_local! {
    /// Graph traces running on this thread (the interpreter notes source
    /// positions only while one is).
    static GRAPH_TRACES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The statement being run, and its position as text once asked for.
    static SOURCE: RefCell<Option<Source>> = const { RefCell::new(None) };
    /// The position of the equation a transformation is replaying (a
    /// backward pass transposing it), which its new equations take.
    static REPLAYING: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The name of the standard library's own arr source: its statements are
/// not where a user's operation comes from, so positions skip them (and
/// those of its other files, named `<stdlib:...>`).
pub const STDLIB_SOURCE: &str = "<stdlib>";

/// Whether a file is one of the standard library's own sources.
pub fn is_stdlib_source(name: &str) -> bool {
    name == STDLIB_SOURCE || name.starts_with("<stdlib:")
}

/// Run `f` with the equations it records placed at `line` (those of an
/// equation being transposed or partitioned come from its position).
pub fn at_line<R>(line: Option<Arc<str>>, f: impl FnOnce() -> R) -> R {
    if line.is_none() {
        return f();
    }
    let before = REPLAYING.with(|r| r.replace(line));
    let out = f();
    REPLAYING.with(|r| *r.borrow_mut() = before);
    out
}

/// Whether a graph is being traced here, so equations want source positions.
#[inline]
pub fn recording() -> bool {
    GRAPH_TRACES.with(|n| n.get() > 0)
}

/// The interpreter is running the statement at `span` of `file`.
pub fn set_source(file: &Rc<arr_lang::SourceFile>, span: arr_lang::Span) {
    if is_stdlib_source(&file.name) {
        return;
    }
    SOURCE.with(|s| {
        let mut s = s.borrow_mut();
        if !matches!(&*s, Some((f, sp, _)) if Rc::ptr_eq(f, file) && *sp == span) {
            *s = Some((file.clone(), span, None));
        }
    });
}

/// Run a user function's body: the statements it runs move the position,
/// and the caller's comes back after it (the rest of the caller's statement
/// is still there: `gelu(layernorm(x) @ w)`'s product is not in `layernorm`).
pub fn in_callee<R>(f: impl FnOnce() -> R) -> R {
    if !recording() {
        return f();
    }
    let caller = SOURCE.with(|s| s.borrow().clone());
    let out = f();
    SOURCE.with(|s| *s.borrow_mut() = caller);
    out
}

/// The position of the statement being run, as `file:line`.
fn source_line() -> Option<Arc<str>> {
    if let Some(line) = REPLAYING.with(|r| r.borrow().clone()) {
        return Some(line);
    }
    SOURCE.with(|s| {
        let mut s = s.borrow_mut();
        let (file, span, text) = s.as_mut()?;
        Some(
            text.get_or_insert_with(|| {
                // The file's own name: a plan reads the same wherever it runs.
                let name = std::path::Path::new(&file.name)
                    .file_name()
                    .map_or(file.name.clone(), |n| n.to_string_lossy().into_owned());
                Arc::from(format!("{name}:{}", file.line_col(span.start).line))
            })
            .clone(),
        )
    })
}

/// Counts a graph trace while it lives.
struct Recording;

impl Recording {
    fn start() -> Recording {
        GRAPH_TRACES.with(|n| n.set(n.get() + 1));
        Recording
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        GRAPH_TRACES.with(|n| n.set(n.get() - 1));
        if !recording() {
            SOURCE.with(|s| s.borrow_mut().take());
        }
    }
}

/// Trace `f` on arguments of types `in_avals` into a graph. With `dynamic`,
/// operations on constants are recorded too (what `make_jaxpr` shows);
/// without, they run now and enter the graph as constants.
pub fn trace(
    in_avals: &[Aval],
    dynamic: bool,
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<ClosedGraph> {
    trace_laid_out(in_avals, &[], dynamic, f)
}

/// `trace` with the arguments laid out over a mesh (`layouts`, one per
/// argument, or none): the tracers carry the layouts, as JAX's types do.
pub fn trace_laid_out(
    in_avals: &[Aval],
    layouts: &[Option<Arc<Placement>>],
    dynamic: bool,
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<ClosedGraph> {
    let builder = Rc::new(RefCell::new(Builder::default()));
    let _recording = Recording::start();
    let guard = push(TraceKind::Graph(builder.clone()), dynamic);
    let mut arg_vars = Vec::new();
    let mut args = Vec::new();
    for (i, aval) in in_avals.iter().enumerate() {
        let v = builder.borrow_mut().new_var(aval.clone());
        arg_vars.push(v);
        let layout = layouts.get(i).cloned().flatten();
        args.push(graph_tracer(guard.level, guard.id, v, aval.clone(), layout));
    }
    let outs = match f(args) {
        Ok(outs) => outs,
        Err(e) => {
            if e.kind == crate::error::ErrorKind::KeyboardInterrupt {
                // A long trace's equations take a while to free.
                let eqns = std::mem::take(&mut builder.borrow_mut().eqns);
                let n = eqns.len();
                crate::jit::drop_aside(eqns, n);
            }
            return Err(e);
        }
    };
    let mut b = builder.borrow_mut();
    let outvars = outs
        .iter()
        .map(|o| {
            if owned_by(o, guard.level) {
                Atom::Var(var_of(o).expect("a graph tracer"))
            } else {
                b.lift(o)
            }
        })
        .collect();
    drop(guard);
    let b = std::mem::take(&mut *b);
    let mut invars: Vec<usize> = b.consts.iter().map(|(_, v)| *v).collect();
    invars.extend(arg_vars);
    let weak_outs = if outs.iter().any(Tensor::is_weak) {
        outs.iter().map(Tensor::is_weak).collect()
    } else {
        Vec::new()
    };
    let graph = Graph {
        types: b.types,
        invars,
        eqns: b.eqns,
        outvars,
        weak_outs,
    };
    if let Err(e) = crate::prim::check_interrupt() {
        let n = graph.eqns.len();
        crate::jit::drop_aside(graph, n);
        return Err(e);
    }
    debug_assert!(typecheck(&graph).is_ok(), "{:?}", typecheck(&graph));
    Ok(ClosedGraph {
        graph: Arc::new(graph),
        consts: b.consts.into_iter().map(|(t, _)| t).collect(),
    })
}

/// Run a graph on these inputs (any tensors: concrete or tracers, so a
/// graph can be re-traced under another transformation).
pub fn eval(graph: &Graph, args: &[Tensor]) -> Result<Vec<Tensor>> {
    if args.len() != graph.invars.len() {
        return Err(Error::type_error(format!(
            "graph takes {} inputs, got {}",
            graph.invars.len(),
            args.len()
        )));
    }
    let mut env: Vec<Option<Tensor>> = vec![None; graph.types.len()];
    for (&v, a) in graph.invars.iter().zip(args) {
        env[v] = Some(a.clone());
    }
    let read = |env: &[Option<Tensor>], a: &Atom| -> Tensor {
        match a {
            Atom::Var(v) => env[*v]
                .clone()
                .expect("graph variable used before definition"),
            Atom::Lit(x) => Tensor::Concrete(x.clone()),
        }
    };
    for eqn in &graph.eqns {
        let ins: Args = eqn.inputs.iter().map(|a| read(&env, a)).collect();
        // The graph's layouts were settled when it was traced (a product
        // with `out_sharding=` is followed by its constraint): evaluating
        // it raises no layout conflict of its own.
        let outs = crate::prim::layout::leniently(|| bind(&eqn.prim, ins))?;
        for (&v, o) in eqn.outputs.iter().zip(outs) {
            env[v] = Some(o);
        }
    }
    Ok(graph
        .outvars
        .iter()
        .map(|a| match a {
            // The caller gets a handle of its own (it may donate it).
            Atom::Lit(x) => Tensor::Concrete(x.pinned()),
            a => read(&env, a),
        })
        .collect())
}

impl ClosedGraph {
    pub fn call(&self, args: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut all = self.consts.clone();
        all.extend_from_slice(args);
        eval(&self.graph, &all)
    }
}

/// Re-derive every type in the graph from its inputs' types with the
/// primitives' shape rules; any disagreement is an error naming the equation.
pub fn typecheck(graph: &Graph) -> Result<()> {
    let mut defined = vec![false; graph.types.len()];
    let bad =
        |msg: String| Error::new(ErrorKind::TransformError, format!("ill-typed graph: {msg}"));
    for &v in &graph.invars {
        if v >= defined.len() || std::mem::replace(&mut defined[v], true) {
            return Err(bad(format!("input variable {v} is bound twice or unknown")));
        }
    }
    let check_atom = |defined: &[bool], a: &Atom| -> Result<Aval> {
        match a {
            Atom::Var(v) if *v < defined.len() && defined[*v] => Ok(graph.types[*v].clone()),
            Atom::Var(v) => Err(bad(format!("variable {v} is used before it is defined"))),
            Atom::Lit(x) => Ok(Aval::of(x)),
        }
    };
    for (i, eqn) in graph.eqns.iter().enumerate() {
        let mut ins = Vec::new();
        for a in &eqn.inputs {
            ins.push(check_atom(&defined, a)?);
        }
        let outs = eqn.prim.shape_rule(&ins).map_err(|e| {
            bad(format!(
                "equation {i} ({}): {}",
                eqn.prim.ir_name(),
                e.message
            ))
        })?;
        for sub in eqn.prim.subgraphs() {
            typecheck(sub)?;
        }
        if outs.len() != eqn.outputs.len() {
            return Err(bad(format!("equation {i} has the wrong number of outputs")));
        }
        for (o, &v) in outs.iter().zip(&eqn.outputs) {
            if v >= defined.len() || std::mem::replace(&mut defined[v], true) {
                return Err(bad(format!("equation {i} rebinds variable {v}")));
            }
            if graph.types[v] != *o {
                return Err(bad(format!(
                    "equation {i} ({}) declares {} but its rule gives {}",
                    eqn.prim.ir_name(),
                    type_str(&graph.types[v].shape, graph.types[v].dtype),
                    type_str(&o.shape, o.dtype)
                )));
            }
        }
    }
    for a in &graph.outvars {
        check_atom(&defined, a)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Text form

/// Variable names in order of first appearance: a, b, ..., z, ba, bb, ...
fn var_name(mut n: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    if s.len() > 1 {
        // "ba" after "z": the leading letter counts from b, as in jaxprs.
        s.reverse();
    }
    String::from_utf8(s).unwrap()
}

struct Printer {
    names: HashMap<usize, String>,
    next: usize,
}

impl Printer {
    fn name(&mut self, v: usize) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let n = var_name(self.next);
        self.next += 1;
        self.names.insert(v, n.clone());
        n
    }

    fn atom(&mut self, g: &Graph, a: &Atom) -> String {
        match a {
            Atom::Var(v) => self.name(*v),
            Atom::Lit(x) => format!("{}:{}", lit_text(x), type_str(&[], g.atom_aval(a).dtype)),
        }
    }

    fn binder(&mut self, g: &Graph, v: usize) -> String {
        format!(
            "{}:{}",
            self.name(v),
            type_str(&g.types[v].shape, g.types[v].dtype)
        )
    }

    fn graph(&mut self, g: &Graph, n_consts: usize, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        let binders = |p: &mut Printer, vs: &[usize]| -> String {
            vs.iter()
                .map(|&v| p.binder(g, v))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let consts = binders(self, &g.invars[..n_consts]);
        let args = binders(self, &g.invars[n_consts..]);
        let consts = if consts.is_empty() {
            consts
        } else {
            consts + " "
        };
        let _ = writeln!(out, "{{ lambda {consts}; {args}. let");
        for eqn in &g.eqns {
            let outs = binders(self, &eqn.outputs);
            let ins: Vec<String> = eqn.inputs.iter().map(|a| self.atom(g, a)).collect();
            // An equation without outputs (a debug callback) is just its call, as in JAX.
            let outs = if outs.is_empty() { outs } else { outs + " = " };
            let _ = write!(out, "{pad}    {outs}{}", eqn.prim.ir_text());
            for (name, sub, consts) in eqn.prim.subgraphs_named() {
                let _ = write!(out, " {name}=");
                let mut inner = Printer {
                    names: HashMap::new(),
                    next: 0,
                };
                inner.graph(sub, consts, indent + 4, out);
            }
            if ins.is_empty() {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(out, " {}", ins.join(" "));
            }
        }
        let outs: Vec<String> = g.outvars.iter().map(|a| self.atom(g, a)).collect();
        // A tuple as Python writes it: one output is `(a,)`, as in JAX's jaxprs.
        let comma = if outs.len() == 1 { "," } else { "" };
        let _ = write!(out, "{pad}  in ({}{comma}) }}", outs.join(", "));
    }
}

/// The first element of a literal. Literals are pinned handles of live
/// arrays (`lift` makes them), never deleted, so this read cannot fail.
pub fn lit_f64(x: &Array) -> f64 {
    x.get_f64(0).expect("a literal is pinned: never deleted")
}

fn lit_text(x: &Array) -> String {
    let v = lit_f64(x);
    match x.dtype() {
        DType::Bool => (if v != 0.0 { "True" } else { "False" }).into(),
        DType::F32 => crate::display::py_float32(v as f32),
        d if d.is_float() => crate::display::py_float(v),
        _ => format!(
            "{}",
            x.get_i64(0).expect("a literal is pinned: never deleted")
        ),
    }
}

/// The canonical text of a graph whose first `n_consts` inputs are constants.
pub fn text(graph: &Graph, n_consts: usize) -> String {
    let mut out = String::new();
    Printer {
        names: HashMap::new(),
        next: 0,
    }
    .graph(graph, n_consts, 0, &mut out);
    out
}

impl std::fmt::Display for ClosedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&text(&self.graph, self.consts.len()))
    }
}

// ---------------------------------------------------------------------------
// Dead code

/// The graph without equations whose outputs nothing uses (every primitive
/// but a debug callback is pure, so they can go). Inputs stay, so the signature is unchanged.
pub fn dce(graph: &Graph) -> Graph {
    let mut live = vec![false; graph.types.len()];
    for a in &graph.outvars {
        if let Atom::Var(v) = a {
            live[*v] = true;
        }
    }
    let mut kept = Vec::new();
    for eqn in graph.eqns.iter().rev() {
        if eqn.prim.has_effect() || eqn.outputs.iter().any(|&o| live[o]) {
            for a in &eqn.inputs {
                if let Atom::Var(v) = a {
                    live[*v] = true;
                }
            }
            kept.push(eqn.clone());
        }
    }
    kept.reverse();
    let out = Graph {
        eqns: kept,
        ..graph.clone()
    };
    debug_assert!(typecheck(&out).is_ok(), "{:?}", typecheck(&out));
    out
}

// ---------------------------------------------------------------------------
// Partial evaluation

/// The split of a graph by which inputs are known now: `known` computes the
/// known outputs and the residuals (known values the rest needs), `unknown`
/// takes the residuals followed by the unknown inputs and computes the
/// unknown outputs. Outputs keep their positions: `out_unknown[i]` says
/// which graph computes output `i`.
pub struct Split {
    pub known: Graph,
    pub unknown: Graph,
    pub n_residuals: usize,
    pub out_unknown: Vec<bool>,
}

pub fn partial_eval(graph: &Graph, in_unknown: &[bool]) -> Split {
    let mut unknown_var = vec![false; graph.types.len()];
    for (&v, &u) in graph.invars.iter().zip(in_unknown) {
        unknown_var[v] = u;
    }
    let is_unknown = |uv: &[bool], a: &Atom| matches!(a, Atom::Var(v) if uv[*v]);
    let mut known = Graph {
        types: graph.types.clone(),
        ..Graph::default()
    };
    let mut unknown = Graph {
        types: graph.types.clone(),
        ..Graph::default()
    };
    known.invars = graph
        .invars
        .iter()
        .zip(in_unknown)
        .filter(|(_, &u)| !u)
        .map(|(&v, _)| v)
        .collect();
    let unknown_ins: Vec<usize> = graph
        .invars
        .iter()
        .zip(in_unknown)
        .filter(|(_, &u)| u)
        .map(|(&v, _)| v)
        .collect();
    let mut residuals: Vec<usize> = Vec::new();
    let mut is_residual = vec![false; graph.types.len()];
    let mut need = |v: usize, residuals: &mut Vec<usize>| {
        if !std::mem::replace(&mut is_residual[v], true) {
            residuals.push(v);
        }
    };
    for eqn in &graph.eqns {
        if eqn.inputs.iter().any(|a| is_unknown(&unknown_var, a)) {
            for a in &eqn.inputs {
                if let Atom::Var(v) = a {
                    if !unknown_var[*v] {
                        need(*v, &mut residuals);
                    }
                }
            }
            for &o in &eqn.outputs {
                unknown_var[o] = true;
            }
            unknown.eqns.push(eqn.clone());
        } else {
            known.eqns.push(eqn.clone());
        }
    }
    let out_unknown: Vec<bool> = graph
        .outvars
        .iter()
        .map(|a| is_unknown(&unknown_var, a))
        .collect();
    for (a, &u) in graph.outvars.iter().zip(&out_unknown) {
        if u {
            unknown.outvars.push(a.clone());
        } else {
            known.outvars.push(a.clone());
        }
    }
    known
        .outvars
        .extend(residuals.iter().map(|&v| Atom::Var(v)));
    unknown.invars = residuals.clone();
    unknown.invars.extend(unknown_ins);
    debug_assert!(typecheck(&known).is_ok(), "{:?}", typecheck(&known));
    debug_assert!(typecheck(&unknown).is_ok(), "{:?}", typecheck(&unknown));
    Split {
        known,
        unknown,
        n_residuals: residuals.len(),
        out_unknown,
    }
}
