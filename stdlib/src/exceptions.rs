//! Exception classes as builtins (Python's hierarchy and `jax.errors`'),
//! and the built-in context managers of the `with` statement: `nullcontext`
//! and `suppress`.

use crate::Registry;
use arr_runtime::eval::attr::{properties, property, Attribute, Property};
use arr_runtime::exception;
use arr_runtime::value::Object;
use arr_runtime::{Interp, NativeClosure, Result, Value};

pub(crate) fn register(r: &mut Registry) {
    for (name, class) in arr_runtime::exception::standard_classes() {
        r.value(name, class);
    }
    r.func(
        "nullcontext(enter_result=None)",
        "A context manager that does nothing: `with nullcontext(x) as y` binds x to y \
         (Python's contextlib.nullcontext).",
        nullcontext,
    );
    r.func(
        "suppress(*exceptions)",
        "A context manager that swallows the given exception classes (and their \
         subclasses) raised in its body (Python's contextlib.suppress).",
        |_, a| {
            Ok(Value::object(Suppress {
                classes: arr_runtime::numpy::sequence_items(&a[0])?,
            }))
        },
    );
}

/// `suppress(E, ...)`: `__exit__` answers whether the exception's class is one of them.
#[derive(Debug)]
struct Suppress {
    classes: Vec<Value>,
}

const SUPPRESS_PROPERTIES: &[Property<Suppress>] = &[
    Property {
        name: "__enter__",
        doc: "Enter the context: returns None.",
        get: |_| Ok(NativeClosure::value("__enter__", |_, _, _| Ok(Value::None))),
    },
    Property {
        name: "__exit__",
        doc: "Leave the context: True (swallow it) for an exception of the given classes.",
        get: |c| {
            let classes = c.classes.clone();
            Ok(NativeClosure::value("__exit__", move |_, args, _| {
                let class = args.first().cloned().unwrap_or(Value::None);
                Ok(Value::Bool(
                    classes.iter().any(|of| exception::is_subclass(&class, of)),
                ))
            }))
        },
    },
];

impl Object for Suppress {
    fn type_name(&self) -> &'static str {
        "suppress"
    }
    fn repr(&self) -> String {
        "<contextlib.suppress object>".into()
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(SUPPRESS_PROPERTIES, self, name).and_then(|r| r.ok())
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(SUPPRESS_PROPERTIES)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn nullcontext(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    Ok(Value::object(NullContext {
        enter_result: a[0].clone(),
    }))
}

/// `nullcontext(x)`: `__enter__` returns x, `__exit__` lets exceptions through.
#[derive(Debug)]
struct NullContext {
    enter_result: Value,
}

const NULLCONTEXT_PROPERTIES: &[Property<NullContext>] = &[
    Property {
        name: "__enter__",
        doc: "Enter the context: returns the enter_result.",
        get: |c| {
            let v = c.enter_result.clone();
            Ok(NativeClosure::value("__enter__", move |_, _, _| {
                Ok(v.clone())
            }))
        },
    },
    Property {
        name: "__exit__",
        doc: "Leave the context: returns None, so an exception goes on.",
        get: |_| Ok(NativeClosure::value("__exit__", |_, _, _| Ok(Value::None))),
    },
];

impl Object for NullContext {
    fn type_name(&self) -> &'static str {
        "nullcontext"
    }
    fn repr(&self) -> String {
        "<contextlib.nullcontext object>".into()
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(NULLCONTEXT_PROPERTIES, self, name).and_then(|r| r.ok())
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(NULLCONTEXT_PROPERTIES)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
