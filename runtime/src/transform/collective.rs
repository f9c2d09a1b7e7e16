//! Collectives over named axes (`psum`, `pmax`, `pmin`, `all_gather`,
//! `psum_scatter`, `all_to_all`, `ppermute`, `axis_index`): one primitive,
//! `Prim::Collective`, with its shape rule, its evaluation on device workers,
//! and its JVP, transpose, batching and partitioning rules; where axis names
//! are bound; and the rules of `Prim::ShardingConstraint`, the other
//! primitive about placing values on devices.
//!
//! A name is bound either by a `vmap(..., axis_name=)` trace (then a
//! collective is ordinary array code over the batch axis: `psum` is a sum
//! over it) or by `pmap` running on devices (then each device worker holds
//! a communicator and the collective is a real exchange between workers,
//! through `arr_kernels::collectives`). Both give the same values; `pmap`
//! under another transformation (`jit(pmap(f))`, `grad(pmap(f))`) uses the
//! first, which is how collectives compose with every transformation.

use super::batch::{to_front, Bdims};
use super::jvp::Tangents;
use super::linear::LinIn;
use super::ops::*;
use super::{TraceKind, STACK};
use crate::display::sharding::{MeshText, PlacementText};
use crate::error::{Error, Result};
use crate::jit::partition::{Local, Spmd};
use crate::prim::{bind, type_str, Args, Arrays, Aval, Avals, Outs, Prim};
use crate::tensor::Tensor;
use arr_kernels::collectives::{CommResult, Communicator};
use arr_kernels::sharding::Placement;
use arr_kernels::Backend as _;
use arr_kernels::{backend, Array, DType, ReduceOp};
use smallvec::smallvec;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// What a collective does across the devices of its axis.
#[derive(Clone, Debug, PartialEq)]
pub enum CollectiveOp {
    /// `psum`, `pmax`, `pmin`: every device gets the reduction.
    AllReduce(ReduceOp),
    /// Every device gets every device's operand: stacked as a new axis at
    /// `axis`, or (`tiled`) concatenated along `axis`.
    AllGather { axis: usize, tiled: bool },
    /// `psum_scatter`: the sum, with device i keeping block i along `axis`
    /// (the axis has the axis size and is removed, or is divided when `tiled`).
    ReduceScatter { axis: usize, tiled: bool },
    /// Block j of `split_axis` goes to device j; the blocks received are
    /// stacked as a new axis at `concat_axis` (the split axis is removed).
    AllToAll {
        split_axis: usize,
        concat_axis: usize,
    },
    /// `ppermute`: (source, destination) pairs; devices nobody sends to get zeros.
    Permute(Vec<(usize, usize)>),
    /// This device's index along the axis (no operand; an int32 scalar).
    AxisIndex,
}

/// A collective over the named axis `axis` of `size` devices.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    pub op: CollectiveOp,
    pub axis: Arc<str>,
    pub size: usize,
}

