//! Attributes. Each built-in type has one table of its properties (name, a
//! line of documentation, the getter), and its methods are the builtins
//! registered for it (`Interp::add_method`); attribute lookup (`x.shape`,
//! `x.sum`) and completion (`x.sh<Tab>`) both read those, so they cannot
//! disagree. Object types (meshes, tables...) keep their tables next to
//! their definitions and answer through `Object::attr`/`Object::attributes`.

use super::Interp;
use crate::error::{Error, ErrorKind, Result};
use crate::numpy;
use crate::tensor::Tensor;
use crate::value::{Function, Value};
use crate::Builtin;
use arr_kernels::{DType, Flavour};
use std::rc::Rc;

/// Whether an attribute is a value (`x.shape`) or something to call (`x.sum()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    Property,
    Method,
}

/// A property of values of type `T`: its name, a line of documentation, and
/// how to read it.
pub struct Property<T: ?Sized> {
    pub name: &'static str,
    pub doc: &'static str,
    pub get: fn(&T) -> Result<Value>,
}

/// One attribute of a value, as completion lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub kind: AttrKind,
    pub doc: String,
}

/// The property `name` of `x`, read through `table`; None if the table has no such row.
pub fn property<T: ?Sized>(table: &[Property<T>], x: &T, name: &str) -> Option<Result<Value>> {
    table.iter().find(|p| p.name == name).map(|p| (p.get)(x))
}

/// The rows of a property table as attributes.
pub fn properties<T: ?Sized>(table: &[Property<T>]) -> Vec<Attribute> {
    table
        .iter()
        .map(|p| Attribute {
            name: p.name.to_string(),
            kind: AttrKind::Property,
            doc: p.doc.to_string(),
        })
        .collect()
}

/// An array's shape as the language shows it: a typed key array's without
/// its words axis.
fn shown_shape(a: &Tensor) -> &[usize] {
    numpy::key_shape(a).unwrap_or(a.shape())
}

