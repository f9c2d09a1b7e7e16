//! NumPy indexing (`x[1:, None, idx]`) and functional update (`x[i] = v`), over primitives.
//!
//! Basic indices (ints, slices, `None`, `...`) become `slice`/`rev`/`reshape`;
//! advanced ones (integer or boolean arrays, lists) become one `gather` on a
//! flattened group of axes, laid out as NumPy does. An update computes which
//! flat positions the same index selects (by indexing an `iota`) and scatters.

use crate::error::{Error, Result};
use crate::numpy::{broadcast_to, reshape, to_array_as, to_tensor, transpose, ty};
use crate::prim::{bind1, Prim};
use crate::tensor::Tensor;
use crate::value::Value;
use arr_kernels::{broadcast_shapes, Array, Buffer, DType, ScatterMode};

#[derive(Clone, Debug)]
enum Item {
    Int(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    NewAxis,
    Ellipsis,
    Adv(Tensor),
}

fn parse_item(v: &Value) -> Result<Vec<Item>> {
    Ok(match v {
        Value::Int(i) => vec![Item::Int(*i)],
        Value::Bool(_) => return Err(Error::index_error("a bool scalar is not a valid index")),
        Value::None => vec![Item::NewAxis],
        Value::Ellipsis => vec![Item::Ellipsis],
        Value::Slice(s) => vec![Item::Slice(s.start, s.stop, s.step)],
        Value::Array(Tensor::Concrete(a)) if a.ndim() == 0 && a.dtype().is_int() => {
            vec![Item::Int(a.get_i64(0)?)]
        }
        Value::Array(_) | Value::List(_) => {
            let a = to_tensor(v)?;
            if a.dtype() == DType::Bool {
                nonzero(&a)?.into_iter().map(Item::Adv).collect()
            } else if a.dtype().is_int() {
                vec![Item::Adv(a)]
            } else if a.is_empty() {
                vec![Item::Adv(crate::numpy::convert(a, DType::I32)?)]
            } else {
                return Err(Error::index_error(format!("arrays used as indices must be of integer or bool type, got {}", ty(&a))));
            }
        }
        other => {
            return Err(Error::index_error(format!(
                "only integers, slices, None, ..., and integer or bool arrays are valid indices, got {}",
                other.type_name()
            )))
        }
    })
}

/// The integer coordinates of the true elements of a bool array, one i32 array per axis.
fn nonzero(mask: &Tensor) -> Result<Vec<Tensor>> {
    // JAX's class for a boolean mask that is not concrete (`x[x > 0]` in jit).
    let mask = mask.concrete().map_err(|e| match e.kind {
        crate::ErrorKind::ConcretizationError => e.as_class("NonConcreteBooleanIndexError"),
        _ => e,
    })?;
    let buf = mask.buffer()?;
    let Buffer::Bool(bits) = &*buf else {
        unreachable!("checked bool")
    };
    let strides = mask.strides();
    let mut coords: Vec<Vec<i32>> = vec![Vec::new(); mask.ndim()];
    for (flat, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        let mut rest = flat;
        for (axis, &s) in strides.iter().enumerate() {
            coords[axis].push((rest / s) as i32);
            rest %= s;
        }
    }
    Ok(coords
        .into_iter()
        .map(|c| Array::new(&[c.len()], Buffer::I32(c)).into())
        .collect())
}

/// Python's `slice.indices`: (start, count, step) for a dimension of `len`.
pub(crate) fn slice_range(
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
    len: usize,
) -> Result<(i64, usize, i64)> {
    let n = len as i64;
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(Error::value_error("slice step cannot be zero"));
    }
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let (start, stop) = if step > 0 {
        (
            start.map_or(0, |s| clamp(norm(s), 0, n)),
            stop.map_or(n, |s| clamp(norm(s), 0, n)),
        )
    } else {
        (
            start.map_or(n - 1, |s| clamp(norm(s), -1, n - 1)),
            stop.map_or(-1, |s| clamp(norm(s), -1, n - 1)),
        )
    };
    let count = if step > 0 {
        (stop - start).max(0).div_euclid(1) as usize
    } else {
        (start - stop).max(0) as usize
    };
    let count = count.div_ceil(step.unsigned_abs() as usize);
    Ok((start, count, step))
}

fn normalize_int(i: i64, len: usize, axis: usize) -> Result<usize> {
    let n = len as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(Error::index_error(format!(
            "index {i} is out of bounds for axis {axis} with size {len}"
        )));
    }
    Ok(j as usize)
}

