//! `x.at[idx].set(v)` and its siblings (`add`, `multiply`, `divide`, `power`,
//! `min`, `max`, `apply`, `get`): JAX's functional updates, as values.
//!
//! `x.at` is an object whose subscript remembers the index; the methods of
//! that reference build the updated array from primitives, as `x[i] = v`
//! does (see `index.rs`): the flat positions the index selects, then a
//! scatter. `set` and `add` are scatters; the others gather, combine and
//! set when the positions are known to be distinct, and otherwise reduce a
//! one-hot table so that repeated indices combine as JAX's scatters do.
//! `mode="drop"`/`"fill"` send out-of-bounds indices to one padded slot
//! per axis and cut it off again; `mode="clip"` clamps them.

use crate::error::{Error, Result};
use crate::eval::attr::{AttrKind, Attribute};
use crate::index::get_index;
use crate::numpy::{broadcast_to, reshape, to_array_as, ty};
use crate::prim::{bind1, Prim};
use crate::tensor::Tensor;
use crate::value::{NativeClosure, Object, Value};
use arr_kernels::{broadcast_shapes, BinaryOp, DType, ReduceOp, ScatterMode};
use std::any::Any;
use std::rc::Rc;

/// `x.at`: subscript it to name the elements to update.
#[derive(Debug)]
pub struct AtHelper(pub Tensor);

/// `x.at[idx]`: its methods return updated copies of `x`.
#[derive(Debug)]
pub struct AtRef {
    array: Tensor,
    index: Value,
}

