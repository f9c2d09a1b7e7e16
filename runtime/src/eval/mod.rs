//! The tree-walking evaluator over resolved code. This module owns the
//! interpreter's state (`Interp`: globals, builtins, method tables, output
//! sinks, the interrupt flag), frames, and iteration; the work is split by
//! concern: statements (`stmt.rs`), expressions and subscripts (`expr.rs`),
//! calls (`call.rs`), attributes (`attr.rs`), operators on Python values
//! (`scalar.rs`) and the automatic-JIT hooks (`auto_jit.rs`).

pub mod attr;
mod auto_jit;
mod call;
mod expr;
pub mod generator;
mod import;
mod scalar;
mod stmt;

pub use expr::{get_item, seq_index};
pub use scalar::{binary_op, compare_op, compare_values, unary_op, values_equal};

use crate::code::*;
use crate::compile::Interner;
use crate::error::{Error, ErrorInfo, ErrorKind, Loc, Result};
use crate::index;
use crate::jit::auto::AutoJit;
use crate::value::{range_len, Module, Value};
use arr_kernels::Array;
use arr_lang::SourceFile;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where `print` and friends write. The REPL uses stdout; a notebook kernel captures.
pub type OutputSink = Box<dyn FnMut(&str)>;

/// What makes a library's namespaces at its first import (see `import.rs`).
pub type ModuleLoader = Rc<dyn Fn(&mut Interp) -> Result<()>>;

/// The evaluator's state: globals, builtins, method tables, the interrupt flag.
pub struct Interp {
    pub interner: Interner,
    pub globals: Vec<Option<Value>>,
    pub builtins: Vec<Option<Value>>,
    /// Methods by receiver type (`"array"`, `"list"`, `"dict"`, `"str"`) and name.
    pub methods: FxHashMap<(&'static str, Rc<str>), Value>,
    /// Set from another thread (Ctrl-C); checked at loop iterations and calls.
    pub interrupt: Arc<AtomicBool>,
    /// The program imported JAX, so its arrays follow JAX's rules where
    /// they differ from arr's: an integer index past the end of an axis
    /// reads the last element (JAX clamps) instead of raising IndexError,
    /// and `repr(x)` is JAX's. NumPy's arrays keep NumPy's rules.
    pub jax_rules: bool,
    /// Inside `with jax.disable_jit():` jitted functions run op by op.
    pub jit_disabled: bool,
    pub out: OutputSink,
    /// Drop printed output (`write_out`): a process other than the first of
    /// a job of several, where every process prints the same thing.
    pub quiet: bool,
    /// Rich output (stderr, displays); None means the terminal (`emit`).
    pub rich: Option<crate::output::RichSink>,
    /// Draws `progress(...)` bars on a terminal (set by the REPL); unused
    /// when `rich` is set, since a notebook gets an updating display instead.
    pub progress_bars: Option<crate::progress::ProgressFactory>,
    /// Automatic JIT of hot functions and loops (`jit/auto.rs`).
    pub auto: AutoJit,
    /// What `import` finds, by dotted name (`jax.numpy`): the stdlib's namespaces.
    pub modules: FxHashMap<Rc<str>, Value>,
    /// Libraries (`optax`) whose namespaces are made at their first import,
    /// by top-level name: start-up does not pay for them.
    pub module_loaders: FxHashMap<Rc<str>, ModuleLoader>,
    depth: usize,
    /// What the running generator bodies yielded so far, innermost last.
    yielded: Vec<Vec<Value>>,
    /// The exceptions whose handlers (or `__exit__` calls) are running,
    /// innermost last: what a bare `raise` raises again.
    handling: Vec<Error>,
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
    let ErrorInfo {
        loc: inner, trace, ..
    } = &mut *err;
    // Comprehensions run as functions, but as in Python (3.12 on) they have
    // no frame of their own: their lines belong to the function around them.
    match trace.last_mut().or(inner.as_mut()) {
        None => *inner = Some(loc),
        Some(frame) if &*frame.func == COMPREHENSION => frame.func = loc.func,
        Some(_) => trace.push(loc),
    }
    err
}

/// The name of the function a comprehension compiles to.
pub(crate) const COMPREHENSION: &str = "<comprehension>";

fn name_error(name: &str) -> Error {
    Error::new(
        ErrorKind::NameError,
        format!("name '{name}' is not defined"),
    )
}

/// Iteration over a value whose items are known: a range (not
/// materialised) or a list of items.
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

/// Iteration in progress: items known up front, or an iterator stepped
/// through the interpreter (a generator, an object with `__next__`), one
/// item at a time, so that an endless one can be iterated.
enum Cursor {
    Plain(Iter),
    Next(Value),
}

impl Interp {
    /// The exception whose handler is running, innermost (what
    /// `traceback.format_exc` reports).
    pub fn handled_error(&self) -> Option<&Error> {
        self.handling.last()
    }