/// Expand `...`, insert new axes, and pad with full slices so that the
/// result has one item per axis of the (reshaped) array.
fn normalize(a: &Tensor, idx: &Value) -> Result<(Tensor, Vec<Item>)> {
    let raw: Vec<Value> = match idx {
        Value::Tuple(t) => t.to_vec(),
        other => vec![other.clone()],
    };
    let mut items = Vec::new();
    // Boolean masks: where their coordinate arrays start in `items`, and
    // the mask's shape, which must be that of the axes it indexes.
    let mut masks: Vec<(usize, Vec<usize>)> = Vec::new();
    for v in &raw {
        if let Value::Array(m) = v {
            if m.dtype() == DType::Bool && m.ndim() > 0 {
                masks.push((items.len(), m.shape().to_vec()));
            }
        }
        items.extend(parse_item(v)?);
    }
    let consumed = items
        .iter()
        .filter(|i| !matches!(i, Item::NewAxis | Item::Ellipsis))
        .count();
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(Error::index_error(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    if consumed > a.ndim() {
        return Err(Error::index_error(format!(
            "too many indices for array: {} is {}-dimensional, but {consumed} were indexed",
            ty(a),
            a.ndim()
        )));
    }
    let fill = a.ndim() - consumed;
    let ellipsis = items.iter().position(|i| matches!(i, Item::Ellipsis));
    for (start, mask) in &masks {
        // The axis the mask starts at: the indices before it that take one.
        let before = items[..*start]
            .iter()
            .filter(|i| !matches!(i, Item::NewAxis | Item::Ellipsis))
            .count()
            + if ellipsis.is_some_and(|e| e < *start) {
                fill
            } else {
                0
            };
        let dims = &a.shape()[before..before + mask.len()];
        if dims != &mask[..] {
            return Err(Error::index_error(format!(
                "boolean index did not match indexed array along axis {before}: the array's axes are {dims:?} but the boolean index's are {mask:?}"
            )));
        }
    }
    let mut expanded = Vec::new();
    let mut saw_ellipsis = false;
    for it in items {
        if let Item::Ellipsis = it {
            saw_ellipsis = true;
            expanded.extend(std::iter::repeat_n(Item::Slice(None, None, None), fill));
        } else {
            expanded.push(it);
        }
    }
    if !saw_ellipsis {
        expanded.extend(std::iter::repeat_n(Item::Slice(None, None, None), fill));
    }
    // New axes: reshape with size-1 axes and index them with full slices.
    let mut shape = Vec::new();
    let mut dims = a.shape().iter();
    let mut out = Vec::new();
    for it in expanded {
        match it {
            Item::NewAxis => {
                shape.push(1);
                out.push(Item::Slice(None, None, None));
            }
            other => {
                shape.push(*dims.next().expect("counted above"));
                out.push(other);
            }
        }
    }
    Ok((reshape(a.clone(), &shape)?, out))
}

/// An integer index into a dimension split by an Explicit mesh axis picks
/// one device's element: JAX's types reject it (reshard first).
fn check_sharded_ints(x: &Tensor, items: &[Item]) -> Result<()> {
    let Some(p) = x.placement() else {
        return Ok(());
    };
    for (d, it) in items.iter().enumerate() {
        let explicit = p
            .spec
            .get(d)
            .is_some_and(|axes| axes.iter().any(|&a| p.mesh.is_explicit(a)));
        if explicit && matches!(it, Item::Int(_)) {
            return Err(Error::new(
                crate::ErrorKind::ShardingTypeError,
                format!(
                    "indexing dimension {d} of {} with an integer: that dimension is split \
                     over Explicit mesh axes; reshard it to P() (or index inside shard_map)",
                    crate::sharding::ArrayTypeValue {
                        shape: x.shape().to_vec(),
                        dtype: x.dtype(),
                        placement: Some(p.clone()),
                        key: false,
                        weak: false,
                    }
                    .text()
                ),
            ));
        }
    }
    Ok(())
}

/// Apply the slices (and, when `drop_ints`, the integer indices) of `items`;
/// items that are advanced indices keep their whole axis.
fn apply_basic(a: Tensor, items: &[Item]) -> Result<Tensor> {
    let n = a.ndim();
    let (mut start, mut limit, mut stride) = (vec![0; n], a.shape().to_vec(), vec![1; n]);
    let mut reversed = Vec::new();
    let mut out_shape = Vec::new();
    for (axis, it) in items.iter().enumerate() {
        let len = a.shape()[axis];
        match it {
            Item::Int(i) => {
                let j = normalize_int(*i, len, axis)?;
                start[axis] = j;
                limit[axis] = j + 1;
            }
            Item::Slice(s, e, st) => {
                let (first, count, step) = slice_range(*s, *e, *st, len)?;
                if count == 0 {
                    start[axis] = 0;
                    limit[axis] = 0;
                } else if step > 0 {
                    start[axis] = first as usize;
                    limit[axis] = first as usize + (count - 1) * step as usize + 1;
                    stride[axis] = step as usize;
                } else {
                    let low = first + (count as i64 - 1) * step;
                    start[axis] = low as usize;
                    limit[axis] = first as usize + 1;
                    stride[axis] = step.unsigned_abs() as usize;
                    reversed.push(axis);
                }
                out_shape.push(count);
            }
            _ => out_shape.push(len),
        }
    }
    let whole = start.iter().all(|&s| s == 0)
        && limit.as_slice() == a.shape()
        && stride.iter().all(|&s| s == 1);
    let mut r = if whole {
        a
    } else {
        bind1(
            &Prim::Slice {
                start,
                limit,
                stride,
            },
            vec![a],
        )?
    };
    if !reversed.is_empty() {
        r = bind1(&Prim::Rev(reversed), vec![r])?;
    }
    reshape(r, &out_shape)
}

/// What an integer index past either end of its axis does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bounds {
    /// An IndexError naming the index and the axis (NumPy's and arr's rule).
    Check,
    /// The nearest element (JAX's rule: a negative index counts from the
    /// end first, then the index is clamped into the axis).
    Clamp,
}

/// `a[idx]` with NumPy semantics.
pub fn get_index(a: &Tensor, idx: &Value) -> Result<Tensor> {
    get_index_as(a, idx, Bounds::Check)
}

/// `a[idx]`, with out-of-range integer indices treated as `bounds` says.
pub fn get_index_as(a: &Tensor, idx: &Value, bounds: Bounds) -> Result<Tensor> {
    let (x, mut items) = normalize(a, idx)?;
    if bounds == Bounds::Clamp {
        if crate::transform::checkify::index_checks() {
            check_items(&items, x.shape())?;
        }
        clamp_items(&mut items, x.shape())?;
    }
    check_sharded_ints(&x, &items)?;
    if !items.iter().any(|i| matches!(i, Item::Adv(_))) {
        return apply_basic(x, &items);
    }
    // Integer scalars next to arrays are advanced indices too (NumPy's rule).
    let items: Vec<Item> = items
        .into_iter()
        .map(|it| {
            if let Item::Int(i) = it {
                Item::Adv(Array::new(&[], Buffer::I64(vec![i])).into())
            } else {
                it
            }
        })
        .collect();
    let adv_axes: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| matches!(it, Item::Adv(_)))
        .map(|(i, _)| i)
        .collect();
    let sliced = apply_basic(x, &items)?;
    let shape = sliced.shape().to_vec();
    // Broadcast the index arrays together and flatten them into one index.
    let mut bshape: Vec<usize> = Vec::new();
    for it in &items {
        if let Item::Adv(ix) = it {
            bshape = broadcast_shapes(&bshape, ix.shape())
                .ok_or_else(|| {
                    Error::index_error(format!("shape mismatch: indexing arrays could not be broadcast together ({:?} and {:?})", bshape, ix.shape()))
                })?
                .to_vec();
        }
    }
    let group: usize = adv_axes.iter().map(|&ax| shape[ax]).product();
    let idx_dtype = if group > i32::MAX as usize {
        DType::I64
    } else {
        DType::I32
    };
    let mut flat: Option<Tensor> = None;
    let mut stride = 1usize;
    for &ax in adv_axes.iter().rev() {
        let Item::Adv(ix) = &items[ax] else {
            unreachable!()
        };
        let checked = check_indices(ix, shape[ax], ax, idx_dtype)?;
        let scaled = if stride == 1 {
            checked
        } else {
            mul_scalar(checked, stride as i64)?
        };
        flat = Some(match flat {
            None => scaled,
            Some(f) => bind1(&Prim::Binary(arr_kernels::BinaryOp::Add), vec![f, scaled])?,
        });
        stride *= shape[ax];
    }
    let flat = broadcast_to(flat.expect("at least one advanced index"), &bshape)?;
    // Bring the advanced axes to the front, merge them, gather.
    let rest: Vec<usize> = (0..shape.len()).filter(|i| !adv_axes.contains(i)).collect();
    let perm: Vec<usize> = adv_axes.iter().chain(&rest).copied().collect();
    let moved = transpose(sliced, &perm)?;
    let mut merged_shape = vec![group];
    merged_shape.extend(rest.iter().map(|&i| shape[i]));
    let merged = reshape(moved, &merged_shape)?;
    let gathered = bind1(&Prim::Gather { axis: 0, batch: 0 }, vec![merged, flat])?;
    // NumPy: consecutive advanced axes keep their place; otherwise they lead.
    let consecutive = adv_axes.windows(2).all(|w| w[1] == w[0] + 1);
    if consecutive && adv_axes[0] > 0 {
        let nb = bshape.len();
        let p = adv_axes[0];
        let r = gathered.ndim();
        let perm: Vec<usize> = (nb..nb + p).chain(0..nb).chain(nb + p..r).collect();
        return transpose(gathered, &perm);
    }
    Ok(gathered)
}

