//! Shape operations: reshape, transpose and friends, joining and splitting,
//! flips and rolls, `take`/`take_along_axis`, sorting.

use crate::args::*;
use crate::Registry;
use arr_kernels::{Array, DType};
use arr_runtime::index::get_index;
use arr_runtime::numpy::{self, normalize_axis, ty};
use arr_runtime::prim::{bind1, check_alloc, Prim};
use arr_runtime::value::SliceValue;
use arr_runtime::Tensor;
use arr_runtime::{display, Error, ErrorKind, Interp, NativeFn, Result, Value};
use std::rc::Rc;

pub(crate) fn register(r: &mut Registry) {
    for (sig, doc, f) in [
        (
            "reshape(x, shape)",
            "The elements of x in a new shape (one entry may be -1).",
            reshape as NativeFn,
        ),
        (
            "transpose(x, axes=None)",
            "Permute the axes (reverse them if axes is None).",
            transpose,
        ),
        ("swapaxes(x, axis1, axis2)", "Exchange two axes.", swapaxes),
        (
            "moveaxis(x, source, destination)",
            "Move one axis to a new position.",
            moveaxis,
        ),
        (
            "expand_dims(x, axis)",
            "Insert a size-1 axis at position axis.",
            expand_dims,
        ),
        (
            "squeeze(x, axis=None)",
            "Remove size-1 axes (all, or the given ones).",
            squeeze,
        ),
        ("ravel(x)", "The elements as a 1-D array.", ravel),
        (
            "broadcast_to(x, shape)",
            "x broadcast to shape.",
            broadcast_to,
        ),
        (
            "concatenate(arrays, axis=0)",
            "Join arrays along an existing axis.",
            concatenate,
        ),
        (
            "stack(arrays, axis=0)",
            "Join arrays along a new axis.",
            stack,
        ),
        ("vstack(arrays)", "Stack arrays vertically (rows).", vstack),
        (
            "hstack(arrays)",
            "Stack arrays horizontally (columns).",
            hstack,
        ),
        (
            "split(x, indices_or_sections, axis=0)",
            "Split into equal sections or at the given indices.",
            split,
        ),
        (
            "tile(x, reps)",
            "Repeat the whole array reps times along each axis.",
            tile,
        ),
        (
            "repeat(x, repeats, axis=None)",
            "Repeat each element repeats times (flattened if axis is None).",
            repeat,
        ),
        (
            "flip(x, axis=None)",
            "Reverse the order of elements along axis (all axes if None).",
            flip,
        ),
        (
            "roll(x, shift, axis=None)",
            "Shift elements cyclically along axis (flattened if None).",
            roll,
        ),
        (
            "take(x, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False, fill_value=None)",
            "Elements at indices along axis (of the flattened array if None). mode: 'fill' (JAX's \
             default in a program that imports jax: an index out of range gives fill_value, NaN for \
             floats), 'clip' (clamped), 'wrap' (modulo the axis); arr's default wraps negative \
             indices once and clamps.",
            take,
        ),
        (
            "take_along_axis(arr, indices, axis)",
            "Pick values with an index array that matches arr's shape along axis.",
            take_along_axis,
        ),
        (
            "sort(x, axis=-1)",
            "Sorted copy along axis (NaNs last).",
            sort,
        ),
        (
            "argsort(x, axis=-1, kind=None, order=None, stable=True, descending=False)",
            "Indices that sort x along axis (stable; descending keeps equal elements in order).",
            argsort,
        ),
        (
            "diag(v, k=0)",
            "The k-th diagonal of a matrix, or a matrix with v on its k-th diagonal.",
            diag,
        ),
        (
            "tril(x, k=0)",
            "Lower triangle: zeros above the k-th diagonal.",
            |_, a| triangle(&a, true),
        ),
        (
            "triu(x, k=0)",
            "Upper triangle: zeros below the k-th diagonal.",
            |_, a| triangle(&a, false),
        ),
        ("trace(x)", "Sum of the main diagonal.", trace),
    ] {
        r.func(sig, doc, f);
    }
    r.method(
        "array",
        "reshape(self, *shape)",
        "The elements in a new shape: x.reshape(2, 3) or x.reshape((2, 3)).",
        reshape_method,
    );
    r.method(
        "array",
        "transpose(self, *axes)",
        "Permute the axes: x.transpose(1, 0).",
        transpose_method,
    );
    r.method(
        "array",
        "flatten(self)",
        "The elements as a 1-D array.",
        ravel,
    );
    r.method(
        "array",
        "ravel(self)",
        "The elements as a 1-D array.",
        ravel,
    );
    r.method(
        "array",
        "squeeze(self, axis=None)",
        "Remove size-1 axes.",
        squeeze,
    );
    r.method(
        "array",
        "swapaxes(self, axis1, axis2)",
        "Exchange two axes.",
        swapaxes,
    );
    r.method(
        "array",
        "take(self, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False, fill_value=None)",
        "Elements at indices along axis (see `take` for mode).",
        take,
    );
    r.method(
        "array",
        "sort(self, axis=-1)",
        "Sorted copy along axis.",
        sort,
    );
    r.method(
        "array",
        "argsort(self, axis=-1, kind=None, order=None, stable=True, descending=False)",
        "Indices that sort along axis.",
        argsort,
    );
    r.method(
        "array",
        "repeat(self, repeats, axis=None)",
        "Repeat each element.",
        repeat,
    );
}

