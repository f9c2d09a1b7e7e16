//! `pure_callback` and `io_callback` (`jax.pure_callback`,
//! `jax.experimental.io_callback`): an arr function called on the host with
//! the runtime values of its arguments (JAX arrays, as JAX 0.10 gives them), its results read as arrays of the
//! declared shapes and dtypes. The pytree plumbing over
//! `arr_runtime::transform::callback`, which runs the function under each
//! interpretation (vmap, jit op by op).

use crate::args::*;
use crate::tree::{leaves, map_leaves};
use crate::Registry;
use arr_kernels::{DType, Flavour};
use arr_runtime::prim::type_str;
use arr_runtime::transform::callback::{host_call, HostFun, VmapMethod};
use arr_runtime::{numpy, Error, Interp, Result, Tensor, Value};
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    r.effect_func(
        "pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, vectorized=None, **kwargs)",
        "Call callback(*args, **kwargs) on the host with the arguments' values, \
         also inside jit (which then runs op by op, calling it at every call) and vmap (as \
         vmap_method says: 'sequential', 'expand_dims', 'broadcast_all'); its result, a pytree \
         of the shapes and dtypes of result_shape_dtypes (ShapeDtypeStructs or arrays), as \
         arrays. It has no derivative: use custom_jvp to differentiate through it.",
        |interp, a| {
            let method = match (&a[4], a[5].truthy()?) {
                (Value::None, true) => VmapMethod::ExpandDims,
                (Value::None, false) => VmapMethod::Unset,
                (m, _) => VmapMethod::parse(Some(str_arg("vmap_method", m)?))?,
            };
            callback(interp, &a[0], &a[1], &a[2], &a[6], method)
        },
    );
    r.effect_func(
        "io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs)",
        "Call callback(*args, **kwargs) on the host for its effect (printing, logging, I/O) \
         with the arguments' values, also inside jit (each call) and vmap (once per example); \
         its result as arrays of result_shape_dtypes' shapes and dtypes (None: none).",
        |interp, a| callback(interp, &a[0], &a[1], &a[2], &a[5], VmapMethod::Sequential),
    );
}

/// What a result leaf must be: its shape and dtype.
fn declared(interp: &mut Interp, leaf: &Value) -> Result<(Vec<usize>, DType)> {
    if let Value::Array(t) = leaf {
        return Ok((t.shape().to_vec(), t.dtype()));
    }
    let shape = numpy::parse_shape(&interp.attr(leaf, "shape")?)?;
    let dtype = dtype_arg(&interp.attr(leaf, "dtype")?)?
        .ok_or_else(|| Error::type_error("pure_callback: a result's dtype is None"))?;
    Ok((shape, dtype))
}

fn callback(
    interp: &mut Interp,
    f: &Value,
    result_shape_dtypes: &Value,
    args: &Value,
    kwargs: &Value,
    method: VmapMethod,
) -> Result<Value> {
    f.expect_callable()?;
    let tree = Value::tuple(vec![args.clone(), kwargs.clone()]);
    let operands = leaves(&tree)?
        .iter()
        .map(numpy::to_tensor)
        .collect::<Result<Vec<_>>>()?;
    let results = match result_shape_dtypes {
        Value::None => Vec::new(),
        spec => leaves(spec)?
            .iter()
            .map(|leaf| declared(interp, leaf))
            .collect::<Result<Vec<_>>>()?,
    };
    // The template keeps no tracer alive: the operands are filled in when
    // the function runs.
    let template = map_leaves(&tree, &mut |_| Ok(Value::Int(0)))?;
    let f = f.clone();
    let results_in = results.clone();
    let host: HostFun = Rc::new(move |interp: &mut Interp, values, batch| {
        let mut values = values.into_iter();
        let filled = map_leaves(&template, &mut |_| {
            let t = values
                .next()
                .ok_or_else(|| Error::value_error("pure_callback: fewer values than arguments"))?;
            t.concrete()?;
            // JAX 0.10 hands the callback JAX arrays (NumPy's functions take them).
            Ok(Value::Array(t))
        })?;
        let Value::Tuple(parts) = filled else {
            return Err(Error::value_error(
                "pure_callback: the arguments lost their structure",
            ));
        };
        let call_args = numpy::sequence_items(&parts[0])?;
        let out = interp.call(&f, call_args, kwargs_of(&parts[1]))?;
        if results_in.is_empty() {
            return Ok(Vec::new());
        }
        let got = leaves(&out)?;
        if got.len() != results_in.len() {
            return Err(Error::type_error(format!(
                "pure_callback: the callback returned {} arrays, result_shape_dtypes declares {}",
                got.len(),
                results_in.len()
            )));
        }
        got.iter()
            .zip(&results_in)
            .map(|(v, (shape, dtype))| {
                let t = numpy::to_array_as(v, *dtype)?;
                let mut want = batch.to_vec();
                want.extend_from_slice(shape);
                if t.shape() != want.as_slice() {
                    return Err(Error::shape_error(format!(
                        "pure_callback: the callback returned an array of shape {:?}, \
                         result_shape_dtypes declares {}",
                        t.shape(),
                        type_str(&want, *dtype)
                    )));
                }
                // The result is a JAX array, whatever the callback made.
                Ok(match t {
                    Tensor::Concrete(a) => Tensor::Concrete(a.with_flavour(Flavour::Jax)),
                    other => other,
                })
            })
            .collect()
    });
    let outs = host_call(interp, &host, operands, method, &[])?;
    if matches!(result_shape_dtypes, Value::None) {
        return Ok(Value::None);
    }
    let mut outs = outs.into_iter();
    map_leaves(result_shape_dtypes, &mut |_| {
        outs.next()
            .map(Value::Array)
            .ok_or_else(|| Error::value_error("pure_callback: fewer results than declared"))
    })
}