    pub fn new() -> Interp {
        crate::numpy::follow_jax_dtypes(false);
        Interp {
            interner: Interner::default(),
            globals: Vec::new(),
            builtins: Vec::new(),
            methods: FxHashMap::default(),
            interrupt: Arc::new(AtomicBool::new(false)),
            jax_rules: false,
            jit_disabled: false,
            out: Box::new(|s| {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(s.as_bytes());
                let _ = stdout.flush();
            }),
            quiet: false,
            rich: None,
            progress_bars: None,
            auto: AutoJit::default(),
            modules: FxHashMap::default(),
            module_loaders: FxHashMap::default(),
            depth: 0,
            yielded: Vec::new(),
            handling: Vec::new(),
        }
    }

    pub fn write_out(&mut self, s: &str) {
        if !self.quiet {
            (self.out)(s)
        }
    }

    /// Print `s` even on a quiet process (`print(..., all_processes=True)`).
    pub fn write_out_always(&mut self, s: &str) {
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

    /// Raise KeyboardInterrupt if Ctrl-C was pressed. The flag stays set
    /// until the module code returns (`exec_module`), so every check on the
    /// way out, and on every device worker, sees the same request. The
    /// same safe points raise MemoryError when the values of the program
    /// have spent the memory budget (`arr_kernels::memory`).
    #[inline]
    pub fn check_interrupt(&self) -> Result<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            return Err(Error::interrupted());
        }
        if let Some(why) = arr_kernels::memory::exhausted() {
            return Err(Error::out_of_memory(why));
        }
        Ok(())
    }

    pub fn set_builtin(&mut self, name: &str, value: Value) {
        let id = self.interner.intern(name) as usize;
        self.store_builtin(id, value);
    }

    fn store_builtin(&mut self, id: usize, value: Value) {
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
        // Kernels, device workers and the compiler poll the flag through
        // this thread's copy.
        arr_kernels::interrupt::install(Some(self.interrupt.clone()));
        let result = self.exec_module_body(code, interactive);
        if matches!(&result, Err(e) if e.kind == ErrorKind::KeyboardInterrupt) {
            // Reported once, at the statement that was running.
            self.interrupt.store(false, Ordering::Relaxed);
        }
        result
    }

    /// Run module-level code from inside a running program (a stdlib
    /// definition compiled at its first call): the call depth and the
    /// exceptions being handled stay as they are.
    pub fn exec_nested(&mut self, code: &ModuleCode) -> Result<()> {
        let mut frame = Frame {
            locals: Vec::new(),
            cells: Vec::new(),
            file: code.file.clone(),
            func: Rc::from("<module>"),
        };
        for stmt in &code.body {
            self.exec(stmt, &mut frame)?;
        }
        Ok(())
    }