fn axis_arg(v: &Value, ndim: usize) -> Result<usize> {
    normalize_axis(int_arg("axis", v)?, ndim)
}

fn do_reshape(x: Tensor, dims: &[Value]) -> Result<Value> {
    let dims: Vec<i64> = dims
        .iter()
        .map(|d| int_arg("shape entry", d))
        .collect::<Result<_>>()?;
    let shape = numpy::infer_shape(x.len(), &dims, &x)?;
    ok(numpy::reshape(x, &shape)?)
}

fn reshape(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dims = match &a[1] {
        Value::List(_) | Value::Tuple(_) => numpy::sequence_items(&a[1])?,
        v => vec![v.clone()],
    };
    do_reshape(array_arg(&a[0])?, &dims)
}

fn reshape_method(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut dims = numpy::sequence_items(&a[1])?;
    if let [one @ (Value::List(_) | Value::Tuple(_))] = dims.as_slice() {
        dims = numpy::sequence_items(one)?;
    }
    do_reshape(array_arg(&a[0])?, &dims)
}

fn do_transpose(x: Tensor, axes: Option<Vec<Value>>) -> Result<Value> {
    let perm: Vec<usize> = match axes {
        None => (0..x.ndim()).rev().collect(),
        Some(axes) => axes
            .iter()
            .map(|v| axis_arg(v, x.ndim()))
            .collect::<Result<_>>()?,
    };
    ok(numpy::transpose(x, &perm)?)
}

fn transpose(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let axes = match &a[1] {
        Value::None => None,
        v => Some(numpy::sequence_items(v)?),
    };
    do_transpose(array_arg(&a[0])?, axes)
}

fn transpose_method(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mut axes = numpy::sequence_items(&a[1])?;
    if let [one @ (Value::List(_) | Value::Tuple(_))] = axes.as_slice() {
        axes = numpy::sequence_items(one)?;
    }
    do_transpose(
        array_arg(&a[0])?,
        if axes.is_empty() { None } else { Some(axes) },
    )
}

fn swapaxes(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let (i, j) = (axis_arg(&a[1], x.ndim())?, axis_arg(&a[2], x.ndim())?);
    let mut perm: Vec<usize> = (0..x.ndim()).collect();
    perm.swap(i, j);
    ok(numpy::transpose(x, &perm)?)
}