/// Clamp the integer indices (scalars, and concrete index arrays) of
/// `items` into their axes of `shape`; traced index arrays are clamped by
/// the gather itself.
fn clamp_items(items: &mut [Item], shape: &[usize]) -> Result<()> {
    for (it, &len) in items.iter_mut().zip(shape) {
        if len == 0 {
            continue;
        }
        let n = len as i64;
        let clamp = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n - 1);
        match it {
            Item::Int(i) => *i = clamp(*i),
            Item::Adv(ix) => {
                if let Some(c) = ix.as_concrete() {
                    let b = c.buffer()?;
                    if (0..c.len()).any(|k| !(-n..n).contains(&b.get_i64(k))) {
                        let v = (0..c.len()).map(|k| clamp(b.get_i64(k))).collect();
                        *ix = Array::new(c.shape(), Buffer::I64(v)).into();
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `checkify`'s index checks: each integer index (scalar or array) must
/// lie in `-len..len` of its axis, before JAX's clamping hides it.
fn check_items(items: &[Item], shape: &[usize]) -> Result<()> {
    for (axis, it) in items.iter().enumerate() {
        let ix = match it {
            Item::Int(i) => Array::new(&[], Buffer::I64(vec![*i])).into(),
            Item::Adv(ix) => ix.clone(),
            _ => continue,
        };
        crate::transform::checkify::check_index(&ix, shape, axis)?;
    }
    Ok(())
}

fn mul_scalar(a: Tensor, k: i64) -> Result<Tensor> {
    let dtype = a.dtype();
    bind1(
        &Prim::Binary(arr_kernels::BinaryOp::Mul),
        vec![a, to_array_as(&Value::Int(k), dtype)?],
    )
}

/// Bounds-check an index array and make negative entries count from the end.
/// Traced indices cannot be checked; as in JAX, out-of-bounds ones are
/// clamped by the gather.
pub fn check_indices(ix: &Tensor, len: usize, axis: usize, dtype: DType) -> Result<Tensor> {
    let n = len as i64;
    if ix.as_concrete().is_none() && crate::jit::auto::tracing() {
        return Err(crate::jit::auto::not_pure(
            "indexes with an array of indices: the interpreter checks their bounds, \
             compiled code would clamp them",
        ));
    }
    let mut any_negative = ix.as_concrete().is_none();
    if let Some(c) = ix.as_concrete() {
        let b = c.buffer()?;
        for i in 0..c.len() {
            let v = b.get_i64(i);
            if v < -n || v >= n {
                return Err(Error::index_error(format!(
                    "index {v} is out of bounds for axis {axis} with size {len}"
                )));
            }
            any_negative |= v < 0;
        }
    }
    let ix = crate::numpy::convert(ix.clone(), dtype)?;
    if !any_negative {
        return Ok(ix);
    }
    let zero = to_array_as(&Value::Int(0), dtype)?;
    let neg = bind1(
        &Prim::Binary(arr_kernels::BinaryOp::Lt),
        vec![ix.clone(), zero],
    )?;
    let wrapped = bind1(
        &Prim::Binary(arr_kernels::BinaryOp::Add),
        vec![ix.clone(), to_array_as(&Value::Int(n), dtype)?],
    )?;
    bind1(&Prim::Select, vec![neg, wrapped, ix])
}

/// `a[idx] = v` as a new array (arrays are immutable; the name is rebound).
pub fn set_index(a: &Tensor, idx: &Value, v: &Value) -> Result<Tensor> {
    let size = a.len();
    let pos_dtype = if size > i32::MAX as usize {
        DType::I64
    } else {
        DType::I32
    };
    let positions = reshape(
        bind1(
            &Prim::Iota {
                dtype: pos_dtype,
                shape: vec![size],
                dim: 0,
            },
            Vec::<Tensor>::new(),
        )?,
        a.shape(),
    )?;
    let selected = get_index(&positions, idx)?;
    let value = to_array_as(v, a.dtype())?;
    if broadcast_shapes(value.shape(), selected.shape()).as_deref() != Some(selected.shape()) {
        return Err(Error::shape_error(format!(
            "cannot assign {} to a selection of shape {:?} of {}",
            ty(&value),
            selected.shape(),
            ty(a)
        )));
    }
    let value = broadcast_to(value, selected.shape())?;
    let n = selected.len();
    let flat = bind1(
        &Prim::Scatter {
            axis: 0,
            mode: ScatterMode::Set,
            batch: 0,
        },
        vec![
            reshape(a.clone(), &[size])?,
            reshape(selected, &[n])?,
            reshape(value, &[n])?,
        ],
    )?;
    reshape(flat, a.shape())
}
