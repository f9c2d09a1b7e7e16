//! Runtime errors: a kind, a message, where it happened and the call stack above it.

use arr_lang::{SourceFile, Span};
use std::fmt;
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    SyntaxError,
    /// Subclasses of SyntaxError, as in Python.
    IndentationError,
    TabError,
    NameError,
    /// A missing attribute (`x.nosuch`), or one that cannot be set.
    AttributeError,
    TypeError,
    ValueError,
    /// Shapes that do not fit together (broadcasting, matmul, reshape).
    ShapeError,
    IndexError,
    KeyError,
    ZeroDivisionError,
    OverflowError,
    /// A NaN made while `jax_debug_nans` is set.
    FloatingPointError,
    AssertionError,
    IOError,
    /// A module or name arr does not have (`import torch`).
    ImportError,
    /// Ctrl-C: the computation stopped at a safe point; nothing was lost.
    KeyboardInterrupt,
    RecursionError,
    /// An array too large for the memory available.
    MemoryError,
    /// A traced value used where its numbers are needed (`if x > 0` inside `vmap`).
    ConcretizationError,
    /// A transformation that cannot handle this function or primitive.
    TransformError,
    /// Operands whose shardings do not combine (JAX's `ShardingTypeError`).
    ShardingTypeError,
    /// `raise` of a user value, and anything else.
    RuntimeError,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::SyntaxError => "SyntaxError",
            ErrorKind::IndentationError => "IndentationError",
            ErrorKind::TabError => "TabError",
            ErrorKind::NameError => "NameError",
            ErrorKind::AttributeError => "AttributeError",
            ErrorKind::TypeError => "TypeError",
            ErrorKind::ValueError => "ValueError",
            ErrorKind::ShapeError => "ShapeError",
            ErrorKind::IndexError => "IndexError",
            ErrorKind::KeyError => "KeyError",
            ErrorKind::ZeroDivisionError => "ZeroDivisionError",
            ErrorKind::OverflowError => "OverflowError",
            ErrorKind::FloatingPointError => "FloatingPointError",
            ErrorKind::AssertionError => "AssertionError",
            ErrorKind::IOError => "IOError",
            ErrorKind::ImportError => "ImportError",
            ErrorKind::KeyboardInterrupt => "KeyboardInterrupt",
            ErrorKind::RecursionError => "RecursionError",
            ErrorKind::MemoryError => "MemoryError",
            ErrorKind::ConcretizationError => "ConcretizationError",
            ErrorKind::TransformError => "TransformError",
            ErrorKind::ShardingTypeError => "ShardingTypeError",
            ErrorKind::RuntimeError => "RuntimeError",
        }
    }
}

/// A place in the source: the file, the span, and the function it is in.
#[derive(Clone, Debug)]
pub struct Loc {
    pub file: Rc<SourceFile>,
    pub span: Span,
    pub func: Rc<str>,
}

impl Loc {
    pub fn line_col(&self) -> arr_lang::LineCol {
        self.file.line_col(self.span.start)
    }
}

/// An error. Boxed, so that `Result<Value>` stays as small as a `Value`:
/// the evaluator's hot paths move results around constantly.
#[derive(Clone, Debug)]
pub struct Error(Box<ErrorInfo>);

#[derive(Clone, Debug)]
pub struct ErrorInfo {
    pub kind: ErrorKind,
    pub message: String,
    /// The innermost place the error was raised (None until the evaluator
    /// attaches the span of the expression that failed).
    pub loc: Option<Loc>,
    /// Call sites, innermost first, added as the error leaves each function.
    pub trace: Vec<Loc>,
    /// A syntax error's rendered diagnostics (they carry their own excerpts).
    pub rendered: Option<String>,
    /// The Python class a handler sees, where the kind alone does not say
    /// (`TracerBoolConversionError` for a traced `if`); a name in
    /// `exception`'s table.
    pub class: Option<&'static str>,
    /// The exception instance a `raise` statement raised.
    pub exc: Option<crate::value::Value>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every read of an array's elements (`Array::buffer` and the accessors
/// built on it) can fail with `Deleted`; `?` makes it the language's error.
impl From<arr_kernels::array::Deleted> for Error {
    fn from(d: arr_kernels::array::Deleted) -> Error {
        Error::deleted(&d.shape, d.dtype, &d.why)
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Box::new(ErrorInfo {
            kind,
            message: message.into(),
            loc: None,
            trace: Vec::new(),
            rendered: None,
            class: None,
            exc: None,
        }))
    }