fn moveaxis(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let (src, dst) = (axis_arg(&a[1], x.ndim())?, axis_arg(&a[2], x.ndim())?);
    let mut perm: Vec<usize> = (0..x.ndim()).filter(|&i| i != src).collect();
    perm.insert(dst, src);
    ok(numpy::transpose(x, &perm)?)
}

fn expand_dims(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axes = match &a[1] {
        Value::List(_) | Value::Tuple(_) => numpy::sequence_items(&a[1])?,
        v => vec![v.clone()],
    };
    let out_ndim = x.ndim() + axes.len();
    let mut axes: Vec<usize> = axes
        .iter()
        .map(|v| axis_arg(v, out_ndim))
        .collect::<Result<_>>()?;
    axes.sort_unstable();
    if axes.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::value_error(format!(
            "expand_dims: repeated axis in {}",
            display::repr(&a[1])
        )));
    }
    let mut shape: Vec<usize> = x.shape().to_vec();
    for ax in axes {
        shape.insert(ax, 1);
    }
    ok(numpy::reshape(x, &shape)?)
}

fn squeeze(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axes: Vec<usize> = match &a[1] {
        Value::None => (0..x.ndim()).filter(|&i| x.shape()[i] == 1).collect(),
        v => numpy::parse_axes(v, x.ndim())?,
    };
    for &ax in &axes {
        if x.shape()[ax] != 1 {
            return Err(Error::shape_error(format!(
                "cannot squeeze axis {ax} of {}: its size is not 1",
                ty(&x)
            )));
        }
    }
    let shape: Vec<usize> = (0..x.ndim())
        .filter(|i| !axes.contains(i))
        .map(|i| x.shape()[i])
        .collect();
    ok(numpy::reshape(x, &shape)?)
}

fn ravel(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let n = x.len();
    ok(numpy::reshape(x, &[n])?)
}

fn broadcast_to(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    ok(numpy::broadcast_to(
        array_arg(&a[0])?,
        &numpy::parse_shape(&a[1])?,
    )?)
}

/// The items of a sequence of array-likes, promoted to one dtype.
fn array_list(v: &Value) -> Result<Vec<Tensor>> {
    let items = match v {
        Value::Array(x) if x.ndim() > 0 => arr_runtime::eval::iter_items(v)?,
        _ => numpy::sequence_items(v)?,
    };
    if items.is_empty() {
        return Err(Error::value_error("need at least one array to concatenate"));
    }
    let refs: Vec<&Value> = items.iter().collect();
    numpy::promote(&refs)
}

fn concat(arrays: Vec<Tensor>, axis: usize) -> Result<Tensor> {
    if arrays.len() == 1 {
        return Ok(arrays.into_iter().next().unwrap());
    }
    bind1(&Prim::Concatenate { axis }, arrays)
}

fn concatenate(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let arrays = array_list(&a[0])?;
    if arrays[0].ndim() == 0 {
        return Err(Error::shape_error(
            "zero-dimensional arrays cannot be concatenated",
        ));
    }
    let axis = match &a[1] {
        Value::None => {
            let flat = arrays
                .into_iter()
                .map(|x| {
                    let n = x.len();
                    numpy::reshape(x, &[n])
                })
                .collect::<Result<_>>()?;
            return ok(concat(flat, 0)?);
        }
        v => axis_arg(v, arrays[0].ndim())?,
    };
    ok(concat(arrays, axis)?)
}

fn stack_arrays(arrays: Vec<Tensor>, axis: &Value) -> Result<Tensor> {
    let first = arrays[0].shape().to_vec();
    if let Some(bad) = arrays.iter().find(|x| x.shape() != first.as_slice()) {
        return Err(Error::shape_error(format!(
            "stack: all arrays must have the same shape, got {} and {}",
            ty(&arrays[0]),
            ty(bad)
        )));
    }
    let axis = normalize_axis(int_arg("axis", axis)?, first.len() + 1)?;
    let mut shape = first.clone();
    shape.insert(axis, 1);
    let expanded = arrays
        .into_iter()
        .map(|x| numpy::reshape(x, &shape))
        .collect::<Result<_>>()?;
    concat(expanded, axis)
}

