//! `Session`: the one evaluation API that the REPL, scripts and notebooks use.

use crate::compile::compile_module;
use crate::display;
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{Interp, OutputSink};
use crate::value::Value;
use arr_lang::SourceFile;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Interpreter state that persists across entries: variables, builtins, history of sources.
pub struct Session {
    pub interp: Interp,
    entries: usize,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A session with no builtins; `arr_stdlib::session()` gives the full one.
    pub fn new() -> Session {
        Session {
            interp: Interp::new(),
            entries: 0,
        }
    }

    /// Parse and compile `text`, reporting syntax errors with their excerpts.
    fn compile(&mut self, name: &str, text: &str) -> Result<crate::code::ModuleCode> {
        let file = Rc::new(SourceFile::new(name, text));
        let module = arr_lang::parse(&file).map_err(|diags| {
            let kind = match diags.first().map(|d| d.class) {
                Some("IndentationError") => ErrorKind::IndentationError,
                Some("TabError") => ErrorKind::TabError,
                _ => ErrorKind::SyntaxError,
            };
            let mut e = Error::new(
                kind,
                diags.first().map_or(String::new(), |d| d.message.clone()),
            );
            e.rendered = Some(
                diags
                    .iter()
                    .map(|d| d.render(&file))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            e
        })?;
        compile_module(&module, file, &mut self.interp.interner)
    }

    /// Run a whole script.
    pub fn run_script(&mut self, name: &str, text: &str) -> Result<()> {
        let code = self.compile(name, text)?;
        self.interp.exec_module(&code, false).map(|_| ())
    }

    /// Run one interactive entry; returns the value of a trailing expression
    /// (not None), which is also stored as `_`.
    pub fn run_entry(&mut self, text: &str) -> Result<Option<Value>> {
        self.entries += 1;
        let name = format!("<entry {}>", self.entries);
        self.run_entry_named(&name, text)
    }

    /// `run_entry` with the name its source is reported under (e.g. `<-e>`).
    pub fn run_entry_named(&mut self, name: &str, text: &str) -> Result<Option<Value>> {
        let code = self.compile(name, text)?;
        let v = self.interp.exec_module(&code, true)?;
        Ok(match v {
            Some(Value::None) | None => None,
            Some(v) => {
                self.interp.set_global("_", v.clone());
                Some(v)
            }
        })
    }

    /// The IR that a call `f(args)` traces to (the REPL's `:ir`): the entry is
    /// run as `make_jaxpr(f)(args)`.
    pub fn ir_of_call(&mut self, src: &str) -> Result<String> {
        self.ir_of_call_after(src, None)
    }

    /// `:ir --pass NAME f(args)`: the IR of `jit(f)` for these arguments
    /// after the named compiler pass (`traced` for none).
    pub fn ir_of_call_after(&mut self, src: &str, pass: Option<&str>) -> Result<String> {
        use arr_lang::ast::{ExprKind, StmtKind};
        let file = SourceFile::new("<:ir>", src);
        let not_call = || Error::value_error(":ir needs a call such as f(x, y)");
        let module = arr_lang::parse(&file).map_err(|_| not_call())?;
        let [stmt] = module.body.as_slice() else {
            return Err(not_call());
        };
        let StmtKind::Expr(e) = &stmt.kind else {
            return Err(not_call());
        };
        let ExprKind::Call { func, .. } = &e.kind else {
            return Err(not_call());
        };
        let (f, rest) = (
            &src[func.span.start as usize..func.span.end as usize],
            &src[func.span.end as usize..e.span.end as usize],
        );
        let text = match pass {
            // make_jaxpr gives a ClosedJaxpr: its text is its str.
            None => format!("str(make_jaxpr({f}){rest})"),
            Some("--kernels") => format!("jit({f}).kernels{rest}"),
            Some(p) => {
                let inner = rest.trim_end();
                let inner = inner.strip_suffix(')').unwrap_or(inner);
                let sep = if inner.trim_end().ends_with('(') {
                    ""
                } else {
                    ", "
                };
                format!("jit({f}).ir{inner}{sep}after={p:?})")
            }
        };
        match self.run_entry_named("<:ir>", &text)? {
            Some(Value::Str(s)) => Ok(s.to_string()),
            _ => Err(not_call()),
        }
    }

    /// The fused kernels (kernel IR text) that `jit(f)` runs for a call
    /// `f(args)` (the REPL's `:kernels`).
    pub fn kernels_of_call(&mut self, src: &str) -> Result<String> {
        self.ir_of_call_after(src, Some("--kernels"))
    }

    /// Why a jitted function compiled each time (the REPL's `:why f`).
    /// Turn automatic JIT on or off (`--no-auto-jit`, `set_auto_jit`).
    pub fn set_auto_jit(&mut self, on: bool) {
        self.interp.auto.enabled = on;
    }

    /// What automatic JIT compiled, what it left interpreted, and why (`:jit`).
    pub fn auto_jit_report(&self) -> String {
        self.interp.auto.report()
    }

    pub fn why(&mut self, name: &str) -> Result<String> {
        let name = name.trim();
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if !is_name {
            return Err(Error::value_error(
                ":why needs the name of a jitted function",
            ));
        }
        match self.run_entry_named("<:why>", &format!("{name}.why()")) {
            Ok(Some(Value::Str(s))) => Ok(s.to_string()),
            Ok(_) => Err(Error::value_error(format!(
                "{name} is not a jitted function"
            ))),
            Err(e) if e.message.contains("has no attribute 'why'") => Err(Error::value_error(
                format!("{name} is not a jitted function (wrap it with jit)"),
            )),
            Err(e) => Err(e),
        }
    }

    /// The flag that Ctrl-C sets; the evaluator stops at its next safe point.
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt.clone()
    }