impl Collective {
    pub fn name(&self) -> &'static str {
        match &self.op {
            CollectiveOp::AllReduce(ReduceOp::Max) => "pmax",
            CollectiveOp::AllReduce(ReduceOp::Min) => "pmin",
            CollectiveOp::AllReduce(_) => "psum",
            CollectiveOp::AllGather { .. } => "all_gather",
            CollectiveOp::ReduceScatter { .. } => "psum_scatter",
            CollectiveOp::AllToAll { .. } => "all_to_all",
            CollectiveOp::Permute(_) => "ppermute",
            CollectiveOp::AxisIndex => "axis_index",
        }
    }

    /// The parameters as the IR text shows them.
    pub fn params(&self) -> String {
        let extra = match &self.op {
            CollectiveOp::AllReduce(_) | CollectiveOp::AxisIndex => String::new(),
            CollectiveOp::AllGather { axis, tiled }
            | CollectiveOp::ReduceScatter { axis, tiled } => {
                format!(" axis={axis} tiled={tiled}")
            }
            CollectiveOp::AllToAll {
                split_axis,
                concat_axis,
            } => format!(" split_axis={split_axis} concat_axis={concat_axis}"),
            CollectiveOp::Permute(pairs) => {
                let p: Vec<String> = pairs.iter().map(|(s, d)| format!("({s},{d})")).collect();
                format!(" perm=({})", p.join(","))
            }
        };
        format!("axis_name={} size={}{extra}", self.axis, self.size)
    }

    /// Operands taken: an all-reduce takes any number (one exchange for
    /// all, as `combine_collectives` makes them); `None` for that.
    pub fn arity(&self) -> Option<usize> {
        match self.op {
            CollectiveOp::AxisIndex => Some(0),
            CollectiveOp::AllReduce(_) => None,
            CollectiveOp::AllGather { .. }
            | CollectiveOp::ReduceScatter { .. }
            | CollectiveOp::AllToAll { .. }
            | CollectiveOp::Permute(_) => Some(1),
        }
    }

    /// An all-reduce of several operands: for every rule but evaluation it
    /// is the same all-reduce of each operand alone.
    fn grouped(&self, operands: usize) -> bool {
        matches!(self.op, CollectiveOp::AllReduce(_)) && operands > 1
    }

    fn with_op(&self, op: CollectiveOp) -> Prim {
        Prim::Collective(Collective {
            op,
            axis: self.axis.clone(),
            size: self.size,
        })
    }
}

// ---------------------------------------------------------------------------
// Where axis names are bound.

/// A name bound by `pmap` on devices: while its function is traced, and on
/// each device worker while the compiled program runs there.
struct DeviceAxis {
    name: Arc<str>,
    size: usize,
    /// Set on device workers: this device's rank and the axis's communicator.
    device: Option<(usize, Arc<dyn Communicator>)>,
    /// The trace-stack depth when the name was bound (for shadowing).
    depth: usize,
}

thread_local! {
    static DEVICE_AXES: RefCell<Vec<DeviceAxis>> = const { RefCell::new(Vec::new()) };
}

/// Binds a device axis for as long as it lives.
pub struct AxisGuard;

impl Drop for AxisGuard {
    fn drop(&mut self) {
        DEVICE_AXES.with(|a| a.borrow_mut().pop());
    }
}

/// Bind `name` as a device axis of `size` (with this worker's rank and
/// communicator when running on a device).
pub fn bind_device_axis(
    name: Arc<str>,
    size: usize,
    device: Option<(usize, Arc<dyn Communicator>)>,
) -> AxisGuard {
    let depth = STACK.with(|s| s.borrow().len());
    DEVICE_AXES.with(|a| {
        a.borrow_mut().push(DeviceAxis {
            name,
            size,
            device,
            depth,
        })
    });
    AxisGuard
}

/// How the innermost binding of an axis name works.
enum Binding {
    /// A `vmap` trace at this level.
    Vmap { level: usize, size: usize },
    /// `pmap` devices.
    Device { size: usize },
}

fn lookup(name: &str) -> Option<Binding> {
    let vmap = STACK.with(|s| {
        s.borrow()
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, e)| match &e.kind {
                TraceKind::Batch {
                    size,
                    name: Some(n),
                    ..
                } if &**n == name => Some((i + 1, *size)),
                TraceKind::Batch { .. }
                | TraceKind::Jvp
                | TraceKind::Graph(_)
                | TraceKind::Checkify(_) => None,
            })
    });
    let device = DEVICE_AXES.with(|a| {
        a.borrow()
            .iter()
            .rev()
            .find(|d| &*d.name == name)
            .map(|d| (d.depth, d.size))
    });
    match (vmap, device) {
        (Some((level, size)), Some((depth, _))) if level > depth => {
            Some(Binding::Vmap { level, size })
        }
        (_, Some((_, size))) => Some(Binding::Device { size }),
        (Some((level, size)), None) => Some(Binding::Vmap { level, size }),
        (None, None) => None,
    }
}

