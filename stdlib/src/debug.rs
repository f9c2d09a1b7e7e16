//! `debug_print` and `debug_callback` (`jax.debug.print`, `jax.debug.callback`):
//! calls back with runtime values from inside `jit`, `vmap`, `grad` and
//! control flow, through the `debug_callback` primitive (`arr_runtime::prim::debug`).
//!
//! The arguments' array leaves become the primitive's operands; every other
//! leaf (a string, a Python number) stays as it is in a template that the
//! callback fills with the runtime values.

use crate::args::*;
use crate::tree::{leaves, map_leaves};
use crate::Registry;
use arr_runtime::prim::debug::{self, Kind};
use arr_runtime::prim::{bind, Args};
use arr_runtime::{Error, Interp, Key, Result, Tensor, Value};
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "debug_print(fmt, *args, ordered=False, **kwargs)",
        "Print fmt.format(*args, **kwargs) with the runtime values, also inside jit \
         (each time it runs), vmap (once per example), grad and loops (once per iteration).",
        |_, a| {
            let fmt = Value::str(str_arg("fmt", &a[0])?);
            let print = move |interp: &mut Interp, args: Value, kwargs: Value| {
                let text = crate::python::str_format(interp, vec![fmt.clone(), args, kwargs])?;
                let text = str_arg("fmt", &text)?;
                interp.write_out(&format!("{text}\n"));
                Ok(())
            };
            call_back(Kind::Print, &a[2], &a[1], &a[3], Rc::new(print))
        },
    );
    r.effect_func(
        "debug_callback(callback, *args, ordered=False, **kwargs)",
        "Call callback(*args, **kwargs) with the runtime values, also inside jit, vmap, \
         grad and loops, as debug_print does; its result is discarded.",
        |_, a| {
            let f = a[0].clone();
            let call = move |interp: &mut Interp, args: Value, kwargs: Value| {
                let args = match &args {
                    Value::Tuple(t) => t.to_vec(),
                    _ => Vec::new(),
                };
                let kwargs = match &kwargs {
                    Value::Dict(d) => d
                        .borrow()
                        .iter()
                        .map(|(k, v)| match k {
                            Key::Str(s) => Ok((s.clone(), v.clone())),
                            _ => Err(Error::type_error("keywords must be strings")),
                        })
                        .collect::<Result<Vec<_>>>()?,
                    _ => Vec::new(),
                };
                interp.call(&f, args, kwargs)?;
                Ok(())
            };
            call_back(Kind::Callback, &a[2], &a[1], &a[3], Rc::new(call))
        },
    );
}

/// What a callback does with the rebuilt `(args tuple, kwargs dict)`.
type Then = Rc<dyn Fn(&mut Interp, Value, Value) -> Result<()>>;

/// Bind the primitive on the array leaves of `(args, kwargs)`; when it runs,
/// `then` gets them back with the runtime values in place.
fn call_back(
    kind: Kind,
    ordered: &Value,
    args: &Value,
    kwargs: &Value,
    then: Then,
) -> Result<Value> {
    let ordered = bool_arg(ordered)?;
    let tree = Value::tuple(vec![args.clone(), kwargs.clone()]);
    let mut operands = Args::new();
    let mut is_array = Vec::new();
    for leaf in leaves(&tree)? {
        match leaf {
            Value::Array(t) => operands.push(t),
            // Python numbers are values as JAX sees them (its callbacks take
            // every leaf that has a shape): weak 0-d arrays.
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                operands.push(arr_runtime::numpy::to_tensor(&leaf)?)
            }
            _ => {
                is_array.push(false);
                continue;
            }
        }
        is_array.push(true);
    }
    // The template keeps no tracer alive: array leaves are placeholders.
    let template = map_leaves(&tree, &mut |leaf| {
        Ok(match leaf {
            Value::Array(_) => Value::Int(0),
            other => other.clone(),
        })
    })?;
    let f: debug::Fun = Rc::new(move |interp: &mut Interp, arrays| {
        let mut arrays = arrays.into_iter();
        let mut k = 0;
        let filled = map_leaves(&template, &mut |leaf| {
            let array = is_array.get(k).copied().unwrap_or(false);
            k += 1;
            if !array {
                return Ok(leaf.clone());
            }
            arrays
                .next()
                .map(|a| Value::Array(Tensor::Concrete(a)))
                .ok_or_else(|| Error::value_error("debug callback: fewer values than arrays"))
        })?;
        let Value::Tuple(parts) = filled else {
            return Err(Error::value_error(
                "debug callback: arguments lost their structure",
            ));
        };
        then(interp, parts[0].clone(), parts[1].clone())
    });
    bind(&debug::register(kind, ordered, f), operands)?;
    Ok(Value::None)
}
