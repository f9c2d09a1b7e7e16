//! Exceptions as values: classes (`ValueError`, `jax.errors.ConcretizationTypeError`...)
//! with a name, a base class and the `ErrorKind` they raise as, and their
//! instances (`ValueError("bad", 3)`), which `raise` turns into an `Error`
//! and `except` gets back from one.
//!
//! A class is a plain object with a parent link, so that a user class
//! deriving from `Exception` can join the hierarchy: `is_subclass` follows
//! `base` and nothing else. An error raised by the runtime carries a kind
//! (and sometimes a Python class name, `Error::class`) rather than an
//! instance; `instance_of_error` makes the instance when a handler catches it.

use crate::error::{Error, ErrorKind, Result};
use crate::eval::attr::{properties, property, Attribute, Property};
use crate::value::{Object, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// An exception class.
#[derive(Debug)]
pub struct ExcClass {
    pub name: Rc<str>,
    /// The module its qualified name shows (`builtins`, `jax.errors`).
    pub module: &'static str,
    /// The parent class (a `Value::Object` holding an `ExcClass`); None for `BaseException`.
    pub base: Option<Value>,
    /// The kind of the error a `raise` of this class makes.
    pub kind: ErrorKind,
}

/// An exception instance.
#[derive(Debug)]
pub struct ExcValue {
    /// The class, as the value `type(e)` returns (identity matters for `is`).
    pub class: Value,
    pub args: Vec<Value>,
    /// What `str(e)` shows when it is not made from `args`: the message
    /// of an error the runtime raised.
    pub message: Option<String>,
    /// `raise ... from cause`.
    pub cause: RefCell<Value>,
}

/// The standard classes: name, base (earlier in the table), kind, module.
const STANDARD: &[(&str, &str, ErrorKind, &str)] = &[
    ("BaseException", "", ErrorKind::RuntimeError, "builtins"),
    (
        "KeyboardInterrupt",
        "BaseException",
        ErrorKind::KeyboardInterrupt,
        "builtins",
    ),
    (
        "SystemExit",
        "BaseException",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "GeneratorExit",
        "BaseException",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "Exception",
        "BaseException",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "ArithmeticError",
        "Exception",
        ErrorKind::ZeroDivisionError,
        "builtins",
    ),
    (
        "ZeroDivisionError",
        "ArithmeticError",
        ErrorKind::ZeroDivisionError,
        "builtins",
    ),
    (
        "OverflowError",
        "ArithmeticError",
        ErrorKind::OverflowError,
        "builtins",
    ),
    (
        "FloatingPointError",
        "ArithmeticError",
        ErrorKind::FloatingPointError,
        "builtins",
    ),
    (
        "LookupError",
        "Exception",
        ErrorKind::IndexError,
        "builtins",
    ),
    (
        "IndexError",
        "LookupError",
        ErrorKind::IndexError,
        "builtins",
    ),
    ("KeyError", "LookupError", ErrorKind::KeyError, "builtins"),
    ("ValueError", "Exception", ErrorKind::ValueError, "builtins"),
    ("TypeError", "Exception", ErrorKind::TypeError, "builtins"),
    ("NameError", "Exception", ErrorKind::NameError, "builtins"),
    (
        "UnboundLocalError",
        "NameError",
        ErrorKind::NameError,
        "builtins",
    ),
    (
        "AttributeError",
        "Exception",
        ErrorKind::AttributeError,
        "builtins",
    ),
    (
        "AssertionError",
        "Exception",
        ErrorKind::AssertionError,
        "builtins",
    ),
    (
        "RuntimeError",
        "Exception",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "NotImplementedError",
        "RuntimeError",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "RecursionError",
        "RuntimeError",
        ErrorKind::RecursionError,
        "builtins",
    ),
    (
        "StopIteration",
        "Exception",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "MemoryError",
        "Exception",
        ErrorKind::MemoryError,
        "builtins",
    ),
    ("OSError", "Exception", ErrorKind::IOError, "builtins"),
    (
        "FileNotFoundError",
        "OSError",
        ErrorKind::IOError,
        "builtins",
    ),
    ("FileExistsError", "OSError", ErrorKind::IOError, "builtins"),
    ("UnsupportedOperation", "OSError", ErrorKind::IOError, "io"),
    ("PermissionError", "OSError", ErrorKind::IOError, "builtins"),
    (
        "IsADirectoryError",
        "OSError",
        ErrorKind::IOError,
        "builtins",
    ),
    (
        "ImportError",
        "Exception",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "ModuleNotFoundError",
        "ImportError",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "SyntaxError",
        "Exception",
        ErrorKind::SyntaxError,
        "builtins",
    ),
    (
        "IndentationError",
        "SyntaxError",
        ErrorKind::IndentationError,
        "builtins",
    ),
    (
        "TabError",
        "IndentationError",
        ErrorKind::TabError,
        "builtins",
    ),
    // The warning categories (`warnings.warn(msg, DeprecationWarning)`).
    ("Warning", "Exception", ErrorKind::RuntimeError, "builtins"),
    (
        "UserWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "DeprecationWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "PendingDeprecationWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "FutureWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "RuntimeWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "SyntaxWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "ImportWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "UnicodeWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "BytesWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    (
        "ResourceWarning",
        "Warning",
        ErrorKind::RuntimeError,
        "builtins",
    ),
    // JAX's classes, with their bases as in `jax.errors`.
    (
        "JAXTypeError",
        "TypeError",
        ErrorKind::TypeError,
        "jax.errors",
    ),
    (
        "JAXIndexError",
        "IndexError",
        ErrorKind::IndexError,
        "jax.errors",
    ),
    (
        "ConcretizationTypeError",
        "JAXTypeError",
        ErrorKind::ConcretizationError,
        "jax.errors",
    ),
    (
        "TracerBoolConversionError",
        "ConcretizationTypeError",
        ErrorKind::ConcretizationError,
        "jax.errors",
    ),
    (
        "TracerIntegerConversionError",
        "JAXTypeError",
        ErrorKind::ConcretizationError,
        "jax.errors",
    ),
    (
        "TracerArrayConversionError",
        "JAXTypeError",
        ErrorKind::ConcretizationError,
        "jax.errors",
    ),
    (
        "UnexpectedTracerError",
        "JAXTypeError",
        ErrorKind::TransformError,
        "jax.errors",
    ),
    (
        "KeyReuseError",
        "JAXTypeError",
        ErrorKind::TypeError,
        "jax.errors",
    ),
    (
        "NonConcreteBooleanIndexError",
        "JAXIndexError",
        ErrorKind::ConcretizationError,
        "jax.errors",
    ),
    (
        "JaxRuntimeError",
        "RuntimeError",
        ErrorKind::RuntimeError,
        "jax.errors",
    ),
    // A sharding that an operation cannot keep (JAX raises it from its core).
    (
        "ShardingTypeError",
        "Exception",
        ErrorKind::TypeError,
        "jax._src.core",
    ),
];

/// Other names for a standard class (`IOError is OSError` in Python).
const ALIASES: &[(&str, &str)] = &[("IOError", "OSError"), ("EnvironmentError", "OSError")];

thread_local! {
    static CLASSES: Vec<(&'static str, Value)> = {
        let mut made: Vec<(&'static str, Value)> = Vec::new();
        for &(name, base, kind, module) in STANDARD {
            let base = made.iter().find(|(n, _)| *n == base).map(|(_, v)| v.clone());
            let class = ExcClass { name: Rc::from(name), module, base, kind };
            made.push((name, Value::object(class)));
        }
        for &(alias, of) in ALIASES {
            let v = made.iter().find(|(n, _)| *n == of).map(|(_, v)| v.clone());
            if let Some(v) = v {
                made.push((alias, v));
            }
        }
        made
    };
}

/// Every standard class under each of its names, for registering as builtins.
pub fn standard_classes() -> Vec<(&'static str, Value)> {
    CLASSES.with(|c| c.clone())
}

/// The standard class `name` (one of the table's names).
pub fn class(name: &str) -> Value {
    CLASSES.with(|c| {
        c.iter()
            .find(|(n, _)| *n == name)
            .or_else(|| c.iter().find(|(n, _)| *n == "Exception"))
            .map(|(_, v)| v.clone())
            .expect("the table has Exception")
    })
}

/// `class name(base): ...` of an exception class: a new class that
/// derives from it (caught by `except base`), raised with its kind.
pub fn subclass(name: &str, module: &'static str, base: &Value) -> Option<Value> {
    let kind = as_class(base)?.kind;
    Some(Value::object(ExcClass {
        name: Rc::from(name),
        module,
        base: Some(base.clone()),
        kind,
    }))
}

pub fn as_class(v: &Value) -> Option<&ExcClass> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<ExcClass>(),
        _ => None,
    }
}