/// The names bound now, innermost last (for error messages).
fn bound_names() -> Vec<String> {
    let mut names: Vec<String> = STACK.with(|s| {
        s.borrow()
            .iter()
            .filter_map(|e| match &e.kind {
                TraceKind::Batch { name: Some(n), .. } => Some(n.to_string()),
                TraceKind::Batch { name: None, .. }
                | TraceKind::Jvp
                | TraceKind::Graph(_)
                | TraceKind::Checkify(_) => None,
            })
            .collect()
    });
    DEVICE_AXES.with(|a| names.extend(a.borrow().iter().map(|d| d.name.to_string())));
    names
}

/// The size of the axis `name`, or an error saying where names come from.
pub fn axis_size(name: &str, what: &str) -> Result<usize> {
    match lookup(name) {
        Some(Binding::Vmap { size, .. } | Binding::Device { size }) => Ok(size),
        None => {
            let bound = bound_names();
            let now = if bound.is_empty() {
                "no axis name is bound here".to_string()
            } else {
                format!("the names bound here are {}", bound.join(", "))
            };
            Err(Error::new(
                crate::ErrorKind::NameError,
                format!(
                    "{what}: unbound axis name '{name}' ({now}); collectives run inside \
                     pmap(f, axis_name='{name}') or vmap(f, axis_name='{name}')"
                ),
            ))
        }
    }
}

/// `bind` for collectives: the trace that binds the axis name processes the
/// primitive even when no operand belongs to it (`psum(1.0, 'i')` is the
/// axis size), and higher traces (jvp, graphs) see it first as usual.
pub fn bind_collective(prim: &Prim, c: &Collective, args: Args) -> Result<Outs> {
    let top = super::top_level(&args)?.unwrap_or(0);
    let level = match lookup(&c.axis) {
        Some(Binding::Vmap { level, .. }) => top.max(level),
        Some(Binding::Device { .. }) => top,
        None => {
            axis_size(&c.axis, c.name())?;
            unreachable!("axis_size fails for an unbound name")
        }
    };
    if level > 0 {
        return super::process(level, prim, args);
    }
    crate::prim::eval_concrete(prim, args)
}

// ---------------------------------------------------------------------------
// Shapes and evaluation on devices.

