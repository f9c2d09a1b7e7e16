//! Attribute lookup: array properties, object attributes, module members
//! and methods.

use super::Interp;
use crate::error::{Error, ErrorKind, Result};
use crate::numpy;
use crate::value::Value;
use std::rc::Rc;

impl Interp {
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
}