pub fn as_instance(v: &Value) -> Option<&ExcValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<ExcValue>(),
        _ => None,
    }
}

fn same(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::Object(x), Value::Object(y)) if Rc::ptr_eq(x, y))
}

/// Whether `class` is `of` or derives from it.
pub fn is_subclass(class: &Value, of: &Value) -> bool {
    let mut at = Some(class.clone());
    while let Some(c) = at {
        if same(&c, of) {
            return true;
        }
        at = as_class(&c).and_then(|c| c.base.clone());
    }
    false
}

/// The Python class a JAX user would catch for an error the runtime
/// raised: the error's own class name when it has one, else its kind's.
/// arr's `ShapeError` is JAX's TypeError (a matmul, reshape or
/// concatenation that does not fit; broadcasting of different ranks says
/// ValueError itself), and a `ConcretizationError` its ConcretizationTypeError.
fn class_of_error(e: &Error) -> Value {
    if let Some(name) = e.class {
        return class(name);
    }
    class(match e.kind {
        ErrorKind::SyntaxError => "SyntaxError",
        ErrorKind::IndentationError => "IndentationError",
        ErrorKind::TabError => "TabError",
        ErrorKind::NameError => "NameError",
        ErrorKind::TypeError | ErrorKind::ShapeError | ErrorKind::TransformError => "TypeError",
        ErrorKind::ValueError => "ValueError",
        ErrorKind::IndexError => "IndexError",
        ErrorKind::KeyError => "KeyError",
        ErrorKind::AttributeError => "AttributeError",
        ErrorKind::ZeroDivisionError => "ZeroDivisionError",
        ErrorKind::OverflowError => "OverflowError",
        ErrorKind::FloatingPointError => "FloatingPointError",
        ErrorKind::AssertionError => "AssertionError",
        ErrorKind::IOError => "OSError",
        ErrorKind::ImportError => "ImportError",
        ErrorKind::ShardingTypeError => "ShardingTypeError",
        ErrorKind::KeyboardInterrupt => "KeyboardInterrupt",
        ErrorKind::RecursionError => "RecursionError",
        ErrorKind::MemoryError => "MemoryError",
        ErrorKind::ConcretizationError => "ConcretizationTypeError",
        ErrorKind::RuntimeError => "RuntimeError",
    })
}

