//! The tree-walking evaluator over resolved code: frames, calls, assignment,
//! iteration, operators, attributes and subscripts.

use crate::builtin::{bind_args, Builtin, Effect};
use crate::code::*;
use crate::compile::Interner;
use crate::display;
use crate::error::{Error, ErrorKind, Loc, Result};
use crate::index;
use crate::jit::auto::{self, AutoJit};
use crate::numpy;
use crate::value::{range_len, Dict, Function, Key, Module, SliceValue, Value};
use arr_kernels::{Array, BinaryOp, DType, UnaryOp};
use arr_lang::ast::{BinOp, BoolOpKind, CmpOp, UnaryOp as AstUnary};
use arr_lang::SourceFile;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Maximum depth of nested arr calls before a RecursionError.
const MAX_DEPTH: usize = 2000;
/// Grow the stack when less than this is left before an arr call...
const STACK_RED_ZONE: usize = 256 * 1024;
/// ...by segments of this size.
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Where `print` and friends write. The REPL uses stdout; a notebook kernel captures.
pub type OutputSink = Box<dyn FnMut(&str)>;

/// The evaluator's state: globals, builtins, method tables, the interrupt flag.
pub struct Interp {
    pub interner: Interner,
    pub globals: Vec<Option<Value>>,
    pub builtins: Vec<Option<Value>>,
    /// Methods by receiver type (`"array"`, `"list"`, `"dict"`, `"str"`) and name.
    pub methods: FxHashMap<(&'static str, Rc<str>), Value>,
    /// Set from another thread (Ctrl-C); checked at loop iterations and calls.
    pub interrupt: Arc<AtomicBool>,
    pub out: OutputSink,
    /// Rich output (stderr, displays); None means the terminal (`emit`).
    pub rich: Option<crate::output::RichSink>,
    /// Draws `progress(...)` bars on a terminal (set by the REPL); unused
    /// when `rich` is set, since a notebook gets an updating display instead.
    pub progress_bars: Option<crate::progress::ProgressFactory>,
    /// Automatic JIT of hot functions and loops (`jit/auto.rs`).
    pub auto: AutoJit,
    depth: usize,
}

pub(crate) enum Flow {
    Normal,
    Break,
    Continue,
    Return(Value),
}

type Cell = Rc<RefCell<Option<Value>>>;

pub(crate) struct Frame {
    locals: Vec<Option<Value>>,
    cells: Vec<Cell>,
    file: Rc<SourceFile>,
    func: Rc<str>,
}

impl Frame {
    fn loc(&self, span: arr_lang::Span) -> Loc {
        Loc {
            file: self.file.clone(),
            span,
            func: self.func.clone(),
        }
    }
}

/// An error leaving a call: a builtin's error happened at the call site;
/// a user function's already has its place, and the call site joins the trace.
fn at_call(mut err: Error, loc: Loc) -> Error {
    if err.rendered.is_some() {
        return err;
    }
    if err.loc.is_none() {
        err.loc = Some(loc);
    } else {
        err.trace.push(loc);
    }
    err
}

fn name_error(name: &str) -> Error {
    Error::new(
        ErrorKind::NameError,
        format!("name '{name}' is not defined"),
    )
}

/// Iteration over a value, without materialising ranges.
enum Iter {
    Range { next: i64, stop: i64, step: i64 },
    Items { items: Vec<Value>, pos: usize },
}

impl Iter {
    /// Whether another item follows.
    fn has_next(&self) -> bool {
        match self {
            Iter::Range { next, stop, step } => {
                (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop)
            }
            Iter::Items { items, pos } => *pos < items.len(),
        }
    }

    /// How many items are left.
    fn remaining(&self) -> Option<usize> {
        match self {
            Iter::Range { next, stop, step } => {
                let (n, stop, step) = (*next as i128, *stop as i128, *step as i128);
                let left = if step > 0 {
                    (stop - n + step - 1) / step
                } else {
                    (n - stop + (-step) - 1) / (-step)
                };
                Some(left.max(0) as usize)
            }
            Iter::Items { items, pos } => Some(items.len().saturating_sub(*pos)),
        }
    }
}

impl Iterator for Iter {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        match self {
            Iter::Range { next, stop, step } => {
                if (*step > 0 && *next < *stop) || (*step < 0 && *next > *stop) {
                    let v = *next;
                    *next += *step;
                    Some(Value::Int(v))
                } else {
                    None
                }
            }
            Iter::Items { items, pos } => {
                let v = items.get(*pos).cloned();
                *pos += 1;
                v
            }
        }
    }
}

impl Interp {
    pub fn new() -> Interp {
        Interp {
            interner: Interner::default(),
            globals: Vec::new(),
            builtins: Vec::new(),
            methods: FxHashMap::default(),
            interrupt: Arc::new(AtomicBool::new(false)),
            out: Box::new(|s| {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(s.as_bytes());
                let _ = stdout.flush();
            }),
            rich: None,
            progress_bars: None,
            auto: AutoJit::default(),
            depth: 0,
        }
    }

    pub fn write_out(&mut self, s: &str) {
        (self.out)(s)
    }

    /// Send rich output to the front end's sink; without one, approximate it
    /// on the terminal (a display prints the value, an image says what it is).
    pub fn emit(&mut self, output: crate::output::RichOutput) {
        use crate::output::RichOutput;
        if let Some(sink) = &mut self.rich {
            return sink(output);
        }
        match output {
            RichOutput::Stderr(text) => {
                use std::io::Write;
                let mut stderr = std::io::stderr().lock();
                let _ = stderr.write_all(text.as_bytes());
                let _ = stderr.flush();
            }
            RichOutput::Display { value, .. } => {
                let text = crate::display::repr(&value);
                self.write_out(&format!("{text}\n"));
            }
            RichOutput::Image { formats, .. } => {
                // A terminal cannot show it: write the best format to a file and say where.
                let Some((mime, data)) = formats.first() else {
                    return;
                };
                let ext = if *mime == "image/svg+xml" {
                    "svg"
                } else {
                    "png"
                };
                static IMAGES: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                let n = IMAGES.fetch_add(1, Ordering::Relaxed);
                let path = std::env::temp_dir()
                    .join(format!("arr-image-{}-{n}.{ext}", std::process::id()));
                let text = match std::fs::write(&path, data) {
                    Ok(()) => format!("image written to {}\n", path.display()),
                    Err(e) => format!("<{mime} image: cannot write {}: {e}>\n", path.display()),
                };
                self.write_out(&text);
            }
            RichOutput::Mime { data, update, .. } => {
                // A terminal cannot replace an earlier output: show only fresh ones.
                if let (false, Some((_, text))) = (update, data.first()) {
                    self.write_out(&format!("{text}\n"));
                }
            }
            RichOutput::ClearOutput { .. } => {}
        }
    }

