//! The builtins under `jax.experimental.checkify` (`surface.arr` writes
//! the API over them): running a function under the checkify trace,
//! binding a check, and the message of a recorded failure. A check travels
//! between arr and Rust as its category and a plain description (`info`),
//! so its message is written in one place (`Check::message`).

use crate::args::*;
use crate::Registry;
use arr_runtime::numpy;
use arr_runtime::prim::{bind, Prim};
use arr_runtime::transform;
use arr_runtime::transform::checkify::{self, Check, CheckKind, Enabled};
use arr_runtime::{Error, Result, Value};
use std::sync::Arc;

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "_checkify_run(f, args, kwargs, nan=False, div=False, index=False)",
        "Call f(*args, **kwargs) under checkify; returns (result, checks): each check \
         as (category, info, failed, payload).",
        |interp, a| {
            let enabled = Enabled {
                nan: bool_arg(&a[3])?,
                div: bool_arg(&a[4])?,
                index: bool_arg(&a[5])?,
            };
            let args = numpy::sequence_items(&a[1])?;
            let kwargs = kwargs_of(&a[2]);
            let f = a[0].clone();
            let (out, checks) = checkify::run(enabled, || interp.call(&f, args, kwargs))?;
            let records = checks
                .into_iter()
                .map(|(check, mut ops)| {
                    let failed = Value::Array(ops.remove(0));
                    let payload = Value::list(ops.into_iter().map(Value::Array).collect());
                    let (category, info) = describe(&check);
                    Value::tuple(vec![Value::str(category), info, failed, payload])
                })
                .collect();
            Ok(Value::tuple(vec![out, Value::list(records)]))
        },
    );
    r.func(
        "_checkify_bind(category, info, failed, payload)",
        "Bind a check that fails where `failed` is true (recorded by an enclosing checkify). \
         With no transformation at all, nothing is bound: the message of the failure (None \
         if it holds) is returned for the caller to raise as checkify's JaxRuntimeError.",
        |_, a| {
            let check = from_description(&a[0], &a[1])?;
            let mut ops = vec![numpy::to_tensor(&a[2])?];
            for p in numpy::sequence_items(&a[3])? {
                ops.push(numpy::to_tensor(&p)?);
            }
            if transform::top_level(&ops)?.is_none() {
                if !checkify::failed(&ops[0])? {
                    return Ok(Value::None);
                }
                let payload: Vec<Value> = ops[1..].iter().cloned().map(Value::Array).collect();
                return Ok(Value::str(&check.message(&payload)?));
            }
            bind(&Prim::Check(Arc::new(check)), ops)?;
            Ok(Value::None)
        },
    );
    r.func(
        "_checkify_message(category, info, payload)",
        "The message of a failed check, its payload's values filled in.",
        |_, a| {
            let check = from_description(&a[0], &a[1])?;
            let payload = numpy::sequence_items(&a[2])?;
            Ok(Value::str(&check.message(&payload)?))
        },
    );
    r.func(
        "_checkify_active()",
        "Whether a checkify is running (checks are then recorded, not raised).",
        |_, _| Ok(Value::Bool(checkify::active())),
    );
}

/// A check as (category, info): the user's format, the number of
/// positional arguments and the keyword names; the primitive that made a
/// NaN; nothing for a division; the operand's shape and the axis of an
/// index.
fn describe(check: &Check) -> (&'static str, Value) {
    let info = match &check.kind {
        CheckKind::User { fmt, n_args, names } => Value::tuple(vec![
            Value::str(fmt),
            Value::Int(*n_args as i64),
            Value::tuple(names.iter().map(|n| Value::str(n)).collect()),
        ]),
        CheckKind::Nan(prim) => Value::str(prim),
        CheckKind::Div => Value::None,
        CheckKind::Oob { shape, axis } => Value::tuple(vec![
            Value::tuple(shape.iter().map(|&d| Value::Int(d as i64)).collect()),
            Value::Int(*axis as i64),
        ]),
    };
    (check.category(), info)
}

fn from_description(category: &Value, info: &Value) -> Result<Check> {
    let items = |v: &Value| numpy::sequence_items(v);
    let kind = match str_arg("category", category)? {
        "user" => {
            let it = items(info)?;
            let [fmt, n, names] = &it[..] else {
                return Err(Error::value_error("check: malformed user check"));
            };
            CheckKind::User {
                fmt: str_arg("msg", fmt)?.into(),
                n_args: int_arg("n_args", n)? as usize,
                names: items(names)?
                    .iter()
                    .map(|n| Ok(Arc::from(str_arg("name", n)?)))
                    .collect::<Result<_>>()?,
            }
        }
        "nan" => CheckKind::Nan(str_arg("primitive", info)?.into()),
        "div" => CheckKind::Div,
        "index" => {
            let it = items(info)?;
            let [shape, axis] = &it[..] else {
                return Err(Error::value_error("check: malformed index check"));
            };
            CheckKind::Oob {
                shape: numpy::parse_shape(shape)?,
                axis: int_arg("axis", axis)? as usize,
            }
        }
        other => {
            return Err(Error::value_error(format!(
                "check: unknown error category {other:?}"
            )))
        }
    };
    Ok(Check { kind })
}