/// The exception instance a handler binds for `e`: the one `raise` raised,
/// or one made from a runtime error, whose `str` is the error's message
/// (without its location: the traceback shows that when it goes uncaught).
pub fn instance_of_error(e: &Error) -> Value {
    if let Some(v) = &e.exc {
        return v.clone();
    }
    Value::object(ExcValue {
        class: class_of_error(e),
        args: vec![Value::str(&e.message)],
        message: Some(e.message.clone()),
        cause: RefCell::new(Value::None),
    })
}

/// The class of the exception `e` is (for matching handlers).
pub fn class_of(e: &Error) -> Value {
    match e.exc.as_ref().and_then(as_instance) {
        Some(v) => v.class.clone(),
        None => class_of_error(e),
    }
}

/// Whether a handler's type (a class or a tuple of them) catches `e`.
pub fn matches(e: &Error, handler: &Value) -> Result<bool> {
    match handler {
        Value::Tuple(items) => {
            for h in items.iter() {
                if matches(e, h)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        h if as_class(h).is_some() => Ok(is_subclass(&class_of(e), h)),
        other => Err(Error::type_error(format!(
            "catching classes that do not inherit from BaseException is not allowed (got {})",
            other.type_name()
        ))),
    }
}

/// The error `raise value` raises: an instance, or a class called with no arguments.
pub fn raise(value: Value, cause: Option<Value>) -> Result<Error> {
    let value = if as_class(&value).is_some() {
        instantiate(&value, Vec::new())?
    } else {
        value
    };
    let Some(inst) = as_instance(&value) else {
        return Err(Error::type_error(
            "exceptions must derive from BaseException",
        ));
    };
    if let Some(cause) = cause {
        if !matches!(cause, Value::None) && as_instance(&cause).is_none() {
            let cause = if as_class(&cause).is_some() {
                instantiate(&cause, Vec::new())?
            } else {
                return Err(Error::type_error(
                    "exception causes must derive from BaseException",
                ));
            };
            *inst.cause.borrow_mut() = cause;
        } else {
            *inst.cause.borrow_mut() = cause;
        }
    }
    let kind = as_class(&inst.class).map_or(ErrorKind::RuntimeError, |c| c.kind);
    let mut err = Error::new(kind, inst.str());
    err.exc = Some(value.clone());
    Ok(err)
}

/// The KeyError of a missing `key`: its instance holds the key itself
/// (`e.args == (key,)`), as Python's does.
pub fn key_error(key: &Value) -> Error {
    let mut err = Error::new(ErrorKind::KeyError, crate::display::repr(key));
    err.exc = Some(Value::object(ExcValue {
        class: class("KeyError"),
        args: vec![key.clone()],
        message: None,
        cause: RefCell::new(Value::None),
    }));
    err
}

/// `Class(*args)`.
pub fn instantiate(class: &Value, args: Vec<Value>) -> Result<Value> {
    Ok(Value::object(ExcValue {
        class: class.clone(),
        args,
        message: None,
        cause: RefCell::new(Value::None),
    }))
}

impl ExcValue {
    fn class_name(&self) -> Rc<str> {
        as_class(&self.class).map_or(Rc::from("Exception"), |c| c.name.clone())
    }

    /// `str(e)`: the message, the one argument, or the arguments' tuple.
    /// A KeyError shows its key's repr, as in Python.
    pub fn str(&self) -> String {
        if let Some(m) = &self.message {
            return m.clone();
        }
        match self.args.as_slice() {
            [] => String::new(),
            [one] if &*self.class_name() == "KeyError" => crate::display::repr(one),
            [one] => crate::display::str(one),
            many => crate::display::repr(&Value::tuple(many.to_vec())),
        }
    }
}

const CLASS_PROPERTIES: &[Property<ExcClass>] = &[
    Property {
        name: "__name__",
        doc: "The class's name.",
        get: |c| Ok(Value::str(&c.name)),
    },
    Property {
        name: "__qualname__",
        doc: "The class's name.",
        get: |c| Ok(Value::str(&c.name)),
    },
    Property {
        name: "__module__",
        doc: "The module that defines the class.",
        get: |c| Ok(Value::str(c.module)),
    },
    Property {
        name: "__base__",
        doc: "The parent class (None for BaseException).",
        get: |c| Ok(c.base.clone().unwrap_or(Value::None)),
    },
];

impl Object for ExcClass {
    fn type_name(&self) -> &'static str {
        "type"
    }
    fn repr(&self) -> String {
        match self.module {
            "builtins" => format!("<class '{}'>", self.name),
            m => format!("<class '{m}.{}'>", self.name),
        }
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(CLASS_PROPERTIES, self, name).and_then(|r| r.ok())
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(CLASS_PROPERTIES)
    }
    fn call(
        &self,
        _interp: &mut crate::Interp,
        this: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Option<Result<Value>> {
        if !kwargs.is_empty() {
            return Some(Err(Error::type_error(format!(
                "{}() takes no keyword arguments",
                self.name
            ))));
        }
        Some(instantiate(this, args))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

const INSTANCE_PROPERTIES: &[Property<ExcValue>] = &[
    Property {
        name: "args",
        doc: "The arguments the exception was made with.",
        get: |e| Ok(Value::tuple(e.args.clone())),
    },
    Property {
        name: "__cause__",
        doc: "The exception named by `raise ... from cause`, or None.",
        get: |e| Ok(e.cause.borrow().clone()),
    },
    Property {
        name: "__context__",
        doc: "The exception being handled when this one was raised (not tracked: None).",
        get: |_| Ok(Value::None),
    },
    Property {
        name: "__traceback__",
        doc: "Not kept: None.",
        get: |_| Ok(Value::None),
    },
    Property {
        name: "__class__",
        doc: "The exception's class.",
        get: |e| Ok(e.class.clone()),
    },
];

impl Object for ExcValue {
    fn type_name(&self) -> &'static str {
        "exception"
    }
    fn repr(&self) -> String {
        let args = match self.args.as_slice() {
            [one] => crate::display::repr(one),
            many => {
                let inner = crate::display::repr(&Value::tuple(many.to_vec()));
                inner[1..inner.len() - 1].to_string()
            }
        };
        format!("{}({args})", self.class_name())
    }
    fn str(&self) -> Option<String> {
        Some(ExcValue::str(self))
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(INSTANCE_PROPERTIES, self, name).and_then(|r| r.ok())
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(INSTANCE_PROPERTIES)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