impl Object for AtHelper {
    fn type_name(&self) -> &'static str {
        "_IndexUpdateHelper"
    }
    fn repr(&self) -> String {
        format!("_IndexUpdateHelper({})", ty(&self.0))
    }
    fn get_item(&self, index: &Value) -> Option<Result<Value>> {
        Some(Ok(Value::object(AtRef {
            array: self.0.clone(),
            index: index.clone(),
        })))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The methods of `x.at[idx]`, with their documentation.
const METHODS: &[(&str, &str)] = &[
    ("set", "x with the indexed elements replaced by values."),
    (
        "add",
        "x with values added at the index (repeated indices add up).",
    ),
    (
        "multiply",
        "x with the indexed elements multiplied by values.",
    ),
    ("mul", "The same as multiply."),
    ("divide", "x with the indexed elements divided by values."),
    ("power", "x with the indexed elements raised to values."),
    (
        "min",
        "x with the indexed elements replaced by their minimum with values.",
    ),
    (
        "max",
        "x with the indexed elements replaced by their maximum with values.",
    ),
    ("apply", "x with func applied to the indexed elements."),
    (
        "get",
        "x[idx] (mode='fill' gives fill_value out of bounds).",
    ),
];

impl Object for AtRef {
    fn type_name(&self) -> &'static str {
        "_IndexUpdateRef"
    }
    fn repr(&self) -> String {
        format!(
            "_IndexUpdateRef({}, {})",
            ty(&self.array),
            crate::display::repr(&self.index)
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        let (name, _) = METHODS.iter().find(|(m, _)| *m == name)?;
        let (array, index) = (self.array.clone(), self.index.clone());
        Some(NativeClosure::value(
            format!("at.{name}"),
            move |interp, args, kwargs| call(interp, name, &array, &index, args, kwargs),
        ))
    }
    fn attributes(&self) -> Vec<Attribute> {
        METHODS
            .iter()
            .map(|(name, doc)| Attribute {
                name: name.to_string(),
                kind: AttrKind::Method,
                doc: doc.to_string(),
            })
            .collect()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// How indices out of bounds behave.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// arr's default: an error when the interpreter can see the index, as `x[i]`.
    Checked,
    Clip,
    /// Updates out of bounds are dropped; `get` gives the fill value there.
    Drop,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Set,
    Add,
    Mul,
    Div,
    Pow,
    Min,
    Max,
}

fn call(
    interp: &mut crate::Interp,
    name: &str,
    array: &Tensor,
    index: &Value,
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Value> {
    // Under JAX's rules (see `Interp::jax_rules`), JAX's defaults: a read
    // out of bounds clamps, an update there is dropped.
    let mut mode = match (interp.jax_rules, name) {
        (false, _) => Mode::Checked,
        (true, "get") => Mode::Clip,
        (true, _) => Mode::Drop,
    };
    let mut fill = None;
    for (k, v) in kwargs {
        match (&*k, &v) {
            ("mode", Value::None) => {}
            ("mode", Value::Str(s)) => {
                mode = match s.as_str() {
                    "promise_in_bounds" => Mode::Checked,
                    "clip" => Mode::Clip,
                    "drop" | "fill" => Mode::Drop,
                    other => {
                        return Err(Error::value_error(format!(
                            "at[...].{name}: mode must be 'clip', 'drop', 'fill' or \
                             'promise_in_bounds', got '{other}'"
                        )))
                    }
                }
            }
            ("fill_value", _) if name == "get" => fill = Some(v),
            ("indices_are_sorted" | "unique_indices", _) => {}
            _ => {
                return Err(Error::type_error(format!(
                    "at[...].{name}() got an unexpected keyword argument '{k}'"
                )))
            }
        }
    }
    let want = usize::from(name != "get");
    if args.len() != want {
        return Err(Error::type_error(format!(
            "at[...].{name}() takes {want} positional argument{}, got {}",
            if want == 1 { "" } else { "s" },
            args.len()
        )));
    }
    let op = match name {
        "get" => return Ok(Value::Array(get(array, index, mode, fill)?)),
        "apply" => {
            let selected = get(array, index, mode, None)?;
            let out = interp.call(&args[0], vec![Value::Array(selected)], vec![])?;
            return Ok(Value::Array(update(array, index, Op::Set, &out, mode)?));
        }
        "set" => Op::Set,
        "add" => Op::Add,
        "multiply" | "mul" => Op::Mul,
        "divide" => Op::Div,
        "power" => Op::Pow,
        "min" => Op::Min,
        _ => Op::Max,
    };
    if op == Op::Div && !array.dtype().is_inexact() {
        // JAX divides with true division: an integer array comes back float.
        let x = crate::numpy::convert(array.clone(), crate::numpy::default_float())?;
        return Ok(Value::Array(update(&x, index, op, &args[0], mode)?));
    }
    Ok(Value::Array(update(array, index, op, &args[0], mode)?))
}

fn binary(op: BinaryOp, a: Tensor, b: Tensor) -> Result<Tensor> {
    bind1(&Prim::Binary(op), vec![a, b])
}

/// `x.at[idx].get(mode='fill', fill_value=fill)`: out of range, the fill
/// value (None: JAX's default for the dtype); `jnp.take`'s default mode.
pub fn get_filled(a: &Tensor, index: &Value, fill: Value) -> Result<Tensor> {
    get(a, index, Mode::Drop, Some(fill))
}

/// `x.at[idx].get(mode=..., fill_value=...)`.
fn get(a: &Tensor, index: &Value, mode: Mode, fill: Option<Value>) -> Result<Tensor> {
    if mode == Mode::Checked {
        return get_index(a, index);
    }
    let (index, padded) = remap(a, index, mode)?;
    if padded.iter().all(|&p| !p) {
        return get_index(a, &index);
    }
    // JAX's default fill: NaN for floats, the most negative value for
    // signed ints, the largest for unsigned ones, True for bools.
    let fill = match fill {
        Some(v) if !matches!(v, Value::None) => v,
        _ => match a.dtype() {
            d if d.is_float() => Value::Float(f64::NAN),
            DType::Bool => Value::Bool(true),
            DType::I32 => Value::Int(i32::MIN as i64),
            DType::I64 => Value::Int(i64::MIN),
            DType::U32 => Value::Int(u32::MAX as i64),
            _ => Value::Int(0),
        },
    };
    let fill = to_array_as(&fill, a.dtype())?;
    let fill = reshape(fill, &[])
        .map_err(|_| Error::value_error("at[...].get: fill_value must be a scalar"))?;
    get_index(&pad_end(a, &padded, fill)?, &index)
}

/// `a` with one more element at the end of each `padded` axis.
fn pad_end(a: &Tensor, padded: &[bool], value: Tensor) -> Result<Tensor> {
    let n = a.ndim();
    bind1(
        &Prim::Pad {
            lo: vec![0; n],
            hi: padded.iter().map(|&p| usize::from(p)).collect(),
            interior: vec![0; n],
        },
        vec![a.clone(), value],
    )
}

/// The index with its integer parts wrapped and then clamped (`Clip`) or,
/// out of bounds, sent to the slot one past the end (`Drop`); for `Drop`,
/// which axes need that slot.
fn remap(a: &Tensor, index: &Value, mode: Mode) -> Result<(Value, Vec<bool>)> {
    let parts: Vec<Value> = match index {
        Value::Tuple(t) => t.to_vec(),
        other => vec![other.clone()],
    };
    // How many axes each part takes, to find the axis an integer part indexes.
    let takes = |v: &Value| match v {
        Value::None | Value::Ellipsis => 0,
        Value::Array(m) if m.dtype() == DType::Bool => m.ndim(),
        _ => 1,
    };
    let taken: usize = parts.iter().map(takes).sum();
    let mut padded = vec![false; a.ndim()];
    let mut axis = 0;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        if matches!(part, Value::Ellipsis) {
            axis += a.ndim().saturating_sub(taken);
            out.push(part);
            continue;
        }
        let step = takes(&part);
        let Some(&len) = a.shape().get(axis).filter(|_| step == 1) else {
            axis += step;
            out.push(part);
            continue;
        };
        let n = len as i64;
        let new = match &part {
            Value::Int(i) => {
                let i = if *i < 0 { i + n } else { *i };
                Value::Int(match mode {
                    Mode::Clip => i.clamp(0, (n - 1).max(0)),
                    _ if (0..n).contains(&i) => i,
                    _ => {
                        padded[axis] = true;
                        n
                    }
                })
            }
            Value::Array(ix) if ix.dtype().is_int() => {
                let d = ix.dtype();
                let k = |v: i64| to_array_as(&Value::Int(v), d);
                let neg = binary(BinaryOp::Lt, ix.clone(), k(0)?)?;
                let wrapped = bind1(
                    &Prim::Select,
                    vec![neg, binary(BinaryOp::Add, ix.clone(), k(n)?)?, ix.clone()],
                )?;
                Value::Array(match mode {
                    Mode::Clip => binary(
                        BinaryOp::Min,
                        binary(BinaryOp::Max, wrapped, k(0)?)?,
                        k((n - 1).max(0))?,
                    )?,
                    _ => {
                        padded[axis] = true;
                        let out_of_bounds = binary(
                            BinaryOp::Or,
                            binary(BinaryOp::Lt, wrapped.clone(), k(0)?)?,
                            binary(BinaryOp::Ge, wrapped.clone(), k(n)?)?,
                        )?;
                        bind1(&Prim::Select, vec![out_of_bounds, k(n)?, wrapped])?
                    }
                })
            }
            _ => part.clone(),
        };
        axis += step;
        out.push(new);
    }
    Ok((Value::tuple(out), padded))
}

/// Whether the flat positions are known to be distinct.
fn distinct(positions: &Tensor) -> bool {
    let Some(c) = positions.as_concrete() else {
        return false;
    };
    let Ok(buf) = c.buffer() else {
        return false;
    };
    let mut seen: Vec<i64> = (0..c.len()).map(|i| buf.get_i64(i)).collect();
    seen.sort_unstable();
    seen.windows(2).all(|w| w[0] != w[1])
}

/// `x.at[idx].<op>(v)`.
fn update(a: &Tensor, index: &Value, op: Op, v: &Value, mode: Mode) -> Result<Tensor> {
    let (target, index, padded) = if mode == Mode::Checked {
        (a.clone(), index.clone(), vec![false; a.ndim()])
    } else {
        let (index, padded) = remap(a, index, mode)?;
        let zero = to_array_as(&Value::Int(0), a.dtype())?;
        (pad_end(a, &padded, zero)?, index, padded)
    };
    let size = target.len();
    let pos_dtype = if size > i32::MAX as usize {
        DType::I64
    } else {
        DType::I32
    };
    let iota = |shape: Vec<usize>, dim: usize| {
        bind1(
            &Prim::Iota {
                dtype: pos_dtype,
                shape,
                dim,
            },
            Vec::<Tensor>::new(),
        )
    };
    let positions = reshape(iota(vec![size], 0)?, target.shape())?;
    let selected = get_index(&positions, &index)?;
    let value = to_array_as(v, a.dtype())?;
    if broadcast_shapes(value.shape(), selected.shape()).as_deref() != Some(selected.shape()) {
        return Err(Error::shape_error(format!(
            "at[...]: cannot update a selection of shape {:?} of {} with {}",
            selected.shape(),
            ty(a),
            ty(&value)
        )));
    }
    let n = selected.len();
    let vals = reshape(broadcast_to(value, selected.shape())?, &[n])?;
    let flat = reshape(target.clone(), &[size])?;
    let sel = reshape(selected, &[n])?;
    let scatter = |mode: ScatterMode, upd: Tensor| {
        bind1(
            &Prim::Scatter {
                axis: 0,
                mode,
                batch: 0,
            },
            vec![flat.clone(), sel.clone(), upd],
        )
    };
    let combine = |cur: Tensor, x: Tensor| -> Result<Tensor> {
        match op {
            Op::Mul => binary(BinaryOp::Mul, cur, x),
            Op::Div => binary(BinaryOp::Div, cur, x),
            Op::Pow => binary(BinaryOp::Pow, cur, x),
            Op::Min => binary(BinaryOp::Min, cur, x),
            _ => binary(BinaryOp::Max, cur, x),
        }
    };
    let new_flat = match op {
        Op::Set => scatter(ScatterMode::Set, vals)?,
        Op::Add => scatter(ScatterMode::Add, vals)?,
        _ if n == 0 => flat.clone(),
        _ if distinct(&sel) => {
            let cur = bind1(
                &Prim::Gather { axis: 0, batch: 0 },
                vec![flat.clone(), sel.clone()],
            )?;
            scatter(ScatterMode::Set, combine(cur, vals)?)?
        }
        _ => {
            // Repeated (or unknown) positions: a one-hot table [n, size]
            // reduced over the updates, so each position combines all of its.
            let hit = binary(
                BinaryOp::Eq,
                broadcast_to(reshape(sel.clone(), &[n, 1])?, &[n, size])?,
                iota(vec![n, size], 1)?,
            )?;
            let col = broadcast_to(reshape(vals, &[n, 1])?, &[n, size])?;
            let (other, reduce) = match op {
                Op::Min | Op::Max => (
                    broadcast_to(reshape(flat.clone(), &[1, size])?, &[n, size])?,
                    if op == Op::Min {
                        ReduceOp::Min
                    } else {
                        ReduceOp::Max
                    },
                ),
                _ => (
                    broadcast_to(to_array_as(&Value::Int(1), a.dtype())?, &[n, size])?,
                    ReduceOp::Prod,
                ),
            };
            let table = bind1(&Prim::Select, vec![hit, col, other])?;
            let reduced = bind1(
                &Prim::Reduce {
                    op: reduce,
                    axes: vec![0],
                },
                vec![table],
            )?;
            match op {
                Op::Min | Op::Max => reduced,
                // Repeated factors multiply: x * v1 * v2, x / (v1 * v2), x ** (v1 * v2).
                _ => combine(flat.clone(), reduced)?,
            }
        }
    };
    let out = reshape(new_flat, target.shape())?;
    if padded.iter().all(|&p| !p) {
        return Ok(out);
    }
    bind1(
        &Prim::Slice {
            start: vec![0; a.ndim()],
            limit: a.shape().to_vec(),
            stride: vec![1; a.ndim()],
        },
        vec![out],
    )
}