/// The properties of arrays (their methods are registered builtins).
pub const ARRAY_PROPERTIES: &[Property<Tensor>] = &[
    Property {
        name: "shape",
        doc: "The size of each dimension, a tuple of ints.",
        get: |a| {
            Ok(Value::tuple(
                shown_shape(a)
                    .iter()
                    .map(|&d| Value::Int(d as i64))
                    .collect(),
            ))
        },
    },
    Property {
        name: "ndim",
        doc: "The number of dimensions.",
        get: |a| Ok(Value::Int(shown_shape(a).len() as i64)),
    },
    Property {
        name: "size",
        doc: "The number of elements.",
        get: |a| Ok(Value::Int(shown_shape(a).iter().product::<usize>() as i64)),
    },
    Property {
        name: "dtype",
        doc: "The element type (key<fry> for typed PRNG keys).",
        get: |a| match numpy::key_shape(a) {
            Some(_) => Ok(Value::object(numpy::KeyDType)),
            None => Ok(Value::DType(a.dtype())),
        },
    },
    Property {
        name: "weak_type",
        doc: "Whether the array is weakly typed (it stands for a Python number: \
              its dtype gives way to the other operand's in promotion).",
        get: |a| Ok(Value::Bool(a.is_weak())),
    },
    Property {
        name: "T",
        doc: "The array with its dimensions reversed.",
        get: |a| {
            let perm: Vec<usize> = (0..a.ndim()).rev().collect();
            Ok(Value::Array(numpy::transpose(a.clone(), &perm)?))
        },
    },
    Property {
        name: "real",
        doc: "The real part (of a real array: the array).",
        get: |a| numpy::unary(arr_kernels::UnaryOp::Real, &Value::Array(a.clone())),
    },
    Property {
        name: "imag",
        doc: "The imaginary part (of a real array: zeros).",
        get: |a| numpy::unary(arr_kernels::UnaryOp::Imag, &Value::Array(a.clone())),
    },
    Property {
        name: "flags",
        doc: "A NumPy array's flags: .writeable (False for a view of a JAX array), \
              .c_contiguous, .owndata.",
        get: |a| {
            let Some(Flavour::NumPy { writeable }) = a.as_concrete().map(|c| c.flavour()) else {
                return Err(Error::new(
                    ErrorKind::AttributeError,
                    "'ArrayImpl' object has no attribute 'flags' (NumPy arrays have it)",
                )
                .as_class("AttributeError"));
            };
            Ok(Interp::make_module(
                "flags",
                "The array's flags.",
                [
                    ("writeable", Value::Bool(writeable)),
                    ("c_contiguous", Value::Bool(true)),
                    ("owndata", Value::Bool(writeable)),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            ))
        },
    },
    Property {
        name: "itemsize",
        doc: "The bytes of one element.",
        get: |a| Ok(Value::Int(a.dtype().size_bytes() as i64)),
    },
    Property {
        name: "at",
        doc: "Functional updates: x.at[idx].set(v), .add, .multiply, .divide, .power, .min, .max, .apply, .get.",
        get: |a| Ok(Value::object(crate::at::AtHelper(a.clone()))),
    },
    Property {
        name: "nbytes",
        doc: "The bytes of all elements.",
        get: |a| Ok(Value::Int((a.len() * a.dtype().size_bytes()) as i64)),
    },
    Property {
        name: "device",
        doc: "The device the array lives on: CpuDevice(id=0) (printed cpu:0), or 'cuda:0', \
              'opencl:0' (a host array follows its computation: it reports the default \
              device); of an array laid out over a mesh, its sharding (as JAX's).",
        get: |a| {
            Ok(match a {
                Tensor::Concrete(x) if x.home().is_some() => {
                    Value::str(&arr_kernels::backend::device_name(x))
                }
                _ if a.placement().is_some() => crate::sharding::sharding_value(a.placement()),
                _ => match arr_kernels::gpu::default_device() {
                    Some(d) => Value::str(&d.label()),
                    None => Value::object(crate::sharding::DeviceValue::cpu(0)),
                },
            })
        },
    },
    Property {
        name: "sharding",
        doc: "How the array is laid out over devices: a NamedSharding, or a \
              SingleDeviceSharding for an array one device holds whole.",
        get: |a| {
            Ok(match a.placement() {
                Some(p) => crate::sharding::sharding_value(Some(p)),
                None => Value::object(crate::sharding::SingleDeviceSharding(
                    crate::sharding::DeviceValue::cpu(0),
                )),
            })
        },
    },
    Property {
        name: "addressable_shards",
        doc: "Each device's block of the array: objects with .device, .index (a tuple of \
              slices), .data and .replica_id, in device order.",
        get: |a| {
            Ok(Value::list(
                crate::sharding::addressable_shards(a)?
                    .into_iter()
                    .map(Value::object)
                    .collect(),
            ))
        },
    },
    Property {
        name: "committed",
        doc: "Whether the array was placed (device_put to a device or sharding, or laid \
              out by a sharded computation) rather than left where it was made.",
        get: |a| {
            Ok(Value::Bool(
                a.placement().is_some() || a.concrete().is_ok_and(|c| c.home().is_some()),
            ))
        },
    },
    Property {
        name: "is_fully_addressable",
        doc: "Whether this process holds every block of the array.",
        get: |a| {
            let me = arr_kernels::process::index();
            Ok(Value::Bool(a.placement().is_none_or(|p| {
                p.mesh
                    .devices
                    .iter()
                    .all(|&d| arr_kernels::process::owner(d) == me)
            })))
        },
    },
];

/// The properties of dtypes (`float32.name`).
pub const DTYPE_PROPERTIES: &[Property<DType>] = &[
    Property {
        name: "name",
        doc: "NumPy's name of the type, such as 'float32'.",
        get: |d| Ok(Value::str(d.name())),
    },
    Property {
        name: "itemsize",
        doc: "The bytes of one element.",
        get: |d| Ok(Value::Int(d.size_bytes() as i64)),
    },
    Property {
        name: "kind",
        doc: "NumPy's character of the type's kind: 'b' bool, 'i' signed and 'u' \
              unsigned integer, 'f' float, 'c' complex ('V' for bfloat16, as ml_dtypes).",
        get: |d| {
            use arr_kernels::DType::*;
            Ok(Value::str(match d {
                Bool => "b",
                U8 | U16 | U32 => "u",
                I8 | I16 | I32 | I64 => "i",
                BF16 => "V",
                F16 | F32 | F64 => "f",
                C64 => "c",
            }))
        },
    },
];

/// The properties of functions written in arr.
pub const FUNCTION_PROPERTIES: &[Property<Function>] = &[
    Property {
        name: "__name__",
        doc: "The function's name.",
        get: |f| Ok(Value::str(&f.code.name)),
    },
    Property {
        name: "__doc__",
        doc: "The function's docstring, or None.",
        get: |f| Ok(f.code.doc.as_deref().map_or(Value::None, Value::str)),
    },
    Property {
        name: "__annotations__",
        doc: "The annotations of the parameters and the result (`return`), as a dict.",
        get: |f| {
            Ok(match &f.annotations {
                Value::None => Value::dict(Default::default()),
                d => d.clone(),
            })
        },
    },
    Property {
        name: "__qualname__",
        doc: "The function's name, with its class for a method.",
        get: |f| Ok(Value::str(&f.code.qualname)),
    },
];

/// The properties of builtin functions.
pub const BUILTIN_PROPERTIES: &[Property<Builtin>] = &[
    Property {
        name: "__name__",
        doc: "The function's name.",
        get: |b| Ok(Value::str(&b.name)),
    },
    Property {
        name: "__doc__",
        doc: "The function's documentation.",
        get: |b| Ok(Value::str(&b.doc)),
    },
];

/// The receiver type under which a value's methods are registered
/// (`""`: none).
fn receiver(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::Object(obj) => obj.type_name(),
        Value::List(_) => "list",
        Value::Tuple(_) => "tuple",
        Value::Dict(_) => "dict",
        Value::Str(_) => "str",
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => "number",
        _ => "",
    }
}