    fn exec_module_body(&mut self, code: &ModuleCode, interactive: bool) -> Result<Option<Value>> {
        let mut frame = Frame {
            locals: Vec::new(),
            cells: Vec::new(),
            file: code.file.clone(),
            func: Rc::from("<module>"),
        };
        self.depth = 0;
        self.handling.clear();
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

    /// Start iterating a value.
    fn iterate(&mut self, v: &Value) -> Result<Cursor> {
        Ok(Cursor::Plain(match v {
            Value::Range(r) => Iter::Range {
                next: r.start,
                stop: r.stop,
                step: r.step,
            },
            // Iterators are stepped: a loop that stops early leaves the rest.
            _ if generator::generator_of(v).is_some() || IterValue::of(v).is_some() => {
                return Ok(Cursor::Next(v.clone()))
            }
            _ if is_instance_like(v) => match self.instance_iterator(v)? {
                Ok(items) => Iter::Items { items, pos: 0 },
                Err(next) => return Ok(Cursor::Next(next)),
            },
            other => Iter::Items {
                items: iter_items(other)?,
                pos: 0,
            },
        }))
    }

    /// The next item of an iteration, or None at its end.
    fn next_item(&mut self, it: &mut Cursor) -> Result<Option<Value>> {
        match it {
            Cursor::Plain(items) => Ok(items.next()),
            Cursor::Next(v) => self.next_of(v),
        }
    }

    /// The next item of an iterator object (a generator, an instance with
    /// `__next__`, `iter(xs)`), or None at its end; `Err` if `v` is none.
    pub fn next_of(&mut self, v: &Value) -> Result<Option<Value>> {
        if let Some(g) = generator::generator_of(v) {
            return Ok(match self.resume(g, generator::Input::Send(Value::None))? {
                generator::Resumed::Yield(v) => Some(v),
                generator::Resumed::Return(_) => None,
            });
        }
        if let Some(it) = IterValue::of(v) {
            return Ok(it.next_item());
        }
        if let Some(next) = self.method_of(v, "__next__") {
            return match self.call(&next, Vec::new(), Vec::new()) {
                Ok(v) => Ok(Some(v)),
                Err(e) if generator::is_stop_iteration(&e) => Ok(None),
                Err(e) => Err(e),
            };
        }
        Err(Error::type_error(format!(
            "'{}' object is not an iterator",
            v.type_name()
        )))
    }

    /// All the items of an iterable value (an iterator's remaining ones).
    pub fn items(&mut self, v: &Value) -> Result<Vec<Value>> {
        let stepped = match v {
            _ if generator::generator_of(v).is_some() => v.clone(),
            _ if is_instance_like(v) => match self.instance_iterator(v)? {
                Ok(items) => return Ok(items),
                Err(iterator) => iterator,
            },
            // Sized up front (a range's length is checked against the limits).
            _ => return iter_items(v),
        };
        let mut out = Vec::new();
        while let Some(item) = self.next_of(&stepped)? {
            self.check_interrupt()?;
            crate::value::push_item(&mut out, item)?;
        }
        Ok(out)
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

/// `iter(xs)`: the items of xs taken one at a time by `next`; a `for`
/// loop (or anything iterating it) takes the rest. The items are read
/// when the iterator is made.
#[derive(Debug)]
pub struct IterValue {
    items: Vec<Value>,
    pos: std::cell::Cell<usize>,
    /// `iterator`, or `generator` for what a generator function returns.
    kind: &'static str,
}

impl IterValue {
    pub fn value(items: Vec<Value>) -> Value {
        Value::object(IterValue {
            items,
            pos: std::cell::Cell::new(0),
            kind: "iterator",
        })
    }

    /// What calling a generator function gives: the values its body
    /// yielded, taken one at a time.
    pub fn generator(items: Vec<Value>) -> Value {
        Value::object(IterValue {
            items,
            pos: std::cell::Cell::new(0),
            kind: "generator",
        })
    }

    pub fn of(v: &Value) -> Option<&IterValue> {
        match v {
            Value::Object(o) => o.as_any().downcast_ref::<IterValue>(),
            _ => None,
        }
    }

    /// The next item, or None at the end.
    pub fn next_item(&self) -> Option<Value> {
        let i = self.pos.get();
        let v = self.items.get(i).cloned();
        if v.is_some() {
            self.pos.set(i + 1);
        }
        v
    }

    fn rest(&self) -> Vec<Value> {
        let i = self.pos.replace(self.items.len());
        self.items.get(i..).unwrap_or_default().to_vec()
    }
}

impl crate::value::Object for IterValue {
    fn type_name(&self) -> &'static str {
        self.kind
    }
    fn repr(&self) -> String {
        format!("<{} object>", self.kind)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Whether `v` takes its protocols (iteration, `len`, subscripts) from
/// methods: an instance, or a class with a metaclass.
pub fn is_instance_like(v: &Value) -> bool {
    matches!(v, Value::Instance(_)) || crate::class::has_metaclass(v)
}

/// The items of an iterable (everything but ranges, which iterate lazily).
/// A generator's are made by running its body: `Interp::items`.
pub fn iter_items(v: &Value) -> Result<Vec<Value>> {
    Ok(match v {
        _ if generator::generator_of(v).is_some() => {
            return Err(Error::type_error(
                "a generator cannot be read here: pass list(...) of it",
            ))
        }
        Value::Object(o) if o.as_any().is::<IterValue>() => {
            IterValue::of(v).expect("checked").rest()
        }
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Instance(i) if i.items.is_some() => i.items.as_deref().cloned().unwrap_or_default(),
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
        Value::Object(o) if o.as_any().is::<crate::set::SetValue>() => {
            crate::set::as_set(v).expect("checked").values()
        }
        Value::Object(o) if o.as_any().is::<crate::progress::ProgressValue>() => {
            return iter_items(&crate::progress::of(v).expect("checked").inner);
        }
        Value::Array(a) => {
            let shape = crate::numpy::key_shape(a).unwrap_or(a.shape());
            if shape.is_empty() {
                return Err(Error::type_error("iteration over a 0-d array"));
            }
            // Each item is an array of its own (a header and a buffer).
            crate::value::check_len("list", "arrays", &shape[..1], 256)?;
            (0..shape[0])
                .map(|i| {
                    let item = index::get_index(a, &Value::Int(i as i64))?;
                    Ok(crate::numpy::part_of(a, item))
                })
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

/// Build an array value from a kernel array (for stdlib convenience).
pub fn array(a: Array) -> Value {
    Value::Array(a.into())
}