    /// The same error, caught as the Python class `name` (see `class`).
    pub fn as_class(mut self, name: &'static str) -> Error {
        self.class = Some(name);
        self
    }

    /// The name the report shows: a raised exception's class, else the
    /// class it is caught as (`as_class`), else the kind's.
    pub fn type_name(&self) -> String {
        let own = || self.class.unwrap_or(self.kind.name()).to_string();
        match self.exc.as_ref().and_then(crate::exception::as_instance) {
            Some(e) => match crate::exception::as_class(&e.class) {
                Some(c) => c.name.to_string(),
                None => own(),
            },
            None => own(),
        }
    }

    pub fn type_error(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::TypeError, message)
    }

    pub fn value_error(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::ValueError, message)
    }

    pub fn shape_error(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::ShapeError, message)
    }

    pub fn index_error(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::IndexError, message)
    }

    /// A read of an array whose buffer was donated (JAX's wording, plus
    /// where it went).
    pub fn deleted_array(a: &arr_kernels::Array) -> Error {
        Error::deleted(
            a.shape(),
            a.dtype(),
            a.deleted().unwrap_or("it was deleted"),
        )
    }

    fn deleted(shape: &[usize], dtype: arr_kernels::DType, why: &str) -> Error {
        Error::new(
            ErrorKind::RuntimeError,
            format!(
                "Array has been deleted with shape={}: {why}",
                crate::prim::type_str(shape, dtype),
            ),
        )
    }

    pub fn interrupted() -> Error {
        Error::new(ErrorKind::KeyboardInterrupt, "interrupted")
    }

    /// The memory budget spent by the program's values as a whole.
    pub fn out_of_memory(why: arr_kernels::memory::Exhausted) -> Error {
        Error::new(ErrorKind::MemoryError, format!("out of memory: {why}"))
    }

    /// Attach the innermost location if none is set yet.
    pub fn at(mut self, loc: impl FnOnce() -> Loc) -> Error {
        if self.loc.is_none() && self.rendered.is_none() {
            self.loc = Some(loc());
        }
        self
    }

    /// The message with its innermost line, as `message at line 3:9`.
    pub fn short(&self) -> String {
        match &self.loc {
            Some(loc) => format!(
                "{}: {} at line {}",
                self.type_name(),
                self.message,
                loc.line_col()
            ),
            None => format!("{}: {}", self.type_name(), self.message),
        }
    }

    /// The full report: traceback (outermost first), the message, and an excerpt.
    pub fn render(&self) -> String {
        if let Some(r) = &self.rendered {
            return r.clone();
        }
        let mut out = String::new();
        let frames: Vec<&Loc> = self.trace.iter().rev().chain(self.loc.iter()).collect();
        if frames.len() > 1 {
            out.push_str("Traceback (most recent call last):\n");
            // As Python does, a frame repeated many times (deep recursion) is shown three times.
            let mut i = 0;
            while i < frames.len() {
                let f = frames[i];
                let run = frames[i..]
                    .iter()
                    .take_while(|g| g.span == f.span && Rc::ptr_eq(&g.file, &f.file))
                    .count();
                for _ in 0..run.min(3) {
                    let lc = f.line_col();
                    out.push_str(&format!("  {}:{} in {}\n", f.file.name, lc, f.func));
                    let (text, _) = arr_lang::span::window(f.file.line_text(lc.line), lc.col - 1);
                    let text = text.trim();
                    if !text.is_empty() {
                        out.push_str(&format!("    {text}\n"));
                    }
                }
                if run > 3 {
                    out.push_str(&format!(
                        "  [previous frame repeated {} more times]\n",
                        run - 3
                    ));
                }
                i += run;
            }
        }
        match &self.loc {
            Some(loc) => {
                out.push_str(&format!(
                    "{}: {} at {}\n",
                    self.type_name(),
                    self.message,
                    loc.file.location(loc.span)
                ));
                out.push_str(&loc.file.excerpt(loc.span));
            }
            None => out.push_str(&format!("{}: {}", self.type_name(), self.message)),
        }
        out
    }
}

impl std::ops::Deref for Error {
    type Target = ErrorInfo;
    fn deref(&self) -> &ErrorInfo {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorInfo {
        &mut self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Error {}

/// Shorthand for early returns: `bail!(TypeError, "bad {x}")`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($fmt:tt)*) => {
        return Err($crate::Error::new($crate::ErrorKind::$kind, format!($($fmt)*)))
    };
}
