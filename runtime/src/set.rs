//! Python's `set`: hashable values (dict keys), iterated and printed in
//! sorted key order so that output is deterministic (for small ints that is
//! the order Python shows too).

use crate::error::{Error, Result};
use crate::value::{Key, Object, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub struct SetValue {
    pub items: RefCell<BTreeSet<Key>>,
}

/// A new set value holding `items`.
pub fn value(items: BTreeSet<Key>) -> Value {
    Value::object(SetValue {
        items: RefCell::new(items),
    })
}

/// A set of the values `items` (a TypeError for an unhashable one).
pub fn from_values(items: impl IntoIterator<Item = Value>) -> Result<Value> {
    let keys = items
        .into_iter()
        .map(|v| v.to_key())
        .collect::<Result<BTreeSet<Key>>>()?;
    Ok(value(keys))
}

pub fn as_set(v: &Value) -> Option<&SetValue> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<SetValue>(),
        _ => None,
    }
}

impl SetValue {
    /// The items as values, in iteration order.
    pub fn values(&self) -> Vec<Value> {
        self.items.borrow().iter().map(|k| k.to_value()).collect()
    }

    pub fn contains(&self, v: &Value) -> Result<bool> {
        Ok(self.items.borrow().contains(&v.to_key()?))
    }
}

/// `a | b`, `a & b`, `a - b`, `a ^ b` of two sets; None when either is no set
/// or the operator is none of those.
pub fn binary(op: arr_lang::ast::BinOp, a: &Value, b: &Value) -> Option<Result<Value>> {
    use arr_lang::ast::BinOp;
    let (x, y) = (as_set(a)?, as_set(b)?);
    let (x, y) = (x.items.borrow(), y.items.borrow());
    let out: BTreeSet<Key> = match op {
        BinOp::BitOr => x.union(&y).cloned().collect(),
        BinOp::BitAnd => x.intersection(&y).cloned().collect(),
        BinOp::Sub => x.difference(&y).cloned().collect(),
        BinOp::BitXor => x.symmetric_difference(&y).cloned().collect(),
        other => {
            return Some(Err(Error::type_error(format!(
                "unsupported operand type(s) for {}: 'set' and 'set'",
                other.symbol()
            ))))
        }
    };
    Some(Ok(value(out)))
}

/// `a == b` of two sets; None when either is no set.
pub fn equal(a: &Value, b: &Value) -> Option<bool> {
    Some(*as_set(a)?.items.borrow() == *as_set(b)?.items.borrow())
}

impl Object for SetValue {
    fn type_name(&self) -> &'static str {
        "set"
    }
    fn repr(&self) -> String {
        let items = self.items.borrow();
        if items.is_empty() {
            return "set()".into();
        }
        let parts: Vec<String> = items
            .iter()
            .map(|k| crate::display::repr(&k.to_value()))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