    /// Raise KeyboardInterrupt if Ctrl-C was pressed since the last check.
    #[inline]
    pub fn check_interrupt(&self) -> Result<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            self.interrupt.store(false, Ordering::Relaxed);
            return Err(Error::interrupted());
        }
        Ok(())
    }

    pub fn set_builtin(&mut self, name: &str, value: Value) {
        let id = self.interner.intern(name) as usize;
        if self.builtins.len() <= id {
            self.builtins.resize(id + 1, None);
        }
        self.builtins[id] = Some(value);
    }

    pub fn set_global(&mut self, name: &str, value: Value) {
        let id = self.interner.intern(name) as usize;
        self.store_global(id, value);
    }

    fn store_global(&mut self, id: usize, value: Value) {
        if self.globals.len() <= id {
            self.globals.resize(id + 1, None);
        }
        self.globals[id] = Some(value);
    }

    pub fn get_global(&self, name: &str) -> Option<Value> {
        let id = self.interner.get(name)? as usize;
        self.globals
            .get(id)
            .cloned()
            .flatten()
            .or_else(|| self.builtins.get(id).cloned().flatten())
    }

    pub fn add_method(&mut self, receiver: &'static str, name: &str, value: Value) {
        self.methods.insert((receiver, Rc::from(name)), value);
    }

    /// Run module code. In interactive mode the value of a trailing expression
    /// statement is returned (for echoing) instead of discarded.
    pub fn exec_module(&mut self, code: &ModuleCode, interactive: bool) -> Result<Option<Value>> {
        crate::transform::control::set_interrupt_flag(self.interrupt.clone());
        let mut frame = Frame {
            locals: Vec::new(),
            cells: Vec::new(),
            file: code.file.clone(),
            func: Rc::from("<module>"),
        };
        self.depth = 0;
        let n = code.body.len();
        for (i, stmt) in code.body.iter().enumerate() {
            if interactive && i + 1 == n {
                if let StmtKind::Expr(e) = &stmt.kind {
                    let v = self.eval(e, &mut frame)?;
                    return Ok(Some(v));
                }
            }
            match self.exec(stmt, &mut frame)? {
                Flow::Normal => {}
                _ => unreachable!(
                    "break/continue/return outside their context are rejected by the compiler"
                ),
            }
        }
        Ok(None)
    }

    fn exec_block(&mut self, stmts: &[Stmt], f: &mut Frame) -> Result<Flow> {
        for s in stmts {
            if crate::transform::graph::recording() {
                crate::transform::graph::set_source(&f.file, s.span);
            }
            match self.exec(s, f)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    #[inline]
    fn exec(&mut self, s: &Stmt, f: &mut Frame) -> Result<Flow> {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.eval(e, f)?;
            }
            StmtKind::Assign(targets, value) => {
                let v = self.eval(value, f)?;
                if let [Target::Var(Var::Local(i), _)] = targets.as_slice() {
                    f.locals[*i as usize] = Some(v);
                } else if let [t] = targets.as_slice() {
                    self.assign(t, v, f)?;
                } else {
                    for t in targets {
                        self.assign(t, v.clone(), f)?;
                    }
                }
            }
            _ => return self.exec_other(s, f),
        }
        Ok(Flow::Normal)
    }

    /// Statements other than expressions and assignments (kept out of `exec`'s
    /// hot path so that it stays small).
    #[inline(never)]
    fn exec_other(&mut self, s: &Stmt, f: &mut Frame) -> Result<Flow> {
        match &s.kind {
            StmtKind::Expr(_) | StmtKind::Assign(..) => return self.exec(s, f),
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e, f)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::If(test, body, orelse) => {
                let t = self.eval(test, f)?;
                let t = t.truthy().map_err(|e| e.at(|| f.loc(test.span)))?;
                return self.exec_block(if t { body } else { orelse }, f);
            }
            StmtKind::While(test, body) => loop {
                self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                let t = self.eval(test, f)?;
                if !t.truthy().map_err(|e| e.at(|| f.loc(test.span)))? {
                    break;
                }
                match self.exec_block(body, f)? {
                    Flow::Break => break,
                    Flow::Return(v) => return Ok(Flow::Return(v)),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            StmtKind::For(target, iter, body) => {
                let it = self.eval(iter, f)?;
                if let Some(p) = crate::progress::of(&it) {
                    return self.for_progress(p, s, target, body, f);
                }
                let mut items = self.iterate(&it).map_err(|e| e.at(|| f.loc(iter.span)))?;
                // A loop over a range may be compiled once it is hot.
                let mut until_hot = match it {
                    Value::Range(_) if self.auto.enabled && self.auto.tracing.is_none() => {
                        self.auto.threshold
                    }
                    _ => 0,
                };
                while let Some(item) = items.next() {
                    self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                    self.assign(target, item, f)?;
                    match self.exec_block(body, f)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                    if until_hot > 0 {
                        until_hot -= 1;
                        if until_hot == 0
                            && items.has_next()
                            && self.run_loop_compiled(s, target, body, &mut items, f)?
                        {
                            break;
                        }
                    }
                }
            }
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Pass => {}
            StmtKind::Assert(test, msg) => {
                if !self
                    .eval(test, f)?
                    .truthy()
                    .map_err(|e| e.at(|| f.loc(test.span)))?
                {
                    let m = match msg {
                        Some(m) => display::str(&self.eval(m, f)?),
                        None => String::new(),
                    };
                    return Err(Error::new(ErrorKind::AssertionError, m).at(|| f.loc(s.span)));
                }
            }
            StmtKind::Raise(e) => {
                let m = match e {
                    Some(e) => display::str(&self.eval(e, f)?),
                    None => "exception raised".to_string(),
                };
                return Err(Error::new(ErrorKind::RuntimeError, m).at(|| f.loc(s.span)));
            }
        }
        Ok(Flow::Normal)
    }

    /// A read of a global or an outer cell while auto-JIT traces (a guard).
    #[cold]
    fn note_read(&mut self, var: Var, f: &Frame) -> Result<()> {
        match var {
            Var::Local(_) => Ok(()),
            Var::Cell(i) => self.auto.read_cell(&f.cells[i as usize]),
            Var::Global(id) => {
                let id = id as usize;
                let v = self.globals.get(id).and_then(Option::as_ref);
                self.auto.read_global(id, v)
            }
        }
    }

    fn read_var(&self, var: Var, f: &Frame) -> Option<Value> {
        match var {
            Var::Local(i) => f.locals[i as usize].clone(),
            Var::Cell(i) => f.cells[i as usize].borrow().clone(),
            Var::Global(id) => self.globals.get(id as usize).cloned().flatten(),
        }
    }

    fn write_var(&mut self, var: Var, v: Option<Value>, f: &mut Frame) {
        match var {
            Var::Local(i) => f.locals[i as usize] = v,
            Var::Cell(i) => *f.cells[i as usize].borrow_mut() = v,
            Var::Global(id) => {
                let id = id as usize;
                if self.globals.len() <= id {
                    self.globals.resize(id + 1, None);
                }
                self.globals[id] = v;
            }
        }
    }

    /// A hot `for` loop over a range: trace one iteration of its body,
    /// compile it, and run the remaining `items` compiled. False if the
    /// body does not compile (the loop then goes on interpreted, and is not
    /// tried again).
    #[cold]
    fn run_loop_compiled(
        &mut self,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        items: &mut Iter,
        f: &mut Frame,
    ) -> Result<bool> {
        let key = s as *const Stmt as usize;
        if self.auto.loop_refused(key) || !crate::transform::idle() {
            return Ok(false);
        }
        let region = format!("loop ({})", f.file.location(s.span));
        let after = self.auto.threshold;
        let refuse = |interp: &mut Interp, signature: String, why: String| {
            interp.auto.loop_outcome(
                key,
                region.clone(),
                after,
                signature,
                auto::Outcome::Interpreted(why),
            );
            Ok(false)
        };
        let plan = match auto::plan_loop(target, body) {
            Ok(p) => p,
            Err(why) => return refuse(self, "()".into(), why),
        };
        let values: Vec<Option<Value>> = plan
            .carried
            .iter()
            .map(|(v, _)| self.read_var(*v, f))
            .collect();
        let carry = match auto::describe_carry(&values) {
            Ok(c) => c,
            Err(why) => return refuse(self, "()".into(), why),
        };
        let signature = carry.signature();
        let mut before: Vec<Value> = f.locals.iter().flatten().cloned().collect();
        before.extend(f.cells.iter().filter_map(|c| c.borrow().clone()));
        let cells: Vec<Cell> = plan
            .carried
            .iter()
            .filter_map(|(v, _)| match v {
                Var::Cell(i) => Some(f.cells[*i as usize].clone()),
                _ => None,
            })
            .collect();
        let globals: Vec<usize> = plan
            .carried
            .iter()
            .filter_map(|(v, _)| match v {
                Var::Global(id) => Some(*id as usize),
                _ => None,
            })
            .collect();
        let start = std::time::Instant::now();
        self.auto.begin_loop_trace(&before, &cells, &globals);
        let result = auto::compile_loop(&carry, &values, |vals| {
            for ((v, _), val) in plan.carried.iter().zip(vals) {
                self.write_var(*v, Some(val), f);
            }
            match self.exec_block(body, f)? {
                Flow::Normal | Flow::Continue => {}
                _ => return Err(auto::not_pure("the body leaves the loop")),
            }
            Ok(plan
                .carried
                .iter()
                .map(|(v, _)| self.read_var(*v, f))
                .collect())
        });
        self.auto.end_trace();
        for ((v, _), val) in plan.carried.iter().zip(&values) {
            self.write_var(*v, val.clone(), f);
        }
        let compiled = match result {
            Err(e) if e.kind == ErrorKind::KeyboardInterrupt => return Err(e),
            Err(e) => {
                let why = auto::reason(&e);
                return refuse(self, signature, why);
            }
            Ok(c) => c,
        };
        let outcome = auto::compiled_outcome(&compiled, start);
        self.auto
            .loop_outcome(key, region.clone(), after, signature, outcome);
        // The remaining iterations; on Ctrl-C the variables keep the values
        // of the iterations done, as in the interpreter.
        let mut leaves = carry.leaves;
        let mut last = None;
        let mut stopped = Ok(());
        for item in items.by_ref() {
            if let Err(e) = self.check_interrupt() {
                stopped = Err(e.at(|| f.loc(s.span)));
                break;
            }
            // Taken, not cloned: the executor may then reuse the buffers.
            match compiled.run(std::mem::take(&mut leaves)) {
                Ok(next) => leaves = next,
                Err(e) => {
                    // Not a user error (the types were checked when it was
                    // compiled): the variables keep their values from before.
                    return Err(e.at(|| f.loc(s.span)));
                }
            }
            last = Some(item);
        }
        let after_values = auto::carried_after(&values, leaves);
        for ((v, _), val) in plan.carried.iter().zip(after_values) {
            self.write_var(*v, Some(val), f);
        }
        if let Some(last) = last {
            self.assign(target, last, f)?;
        }
        stopped.map(|_| true)
    }

    /// Store into a target. Plain variables are handled here, small enough to
    /// inline into the loops; unpacking and subscripts go to `assign_complex`.
    #[inline]
    fn assign(&mut self, t: &Target, v: Value, f: &mut Frame) -> Result<()> {
        match t {
            Target::Var(Var::Local(i), _) => f.locals[*i as usize] = Some(v),
            Target::Var(Var::Cell(i), name) => {
                if self.auto.tracing.is_some() {
                    self.auto.write_cell(&f.cells[*i as usize], name)?;
                }
                *f.cells[*i as usize].borrow_mut() = Some(v)
            }
            Target::Var(Var::Global(id), name) => {
                if self.auto.tracing.is_some() {
                    self.auto.write_global(*id as usize, name)?;
                }
                self.store_global(*id as usize, v)
            }
            _ => return self.assign_complex(t, v, f),
        }
        Ok(())
    }

    #[inline(never)]
    fn assign_complex(&mut self, t: &Target, v: Value, f: &mut Frame) -> Result<()> {
        match t {
            Target::Var(..) => return self.assign(t, v, f),
            Target::Unpack(targets, star, span) => {
                let items: Vec<Value> = self
                    .iterate(&v)
                    .map_err(|e| e.at(|| f.loc(*span)))?
                    .collect();
                match star {
                    None => {
                        if items.len() != targets.len() {
                            let msg = if items.len() > targets.len() {
                                format!("too many values to unpack (expected {})", targets.len())
                            } else {
                                format!(
                                    "not enough values to unpack (expected {}, got {})",
                                    targets.len(),
                                    items.len()
                                )
                            };
                            return Err(Error::value_error(msg).at(|| f.loc(*span)));
                        }
                        for (t, item) in targets.iter().zip(items) {
                            self.assign(t, item, f)?;
                        }
                    }
                    Some(s) => {
                        let after = targets.len() - s - 1;
                        if items.len() < targets.len() - 1 {
                            return Err(Error::value_error(format!(
                                "not enough values to unpack (expected at least {}, got {})",
                                targets.len() - 1,
                                items.len()
                            ))
                            .at(|| f.loc(*span)));
                        }
                        let mut items = items;
                        let tail = items.split_off(items.len() - after);
                        let middle = items.split_off(*s);
                        for (t, item) in targets[..*s].iter().zip(items) {
                            self.assign(t, item, f)?;
                        }
                        self.assign(&targets[*s], Value::list(middle), f)?;
                        for (t, item) in targets[s + 1..].iter().zip(tail) {
                            self.assign(t, item, f)?;
                        }
                    }
                }
            }
            Target::Subscript {
                obj,
                store,
                index,
                span,
            } => {
                let container = self.eval(obj, f)?;
                let idx = self.eval(index, f)?;
                let loc = || f.loc(*span);
                if self.auto.tracing.is_some() {
                    self.auto
                        .mutate(&container, "assigns an item of")
                        .map_err(|e| e.at(loc))?;
                }
                match &container {
                    Value::List(l) => {
                        let n = l.borrow().len();
                        let i = seq_index(&idx, n).map_err(|e| e.at(loc))?;
                        l.borrow_mut()[i] = v;
                    }
                    Value::Dict(d) => {
                        let k = idx.to_key().map_err(|e| e.at(loc))?;
                        d.borrow_mut().insert(k, v);
                    }
                    Value::Array(a) => {
                        let updated = index::set_index(a, &idx, &v).map_err(|e| e.at(loc))?;
                        match store {
                            Some(t) => self.assign(t, Value::Array(updated), f)?,
                            None => {
                                return Err(Error::type_error(
                                    "cannot update an array that is not stored in a variable",
                                )
                                .at(loc))
                            }
                        }
                    }
                    other => {
                        return Err(Error::type_error(format!(
                            "'{}' object does not support item assignment",
                            other.type_name()
                        ))
                        .at(loc))
                    }
                }
            }
            Target::Attribute { obj, attr, span } => {
                let o = self.eval(obj, f)?;
                return Err(Error::type_error(format!(
                    "cannot set attribute '{attr}' of {}",
                    o.type_name()
                ))
                .at(|| f.loc(*span)));
            }
        }
        Ok(())
    }

    pub(crate) fn eval(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        match &e.kind {
            // The hot cases first, without any wrapping.
            ExprKind::Const(v) => Ok(v.clone()),
            ExprKind::Load(var, name) => self
                .load(*var, name, f)
                .map_err(|err| err.at(|| f.loc(e.span))),
            ExprKind::Binary(op, l, r) => {
                let a = self.eval_operand(l, f)?;
                let b = self.eval_operand(r, f)?;
                // Python numbers in the interpreter's inner loops, without a call.
                let fast = match (&a, &b) {
                    (Value::Float(x), Value::Float(y)) => float_fast(*op, *x, *y),
                    (Value::Int(x), Value::Float(y)) => float_fast(*op, *x as f64, *y),
                    (Value::Float(x), Value::Int(y)) => float_fast(*op, *x, *y as f64),
                    (Value::Int(x), Value::Int(y)) => int_fast(*op, *x, *y),
                    _ => None,
                };
                if let Some(v) = fast {
                    return Ok(v);
                }
                binary_op(*op, a, b).map_err(|err| err.at(|| f.loc(e.span)))
            }
            _ => self
                .eval_other(e, f)
                .map_err(|err| err.at(|| f.loc(e.span))),
        }
    }

    /// An operand of an operator: constants and local numbers are read here,
    /// without a recursive `eval` call (the common leaves of arithmetic).
    #[inline(always)]
    fn eval_operand(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        match &e.kind {
            ExprKind::Const(Value::Float(x)) => Ok(Value::Float(*x)),
            ExprKind::Const(Value::Int(x)) => Ok(Value::Int(*x)),
            ExprKind::Load(Var::Local(i), _) => match &f.locals[*i as usize] {
                Some(Value::Float(x)) => Ok(Value::Float(*x)),
                Some(Value::Int(x)) => Ok(Value::Int(*x)),
                _ => self.eval(e, f),
            },
            _ => self.eval(e, f),
        }
    }

    #[inline]
    fn load(&mut self, var: Var, name: &str, f: &Frame) -> Result<Value> {
        if self.auto.tracing.is_some() {
            self.note_read(var, f)?;
        }
        match var {
            Var::Local(i) => match &f.locals[i as usize] {
                // Numbers are copied without the out-of-line `Value::clone`.
                Some(Value::Float(x)) => Ok(Value::Float(*x)),
                Some(Value::Int(x)) => Ok(Value::Int(*x)),
                Some(v) => Ok(v.clone()),
                None => Err(Error::new(
                    ErrorKind::NameError,
                    format!("local variable '{name}' referenced before assignment"),
                )),
            },
            Var::Cell(i) => f.cells[i as usize].borrow().clone().ok_or_else(|| {
                Error::new(
                    ErrorKind::NameError,
                    format!("free variable '{name}' referenced before assignment"),
                )
            }),
            Var::Global(id) => {
                let id = id as usize;
                if let Some(Some(v)) = self.globals.get(id) {
                    return Ok(v.clone());
                }
                if let Some(Some(v)) = self.builtins.get(id) {
                    return Ok(v.clone());
                }
                Err(name_error(name))
            }
        }
    }

    fn eval_all(&mut self, items: &[Expr], f: &mut Frame) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            if let ExprKind::Starred(inner) = &item.kind {
                let v = self.eval(inner, f)?;
                out.extend(self.iterate(&v).map_err(|e| e.at(|| f.loc(item.span)))?);
            } else {
                out.push(self.eval(item, f)?);
            }
        }
        Ok(out)
    }

    fn eval_other(&mut self, e: &Expr, f: &mut Frame) -> Result<Value> {
        Ok(match &e.kind {
            ExprKind::Const(_) | ExprKind::Load(..) | ExprKind::Binary(..) => {
                unreachable!("handled in eval")
            }
            ExprKind::List(items) => Value::list(self.eval_all(items, f)?),
            ExprKind::Tuple(items) => Value::tuple(self.eval_all(items, f)?),
            ExprKind::Dict(items) => {
                let mut d = Dict::default();
                for (k, v) in items {
                    let key = self
                        .eval(k, f)?
                        .to_key()
                        .map_err(|err| err.at(|| f.loc(k.span)))?;
                    let value = self.eval(v, f)?;
                    d.insert(key, value);
                }
                Value::dict(d)
            }
            ExprKind::Starred(_) => {
                return Err(Error::new(
                    ErrorKind::SyntaxError,
                    "can't use starred expression here",
                ))
            }
            ExprKind::FString(parts) => {
                let mut s = String::new();
                for p in parts {
                    match p {
                        FPart::Literal(l) => s.push_str(l),
                        FPart::Hole {
                            expr,
                            conversion,
                            spec,
                        } => {
                            let v = self.eval(expr, f)?;
                            let text = match conversion {
                                Some('r') => display::repr(&v),
                                _ => match spec {
                                    Some(spec) => display::format_spec(&v, spec)
                                        .map_err(|err| err.at(|| f.loc(expr.span)))?,
                                    None => display::str(&v),
                                },
                            };
                            s.push_str(&text);
                        }
                    }
                }
                Value::str(&s)
            }
            ExprKind::Unary(op, operand) => {
                let v = self.eval(operand, f)?;
                unary_op(*op, v)?
            }
            ExprKind::BoolOp(op, values) => {
                let mut last = Value::None;
                for v in values {
                    last = self.eval(v, f)?;
                    let t = last.truthy()?;
                    if (*op == BoolOpKind::And && !t) || (*op == BoolOpKind::Or && t) {
                        return Ok(last);
                    }
                }
                last
            }
            ExprKind::Compare(left, rest) => {
                let mut a = self.eval(left, f)?;
                if let [(op, right)] = rest.as_slice() {
                    let b = self.eval(right, f)?;
                    return compare_op(*op, &a, &b);
                }
                for (op, right) in rest {
                    let b = self.eval(right, f)?;
                    if !compare_op(*op, &a, &b)?.truthy()? {
                        return Ok(Value::Bool(false));
                    }
                    a = b;
                }
                Value::Bool(true)
            }
            ExprKind::IfExp(test, body, orelse) => {
                let t = self.eval(test, f)?;
                if t.truthy()? {
                    self.eval(body, f)?
                } else {
                    self.eval(orelse, f)?
                }
            }
            ExprKind::MakeFunction {
                code,
                defaults,
                captures,
                decorators,
            } => {
                let decos = self.eval_all(decorators, f)?;
                let mut dvals = Vec::with_capacity(defaults.len());
                for d in defaults {
                    dvals.push(match d {
                        Some(d) => Some(self.eval(d, f)?),
                        None => None,
                    });
                }
                let free_cells = captures
                    .iter()
                    .map(|&c| f.cells[c as usize].clone())
                    .collect();
                let mut v = Value::Function(Rc::new(Function {
                    code: code.clone(),
                    defaults: dvals,
                    free_cells,
                }));
                for d in decos.iter().rev() {
                    v = self
                        .call(d, vec![v], Vec::new())
                        .map_err(|err| at_call(err, f.loc(e.span)))?;
                }
                v
            }
            ExprKind::Call(func, args) => {
                let fv = self.eval(func, f)?;
                let mut pos = Vec::with_capacity(args.len());
                let mut kw = Vec::new();
                for a in args {
                    match a {
                        CallArg::Positional(x) => pos.push(self.eval(x, f)?),
                        CallArg::Starred(x) => {
                            let v = self.eval(x, f)?;
                            pos.extend(self.iterate(&v).map_err(|err| err.at(|| f.loc(x.span)))?);
                        }
                        CallArg::Keyword(name, x) => kw.push((name.clone(), self.eval(x, f)?)),
                        CallArg::DoubleStarred(x) => match self.eval(x, f)? {
                            Value::Dict(d) => {
                                for (k, v) in d.borrow().iter() {
                                    match k {
                                        Key::Str(s) => kw.push((s.clone(), v.clone())),
                                        _ => {
                                            return Err(Error::type_error(
                                                "keywords must be strings",
                                            ))
                                        }
                                    }
                                }
                            }
                            other => {
                                return Err(Error::type_error(format!(
                                    "argument after ** must be a dict, not {}",
                                    other.type_name()
                                )))
                            }
                        },
                    }
                }
                return self
                    .call(&fv, pos, kw)
                    .map_err(|err| at_call(err, f.loc(e.span)));
            }
            ExprKind::Attribute(obj, attr) => {
                let o = self.eval(obj, f)?;
                self.get_attr(&o, attr)?
            }
            ExprKind::Subscript(obj, index) => {
                let o = self.eval(obj, f)?;
                let i = self.eval(index, f)?;
                get_item(&o, &i)?
            }
            ExprKind::Slice(a, b, c) => {
                let mut part = |p: &Option<Box<Expr>>| -> Result<Option<i64>> {
                    match p {
                        None => Ok(None),
                        Some(x) => match self.eval(x, f)? {
                            Value::None => Ok(None),
                            v => v.to_int()?.map(Some).ok_or_else(|| {
                                Error::type_error("slice indices must be integers or None")
                            }),
                        },
                    }
                };
                let (start, stop, step) = (part(a)?, part(b)?, part(c)?);
                Value::Slice(Rc::new(SliceValue { start, stop, step }))
            }
            ExprKind::Comprehension {
                elt,
                value,
                generators,
            } => {
                let mut out_list = Vec::new();
                let mut out_dict = Dict::default();
                self.comprehend(
                    generators,
                    elt,
                    value.as_deref(),
                    f,
                    &mut out_list,
                    &mut out_dict,
                )?;
                if value.is_some() {
                    Value::dict(out_dict)
                } else {
                    Value::list(out_list)
                }
            }
        })
    }

    fn comprehend(
        &mut self,
        gens: &[Generator],
        elt: &Expr,
        value: Option<&Expr>,
        f: &mut Frame,
        list: &mut Vec<Value>,
        dict: &mut Dict,
    ) -> Result<()> {
        let Some((g, rest)) = gens.split_first() else {
            let k = self.eval(elt, f)?;
            match value {
                Some(v) => {
                    let key = k.to_key()?;
                    let val = self.eval(v, f)?;
                    dict.insert(key, val);
                }
                None => list.push(k),
            }
            return Ok(());
        };
        let it = self.eval(&g.iter, f)?;
        'items: for item in self.iterate(&it)? {
            self.check_interrupt()?;
            self.assign(&g.target, item, f)?;
            for cond in &g.ifs {
                if !self.eval(cond, f)?.truthy()? {
                    continue 'items;
                }
            }
            self.comprehend(rest, elt, value, f, list, dict)?;
        }
        Ok(())
    }

    /// Call any callable value with positional and keyword arguments.
    pub fn call(
        &mut self,
        fv: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        self.check_interrupt()?;
        match fv {
            Value::Function(func) => self.call_function(func, args, kwargs),
            Value::Builtin(b) => self.call_builtin(b, args, kwargs),
            Value::Native(n) => {
                if n.transform.is_some() && self.auto_jit_candidate(&args, &kwargs) {
                    let name = n.name.clone();
                    let compiled = auto::call(
                        self,
                        fv,
                        &args,
                        &kwargs,
                        || format!("function {name}"),
                        |interp, a, k| (n.f)(interp, a, k),
                    )?;
                    if let Some(v) = compiled {
                        return Ok(v);
                    }
                }
                (n.f)(self, args, kwargs)
            }
            Value::BoundMethod(m) => {
                let (recv, method) = &**m;
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(recv.clone());
                all.extend(args);
                self.call(method, all, kwargs)
            }
            Value::DType(d) => {
                if args.len() != 1 || !kwargs.is_empty() {
                    return Err(Error::type_error(format!(
                        "{}() takes one argument",
                        d.name()
                    )));
                }
                Ok(Value::Array(numpy::to_array_as(&args[0], *d)?))
            }
            other => Err(Error::type_error(format!(
                "'{}' object is not callable",
                other.type_name()
            ))),
        }
    }

    pub fn call_builtin(
        &mut self,
        b: &Builtin,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        if b.effect != Effect::Pure && self.auto.tracing.is_some() {
            match b.effect {
                Effect::MutatesReceiver => {
                    if let Some(receiver) = args.first() {
                        self.auto
                            .mutate(receiver, &format!("calls {} on", b.name))?;
                    }
                }
                _ => {
                    return Err(auto::not_pure(format!(
                        "calls {}, which has an effect",
                        b.name
                    )))
                }
            }
        }
        let bound = bind_args(&b.name, &b.params, &b.defaults, args, kwargs)?;
        (b.func)(self, bound)
    }

    fn call_function(
        &mut self,
        func: &Rc<Function>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        let code = &func.code;
        let bound = bind_args(&code.name, &code.params, &func.defaults, args, kwargs)?;
        if self.auto_jit_candidate(&bound, &[]) {
            let region = || format!("function {} ({})", code.name, code.file.location(code.span));
            let compiled = auto::call(
                self,
                &Value::Function(func.clone()),
                &bound,
                &[],
                region,
                |interp, args, _| interp.run_function(func, args),
            )?;
            if let Some(v) = compiled {
                return Ok(v);
            }
        }
        self.run_function(func, bound)
    }

    /// Whether a call with these arguments might be compiled automatically
    /// (the cheap tests; `auto::call` does the rest).
    fn auto_jit_candidate(&self, args: &[Value], kwargs: &[(Rc<str>, Value)]) -> bool {
        let holds_arrays = |v: &Value| {
            matches!(
                v,
                Value::Array(_) | Value::List(_) | Value::Tuple(_) | Value::Dict(_)
            )
        };
        self.auto.enabled
            && self.auto.tracing.is_none()
            && (args.iter().any(holds_arrays) || kwargs.iter().any(|(_, v)| holds_arrays(v)))
            && crate::transform::idle()
    }

    /// Run a function's body on bound arguments.
    fn run_function(&mut self, func: &Function, bound: Vec<Value>) -> Result<Value> {
        let code = &func.code;
        if self.depth >= MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded",
            ));
        }
        let mut locals = vec![None; code.local_names.len()];
        let mut cells: Vec<Cell> = (0..code.own_cells)
            .map(|_| Rc::new(RefCell::new(None)))
            .collect();
        if self.auto.tracing.is_some() {
            self.auto.fresh_cells(&cells);
        }
        cells.extend(func.free_cells.iter().cloned());
        for (i, v) in bound.into_iter().enumerate() {
            locals[i] = Some(v);
        }
        for &(p, c) in &code.param_cells {
            *cells[c].borrow_mut() = locals[p].take();
        }
        let mut frame = Frame {
            locals,
            cells,
            file: code.file.clone(),
            func: code.name.clone(),
        };
        self.depth += 1;
        // Deep arr recursion must not overflow the Rust stack of whatever
        // thread runs the session: grow it on the heap when it runs low.
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.exec_block(&code.body, &mut frame)
        });
        self.depth -= 1;
        match r? {
            Flow::Return(v) => Ok(v),
            _ => Ok(Value::None),
        }
    }

    /// Attribute access: array properties, module members, methods.
    pub fn get_attr(&self, o: &Value, attr: &str) -> Result<Value> {
        let receiver = match o {
            Value::Array(a) => match attr {
                "shape" => {
                    return Ok(Value::tuple(
                        a.shape().iter().map(|&d| Value::Int(d as i64)).collect(),
                    ))
                }
                "ndim" => return Ok(Value::Int(a.ndim() as i64)),
                "size" => return Ok(Value::Int(a.len() as i64)),
                "dtype" => return Ok(Value::DType(a.dtype())),
                "T" => {
                    let perm: Vec<usize> = (0..a.ndim()).rev().collect();
                    return Ok(Value::Array(numpy::transpose(a.clone(), &perm)?));
                }
                "itemsize" => return Ok(Value::Int(a.dtype().size_bytes() as i64)),
                "nbytes" => return Ok(Value::Int((a.len() * a.dtype().size_bytes()) as i64)),
                "sharding" => {
                    return Ok(match a {
                        crate::Tensor::Concrete(x) => crate::sharding::sharding_of(x),
                        crate::Tensor::Traced(_) => Value::None,
                    })
                }
                _ => "array",
            },
            Value::Object(obj) => match obj.attr(attr) {
                Some(v) => return Ok(v),
                None => obj.type_name(),
            },
            Value::Native(n) => {
                let attrs = n.attrs.borrow();
                return attrs
                    .iter()
                    .find(|(k, _)| k == attr)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::NameError,
                            format!("function '{}' has no attribute '{attr}'", n.name),
                        )
                    });
            }
            Value::Module(m) => {
                return m.attrs.get(attr).cloned().ok_or_else(|| {
                    Error::new(
                        ErrorKind::NameError,
                        format!("module '{}' has no attribute '{attr}'", m.name),
                    )
                })
            }
            Value::DType(d) => {
                return match attr {
                    "name" => Ok(Value::str(d.name())),
                    "itemsize" => Ok(Value::Int(d.size_bytes() as i64)),
                    _ => Err(Error::type_error(format!(
                        "dtype has no attribute '{attr}'"
                    ))),
                }
            }
            Value::Function(func) => {
                return match attr {
                    "__name__" => Ok(Value::str(&func.code.name)),
                    "__doc__" => Ok(func.code.doc.as_deref().map_or(Value::None, Value::str)),
                    _ => Err(Error::type_error(format!(
                        "function has no attribute '{attr}'"
                    ))),
                }
            }
            Value::Builtin(b) => {
                return match attr {
                    "__name__" => Ok(Value::str(&b.name)),
                    "__doc__" => Ok(Value::str(&b.doc)),
                    _ => Err(Error::type_error(format!(
                        "function has no attribute '{attr}'"
                    ))),
                }
            }
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Str(_) => "str",
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => "number",
            _ => "",
        };
        match self.methods.get(&(receiver, Rc::from(attr))) {
            Some(m) => Ok(Value::BoundMethod(Rc::new((o.clone(), m.clone())))),
            None => Err(Error::type_error(format!(
                "'{}' object has no attribute '{attr}'",
                o.type_name()
            ))),
        }
    }

    /// `for x in progress(xs)`: the loop reports each finished item. It is
    /// never compiled automatically (reporting is an effect), so each body
    /// runs in the interpreter, as it does for any non-range loop.
    #[inline(never)]
    fn for_progress(
        &mut self,
        p: &crate::progress::ProgressValue,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        // A progress value made outside and passed into code being traced
        // for automatic JIT: reporting is an effect, so the code stays interpreted.
        if self.auto.tracing.is_some() {
            return Err(auto::not_pure("loops over progress(...), which reports"));
        }
        let mut items = self.iterate(&p.inner)?;
        let total = p.total.or_else(|| items.remaining().map(|n| n as u64));
        let mut reporter = crate::progress::Reporter::start(self, total, p.desc.clone());
        let flow = self.progress_loop(&mut items, &mut reporter, s, target, body, f);
        // Finished on every way out: the end, `break`, `return`, an error.
        reporter.finish(self);
        flow
    }

    fn progress_loop(
        &mut self,
        items: &mut Iter,
        reporter: &mut crate::progress::Reporter,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        for item in items {
            self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
            self.assign(target, item, f)?;
            match self.exec_block(body, f)? {
                Flow::Break => break,
                Flow::Return(v) => return Ok(Flow::Return(v)),
                Flow::Normal | Flow::Continue => {}
            }
            reporter.step(self);
        }
        Ok(Flow::Normal)
    }

    /// The items of an iterable value.
    fn iterate(&self, v: &Value) -> Result<Iter> {
        Ok(match v {
            Value::Range(r) => Iter::Range {
                next: r.start,
                stop: r.stop,
                step: r.step,
            },
            other => Iter::Items {
                items: iter_items(other)?,
                pos: 0,
            },
        })
    }

    /// Names visible at top level: globals, then builtins (for completion).
    pub fn visible_names(&self) -> Vec<Rc<str>> {
        let mut out = Vec::new();
        for (id, v) in self
            .globals
            .iter()
            .enumerate()
            .chain(self.builtins.iter().enumerate())
        {
            if v.is_some() {
                out.push(self.interner.name(id as u32).clone());
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Method names for a receiver type, for completion after `.`.
    pub fn method_names(&self, receiver: &str) -> Vec<Rc<str>> {
        let mut out: Vec<Rc<str>> = self
            .methods
            .keys()
            .filter(|(r, _)| *r == receiver)
            .map(|(_, n)| n.clone())
            .collect();
        out.sort();
        out
    }

    pub fn make_module(name: &str, doc: &str, members: Vec<(String, Value)>) -> Value {
        Value::Module(Rc::new(Module {
            name: name.to_string(),
            doc: doc.to_string(),
            attrs: members.into_iter().collect(),
        }))
    }
}

impl Default for Interp {
    fn default() -> Self {
        Interp::new()
    }
}

/// The items of an iterable (everything but ranges, which iterate lazily).
pub fn iter_items(v: &Value) -> Result<Vec<Value>> {
    Ok(match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Dict(d) => d.borrow().keys().map(|k| k.to_value()).collect(),
        Value::Str(s) => s
            .chars()
            .map(|c| Value::str(c.encode_utf8(&mut [0; 4])))
            .collect(),
        Value::Range(..) => {
            crate::value::check_items("list", &[range_len(v)])?;
            let mut out = Vec::with_capacity(range_len(v));
            if let Value::Range(r) = v {
                for k in 0..r.len() as i64 {
                    out.push(Value::Int(r.start + k * r.step));
                }
            }
            out
        }
        Value::Object(o) if o.as_any().is::<crate::progress::ProgressValue>() => {
            return iter_items(&crate::progress::of(v).expect("checked").inner);
        }
        Value::Array(a) => {
            if a.ndim() == 0 {
                return Err(Error::type_error("iteration over a 0-d array"));
            }
            (0..a.shape()[0])
                .map(|i| index::get_index(a, &Value::Int(i as i64)).map(Value::Array))
                .collect::<Result<_>>()?
        }
        other => {
            return Err(Error::type_error(format!(
                "'{}' object is not iterable",
                other.type_name()
            )))
        }
    })
}

/// A Python sequence index (negative from the end), bounds-checked.
pub fn seq_index(idx: &Value, len: usize) -> Result<usize> {
    let i = idx.to_int()?.ok_or_else(|| {
        Error::type_error(format!(
            "indices must be integers or slices, not {}",
            idx.type_name()
        ))
    })?;
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(Error::index_error(format!(
            "index {i} out of range for length {len}"
        )));
    }
    Ok(j as usize)
}