    pub fn set_output(&mut self, sink: OutputSink) {
        self.interp.out = sink;
    }

    /// Route stderr and rich output (`display`, `clear_output`) to a front end.
    pub fn set_rich_output(&mut self, sink: crate::output::RichSink) {
        self.interp.rich = Some(sink);
    }

    pub fn get(&self, name: &str) -> Option<Value> {
        self.interp.get_global(name)
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.interp.set_global(name, value)
    }

    /// What the REPL echoes for a value.
    pub fn repr(&self, v: &Value) -> String {
        display::repr(v)
    }

    /// What the prompt shows for a value: its repr, and for a sharded array
    /// the grid of which device holds which block (in colour on a terminal;
    /// a deleted one has no blocks left to draw).
    pub fn echo(&mut self, v: &Value, color: bool) -> String {
        // An instance's `__repr__` runs here; if it fails, the default form.
        let text = self.interp.repr_of(v).unwrap_or_else(|_| display::repr(v));
        match v {
            Value::Array(crate::Tensor::Concrete(a)) => {
                match crate::display::sharding::drawn(a.placement()) {
                    Some(p) if a.deleted().is_none() => format!(
                        "{text}\n{}",
                        crate::display::sharding::visualize(p, a.shape(), a.dtype(), color)
                            .trim_end()
                    ),
                    _ => text,
                }
            }
            _ => text,
        }
    }

    /// Completion candidates for the identifier (or `obj.attr`) that ends `before_cursor`.
    /// Returns the byte offset where the completed word starts, and the candidates.
    pub fn complete(&self, before_cursor: &str) -> (usize, Vec<String>) {
        let word_start = before_cursor
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map_or(before_cursor.len(), |(i, _)| i);
        let word = &before_cursor[word_start..];
        let head = &before_cursor[..word_start];
        let mut candidates: Vec<String> = if let Some(base) = head.strip_suffix('.') {
            self.attribute_names(base)
        } else {
            let mut names: Vec<String> = self
                .interp
                .visible_names()
                .iter()
                .map(|n| n.to_string())
                .collect();
            names.extend(arr_lang::KEYWORDS.iter().map(|k| k.to_string()));
            names
        };
        candidates.retain(|c| {
            c.starts_with(word) && !c.starts_with('_')
                || (word.starts_with('_') && c.starts_with(word))
        });
        candidates.sort();
        candidates.dedup();
        (word_start, candidates)
    }

    /// Attributes of the value named by a dotted chain such as `random` or `x`.
    fn attribute_names(&self, base: &str) -> Vec<String> {
        let chain_start = base
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '.')
            .last()
            .map_or(base.len(), |(i, _)| i);
        let mut parts = base[chain_start..].split('.');
        let Some(mut value) = parts.next().and_then(|first| self.interp.get_global(first)) else {
            return Vec::new();
        };
        for p in parts {
            // Only side-effect-free lookups: module members and array properties.
            match (&value, self.interp.get_attr(&value, p)) {
                (Value::Module(_) | Value::Array(_), Ok(v)) => value = v,
                _ => return Vec::new(),
            }
        }
        self.interp
            .attributes(&value)
            .into_iter()
            .map(|a| a.name)
            .collect()
    }

    /// `help(name)` text for an expression such as `sum` or `random.normal`.
    pub fn help_text(&mut self, expr: &str) -> Result<String> {
        let code = self.compile("<help>", expr.trim())?;
        let v = self.interp.exec_module(&code, true)?.unwrap_or(Value::None);
        Ok(help_for(&v))
    }
}

/// The help text of a value: signature and docstring for functions, members for modules.
pub fn help_for(v: &Value) -> String {
    match v {
        Value::Builtin(b) => b.help(),
        Value::Function(f) => match &f.code.doc {
            Some(d) => format!("{}\n\n{}", f.code.signature, d.trim()),
            None => format!("{}\n\n(no docstring)", f.code.signature),
        },
        Value::BoundMethod(m) => help_for(&m.1),
        // A stdlib function not compiled yet (stdlib `lazy`): its signature
        // and docstring were read from its source.
        Value::Native(n) => {
            let attrs = n.attrs.borrow();
            let attr = |k: &str| {
                attrs
                    .iter()
                    .find(|(a, _)| a == k)
                    .and_then(|(_, v)| match v {
                        Value::Str(s) => Some(s.to_string()),
                        _ => None,
                    })
            };
            match (attr("__signature__"), attr("__doc__")) {
                (Some(sig), Some(doc)) => format!("{sig}\n\n{}", doc.trim()),
                (Some(sig), None) => format!("{sig}\n\n(no docstring)"),
                _ => format!("{}: {}", v.type_name(), display::repr(v)),
            }
        }
        Value::Module(m) => {
            let names: Vec<&str> = m.attrs.keys().map(|s| s.as_str()).collect();
            format!(
                "module {}\n\n{}\n\nmembers: {}",
                m.name,
                m.doc,
                names.join(", ")
            )
        }
        other => format!("{}: {}", other.type_name(), display::repr(other)),
    }
}