pub fn shape_collective(c: &Collective, args: &[Aval]) -> Result<Avals> {
    let n = c.size;
    let err = |msg: String| Err(Error::shape_error(format!("{}: {msg}", c.name())));
    let one = |shape: Vec<usize>, dtype: DType| -> Result<Avals> {
        Ok(smallvec![Aval {
            shape: shape.into(),
            dtype
        }])
    };
    if let CollectiveOp::AxisIndex = c.op {
        return one(vec![], DType::I32);
    }
    if let CollectiveOp::AllReduce(_) = c.op {
        if args.is_empty() {
            return err("takes at least one operand".into());
        }
        return Ok(args.iter().cloned().collect());
    }
    let a = &args[0];
    let mut shape: Vec<usize> = a.shape.to_vec();
    let check = |axis: usize, rank: usize| -> Result<()> {
        if axis >= rank {
            return Err(Error::value_error(format!(
                "{}: axis {axis} is out of bounds for {}",
                c.name(),
                type_str(&a.shape, a.dtype)
            )));
        }
        Ok(())
    };
    match &c.op {
        // axis_index and the all-reduces returned above; a permutation
        // keeps the shape.
        CollectiveOp::AxisIndex | CollectiveOp::AllReduce(_) | CollectiveOp::Permute(_) => {}
        CollectiveOp::AllGather { axis, tiled } => {
            if *tiled {
                check(*axis, shape.len())?;
                shape[*axis] *= n;
            } else {
                check(*axis, shape.len() + 1)?;
                shape.insert(*axis, n);
            }
        }
        CollectiveOp::ReduceScatter { axis, tiled } => {
            check(*axis, shape.len())?;
            if *tiled {
                if !shape[*axis].is_multiple_of(n) {
                    return err(format!(
                        "axis {axis} of {} is not divisible by the {n} devices of '{}'",
                        type_str(&a.shape, a.dtype),
                        c.axis
                    ));
                }
                shape[*axis] /= n;
            } else {
                if shape[*axis] != n {
                    return err(format!(
                        "axis {axis} of {} must have the axis size {n} of '{}' (or use tiled=True)",
                        type_str(&a.shape, a.dtype),
                        c.axis
                    ));
                }
                shape.remove(*axis);
            }
        }
        CollectiveOp::AllToAll {
            split_axis,
            concat_axis,
        } => {
            check(*split_axis, shape.len())?;
            if shape[*split_axis] != n {
                return err(format!(
                    "split_axis {split_axis} of {} must have the axis size {n} of '{}'",
                    type_str(&a.shape, a.dtype),
                    c.axis
                ));
            }
            shape.remove(*split_axis);
            check(*concat_axis, shape.len() + 1)?;
            shape.insert(*concat_axis, n);
        }
    }
    if let CollectiveOp::Permute(pairs) = &c.op {
        let mut seen_src = vec![false; n];
        let mut seen_dst = vec![false; n];
        for &(s, d) in pairs {
            if s >= n || d >= n {
                return err(format!(
                    "pair ({s}, {d}) names a device outside 0..{n} of '{}'",
                    c.axis
                ));
            }
            if std::mem::replace(&mut seen_src[s], true)
                || std::mem::replace(&mut seen_dst[d], true)
            {
                return err(format!(
                    "perm is not a permutation: device {s} or {d} appears twice"
                ));
            }
        }
    }
    one(shape, a.dtype)
}