fn stack(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let arrays = array_list(&a[0])?;
    // Typed keys stack into typed keys: along their keys' axes (the words
    // axis stays last).
    if !arrays.is_empty() && arrays.iter().all(Tensor::is_key) {
        let rank = arrays[0].ndim() - 1;
        let axis = normalize_axis(int_arg("axis", &a[1])?, rank + 1)?;
        let out = stack_arrays(arrays, &Value::Int(axis as i64))?;
        return Ok(Value::Array(out.keyed(true)));
    }
    ok(stack_arrays(arrays, &a[1])?)
}

fn at_least(x: Tensor, n: usize) -> Result<Tensor> {
    match (x.ndim(), n) {
        (0, 2) => numpy::reshape(x, &[1, 1]),
        (0, 1) => numpy::reshape(x, &[1]),
        (1, 2) => {
            let len = x.len();
            numpy::reshape(x, &[1, len])
        }
        _ => Ok(x),
    }
}

fn vstack(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let arrays = array_list(&a[0])?
        .into_iter()
        .map(|x| at_least(x, 2))
        .collect::<Result<_>>()?;
    ok(concat(arrays, 0)?)
}

fn hstack(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let arrays: Vec<Tensor> = array_list(&a[0])?
        .into_iter()
        .map(|x| at_least(x, 1))
        .collect::<Result<_>>()?;
    let axis = if arrays[0].ndim() == 1 { 0 } else { 1 };
    ok(concat(arrays, axis)?)
}

/// `x[start:stop]` along one axis.
fn slice_axis(x: &Tensor, axis: usize, start: usize, stop: usize) -> Result<Tensor> {
    let mut idx: Vec<Value> = vec![
        Value::Slice(Rc::new(SliceValue {
            start: None,
            stop: None,
            step: None
        }));
        x.ndim()
    ];
    idx[axis] = Value::Slice(Rc::new(SliceValue {
        start: Some(start as i64),
        stop: Some(stop as i64),
        step: None,
    }));
    get_index(x, &Value::tuple(idx))
}

fn split(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axis = axis_arg(&a[2], x.ndim())?;
    let n = x.shape()[axis];
    let bounds: Vec<usize> = match &a[1] {
        Value::List(_) | Value::Tuple(_) => {
            let mut b = vec![0];
            for v in numpy::sequence_items(&a[1])? {
                b.push((int_arg("index", &v)?.max(0) as usize).min(n));
            }
            b.push(n);
            b
        }
        v => {
            let k = int_arg("sections", v)?;
            if k <= 0 || n % k as usize != 0 {
                return Err(Error::shape_error(format!(
                    "array split does not result in an equal division: {n} into {k}"
                )));
            }
            // A list of k arrays (an empty array splits into any number).
            arr_runtime::value::check_items("list", &[k as usize + 1])?;
            (0..=k as usize).map(|i| i * n / k as usize).collect()
        }
    };
    let parts = bounds
        .windows(2)
        .map(|w| slice_axis(&x, axis, w[0], w[1].max(w[0])).map(Value::Array))
        .collect::<Result<_>>()?;
    Ok(Value::list(parts))
}