fn slice_items<T: Clone>(items: &[T], s: &SliceValue) -> Result<Vec<T>> {
    let n = items.len() as i64;
    let step = s.step.unwrap_or(1);
    if step == 0 {
        return Err(Error::value_error("slice step cannot be zero"));
    }
    let norm = |v: i64, lo: i64, hi: i64| (if v < 0 { v + n } else { v }).clamp(lo, hi);
    let mut out = Vec::new();
    if step > 0 {
        let (mut i, stop) = (
            s.start.map_or(0, |v| norm(v, 0, n)),
            s.stop.map_or(n, |v| norm(v, 0, n)),
        );
        while i < stop {
            out.push(items[i as usize].clone());
            i += step;
        }
    } else {
        let (mut i, stop) = (
            s.start.map_or(n - 1, |v| norm(v, -1, n - 1)),
            s.stop.map_or(-1, |v| norm(v, -1, n - 1)),
        );
        while i > stop {
            out.push(items[i as usize].clone());
            i += step;
        }
    }
    Ok(out)
}

/// `o[i]` for every subscriptable value.
pub fn get_item(o: &Value, i: &Value) -> Result<Value> {
    match (o, i) {
        (Value::Array(a), _) => Ok(Value::Array(index::get_index(a, i)?)),
        (Value::List(l), Value::Slice(s)) => Ok(Value::list(slice_items(&l.borrow(), s)?)),
        (Value::Tuple(t), Value::Slice(s)) => Ok(Value::tuple(slice_items(t, s)?)),
        (Value::Str(st), Value::Slice(s)) => {
            let chars: Vec<char> = st.chars().collect();
            Ok(Value::str(
                &slice_items(&chars, s)?.into_iter().collect::<String>(),
            ))
        }
        (Value::List(l), _) => {
            let l = l.borrow();
            Ok(l[seq_index(i, l.len())?].clone())
        }
        (Value::Tuple(t), _) => Ok(t[seq_index(i, t.len())?].clone()),
        (Value::Str(s), _) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(Value::str(&chars[seq_index(i, chars.len())?].to_string()))
        }
        (Value::Range(r), _) => Ok(Value::Int(
            r.start + r.step * seq_index(i, range_len(o))? as i64,
        )),
        (Value::Dict(d), _) => {
            let k = i.to_key()?;
            d.borrow()
                .get(&k)
                .cloned()
                .ok_or_else(|| Error::new(ErrorKind::KeyError, display::repr(i)))
        }
        _ => Err(Error::type_error(format!(
            "'{}' object is not subscriptable",
            o.type_name()
        ))),
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}