/// The first sentence of a callable's documentation (empty without one).
fn doc_line(v: &Value) -> String {
    let doc = match v {
        Value::Builtin(b) => b.doc.to_string(),
        Value::Function(f) => f.code.doc.as_deref().unwrap_or_default().to_string(),
        _ => String::new(),
    };
    let doc = doc.trim();
    match doc.find(". ") {
        Some(i) => doc[..=i].to_string(),
        None => doc.lines().next().unwrap_or_default().to_string(),
    }
}

/// A member of a module or a function's attribute: a method when it is
/// callable.
fn member(name: &str, v: &Value) -> Attribute {
    let callable = matches!(
        v,
        Value::Function(_) | Value::Builtin(_) | Value::Native(_) | Value::BoundMethod(_)
    );
    Attribute {
        name: name.to_string(),
        kind: if callable {
            AttrKind::Method
        } else {
            AttrKind::Property
        },
        doc: doc_line(v),
    }
}

impl Interp {
    /// Attribute access: array properties, module members, methods.
    pub fn get_attr(&self, o: &Value, attr: &str) -> Result<Value> {
        match o {
            // A vmap tracer's batched value (JAX's `BatchTracer.val`), for
            // peeking inside a transformation.
            Value::Array(Tensor::Traced(t)) if attr == "val" => {
                if let crate::tensor::TracerKind::Batch { val, .. } = &t.kind {
                    return Ok(Value::Array(val.clone()));
                }
            }
            Value::Array(a) => {
                if let Some(v) = property(ARRAY_PROPERTIES, a, attr) {
                    // A NumPy array's transpose is a NumPy array.
                    return match attr {
                        "T" => v.map(|v| numpy::like_operand(o, v)),
                        _ => v,
                    };
                }
            }
            Value::Object(obj) => {
                if let Some(v) = obj.attr(attr) {
                    return Ok(v);
                }
            }
            Value::Native(n) => {
                let attrs = n.attrs.borrow();
                return attrs
                    .iter()
                    .find(|(k, _)| k == attr)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::AttributeError,
                            format!("function '{}' has no attribute '{attr}'", n.name),
                        )
                        .as_class("AttributeError")
                    });
            }
            Value::Module(m) => {
                return m.attrs.get(attr).cloned().ok_or_else(|| {
                    Error::new(
                        ErrorKind::AttributeError,
                        format!("module '{}' has no attribute '{attr}'", m.name),
                    )
                    .as_class("AttributeError")
                })
            }
            Value::DType(d) => {
                return property(DTYPE_PROPERTIES, d, attr).unwrap_or_else(|| {
                    Err(Error::new(
                        ErrorKind::AttributeError,
                        format!("dtype has no attribute '{attr}'"),
                    ))
                })
            }
            Value::Function(func) => {
                return property(FUNCTION_PROPERTIES, &**func, attr).unwrap_or_else(|| {
                    Err(Error::new(
                        ErrorKind::AttributeError,
                        format!("function has no attribute '{attr}'"),
                    ))
                })
            }
            Value::Builtin(b) => {
                return property(BUILTIN_PROPERTIES, &**b, attr).unwrap_or_else(|| {
                    Err(Error::new(
                        ErrorKind::AttributeError,
                        format!("function has no attribute '{attr}'"),
                    ))
                })
            }
            // A bound method: Python's `__self__` and `__func__`; other
            // attributes (`__name__`, `__doc__`) are the function's.
            Value::BoundMethod(m) => {
                return match attr {
                    "__self__" => Ok(m.0.clone()),
                    "__func__" => Ok(m.1.clone()),
                    _ => self.get_attr(&m.1, attr),
                }
            }
            _ => {}
        }
        match self.methods.get(&(receiver(o), Rc::from(attr))) {
            Some(m) => Ok(Value::BoundMethod(Rc::new((o.clone(), m.clone())))),
            None => Err(Error::new(
                ErrorKind::AttributeError,
                format!("'{}' object has no attribute '{attr}'", o.type_name()),
            )),
        }
    }

    /// Every attribute `get_attr` resolves on `o`, from the same tables:
    /// its type's properties, then the methods registered for it (sorted).
    pub fn attributes(&self, o: &Value) -> Vec<Attribute> {
        let mut out = match o {
            // Only NumPy's arrays have flags.
            Value::Array(_) => properties(ARRAY_PROPERTIES)
                .into_iter()
                .filter(|p| p.name != "flags" || numpy::is_ndarray(o))
                .collect(),
            Value::Object(obj) => obj.attributes(),
            Value::Native(n) => {
                let attrs = n.attrs.borrow();
                return attrs.iter().map(|(k, v)| member(k, v)).collect();
            }
            Value::Module(m) => return m.attrs.iter().map(|(k, v)| member(k, v)).collect(),
            Value::Instance(_) | Value::Class(_) => return crate::class::attributes(o),
            Value::DType(_) => return properties(DTYPE_PROPERTIES),
            Value::Function(_) => return properties(FUNCTION_PROPERTIES),
            Value::Builtin(_) => return properties(BUILTIN_PROPERTIES),
            _ => Vec::new(),
        };
        let recv = receiver(o);
        let mut methods: Vec<(&Rc<str>, &Value)> = self
            .methods
            .iter()
            .filter(|((r, _), _)| *r == recv && !recv.is_empty())
            .map(|((_, name), v)| (name, v))
            .collect();
        methods.sort_by(|a, b| a.0.cmp(b.0));
        out.extend(methods.into_iter().map(|(name, v)| Attribute {
            kind: AttrKind::Method,
            ..member(name, v)
        }));
        out
    }
}