thread_local! {
    /// The source line of the collective equation a device program runs next.
    static LINE: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The executor is about to run a collective equation traced at `line`.
pub fn set_line(line: Option<Arc<str>>) {
    LINE.with(|l| *l.borrow_mut() = line);
}

/// Evaluate on a device worker, through the axis's communicator.
pub fn eval_collective(c: &Collective, args: Arrays) -> Result<Outs> {
    let outs = eval_arrays(c, args.into_vec())?;
    Ok(outs.into_iter().map(Tensor::from).collect())
}

fn eval_arrays(c: &Collective, args: Vec<Array>) -> Result<Vec<Array>> {
    let device = DEVICE_AXES.with(|a| {
        a.borrow()
            .iter()
            .rev()
            .find(|d| *d.name == *c.axis)
            .map(|d| d.device.clone())
    });
    let Some(Some((rank, comm))) = device else {
        return Err(Error::value_error(format!(
            "{}: axis '{}' has no devices here (a collective outside pmap)",
            c.name(),
            c.axis
        )));
    };
    if arr_kernels::process::is_multi() {
        // A collective across processes that never completes ends the job
        // with this description.
        let line = LINE.with(|l| l.borrow().clone());
        arr_kernels::collectives::set_context(Some(format!(
            "{} over mesh axis '{}'{}",
            c.name(),
            c.axis,
            line.map_or(String::new(), |l| format!(" (at {l})"))
        )));
    }
    let stats = arr_kernels::devices::stats(arr_kernels::devices::current_device().unwrap_or(rank));
    let (t, sent) = (Instant::now(), comm.bytes_sent(rank));
    let out = eval_on(c, rank, &*comm, args).map_err(|_| {
        Error::value_error(format!(
            "{}: another device of axis '{}' failed, so this one stopped",
            c.name(),
            c.axis
        ))
    })?;
    stats
        .collective_ns
        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    stats
        .bytes_sent
        .fetch_add(comm.bytes_sent(rank) - sent, Ordering::Relaxed);
    Ok(out)
}

/// Slices of `x` along `axis`: `n` blocks, each with the axis kept (`keep`)
/// or removed.
fn blocks(x: &Array, axis: usize, n: usize, keep: bool) -> Vec<Array> {
    let len = x.shape()[axis] / n;
    (0..n)
        .map(|i| {
            let mut start = vec![0; x.ndim()];
            let mut limit = x.shape().to_vec();
            start[axis] = i * len;
            limit[axis] = (i + 1) * len;
            let b = backend::of([x]).slice(x, &start, &limit, &vec![1; x.ndim()]);
            if keep {
                b
            } else {
                let mut shape = b.shape().to_vec();
                shape.remove(axis);
                b.reshape(&shape)
            }
        })
        .collect()
}

/// Stack same-shaped arrays as a new axis at `axis`.
fn stack(parts: &[Array], axis: usize) -> Array {
    let expanded: Vec<Array> = parts
        .iter()
        .map(|p| {
            let mut shape = p.shape().to_vec();
            shape.insert(axis, 1);
            p.reshape(&shape)
        })
        .collect();
    backend::of(&expanded).concatenate(&expanded, axis)
}

fn eval_on(
    c: &Collective,
    rank: usize,
    comm: &dyn Communicator,
    mut args: Vec<Array>,
) -> CommResult<Vec<Array>> {
    let n = c.size;
    let one = match &c.op {
        CollectiveOp::AxisIndex => Array::new(&[], arr_kernels::Buffer::I32(vec![rank as i32])),
        CollectiveOp::AllReduce(op) => return comm.all_reduce_many(rank, *op, &args),
        CollectiveOp::AllGather { axis, tiled } => {
            let parts = comm.all_gather(rank, &args[0])?;
            if *tiled {
                backend::of(&parts).concatenate(&parts, *axis)
            } else {
                stack(&parts, *axis)
            }
        }
        CollectiveOp::ReduceScatter { axis, tiled } => {
            let parts = blocks(&args[0], *axis, n, *tiled);
            comm.reduce_scatter(rank, ReduceOp::Sum, &parts)?
        }
        CollectiveOp::AllToAll {
            split_axis,
            concat_axis,
        } => {
            let parts = blocks(&args[0], *split_axis, n, false);
            stack(&comm.all_to_all(rank, &parts)?, *concat_axis)
        }
        CollectiveOp::Permute(pairs) => {
            let x = args.pop().expect("one operand");
            let to = pairs.iter().find(|p| p.0 == rank).map(|p| p.1);
            let from = pairs.iter().find(|p| p.1 == rank).map(|p| p.0);
            comm.send_recv(rank, &x, to, from)?
                .unwrap_or_else(|| Array::zeros(x.dtype(), x.shape()))
        }
    };
    Ok(vec![one])
}

/// A rule applied to each operand of a grouped all-reduce alone: `rule`
/// gets the one-operand primitive and operand `i`.
fn each_operand<T>(
    c: &Collective,
    n: usize,
    mut rule: impl FnMut(&Prim, usize) -> Result<T>,
) -> Result<Vec<T>> {
    let single = Prim::Collective(c.clone());
    (0..n).map(|i| rule(&single, i)).collect()
}

/// A batching rule applied to each operand of a grouped all-reduce alone.
fn batched_each(
    c: &Collective,
    n: usize,
    mut rule: impl FnMut(usize) -> Result<(Outs, Bdims)>,
) -> Result<(Outs, Bdims)> {
    let parts = each_operand(c, n, |_, i| rule(i))?;
    let (outs, dims): (Vec<Outs>, Vec<Bdims>) = parts.into_iter().unzip();
    Ok((outs.into_iter().flatten().collect(), dims.concat()))
}

// ---------------------------------------------------------------------------
// Rules.

/// JVP: every collective but pmax/pmin is linear, so its tangent is the same
/// collective of the tangent; pmax's tangent is the mean of the tangents of
/// the devices that hold the maximum.
pub fn jvp_collective(
    prim: &Prim,
    c: &Collective,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    if c.grouped(p.len()) {
        let parts = each_operand(c, p.len(), |single, i| {
            jvp_collective(single, c, &p[i..=i], &t[i..=i])
        })?;
        let (ys, ts): (Vec<Outs>, Vec<Vec<Option<Tensor>>>) = parts.into_iter().unzip();
        return Ok((ys.into_iter().flatten().collect(), ts.concat()));
    }
    let y = bind(prim, p.to_vec())?;
    let Some(tx) = t.first().cloned().flatten() else {
        return Ok((y, vec![None]));
    };
    let ty = match &c.op {
        CollectiveOp::AllReduce(ReduceOp::Max | ReduceOp::Min) => {
            let eq = bind(
                &Prim::Binary(arr_kernels::BinaryOp::Eq),
                [p[0].clone(), y[0].clone()],
            )?
            .swap_remove(0);
            let mask = convert(&eq, tx.dtype())?;
            let psum = c.with_op(CollectiveOp::AllReduce(ReduceOp::Sum));
            let num = bind(&psum, [mul(&tx, &mask)?])?.swap_remove(0);
            let den = bind(&psum, [mask])?.swap_remove(0);
            div(&num, &den)?
        }
        CollectiveOp::AxisIndex => return Ok((y, vec![None])),
        // Linear: the same collective of the tangent.
        CollectiveOp::AllReduce(ReduceOp::Sum | ReduceOp::Prod | ReduceOp::All | ReduceOp::Any)
        | CollectiveOp::AllGather { .. }
        | CollectiveOp::ReduceScatter { .. }
        | CollectiveOp::AllToAll { .. }
        | CollectiveOp::Permute(_) => bind(prim, [tx])?.swap_remove(0),
    };
    Ok((y, vec![Some(ty)]))
}

/// Transposes of a linear collective's operands, given its outputs'
/// cotangents (`None`: zero); a grouped all-reduce's operand `i` has
/// output `i`'s.
pub fn transpose_collective(
    c: &Collective,
    cts: &[Option<Tensor>],
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    (0..ins.len())
        .map(|i| match &cts[i] {
            Some(ct) if ins[i].is_linear() => transpose(c, ct.clone()).map(Some),
            Some(_) | None => Ok(None),
        })
        .collect()
}

/// Transpose of a linear collective, given the output's cotangent.
fn transpose(c: &Collective, ct: Tensor) -> Result<Tensor> {
    let op = match &c.op {
        CollectiveOp::AllReduce(ReduceOp::Sum) => CollectiveOp::AllReduce(ReduceOp::Sum),
        CollectiveOp::AllGather { axis, tiled } => CollectiveOp::ReduceScatter {
            axis: *axis,
            tiled: *tiled,
        },
        CollectiveOp::ReduceScatter { axis, tiled } => CollectiveOp::AllGather {
            axis: *axis,
            tiled: *tiled,
        },
        CollectiveOp::AllToAll {
            split_axis,
            concat_axis,
        } => CollectiveOp::AllToAll {
            split_axis: *concat_axis,
            concat_axis: *split_axis,
        },
        CollectiveOp::Permute(pairs) => {
            CollectiveOp::Permute(pairs.iter().map(|&(s, d)| (d, s)).collect())
        }
        CollectiveOp::AllReduce(_) | CollectiveOp::AxisIndex => {
            return Err(Error::new(
                crate::ErrorKind::TransformError,
                format!("{} is not linear and has no transpose", c.name()),
            ))
        }
    };
    Ok(bind(&c.with_op(op), [ct])?.swap_remove(0))
}

/// Batching by a `vmap` that binds the collective's own axis name (the
/// devices are the batch axis) or another one (the collective acts on
/// every example at once).
pub fn batch_collective(
    c: &Collective,
    size: usize,
    axis_name: Option<&str>,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    if axis_name == Some(&*c.axis) {
        batch_named(c, v, d)
    } else {
        batch_other(c, size, v, d)
    }
}

/// Batching by a `vmap` over another axis name: the batch axis goes to the
/// front and the collective acts on every example at once.
fn batch_other(
    c: &Collective,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    if c.grouped(v.len()) {
        return batched_each(c, v.len(), |i| batch_other(c, size, &v[i..=i], &d[i..=i]));
    }
    let x = to_front(&v[0], d[0], size)?;
    let op = match &c.op {
        CollectiveOp::AllGather { axis, tiled } => CollectiveOp::AllGather {
            axis: axis + 1,
            tiled: *tiled,
        },
        CollectiveOp::ReduceScatter { axis, tiled } => CollectiveOp::ReduceScatter {
            axis: axis + 1,
            tiled: *tiled,
        },
        CollectiveOp::AllToAll {
            split_axis,
            concat_axis,
        } => CollectiveOp::AllToAll {
            split_axis: split_axis + 1,
            concat_axis: concat_axis + 1,
        },
        // No axis parameter.
        CollectiveOp::AllReduce(_) | CollectiveOp::Permute(_) | CollectiveOp::AxisIndex => {
            c.op.clone()
        }
    };
    Ok((bind(&c.with_op(op), [x])?, vec![Some(0)]))
}

/// Batching by the `vmap` that binds the collective's own axis name: the
/// devices are the batch axis, so each collective is array code over it.
fn batch_named(c: &Collective, v: &[Tensor], d: &[Option<usize>]) -> Result<(Outs, Bdims)> {
    if c.grouped(v.len()) {
        return batched_each(c, v.len(), |i| batch_named(c, &v[i..=i], &d[i..=i]));
    }
    let n = c.size;
    // The operand as [devices, ...per-device shape] (axis_index has none).
    let front = || to_front(&v[0], d[0], n);
    let everywhere = |y: &Tensor| -> Result<Tensor> {
        let mut shape = vec![n];
        shape.extend_from_slice(y.shape());
        broadcast_to(y, &shape)
    };
    let out = match &c.op {
        CollectiveOp::AxisIndex => iota(DType::I32, &[n], 0)?,
        CollectiveOp::AllReduce(op) => {
            let x = front()?;
            let r = bind(
                &Prim::Reduce {
                    op: *op,
                    axes: vec![0],
                },
                [x],
            )?
            .swap_remove(0);
            everywhere(&r)?
        }
        CollectiveOp::AllGather { axis, tiled } => {
            let x = front()?;
            let mut g = moveaxis(&x, 0, *axis)?;
            if *tiled {
                let mut shape = x.shape()[1..].to_vec();
                shape[*axis] *= n;
                g = reshape(&g, &shape)?;
            }
            everywhere(&g)?
        }
        CollectiveOp::ReduceScatter { axis, tiled } => {
            let x = front()?;
            let total = reduce_sum(&x, &[0])?;
            if *tiled {
                let mut shape = x.shape()[1..].to_vec();
                shape[*axis] /= n;
                shape.insert(*axis, n);
                moveaxis(&reshape(&total, &shape)?, *axis, 0)?
            } else {
                moveaxis(&total, *axis, 0)?
            }
        }
        CollectiveOp::AllToAll {
            split_axis,
            concat_axis,
        } => {
            // out[b, .., j at concat, ..] = x[j, .., b at split, ..]
            let t = moveaxis(&front()?, split_axis + 1, 0)?;
            moveaxis(&t, 1, concat_axis + 1)?
        }
        CollectiveOp::Permute(pairs) => {
            let x = front()?;
            let mut src = vec![0i32; n];
            let mut got = vec![false; n];
            for &(s, dst) in pairs {
                src[dst] = s as i32;
                got[dst] = true;
            }
            let idx = concrete(Array::new(&[n], arr_kernels::Buffer::I32(src)));
            let g = bind(&Prim::Gather { axis: 0, batch: 0 }, [x.clone(), idx])?.swap_remove(0);
            let mut mshape = vec![n];
            mshape.extend(std::iter::repeat_n(1, x.ndim() - 1));
            let mask = concrete(Array::new(&mshape, arr_kernels::Buffer::Bool(got)));
            let z = zeros_like(&g)?;
            select(&broadcast_to(&mask, g.shape())?, &g, &z)?
        }
    };
    Ok((smallvec![out], vec![Some(0)]))
}

/// Runs replicated: a collective in the traced function names an axis that
/// sharded jit does not bind (its mesh axes are reached by the
/// partitioner's own collectives).
pub fn partition_collective(prim: &Prim, cx: &Spmd, ins: Vec<Local>) -> Result<Vec<Local>> {
    cx.replicated(prim, ins)
}

// ---------------------------------------------------------------------------
// `with_sharding_constraint`: the identity, laid out as given.

pub fn shape_sharding_constraint(p: &Placement, args: &[Aval]) -> Result<Avals> {
    if p.spec.len() != args[0].shape.len() {
        return Err(Error::value_error(format!(
            "with_sharding_constraint: {} has {} entries for {}",
            p.spec_text(),
            p.spec.len(),
            type_str(&args[0].shape, args[0].dtype)
        )));
    }
    Ok(smallvec![args[0].clone()])
}

/// Eagerly, the array gets the placement.
pub fn eval_sharding_constraint(p: &Arc<Placement>, args: &[Array]) -> Result<Outs> {
    Ok(smallvec![args[0].with_placement(p.clone()).into()])
}

/// Its tangent is laid out the same way.
pub fn jvp_sharding_constraint(
    prim: &Prim,
    p: &[Tensor],
    t: &[Option<Tensor>],
) -> Result<(Outs, Tangents)> {
    let y = bind(prim, p.to_vec())?.swap_remove(0);
    let ty = t[0]
        .as_ref()
        .map(|t| Ok::<Tensor, Error>(bind(prim, [t.clone()])?.swap_remove(0)))
        .transpose()?;
    Ok((smallvec![y], vec![ty]))
}

/// Its cotangent is laid out the same way.
pub fn transpose_sharding_constraint(
    prim: &Prim,
    ct: Tensor,
    ins: &[LinIn],
) -> Result<Vec<Option<Tensor>>> {
    ins.iter()
        .map(|x| {
            x.is_linear()
                .then(|| bind(prim, [ct.clone()]).map(|mut o| o.swap_remove(0)))
                .transpose()
        })
        .collect()
}

/// The batch axis (to the front) is not split.
pub fn batch_sharding_constraint(
    p: &Placement,
    size: usize,
    v: &[Tensor],
    d: &[Option<usize>],
) -> Result<(Outs, Bdims)> {
    let mut spec = vec![Vec::new()];
    spec.extend(p.spec.iter().cloned());
    let q = Placement::new(p.mesh.clone(), spec, p.spec.len() + 1).map_err(Error::value_error)?;
    let x = to_front(&v[0], d[0], size)?;
    Ok((
        bind(&Prim::ShardingConstraint(Arc::new(q)), [x])?,
        vec![Some(0)],
    ))
}

/// What the partitioner must produce here: the value resharded to the
/// given layout, on the mesh the jit is partitioned for.
pub fn partition_sharding_constraint(
    cx: &Spmd,
    p: &Placement,
    ins: Vec<Local>,
) -> Result<Vec<Local>> {
    let (x, s) = ins.into_iter().next().expect("one operand");
    if *p.mesh != *cx.mesh() {
        return Err(Error::value_error(format!(
            "with_sharding_constraint on {} inside a jit partitioned for {}",
            p.mesh.describe(),
            cx.mesh().describe()
        )));
    }
    let y = cx.reshard(&x, &s, &p.spec, "with_sharding_constraint")?;
    Ok(vec![(y, p.spec.clone())])
}