fn kernel_op(op: BinOp) -> Option<BinaryOp> {
    Some(match op {
        BinOp::Add => BinaryOp::Add,
        BinOp::Sub => BinaryOp::Sub,
        BinOp::Mul => BinaryOp::Mul,
        BinOp::Div => BinaryOp::Div,
        BinOp::FloorDiv => BinaryOp::FloorDiv,
        BinOp::Mod => BinaryOp::Mod,
        BinOp::Pow => BinaryOp::Pow,
        BinOp::BitAnd => BinaryOp::And,
        BinOp::BitOr => BinaryOp::Or,
        BinOp::BitXor => BinaryOp::Xor,
        BinOp::LShift => BinaryOp::ShiftLeft,
        BinOp::RShift => BinaryOp::ShiftRight,
        BinOp::MatMul => return None,
    })
}

fn unsupported(op: &str, a: &Value, b: &Value) -> Error {
    Error::type_error(format!(
        "unsupported operand types for {op}: {} and {}",
        a.type_name(),
        b.type_name()
    ))
}

/// `a op b` for every pair of values.
pub fn binary_op(op: BinOp, a: Value, b: Value) -> Result<Value> {
    // Python numbers stay Python numbers.
    match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => return int_op(op, *x, *y),
        (Value::Float(x), Value::Float(y)) => return float_op(op, *x, *y),
        (Value::Int(x), Value::Float(y)) => return float_op(op, *x as f64, *y),
        (Value::Float(x), Value::Int(y)) => return float_op(op, *x, *y as f64),
        _ => {}
    }
    if is_number(&a) && is_number(&b) {
        // Bools: logical ops stay bool, arithmetic treats them as ints.
        if let (Value::Bool(x), Value::Bool(y)) = (&a, &b) {
            match op {
                BinOp::BitAnd => return Ok(Value::Bool(*x & *y)),
                BinOp::BitOr => return Ok(Value::Bool(*x | *y)),
                BinOp::BitXor => return Ok(Value::Bool(*x ^ *y)),
                _ => {}
            }
        }
        let num = |v: &Value| match v {
            Value::Bool(b) => Value::Int(*b as i64),
            other => other.clone(),
        };
        return binary_op(op, num(&a), num(&b));
    }
    let is_arrayish = |v: &Value| matches!(v, Value::Array(_));
    if is_arrayish(&a) || is_arrayish(&b) {
        if op == BinOp::MatMul {
            return numpy::matmul(&a, &b);
        }
        let k = kernel_op(op).expect("matmul handled");
        return numpy::binary_owned(k, a, b);
    }
    match (op, &a, &b) {
        (BinOp::Add, Value::Str(x), Value::Str(y)) => Ok(Value::str(&format!("{x}{y}"))),
        (BinOp::Mul, Value::Str(s), Value::Int(n)) | (BinOp::Mul, Value::Int(n), Value::Str(s)) => {
            let n = (*n).max(0) as usize;
            crate::value::check_str(&[s.len(), n])?;
            Ok(Value::str(&s.repeat(n)))
        }
        (BinOp::Add, Value::List(x), Value::List(y)) => Ok(Value::list(
            x.borrow()
                .iter()
                .chain(y.borrow().iter())
                .cloned()
                .collect(),
        )),
        (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
            Ok(Value::tuple(x.iter().chain(y.iter()).cloned().collect()))
        }
        (BinOp::Mul, Value::List(l), Value::Int(n))
        | (BinOp::Mul, Value::Int(n), Value::List(l)) => {
            let items = l.borrow();
            crate::value::check_items("list", &[items.len(), (*n).max(0) as usize])?;
            // (An empty list repeated is empty at once, however large n is.)
            let n = if items.is_empty() { 0 } else { (*n).max(0) };
            Ok(Value::list(
                (0..n).flat_map(|_| items.iter().cloned()).collect(),
            ))
        }
        (BinOp::Mul, Value::Tuple(t), Value::Int(n))
        | (BinOp::Mul, Value::Int(n), Value::Tuple(t)) => {
            crate::value::check_items("tuple", &[t.len(), (*n).max(0) as usize])?;
            let n = if t.is_empty() { 0 } else { (*n).max(0) };
            Ok(Value::tuple(
                (0..n).flat_map(|_| t.iter().cloned()).collect(),
            ))
        }
        (BinOp::BitOr, Value::Dict(x), Value::Dict(y)) => {
            let mut d = x.borrow().clone();
            d.extend(y.borrow().iter().map(|(k, v)| (k.clone(), v.clone())));
            Ok(Value::dict(d))
        }
        _ => Err(unsupported(op.symbol(), &a, &b)),
    }
}