fn tile(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let reps = numpy::parse_shape(&a[1])?;
    let nd = x.ndim().max(reps.len());
    let mut shape = vec![1; nd - x.ndim()];
    shape.extend_from_slice(x.shape());
    let mut reps_full = vec![1; nd - reps.len()];
    reps_full.extend(reps);
    // x as (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...) and each
    // pair merged: one copy, whatever the counts (no list of r copies).
    let wide: Vec<usize> = reps_full
        .iter()
        .zip(&shape)
        .flat_map(|(&r, &s)| [r, s])
        .collect();
    let tiled: Option<Vec<usize>> = reps_full
        .iter()
        .zip(&shape)
        .map(|(&r, &s)| r.checked_mul(s))
        .collect();
    match &tiled {
        Some(t) => check_alloc(t, x.dtype())?,
        None => check_alloc(&wide, x.dtype())?,
    }
    let pairs: Vec<usize> = shape.iter().flat_map(|&s| [1, s]).collect();
    let out = bind1(
        &Prim::BroadcastInDim {
            shape: wide,
            dims: (0..2 * nd).collect(),
        },
        vec![numpy::reshape(x, &pairs)?],
    )?;
    ok(numpy::reshape(out, &tiled.expect("checked above"))?)
}

fn repeat(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (x, axis) = flatten_or_axis(array_arg(&a[0])?, &a[2])?;
    let n = x.shape()[axis];
    let counts: Vec<usize> = match &a[1] {
        Value::Int(k) => vec![(*k).max(0) as usize; n],
        v => {
            let c = array_arg(v)?;
            let c = c.concrete()?;
            if c.len() != n {
                return Err(Error::shape_error(format!(
                    "repeat: {} repeats for an axis of size {n}",
                    c.len()
                )));
            }
            let b = c.buffer()?;
            (0..n).map(|i| b.get_i64(i).max(0) as usize).collect()
        }
    };
    // The result's size, checked before the index list is built.
    let mut out_shape = x.shape().to_vec();
    out_shape[axis] = counts.iter().fold(0usize, |n, &c| n.saturating_add(c));
    check_alloc(&out_shape, x.dtype())?;
    check_alloc(&[out_shape[axis]], DType::I32)?;
    let idx: Vec<i32> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i as i32, c))
        .collect();
    let idx = Array::new(&[idx.len()], arr_kernels::Buffer::I32(idx)).into();
    ok(bind1(&Prim::Gather { axis, batch: 0 }, vec![x, idx])?)
}

fn flip(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axes = numpy::parse_axes(&a[1], x.ndim())?;
    ok(bind1(&Prim::Rev(axes), vec![x])?)
}

fn roll(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let shape = x.shape().to_vec();
    let (y, axis) = flatten_or_axis(x, &a[2])?;
    let n = y.shape()[axis];
    if n == 0 {
        return ok(numpy::reshape(y, &shape)?);
    }
    let k = int_arg("shift", &a[1])?.rem_euclid(n as i64) as usize;
    let rolled = if k == 0 {
        y
    } else {
        concat(
            vec![
                slice_axis(&y, axis, n - k, n)?,
                slice_axis(&y, axis, 0, n - k)?,
            ],
            axis,
        )?
    };
    ok(numpy::reshape(rolled, &shape)?)
}