/// The float operations that cannot fail; the rest go through `float_op`.
#[inline(always)]
fn float_fast(op: BinOp, x: f64, y: f64) -> Option<Value> {
    Some(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        _ => return None,
    }))
}

/// Integer operations that did not overflow; the rest go through `int_op`.
#[inline(always)]
fn int_fast(op: BinOp, x: i64, y: i64) -> Option<Value> {
    Some(Value::Int(match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        _ => return None,
    }))
}

fn zero_division(what: &str) -> Error {
    Error::new(ErrorKind::ZeroDivisionError, format!("{what} by zero"))
}

fn int_op(op: BinOp, x: i64, y: i64) -> Result<Value> {
    let overflow = || {
        Error::new(
            ErrorKind::OverflowError,
            format!("integer overflow in {x} {} {y}", op.symbol()),
        )
    };
    Ok(Value::Int(match op {
        BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
        BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
        BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
        BinOp::Div => {
            if y == 0 {
                return Err(zero_division("division"));
            }
            return Ok(Value::Float(x as f64 / y as f64));
        }
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(zero_division("integer division"));
            }
            x.checked_div_euclid(y).ok_or_else(overflow)?;
            let q = x / y;
            if (x % y != 0) && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(zero_division("integer modulo"));
            }
            let r = x.checked_rem(y).ok_or_else(overflow)?;
            if r != 0 && ((r < 0) != (y < 0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => {
            if y < 0 {
                return Ok(Value::Float((x as f64).powf(y as f64)));
            }
            x.checked_pow(u32::try_from(y).map_err(|_| overflow())?)
                .ok_or_else(overflow)?
        }
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::LShift => {
            if !(0..64).contains(&y) {
                return Err(Error::value_error("shift count out of range"));
            }
            x.checked_shl(y as u32)
                .filter(|r| r >> y == x)
                .ok_or_else(overflow)?
        }
        BinOp::RShift => {
            if y < 0 {
                return Err(Error::value_error("negative shift count"));
            }
            x >> y.min(63)
        }
        BinOp::MatMul => return Err(unsupported("@", &Value::Int(x), &Value::Int(y))),
    }))
}

fn float_op(op: BinOp, x: f64, y: f64) -> Result<Value> {
    Ok(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(zero_division("float division"));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(zero_division("float floor division"));
            }
            (x / y).floor()
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(zero_division("float modulo"));
            }
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => x.powf(y),
        _ => return Err(unsupported(op.symbol(), &Value::Float(x), &Value::Float(y))),
    }))
}

pub fn unary_op(op: AstUnary, v: Value) -> Result<Value> {
    match (op, &v) {
        (AstUnary::Not, _) => Ok(Value::Bool(!v.truthy()?)),
        (AstUnary::Neg, Value::Int(i)) => {
            Ok(Value::Int(i.checked_neg().ok_or_else(|| {
                Error::new(ErrorKind::OverflowError, "integer overflow")
            })?))
        }
        (AstUnary::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
        (AstUnary::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
        (AstUnary::Pos, Value::Int(_) | Value::Float(_)) => Ok(v),
        (AstUnary::Pos, Value::Bool(b)) => Ok(Value::Int(*b as i64)),
        (AstUnary::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
        (AstUnary::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
        (AstUnary::Neg, Value::Array(_)) => numpy::unary(UnaryOp::Neg, &v),
        (AstUnary::Pos, Value::Array(_)) => Ok(v),
        (AstUnary::Invert, Value::Array(_)) => numpy::unary(UnaryOp::Not, &v),
        _ => Err(Error::type_error(format!(
            "bad operand type for unary {}: {}",
            op.symbol(),
            v.type_name()
        ))),
    }
}

/// Structural equality of Python values (arrays compare by identity here;
/// `==` on arrays is elementwise and handled before this).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) if Rc::ptr_eq(x, y) => true,
        (Value::Dict(x), Value::Dict(y)) if Rc::ptr_eq(x, y) => true,
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| values_equal(p, q))
        }
        (Value::Tuple(x), Value::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| values_equal(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (Value::DType(x), Value::DType(y)) => x == y,
        (Value::Range(x), Value::Range(y)) => x == y,
        (Value::Function(x), Value::Function(y)) => Rc::ptr_eq(x, y),
        (Value::Builtin(x), Value::Builtin(y)) => Rc::ptr_eq(x, y),
        (Value::Native(x), Value::Native(y)) => Rc::ptr_eq(x, y),
        (Value::Array(x), Value::Array(y)) => x.same(y),
        _ if is_number(a) && is_number(b) => a.as_f64() == b.as_f64(),
        (Value::DType(d), Value::Str(s)) | (Value::Str(s), Value::DType(d)) => {
            DType::from_name(s) == Some(*d)
        }
        _ => false,
    }
}

fn order(a: &Value, b: &Value) -> Result<std::cmp::Ordering> {
    match (a, b) {
        _ if is_number(a) && is_number(b) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if let (Value::Int(i), Value::Int(j)) = (a, b) {
                return Ok(i.cmp(j));
            }
            x.partial_cmp(&y)
                .ok_or_else(|| Error::value_error("comparison with NaN"))
        }
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_)) => {
            let (x, y) = (iter_items(a)?, iter_items(b)?);
            for (p, q) in x.iter().zip(&y) {
                if !values_equal(p, q) {
                    return order(p, q);
                }
            }
            Ok(x.len().cmp(&y.len()))
        }
        _ => Err(Error::type_error(format!(
            "'<' not supported between {} and {}",
            a.type_name(),
            b.type_name()
        ))),
    }
}