fn take(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let (x, axis) = flatten_or_axis(array_arg(&a[0])?, &a[2])?;
    let idx = array_arg(&a[1])?;
    if !idx.dtype().is_int() {
        return Err(Error::type_error(format!(
            "take: indices must be integers, got {}",
            ty(&idx)
        )));
    }
    if x.shape()[axis] == 0 && !idx.is_empty() {
        return Err(Error::index_error(
            "Cannot do a non-empty jnp.take() from an empty axis.",
        ));
    }
    let n = Value::Int(x.shape()[axis] as i64);
    let mode = match &a[4] {
        Value::None if interp.jax_rules => "fill",
        Value::None => "",
        Value::Str(s) => s.as_str(),
        other => {
            return Err(Error::type_error(format!(
                "take: mode must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let idx_v = Value::Array(idx.clone());
    match mode {
        // JAX's modes: out of range, the fill value (negative indices
        // counted from the end first); clamped; modulo the axis.
        "fill" => {
            let all = Value::Slice(Rc::new(SliceValue {
                start: None,
                stop: None,
                step: None,
            }));
            let mut index = vec![all; axis];
            index.push(idx_v);
            let got = arr_runtime::at::get_filled(&x, &Value::tuple(index), a[7].clone())?;
            return ok(got);
        }
        "clip" => {
            let lo = numpy::binary(arr_kernels::BinaryOp::Max, &idx_v, &Value::Int(0))?;
            return ok(bind1(
                &Prim::Gather { axis, batch: 0 },
                vec![x, array_arg(&lo)?],
            )?);
        }
        "wrap" => {
            let m = numpy::binary(arr_kernels::BinaryOp::Mod, &idx_v, &n)?;
            return ok(bind1(
                &Prim::Gather { axis, batch: 0 },
                vec![x, array_arg(&m)?],
            )?);
        }
        "" => {}
        "raise" => {
            return Err(Error::new(
                ErrorKind::RuntimeError,
                "The 'raise' mode to jnp.take is not supported.",
            )
            .as_class("NotImplementedError"))
        }
        other => {
            return Err(Error::value_error(format!(
                "Invalid mode '{other}' for np.take"
            )))
        }
    }
    // Negative indices count from the end; the rest is clamped by the gather.
    let neg = numpy::binary(arr_kernels::BinaryOp::Lt, &idx_v, &Value::Int(0))?;
    let wrapped = numpy::binary(arr_kernels::BinaryOp::Add, &idx_v, &n)?;
    let fixed = bind1(
        &Prim::Select,
        vec![array_arg(&neg)?, array_arg(&wrapped)?, array_arg(&idx_v)?],
    )?;
    ok(bind1(&Prim::Gather { axis, batch: 0 }, vec![x, fixed])?)
}

fn take_along_axis(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let idx = array_arg(&a[1])?;
    if idx.ndim() != x.ndim() {
        return Err(Error::shape_error(format!(
            "take_along_axis: indices {} and array {} must have the same rank",
            ty(&idx),
            ty(&x)
        )));
    }
    let axis = axis_arg(&a[2], x.ndim())?;
    // The other dimensions broadcast against each other (NumPy's rule);
    // then one gather whose shared dimensions are all but `axis`, so each
    // row reads only its own row (and stays on its device when split).
    let (mut xs, mut is) = (x.shape().to_vec(), idx.shape().to_vec());
    for d in (0..x.ndim()).filter(|&d| d != axis) {
        let n = match (xs[d], is[d]) {
            (a, b) if a == b || b == 1 => a,
            (1, b) => b,
            _ => {
                return Err(Error::shape_error(format!(
                    "take_along_axis: indices {} do not broadcast against array {} in \
                     dimension {d}",
                    ty(&idx),
                    ty(&x)
                )))
            }
        };
        (xs[d], is[d]) = (n, n);
    }
    let n = x.shape()[axis];
    let x = numpy::broadcast_to(x, &xs)?;
    let idx = numpy::broadcast_to(idx, &is)?;
    let idx = arr_runtime::index::check_indices(&idx, n, axis, DType::I32)?;
    ok(arr_runtime::prim::indexing::take_along_axis(
        &x, &idx, axis,
    )?)
}

fn sort(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    // As NumPy and JAX: axis=None sorts the flattened array; a 0-d array has no axis -1.
    let (x, axis) = match &a[1] {
        Value::None => (numpy::reshape(x.clone(), &[x.len()])?, 0),
        v => (x.clone(), axis_arg(v, x.ndim())?),
    };
    ok(bind1(&Prim::Sort { axis }, vec![x])?)
}

fn argsort(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let x = array_arg(&a[0])?;
    let axis = axis_arg(&a[1], x.ndim().max(1))?;
    let x = if x.ndim() == 0 {
        numpy::reshape(x, &[1])?
    } else {
        x
    };
    if !bool_arg(&a[5])? {
        return ok(bind1(&Prim::Argsort { axis }, vec![x])?);
    }
    // Descending and stable, as JAX: sort the reversed array ascending,
    // reverse that order, and count positions from the other end.
    let n = x.shape()[axis];
    let rev = |t: Tensor| bind1(&Prim::Rev(vec![axis]), vec![t]);
    let order = rev(bind1(&Prim::Argsort { axis }, vec![rev(x)?])?)?;
    let last = numpy::to_array_as(&Value::Int(n as i64 - 1), order.dtype())?;
    ok(bind1(
        &Prim::Binary(arr_kernels::BinaryOp::Sub),
        vec![last, order],
    )?)
}

fn diag(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let v = array_arg(&a[0])?;
    let k = int_arg("k", &a[1])?;
    match v.ndim() {
        1 => {
            let n = v.len().saturating_add(k.unsigned_abs() as usize);
            check_alloc(&[n, n], v.dtype())?;
            let (rows, cols): (Vec<i32>, Vec<i32>) = (0..v.len() as i64)
                .map(|i| ((i - k.min(0)) as i32, (i + k.max(0)) as i32))
                .unzip();
            let zeros: Tensor = Array::zeros(v.dtype(), &[n, n]).into();
            let rows: Tensor = Array::new(&[rows.len()], arr_kernels::Buffer::I32(rows)).into();
            let cols: Tensor = Array::new(&[cols.len()], arr_kernels::Buffer::I32(cols)).into();
            let idx = Value::tuple(vec![Value::Array(rows), Value::Array(cols)]);
            ok(arr_runtime::index::set_index(
                &zeros,
                &idx,
                &Value::Array(v),
            )?)
        }
        2 => {
            let (n, m) = (v.shape()[0] as i64, v.shape()[1] as i64);
            let (r0, c0) = if k >= 0 { (0, k) } else { (-k, 0) };
            let len = (n - r0).min(m - c0).max(0);
            let rows: Vec<i32> = (0..len).map(|i| (r0 + i) as i32).collect();
            let cols: Vec<i32> = (0..len).map(|i| (c0 + i) as i32).collect();
            let idx = Value::tuple(vec![
                Value::Array(Array::new(&[rows.len()], arr_kernels::Buffer::I32(rows)).into()),
                Value::Array(Array::new(&[cols.len()], arr_kernels::Buffer::I32(cols)).into()),
            ]);
            ok(get_index(&v, &idx)?)
        }
        _ => Err(Error::shape_error(format!(
            "diag needs a 1-D or 2-D array, got {}",
            ty(&v)
        ))),
    }
}

fn triangle(a: &[Value], lower: bool) -> Result<Value> {
    let x = array_arg(&a[0])?;
    if x.ndim() < 2 {
        return Err(Error::shape_error(format!(
            "tril/triu need at least 2 axes, got {}",
            ty(&x)
        )));
    }
    let k = int_arg("k", &a[1])?;
    let nd = x.ndim();
    let (n, m) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    let rows = Value::Array(bind1(
        &Prim::Iota {
            dtype: DType::I32,
            shape: vec![n, m],
            dim: 0,
        },
        Vec::<Tensor>::new(),
    )?);
    let cols = Value::Array(bind1(
        &Prim::Iota {
            dtype: DType::I32,
            shape: vec![n, m],
            dim: 1,
        },
        Vec::<Tensor>::new(),
    )?);
    let shifted = numpy::binary(arr_kernels::BinaryOp::Add, &rows, &Value::Int(k))?;
    let op = if lower {
        arr_kernels::BinaryOp::Le
    } else {
        arr_kernels::BinaryOp::Ge
    };
    let mask = array_arg(&numpy::binary(op, &cols, &shifted)?)?;
    let zero = numpy::to_array_as(&Value::Int(0), x.dtype())?;
    ok(bind1(&Prim::Select, vec![mask, x, zero])?)
}

fn trace(i: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let d = diag(i, vec![a[0].clone(), Value::Int(0)])?;
    ok(numpy::reduce(
        arr_kernels::ReduceOp::Sum,
        array_arg(&d)?,
        &Value::None,
        false,
    )?)
}