/// Python's ordering of two values, for `sorted`, `min`, `max`.
pub fn compare_values(a: &Value, b: &Value) -> Result<std::cmp::Ordering> {
    order(a, b)
}

pub fn compare_op(op: CmpOp, a: &Value, b: &Value) -> Result<Value> {
    let array_involved = matches!(a, Value::Array(_)) || matches!(b, Value::Array(_));
    if array_involved && !matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        if matches!(a, Value::None | Value::Str(_)) || matches!(b, Value::None | Value::Str(_)) {
            return Ok(Value::Bool(op == CmpOp::NotEq));
        }
        let k = match op {
            CmpOp::Eq => BinaryOp::Eq,
            CmpOp::NotEq => BinaryOp::Ne,
            CmpOp::Lt => BinaryOp::Lt,
            CmpOp::LtE => BinaryOp::Le,
            CmpOp::Gt => BinaryOp::Gt,
            CmpOp::GtE => BinaryOp::Ge,
            _ => unreachable!(),
        };
        return numpy::binary(k, a, b);
    }
    use std::cmp::Ordering::*;
    Ok(Value::Bool(match op {
        CmpOp::Eq => values_equal(a, b),
        CmpOp::NotEq => !values_equal(a, b),
        CmpOp::Lt => order(a, b)? == Less,
        CmpOp::LtE => order(a, b)? != Greater,
        CmpOp::Gt => order(a, b)? == Greater,
        CmpOp::GtE => order(a, b)? != Less,
        CmpOp::In | CmpOp::NotIn => {
            let found = match b {
                Value::Str(s) => match a {
                    Value::Str(sub) => s.contains(sub.as_str()),
                    _ => {
                        return Err(Error::type_error(
                            "'in <string>' requires a string on the left",
                        ))
                    }
                },
                Value::Dict(d) => d.borrow().contains_key(&a.to_key()?),
                _ => iter_items(b)?.iter().any(|x| values_equal(a, x)),
            };
            found == (op == CmpOp::In)
        }
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (a, b) {
                (Value::None, Value::None) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
                (Value::Dict(x), Value::Dict(y)) => Rc::ptr_eq(x, y),
                _ => values_equal(a, b) && !is_number(a),
            };
            same == (op == CmpOp::Is)
        }
    }))
}

/// Build an array value from a kernel array (for stdlib convenience).
pub fn array(a: Array) -> Value {
    Value::Array(a.into())
}
