//! SPMD as arr functions: `pmap`, `shard_map`, the collectives over named
//! axes (`psum`, `pmean`, `pmax`, `pmin`, `all_gather`, `psum_scatter`,
//! `all_to_all`, `ppermute`, `axis_index`), meshes and sharded arrays
//! (`mesh`, `P`, `NamedSharding`, `device_put`, `visualize_sharding`...),
//! and the devices (`devices()`, `set_devices`): their signatures, docs and
//! arguments (axes, specs, pytrees, static and donated arguments).
//!
//! `pmap(f)` called outside any transformation traces `f` once per
//! signature for one device's slice of the arguments, compiles it with
//! `jit`'s pipeline, and runs the program on one device worker per slice;
//! collectives are real exchanges between the workers. Called under a
//! transformation (`jit`, `grad`, `vmap`, or inside another `pmap`), it is
//! `vmap` with the axis name bound, which computes the same values and
//! composes with everything. Running programs on the devices — blocks,
//! donation, the program cache, the workers — is `arr_runtime::spmd`.

use crate::args::*;
use crate::transforms::{func_name, map_args, out_dims, vmap_call, MapSpec};
use crate::tree::{leaves, map_leaves, structure};
use crate::Registry;
use arr_kernels::sharding::{self, Mesh};
use arr_kernels::{devices, process, Array, DType, ReduceOp};
use arr_runtime::display::sharding::{human_bytes, MeshText, PlacementText};
use arr_runtime::jit;
use arr_runtime::prim::{bind, Aval, Prim};
use arr_runtime::sharding::{DeviceValue, MeshValue, ShardingValue, SpecValue};
use arr_runtime::spmd::program::{cached_program, ProgramCache};
use arr_runtime::spmd::{pmap, shard_map};
use arr_runtime::transform::collective::{self, Collective, CollectiveOp};
use arr_runtime::transform::ops;
use arr_runtime::{display, numpy, Error, Interp, NativeClosure, Result, Tensor, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

type Kwargs = Vec<(Rc<str>, Value)>;

pub(crate) fn register(r: &mut Registry) {
    register_sharding(r);
    r.func(
        "pmap(fun, axis_name=None, in_axes=0, out_axes=0, static_broadcasted_argnums=(), axis_size=None, donate_argnums=(), devices=None)",
        "Run fun on several devices at once (SPMD): argument axes in_axes are split across \
         devices, one slice each, and the results are stacked along out_axes. Inside fun, \
         collectives (psum, pmean, all_gather, ppermute...) over axis_name exchange values \
         between the devices. Compiled once per signature; under jit, grad or vmap it \
         computes the same as vmap(fun, axis_name=axis_name). Donated arguments \
         (donate_argnums) are deleted by the call; an earlier pmap's output gives each \
         device's slice to that device's program, which writes its results there.",
        make_pmap,
    );
    r.func(
        "shard_map(f=None, mesh=None, in_specs=None, out_specs=None, check_vma=True, check_rep=None, axis_names=None)",
        "Run f on every device of mesh at once, each on its block of the arguments \
         (in_specs: one P per argument, a pytree of them matching it, or one for all; \
         without in_specs, each argument's own sharding); collectives inside f name mesh \
         axes; the blocks f returns are put together by out_specs (a P, or a pytree \
         matching the outputs). Without mesh, the context mesh (set_mesh). An output \
         claimed replicated along an axis must be the same on its devices, unless \
         check_vma=False. Given no f, a decorator.",
        make_shard_map,
    );
    r.func(
        "psum(x, axis_name)",
        "The sum of x over the devices of axis_name (a name or a tuple of names); x may be a pytree.",
        |_, a| all_reduce(&a[0], &a[1], ReduceOp::Sum, "psum"),
    );
    r.func(
        "pmean(x, axis_name)",
        "The mean of x over the devices of axis_name; x may be a pytree.",
        |_, a| pmean(&a[0], &a[1]),
    );
    r.func(
        "pmax(x, axis_name)",
        "The maximum of x over the devices of axis_name; x may be a pytree.",
        |_, a| all_reduce(&a[0], &a[1], ReduceOp::Max, "pmax"),
    );
    r.func(
        "pmin(x, axis_name)",
        "The minimum of x over the devices of axis_name; x may be a pytree.",
        |_, a| all_reduce(&a[0], &a[1], ReduceOp::Min, "pmin"),
    );
    r.func(
        "all_gather(x, axis_name, axis=0, tiled=False)",
        "Every device's x, stacked along a new axis (or concatenated along axis when tiled).",
        |_, a| {
            let tiled = bool_arg(&a[3])?;
            let axis = int_arg("axis", &a[2])?;
            leafwise(&a[0], |t| {
                let rank = t.ndim() + (!tiled) as usize;
                let axis = norm_axis(axis, rank, "all_gather")?;
                apply(
                    &t,
                    &a[1],
                    "all_gather",
                    CollectiveOp::AllGather { axis, tiled },
                )
            })
        },
    );
    r.func(
        "psum_scatter(x, axis_name, scatter_dimension=0, tiled=False)",
        "The sum over the devices of axis_name, of which device i keeps block i along \
         scatter_dimension (that axis has the axis size and is removed, or, when tiled, \
         is divided by it).",
        |_, a| {
            let tiled = bool_arg(&a[3])?;
            let axis = int_arg("scatter_dimension", &a[2])?;
            leafwise(&a[0], |t| {
                let axis = norm_axis(axis, t.ndim(), "psum_scatter")?;
                apply(
                    &t,
                    &a[1],
                    "psum_scatter",
                    CollectiveOp::ReduceScatter { axis, tiled },
                )
            })
        },
    );
    r.func(
        "all_to_all(x, axis_name, split_axis, concat_axis, tiled=False)",
        "Block j of x along split_axis (whose size is the axis size) goes to device j; \
         the blocks each device receives are stacked along a new axis at concat_axis. \
         With tiled=True, split_axis is cut into as many chunks as devices and the \
         chunks received are concatenated along concat_axis.",
        |_, a| {
            let split = int_arg("split_axis", &a[2])?;
            let concat = int_arg("concat_axis", &a[3])?;
            let tiled = a[4].truthy()?;
            leafwise(&a[0], |t| {
                let split_axis = norm_axis(split, t.ndim(), "all_to_all")?;
                let concat_axis = norm_axis(concat, t.ndim(), "all_to_all")?;
                if !tiled {
                    return apply(
                        &t,
                        &a[1],
                        "all_to_all",
                        CollectiveOp::AllToAll {
                            split_axis,
                            concat_axis,
                        },
                    );
                }
                // Tiled: split_axis becomes (devices, chunk), the untiled
                // exchange puts the source device just before concat_axis,
                // and the two merge into one axis (source-major).
                let name = match axis_names(&a[1], "all_to_all")?.as_slice() {
                    [one] => one.clone(),
                    _ => return Err(Error::value_error("all_to_all takes one axis name")),
                };
                let n = collective::axis_size(&name, "all_to_all")?;
                let shape = t.shape().to_vec();
                if shape[split_axis] % n != 0 {
                    return Err(Error::value_error(format!(
                        "all_to_all(tiled=True): axis {split_axis} of shape {shape:?} is not \
                         divisible by the {n} devices of '{name}'"
                    )));
                }
                let mut cut = shape.clone();
                cut[split_axis] = shape[split_axis] / n;
                cut.insert(split_axis, n);
                let exchanged = apply(
                    &numpy::reshape(t, &cut)?,
                    &a[1],
                    "all_to_all",
                    CollectiveOp::AllToAll {
                        split_axis,
                        concat_axis,
                    },
                )?;
                let mut merged = exchanged.shape().to_vec();
                let source = merged.remove(concat_axis);
                merged[concat_axis] *= source;
                numpy::reshape(exchanged, &merged)
            })
        },
    );
    r.func(
        "ppermute(x, axis_name, perm)",
        "Send x along a permutation of the devices of axis_name: perm is a list of \
         (source, destination) pairs; a device no pair sends to gets zeros.",
        |_, a| {
            let perm = pairs(&a[2])?;
            leafwise(&a[0], |t| {
                apply(&t, &a[1], "ppermute", CollectiveOp::Permute(perm.clone()))
            })
        },
    );
    r.func(
        "axis_index(axis_name)",
        "This device's index along axis_name (an int32 scalar).",
        |_, a| {
            let name = axis_name(&a[0], "axis_index")?;
            let size = collective::axis_size(&name, "axis_index")?;
            let prim = Prim::Collective(Collective {
                op: CollectiveOp::AxisIndex,
                axis: Arc::from(name.as_str()),
                size,
            });
            Ok(Value::Array(
                bind(&prim, Vec::<Tensor>::new())?.swap_remove(0),
            ))
        },
    );
    r.func(
        "device_count()",
        "The number of devices over every process (virtual CPU devices: 8 per process \
         unless set_devices, ARR_DEVICES or --devices says otherwise).",
        |_, _| Ok(Value::Int(devices::count() as i64)),
    );
    r.func(
        "local_device_count()",
        "The number of devices this process holds.",
        |_, _| Ok(Value::Int(devices::local_count() as i64)),
    );
    r.func(
        "process_index()",
        "This process's index in the job (0 unless started by mpirun).",
        |_, _| Ok(Value::Int(process::index() as i64)),
    );
    r.func(
        "process_count()",
        "The number of processes in the job (1 unless started by mpirun).",
        |_, _| Ok(Value::Int(process::count() as i64)),
    );
    r.func(
        "devices(backend=None)",
        "The devices, as a list: those of the default device's kind (the virtual CPU \
         devices of meshes, every process's, unless set_default_device chose a GPU), or \
         of backend ('cpu', 'cuda', 'opencl', 'gpu': CUDA's, else OpenCL's).",
        |_, a| {
            let kind = match &a[0] {
                Value::None => arr_kernels::gpu::default_device().map(|d| d.kind()),
                v => match str_arg("backend", v)? {
                    "cpu" => None,
                    "gpu" => Some(if arr_kernels::gpu::find("cuda").is_ok() {
                        "cuda"
                    } else {
                        "opencl"
                    }),
                    k @ ("cuda" | "opencl") => Some(k),
                    other => {
                        return Err(Error::value_error(format!(
                            "devices: unknown backend {other:?}: expected cpu, cuda, opencl or gpu"
                        )))
                    }
                },
            };
            match kind {
                None => Ok(device_list(0..devices::count())),
                Some(kind) => {
                    let names: Vec<Value> = arr_kernels::gpu::devices()
                        .iter()
                        .filter(|d| d.kind() == kind)
                        .map(|d| {
                            Value::object(DeviceValue {
                                id: d.id,
                                label: d.label(),
                                platform: "gpu",
                                process_index: process::index(),
                            })
                        })
                        .collect();
                    if names.is_empty() {
                        return Err(Error::value_error(
                            arr_kernels::gpu::find(kind).err().unwrap_or_default(),
                        ));
                    }
                    Ok(Value::list(names))
                }
            }
        },
    );
    r.func(
        "local_devices()",
        "The devices this process holds (all of them unless started by mpirun).",
        |_, _| {
            let n = devices::local_count();
            let first = process::index() * n;
            Ok(device_list(first..first + n))
        },
    );
    r.effect_func(
        "set_devices(n)",
        "Use n virtual devices from now on (no restart needed).",
        |_, a| {
            let n = int_arg("n", &a[0])?;
            let n = usize::try_from(n).map_err(|_| {
                Error::value_error(format!("set_devices: n must be positive, not {n}"))
            })?;
            devices::set_count(n).map_err(|e| Error::value_error(format!("set_devices: {e}")))?;
            Ok(Value::None)
        },
    );
}

fn device_list(ids: std::ops::Range<usize>) -> Value {
    Value::list(ids.map(|i| Value::object(DeviceValue::cpu(i))).collect())
}

/// Which process holds which of `devices`, a line under a layout when
/// several processes share the mesh ("" in one process).
pub(crate) fn processes_line(devices: &[usize]) -> String {
    if !process::is_multi() {
        return String::new();
    }
    let mut parts: Vec<String> = Vec::new();
    for p in 0..process::count() {
        let mine: Vec<String> = devices
            .iter()
            .filter(|&&d| process::owner(d) == p)
            .map(|d| d.to_string())
            .collect();
        if !mine.is_empty() {
            parts.push(format!("process {p}: cpu {}", mine.join(",")));
        }
    }
    format!("{}\n", parts.join("; "))
}

/// A device given as its id or as a value of `devices()`.
fn device_id_arg(name: &str, v: &Value) -> Result<i64> {
    match object::<DeviceValue>(v) {
        Some(d) => Ok(d.id as i64),
        None => int_arg(name, v),
    }
}

// ---------------------------------------------------------------------------
// Collectives

/// The axis names of `v`: a string or a tuple/list of strings.
fn axis_names(v: &Value, what: &str) -> Result<Vec<String>> {
    match v {
        Value::Str(s) => Ok(vec![s.to_string()]),
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v)?
            .iter()
            .map(|x| axis_name(x, what))
            .collect(),
        other => Err(Error::type_error(format!(
            "{what}: axis_name must be a string or a tuple of strings, not {}",
            other.type_name()
        ))),
    }
}

fn axis_name(v: &Value, what: &str) -> Result<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Error::type_error(format!(
            "{what}: axis_name must be a string, not {}",
            other.type_name()
        ))),
    }
}

fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    numpy::normalize_axis(axis, rank).map_err(|_| {
        Error::value_error(format!(
            "{what}: axis {axis} is out of range for rank {rank}"
        ))
    })
}

/// `f` on every array leaf of the pytree `x` (numbers become arrays).
fn leafwise(x: &Value, f: impl Fn(Tensor) -> Result<Tensor>) -> Result<Value> {
    map_leaves(x, &mut |leaf| Ok(Value::Array(f(numpy::to_tensor(leaf)?)?)))
}

/// One collective over the axis named by `names` (a single name).
fn apply(t: &Tensor, names: &Value, what: &str, op: CollectiveOp) -> Result<Tensor> {
    let names = axis_names(names, what)?;
    let [name] = &names[..] else {
        return Err(Error::value_error(format!(
            "{what} takes one axis name, not {}",
            names.len()
        )));
    };
    let size = collective::axis_size(name, what)?;
    let prim = Prim::Collective(Collective {
        op,
        axis: Arc::from(name.as_str()),
        size,
    });
    Ok(bind(&prim, [t.clone()])?.swap_remove(0))
}

/// psum/pmax/pmin over one or several axis names, leaf by leaf.
fn all_reduce(x: &Value, names: &Value, op: ReduceOp, what: &str) -> Result<Value> {
    let names = axis_names(names, what)?;
    leafwise(x, |mut t| {
        for name in &names {
            let size = collective::axis_size(name, what)?;
            let prim = Prim::Collective(Collective {
                op: CollectiveOp::AllReduce(op),
                axis: Arc::from(name.as_str()),
                size,
            });
            t = bind(&prim, [t])?.swap_remove(0);
        }
        Ok(t)
    })
}

fn pmean(x: &Value, names: &Value) -> Result<Value> {
    let list = axis_names(names, "pmean")?;
    let mut n = 1usize;
    for name in &list {
        n *= collective::axis_size(name, "pmean")?;
    }
    let summed = all_reduce(x, names, ReduceOp::Sum, "pmean")?;
    leafwise(&summed, |t| {
        let t = if t.dtype().is_float() {
            t
        } else {
            ops::convert(&t, DType::F32)?
        };
        ops::div(&t, &ops::scalar(n as f64, t.dtype()))
    })
}

fn pairs(v: &Value) -> Result<Vec<(usize, usize)>> {
    numpy::sequence_items(v)?
        .iter()
        .map(|p| {
            let items = numpy::sequence_items(p)?;
            let [s, d] = &items[..] else {
                return Err(Error::value_error(
                    "ppermute: perm must be a list of (source, destination) pairs",
                ));
            };
            let idx = |x: &Value| -> Result<usize> {
                usize::try_from(int_arg("perm", x)?)
                    .map_err(|_| Error::value_error("ppermute: device indices must be >= 0"))
            };
            Ok((idx(s)?, idx(d)?))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// pmap

/// `pmap(devices=...)`: pmap runs on the first devices of the mesh, so a
/// list of exactly those (`jax.devices()[:n]`) is accepted; any other choice
/// is refused rather than silently run elsewhere.
fn check_pmap_devices(devices: &Value) -> Result<()> {
    if matches!(devices, Value::None) {
        return Ok(());
    }
    let ids = numpy::sequence_items(devices)?
        .iter()
        .map(|d| match d {
            Value::Object(o) => match o.attr("id") {
                Some(Value::Int(i)) => Ok(i),
                _ => Err(Error::type_error("pmap: devices must be a list of devices")),
            },
            _ => Err(Error::type_error("pmap: devices must be a list of devices")),
        })
        .collect::<Result<Vec<i64>>>()?;
    if ids.iter().enumerate().any(|(k, &id)| id != k as i64) {
        return Err(Error::value_error(format!(
            "pmap: devices {ids:?} are not the first devices in order; arr's pmap runs on \
             devices 0..n"
        )));
    }
    Ok(())
}

fn make_pmap(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let f = a[0].clone();
    f.expect_callable()?;
    let name: Arc<str> = match &a[1] {
        Value::None => Arc::from("_pmap"),
        v => Arc::from(axis_name(v, "pmap")?.as_str()),
    };
    let (in_axes, out_axes, axis_size) = (a[2].clone(), a[3].clone(), a[5].clone());
    let statics: Vec<usize> = match &a[4] {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(&a[4])?
            .iter()
            .map(|x| int_arg("static_broadcasted_argnums", x).map(|i| i as usize))
            .collect::<Result<_>>()?,
        v => vec![int_arg("static_broadcasted_argnums", v)? as usize],
    };
    let donate: Vec<usize> = crate::jit::int_list(&a[6], "donate_argnums")?
        .into_iter()
        .map(|i| i as usize)
        .collect();
    if let Some(i) = donate.iter().find(|i| statics.contains(i)) {
        return Err(Error::value_error(format!(
            "pmap: argument {i} is in both static_broadcasted_argnums and donate_argnums: \
             a static argument has no buffer to donate"
        )));
    }
    check_pmap_devices(&a[7])?;
    let why = format!("it was donated to pmap({})", func_name(&f));
    let programs = ProgramCache::default();
    let level = PmapLevel {
        f: f.clone(),
        name: name.clone(),
        in_axes: in_axes.clone(),
        out_axes: out_axes.clone(),
        statics: statics.clone(),
    };
    let v = NativeClosure::value(
        format!("pmap({})", func_name(&f)),
        move |interp, args, kwargs| {
            let spec = MapSpec {
                in_axes: &in_axes,
                out_axes: &out_axes,
                axis_size: &axis_size,
                what: "pmap",
            };
            let donated = Donation {
                argnums: &donate,
                why: &why,
            };
            pmap_call(
                interp, &f, &spec, &name, &statics, &donated, &programs, args, kwargs,
            )
        },
    );
    if let Value::Native(n) = &v {
        n.attrs
            .borrow_mut()
            .push((PMAP_LEVEL.into(), Value::object(level)));
    }
    Ok(v)
}

/// The attribute under which a pmapped function keeps how it maps, so a
/// pmap of it can put both mapped axes on a grid of devices.
const PMAP_LEVEL: &str = "_pmap_level";

/// How a pmapped function maps its function over devices.
#[derive(Clone, Debug)]
struct PmapLevel {
    f: Value,
    name: Arc<str>,
    in_axes: Value,
    out_axes: Value,
    statics: Vec<usize>,
}

impl arr_runtime::value::Object for PmapLevel {
    fn type_name(&self) -> &'static str {
        "pmap_level"
    }
    fn repr(&self) -> String {
        format!("<pmap over '{}'>", self.name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The mapping of `f` when it is itself a pmapped function without static
/// arguments.
fn inner_pmap(f: &Value) -> Option<PmapLevel> {
    let Value::Native(n) = f else {
        return None;
    };
    let attrs = n.attrs.borrow();
    let (_, level) = attrs.iter().find(|(k, _)| k == PMAP_LEVEL)?;
    let level = object::<PmapLevel>(level)?;
    level.statics.is_empty().then(|| level.clone())
}

/// `pmap(pmap(g, 'j'), 'i')(args)` on an (n_i, n_j) grid of devices: each
/// device runs `g` on its slice of both mapped axes with both axis names
/// bound, collectives over 'j' among the devices of its row and over 'i'
/// among those of its column. `None` when the grid does not fit the
/// devices or the inner pmap maps nothing (then the inner one runs as vmap
/// on each of the outer devices, which computes the same values).
fn nested_pmap_call(
    interp: &mut Interp,
    outer: &MapSpec,
    outer_name: &Arc<str>,
    level: &PmapLevel,
    programs: &ProgramCache,
    args: &[Value],
) -> Result<Option<Value>> {
    let (args_tree, flat, dims_o, n_o) = map_args(outer, args)?;
    // The inner pmap's axes, on the leaves with the outer axis removed.
    let inner_spec = match &level.in_axes {
        v @ (Value::Tuple(_) | Value::List(_)) => v.clone(),
        other => Value::tuple(vec![other.clone(); args.len()]),
    };
    let mut axes_i = Vec::new();
    crate::transforms::axes_for(&inner_spec, &args_tree, &mut axes_i)?;
    let mut dims_i = Vec::new();
    let mut n_i = None;
    for ((t, d_o), a) in flat.iter().zip(&dims_o).zip(&axes_i) {
        let rank = t.ndim() - usize::from(d_o.is_some());
        let d = match a {
            None => None,
            Some(a) => {
                let Ok(d) = numpy::normalize_axis(*a, rank) else {
                    return Ok(None);
                };
                let mut shape = t.shape().to_vec();
                if let Some(o) = d_o {
                    shape.remove(*o);
                }
                if n_i.is_some_and(|n| n != shape[d]) {
                    return Ok(None);
                }
                n_i = Some(shape[d]);
                Some(d)
            }
        };
        dims_i.push(d);
    }
    let Some(n_i) = n_i else {
        return Ok(None);
    };
    if n_o * n_i > devices::count() {
        return Ok(None);
    }
    // Each device's argument types, and where its block of a leaf lies.
    let local_shape = |t: &Tensor, k: usize| -> Vec<usize> {
        let mut shape = t.shape().to_vec();
        if let Some(o) = dims_o[k] {
            shape.remove(o);
        }
        if let Some(i) = dims_i[k] {
            shape.remove(i);
        }
        shape
    };
    let avals: Vec<Aval> = flat
        .iter()
        .enumerate()
        .map(|(k, t)| Aval {
            shape: local_shape(t, k).into(),
            dtype: t.dtype(),
        })
        .collect();
    let key = format!("nested {} {}", level.name, structure(&args_tree)?);
    let axes = [(outer_name.clone(), n_o), (level.name.clone(), n_i)];
    let p = cached_program(
        programs,
        avals,
        key,
        &axes,
        |ts| trace_call(&args_tree, ts, |args| interp.call(&level.f, args, vec![])),
        |out_tree| {
            Ok((
                out_dims(outer.out_axes, out_tree)?,
                out_dims(&level.out_axes, out_tree)?,
            ))
        },
    )?;
    let whole: Vec<Array> = flat
        .iter()
        .map(|t| t.concrete().cloned())
        .collect::<Result<_>>()?;
    let outer_map = pmap::Mapping {
        name: outer_name,
        size: n_o,
        in_dims: &dims_o,
        out_dims: &p.out_dims,
    };
    let inner_map = pmap::Mapping {
        name: &level.name,
        size: n_i,
        in_dims: &dims_i,
        out_dims: &p.inner_dims,
    };
    let results = pmap::run_grid(&p.compiled, &outer_map, &inner_map, &whole)?;
    crate::transforms::unflatten_tree(&p.out_tree, &results).map(Some)
}

/// Trace a call on the leaves `ts` of an argument tree like `args_tree`:
/// the flat outputs and their pytree.
fn trace_call(
    args_tree: &Value,
    ts: Vec<Tensor>,
    call: impl FnOnce(Vec<Value>) -> Result<Value>,
) -> Result<(Vec<Tensor>, Value)> {
    let rebuilt = crate::transforms::unflatten_tree(args_tree, &ts)?;
    let out = call(numpy::sequence_items(&rebuilt)?)?;
    let ts = crate::transforms::flatten_tree(&out)?;
    Ok((ts, out))
}

/// `f` with the static arguments put back at their positions.
fn with_statics(statics: &[(usize, Value)], mut dynamic: Vec<Value>) -> Vec<Value> {
    for (i, v) in statics {
        dynamic.insert((*i).min(dynamic.len()), v.clone());
    }
    dynamic
}

/// Which positional arguments of a pmap call are donated, and what their
/// deletion says.
struct Donation<'a> {
    argnums: &'a [usize],
    why: &'a str,
}

#[allow(clippy::too_many_arguments)]
fn pmap_call(
    interp: &mut Interp,
    f: &Value,
    spec: &MapSpec,
    name: &Arc<str>,
    static_nums: &[usize],
    donation: &Donation,
    programs: &ProgramCache,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    if interp.auto.tracing.is_some() {
        // Compiling the caller would run pmap as vmap, on no devices.
        return Err(jit::auto::not_pure("calls a pmapped function"));
    }
    // Static arguments are passed through as they are, and key the cache.
    let mut statics = Vec::new();
    let mut dynamic = Vec::new();
    // The donated dynamic arguments, marked leaf by leaf.
    let mut marks = Vec::new();
    for (i, v) in args.into_iter().enumerate() {
        if static_nums.contains(&i) {
            statics.push((i, v));
        } else {
            let on = donation.argnums.contains(&i);
            marks.push(map_leaves(&v, &mut |_| Ok(Value::Bool(on)))?);
            dynamic.push(v);
        }
    }
    let donated: Vec<bool> = leaves(&Value::tuple(marks))?
        .iter()
        .map(|m| matches!(m, Value::Bool(true)))
        .collect();
    let in_axes_dyn;
    let spec = if let (false, Value::Tuple(_) | Value::List(_)) = (statics.is_empty(), spec.in_axes)
    {
        let items = numpy::sequence_items(spec.in_axes)?;
        in_axes_dyn = Value::tuple(
            items
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !static_nums.contains(i))
                .map(|(_, v)| v)
                .collect(),
        );
        MapSpec {
            in_axes: &in_axes_dyn,
            ..*spec
        }
    } else {
        MapSpec { ..*spec }
    };
    if under_transformation(&dynamic)? {
        let statics2 = statics.clone();
        let g = NativeClosure::value("pmap body".to_string(), {
            let f = f.clone();
            move |interp, args, kwargs| interp.call(&f, with_statics(&statics2, args), kwargs)
        });
        return vmap_call(interp, &g, &spec, dynamic, kwargs, Some(name.clone()));
    }
    let (args_tree, flat, dims, size) = map_args(&spec, &dynamic)?;
    let donated_arrays: Vec<Array> = flat
        .iter()
        .zip(&donated)
        .filter_map(|(t, d)| t.as_concrete().filter(|_| *d).cloned())
        .collect();
    let arrays: Vec<_> = flat.iter().map(Tensor::as_concrete).collect();
    if donated_twice(&arrays, &donated).is_some() {
        return Err(Error::value_error(
            "pmap: a donated array is passed twice in one call; a donated buffer can be \
             passed only once",
        ));
    }
    if let (true, true, Some(level)) = (statics.is_empty(), kwargs.is_empty(), inner_pmap(f)) {
        let out = nested_pmap_call(interp, &spec, name, &level, programs, &dynamic)?;
        if let Some(out) = out {
            // The grid's programs read slices of the arguments: deleted, not reused.
            for a in &donated_arrays {
                a.delete(donation.why);
            }
            return Ok(out);
        }
    }
    let n_dev = devices::count();
    if size == 0 {
        return Err(Error::value_error(
            "pmap: the mapped axis has size 0; pmap maps one slice to each device, so it needs at least one",
        ));
    }
    if size > n_dev {
        return Err(Error::value_error(format!(
            "pmap: the mapped axis has size {size}, but there are only {n_dev} devices \
             (set_devices({size}), ARR_DEVICES={size} or arr --devices {size} gives more)"
        )));
    }
    let avals: Vec<Aval> = flat
        .iter()
        .zip(&dims)
        .map(|(t, d)| {
            let mut a = t.aval();
            if let Some(d) = d {
                a.shape.remove(*d);
            }
            a
        })
        .collect();
    // Static arguments and keyword arguments are baked into the program, so
    // they key it too, by value.
    let statics_key = format!(
        "{} {} {}",
        structure(&args_tree)?,
        statics
            .iter()
            .map(|(i, v)| format!("{i}={}", display::repr(v)))
            .collect::<Vec<_>>()
            .join(","),
        kwargs
            .iter()
            .map(|(k, v)| format!("{k}={}", display::repr(v)))
            .collect::<Vec<_>>()
            .join(",")
    );
    let axes = [(name.clone(), size)];
    let p = cached_program(
        programs,
        avals,
        statics_key,
        &axes,
        |ts| {
            trace_call(&args_tree, ts, |args| {
                interp.call(f, with_statics(&statics, args), kwargs.clone())
            })
        },
        |out_tree| Ok((out_dims(spec.out_axes, out_tree)?, Vec::new())),
    )?;
    let whole: Vec<Array> = flat
        .iter()
        .map(|t| t.concrete().cloned())
        .collect::<Result<_>>()?;
    let map = pmap::Mapping {
        name,
        size,
        in_dims: &dims,
        out_dims: &p.out_dims,
    };
    let stacked = pmap::run(&p.compiled, &map, &whole, &donated, donation.why)?;
    crate::transforms::unflatten_tree(&p.out_tree, &stacked)
}

// ---------------------------------------------------------------------------
// shard_map

/// What a shard_map was made with (the mesh may come from the context at the call).
#[derive(Clone)]
struct ShardMapOptions {
    mesh: Option<Arc<Mesh>>,
    in_specs: Value,
    out_specs: Value,
    check_replicas: bool,
}

fn make_shard_map(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let mesh = match &a[1] {
        Value::None => None,
        m => Some(mesh_arg(m, "shard_map")?),
    };
    let check_rep = !matches!(a[5], Value::Bool(false));
    let options = ShardMapOptions {
        mesh,
        in_specs: a[2].clone(),
        out_specs: a[3].clone(),
        check_replicas: a[4].truthy()? && check_rep,
    };
    match &a[0] {
        // `@shard_map(mesh=..., in_specs=..., out_specs=...)`.
        Value::None => Ok(NativeClosure::value("shard_map", move |_, args, _| {
            let f = args.into_iter().next().ok_or_else(|| {
                Error::type_error("shard_map(...) as a decorator takes the function")
            })?;
            shard_mapped(f, options.clone())
        })),
        f => shard_mapped(f.clone(), options),
    }
}

fn shard_mapped(f: Value, options: ShardMapOptions) -> Result<Value> {
    f.expect_callable()?;
    Ok(NativeClosure::value(
        format!("shard_map({})", func_name(&f)),
        move |interp, args, kwargs| {
            let mesh = match &options.mesh {
                Some(m) => m.clone(),
                None => arr_runtime::sharding::context_mesh().ok_or_else(|| {
                    Error::value_error(
                        "shard_map: no mesh: pass mesh= or call it under set_mesh(mesh)",
                    )
                })?,
            };
            shard_map_call(interp, &f, &mesh, &options, args, kwargs)
        },
    ))
}

/// The spec of each leaf of `tree` by `specs`, a P (or None: unsplit) for
/// all of them or a pytree prefix of `tree` (tuples, lists, dicts).
fn leaf_specs(specs: &Value, tree: &Value, what: &str) -> Result<Vec<SpecValue>> {
    match (specs, tree) {
        (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_)) => {
            let (ss, ts) = (numpy::sequence_items(specs)?, numpy::sequence_items(tree)?);
            if ss.len() != ts.len() {
                return Err(Error::value_error(format!(
                    "shard_map: {what} has {} entries for {} values",
                    ss.len(),
                    ts.len()
                )));
            }
            let mut out = Vec::new();
            for (s, t) in ss.iter().zip(&ts) {
                out.extend(leaf_specs(s, t, what)?);
            }
            Ok(out)
        }
        (Value::Dict(sd), Value::Dict(td)) => {
            let (sd, td) = (sd.borrow(), td.borrow());
            let mut keys: Vec<_> = td.keys().cloned().collect();
            keys.sort();
            let mut out = Vec::new();
            for k in keys {
                let s = sd.get(&k).ok_or_else(|| {
                    Error::value_error(format!(
                        "shard_map: {what} has no entry for key {}",
                        display::repr(&k.to_value())
                    ))
                })?;
                out.extend(leaf_specs(s, &td[&k], what)?);
            }
            Ok(out)
        }
        (Value::Tuple(_) | Value::List(_) | Value::Dict(_), _) => Err(Error::value_error(format!(
            "shard_map: {what} is a {} but the value it describes is a {}",
            specs.type_name(),
            tree.type_name()
        ))),
        (s, t) => Ok(vec![spec_arg(s, "shard_map")?; leaves(t)?.len()]),
    }
}

fn shard_map_call(
    interp: &mut Interp,
    f: &Value,
    mesh: &Arc<Mesh>,
    options: &ShardMapOptions,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> Result<Value> {
    if interp.auto.tracing.is_some() {
        return Err(jit::auto::not_pure("calls a shard_map function"));
    }
    let traced = under_transformation(&args)?;
    let args_tree = Value::tuple(args);
    let mut leaves_in: Vec<Tensor> = crate::transforms::flatten_tree(&args_tree)?;
    let specs: Vec<SpecValue> = match &options.in_specs {
        // Each argument as it is laid out (JAX infers in_specs so).
        Value::None => leaves_in
            .iter()
            .map(|t| match t.placement() {
                Some(p) if *p.mesh == **mesh => SpecValue::of(&p),
                _ => SpecValue(Vec::new()),
            })
            .collect(),
        Value::Tuple(_) | Value::List(_) => leaf_specs(&options.in_specs, &args_tree, "in_specs")?,
        one => vec![spec_arg(one, "shard_map")?; leaves_in.len()],
    };
    // Every leaf with the placement its argument's spec gives it.
    let mut placements: Vec<sharding::Placement> = Vec::new();
    for (t, spec) in leaves_in.iter_mut().zip(&specs) {
        let p = spec.placement(mesh, t.ndim())?;
        for d in 0..t.ndim() {
            if !t.shape()[d].is_multiple_of(p.parts(d)) {
                return Err(Error::shape_error(format!(
                    "shard_map: dimension {d} of {} is not divisible by the {} devices of {}",
                    arr_runtime::prim::type_str(t.shape(), t.dtype()),
                    p.parts(d),
                    spec.text()
                )));
            }
        }
        check_in_layout(mesh, t, &p, spec)?;
        placements.push(p);
    }
    if traced {
        return shard_map_traced(
            interp,
            f,
            mesh,
            &leaves_in,
            &placements,
            &args_tree,
            &options.out_specs,
            kwargs,
        );
    }
    let flat: Vec<Array> = leaves_in
        .iter()
        .map(|t| t.concrete().cloned())
        .collect::<Result<_>>()?;
    let out_tree = RefCell::new(Value::None);
    let trace = |ts: Vec<Tensor>| {
        let (ts, tree) = trace_call(&args_tree, ts, |args| interp.call(f, args, kwargs.clone()))?;
        *out_tree.borrow_mut() = tree;
        Ok(ts)
    };
    let results = shard_map::run(
        mesh,
        &flat,
        &placements,
        trace,
        |ranks| out_layouts(mesh, &options.out_specs, &out_tree.borrow(), ranks),
        options.check_replicas,
    )?;
    crate::transforms::unflatten_tree(&out_tree.into_inner(), &results)
}

/// On a mesh with Explicit axes, an argument must already be laid out as
/// its in_spec says along them (JAX's rule: shard_map does not move data).
fn check_in_layout(
    mesh: &Arc<Mesh>,
    t: &Tensor,
    want: &sharding::Placement,
    spec: &SpecValue,
) -> Result<()> {
    let explicit = |spec: &[Vec<usize>]| -> Vec<Vec<usize>> {
        spec.iter()
            .map(|axes| {
                axes.iter()
                    .copied()
                    .filter(|&a| mesh.is_explicit(a))
                    .collect()
            })
            .collect()
    };
    let have = match (t, t.placement()) {
        (_, Some(p)) if *p.mesh == **mesh => explicit(&p.spec),
        (_, Some(_)) | (Tensor::Concrete(_), None) => vec![Vec::new(); t.ndim()],
        // A traced value whose layout is unknown here.
        (Tensor::Traced(_), None) => return Ok(()),
    };
    if have != explicit(&want.spec) {
        // JAX's words.
        let have_spec = match t.placement() {
            Some(p) if *p.mesh == **mesh => SpecValue::of(&p).text(),
            _ => SpecValue(vec![Vec::new(); t.ndim()]).text(),
        };
        return Err(Error::value_error(format!(
            "in_specs passed to shard_map: {} does not match the specs of the input: {} for \
             arg: {}. `in_specs` is an optional argument so you can omit \
             specifying it and shard_map will infer the in_specs from the arguments. If you \
             want to reshard your inputs, you can use `jax.reshard` on the arguments and then \
             pass those args to shard_map.",
            spec.text(),
            have_spec,
            arr_runtime::sharding::ArrayTypeValue::of(t).text(),
        )));
    }
    Ok(())
}

/// The placement of each output leaf, by the out specs, for blocks of these ranks.
fn out_layouts(
    mesh: &Arc<Mesh>,
    out_specs: &Value,
    out_tree: &Value,
    ranks: &[usize],
) -> Result<Vec<sharding::Placement>> {
    out_leaf_specs(out_specs, out_tree)?
        .iter()
        .zip(ranks)
        .map(|(spec, &rank)| spec.placement(mesh, rank))
        .collect()
}

/// The out spec of each output leaf: a pytree prefix of the outputs, or one for all.
fn out_leaf_specs(out_specs: &Value, out_tree: &Value) -> Result<Vec<SpecValue>> {
    // out_specs=None (or left out) fits only a function that returns no arrays.
    if matches!(out_specs, Value::None) && !leaves(out_tree)?.is_empty() {
        return Err(Error::type_error(
            "shard_map: out_specs is required (a P, or a pytree of them matching the outputs)",
        ));
    }
    leaf_specs(out_specs, out_tree, "out_specs")
}

/// shard_map under a transformation (`jit`, `grad`, `vmap`): nested named
/// vmaps, one per mesh axis (see `arr_runtime::spmd::shard_map`).
#[allow(clippy::too_many_arguments)]
fn shard_map_traced(
    interp: &mut Interp,
    f: &Value,
    mesh: &Arc<Mesh>,
    leaves_in: &[Tensor],
    placements: &[sharding::Placement],
    args_tree: &Value,
    out_specs: &Value,
    kwargs: Kwargs,
) -> Result<Value> {
    let out_tree = RefCell::new(Value::None);
    let mut body = |ts: Vec<Tensor>| {
        let (ts, tree) = trace_call(args_tree, ts, |args| interp.call(f, args, kwargs.clone()))?;
        *out_tree.borrow_mut() = tree;
        Ok(ts)
    };
    let results = shard_map::traced(mesh, leaves_in, placements, &mut body, |ranks| {
        out_layouts(mesh, out_specs, &out_tree.borrow(), ranks)
    })?;
    crate::transforms::unflatten_tree(&out_tree.into_inner(), &results)
}

/// Whether a call happens under a transformation (an active trace, or
/// traced arguments): then SPMD functions run as named vmaps instead.
pub(crate) fn under_transformation(args: &[Value]) -> Result<bool> {
    Ok(!arr_runtime::transform::idle()
        || leaves(&Value::tuple(args.to_vec()))?
            .iter()
            .any(|v| matches!(v, Value::Array(Tensor::Traced(_)))))
}

// ---------------------------------------------------------------------------
// Meshes and sharded arrays

pub(crate) fn register_sharding(r: &mut Registry) {
    r.func(
        "mesh(shape, axis_names, devices=None)",
        "A mesh of devices: shape (an int or a tuple) with one name per axis; devices \
         (ids, row-major) default to the first devices in order.",
        |_, a| {
            let shape: Vec<usize> = match &a[0] {
                Value::Tuple(_) | Value::List(_) => numpy::sequence_items(&a[0])?
                    .iter()
                    .map(|x| int_arg("shape", x).map(|i| i.max(0) as usize))
                    .collect::<Result<_>>()?,
                v => vec![int_arg("shape", v)?.max(0) as usize],
            };
            let names: Vec<Arc<str>> = axis_names(&a[1], "mesh")?
                .iter()
                .map(|s| Arc::from(s.as_str()))
                .collect();
            let count = devices::count();
            let devs: Vec<usize> = match &a[2] {
                // The first devices in order: there must be that many (the
                // product checked before a list of that length is made).
                Value::None => match shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) {
                    Some(n) if n <= count => (0..n).collect(),
                    // More than there are: the first one missing is reported below.
                    _ => vec![count],
                },
                v => numpy::sequence_items(v)?
                    .iter()
                    .map(|x| device_id_arg("devices", x).map(|i| i.max(0) as usize))
                    .collect::<Result<_>>()?,
            };
            if let Some(&bad) = devs.iter().find(|&&d| d >= count) {
                return Err(Error::value_error(format!(
                    "mesh: device {bad} does not exist (there are {count}; set_devices(n) gives more)"
                )));
            }
            // arr's own meshes leave layouts to the compiler (JAX's Auto
            // axes): differently laid out operands meet without an error.
            let m = Mesh::new(shape, names, devs).map_err(Error::value_error)?;
            Ok(Value::object(MeshValue(Arc::new(m))))
        },
    );
    let p = r.func(
        "P(*axes)",
        "A partition spec: one entry per array dimension, the mesh axis name that splits \
         it, a tuple of names, or None for a dimension that is not split.",
        |_, a| {
            let items = numpy::sequence_items(&a[0])?;
            let spec = items
                .iter()
                .map(|x| match x {
                    Value::None => Ok(Vec::new()),
                    other => axis_names(other, "P"),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::object(SpecValue(spec)))
        },
    );
    r.interp.set_builtin("PartitionSpec", p);
    r.func(
        "NamedSharding(mesh, spec)",
        "How an array is laid out: a mesh and a partition spec.",
        |_, a| {
            let mesh = mesh_arg(&a[0], "NamedSharding")?;
            let spec = spec_arg(&a[1], "NamedSharding")?;
            Ok(Value::object(ShardingValue { mesh, spec }))
        },
    );
    r.func(
        "device_put(x, sharding=None)",
        "x (an array or a pytree of arrays) laid out over the mesh of sharding (a \
         NamedSharding, a bare P under set_mesh, or a pytree of them matching x): each \
         device holds its block. With a device or a device name ('cpu', 'cuda:0', \
         'opencl', ...), x copied to that device. Without sharding, x itself.",
        |_, a| put(&a[0], &a[1]),
    );
    r.func(
        "shard(x, mesh, spec, names=None)",
        "x laid out over mesh by the partition spec: device_put(x, NamedSharding(mesh, spec)). \
         With rules ((logical name, mesh axis) pairs) or a strategy name ('dp', 'fsdp', 'tp', \
         'tp+dp', 'ep') instead of a spec, each array of the pytree x laid out by its logical \
         axis names, given as names= (a tree of tuples matching x): see strategy_rules.",
        |interp, a| {
            if matches!(a[2], Value::Str(_) | Value::List(_)) {
                let by_rules = crate::builtin_named(interp, "_shard_by_rules")?;
                return interp.call(&by_rules, a, Vec::new());
            }
            let mesh = mesh_arg(&a[1], "shard")?;
            let spec = spec_arg(&a[2], "shard")?;
            place_tree(&a[0], &mesh, &spec)
        },
    );
    r.func(
        "with_sharding_constraint(x, sharding)",
        "x (an array or a pytree of arrays), laid out as sharding says: inside a sharded \
         jit the partitioner makes this value that layout; elsewhere it is device_put.",
        |interp, a| {
            // A tree of shardings (nnx's partition specs of a state): each
            // applies to the subtree of x at its place.
            if matches!(
                a[1],
                Value::List(_) | Value::Tuple(_) | Value::Dict(_) | Value::Instance(_)
            ) {
                let per_subtree = crate::builtin_named(interp, "_with_sharding_constraint_tree")?;
                return interp.call(&per_subtree, a, Vec::new());
            }
            let Some((mesh, spec)) =
                arr_runtime::sharding::resolve(&a[1], "with_sharding_constraint")?
            else {
                return Ok(a[0].clone());
            };
            leafwise(&a[0], |t| {
                let p = spec.placement(&mesh, t.ndim())?;
                Ok(bind(&Prim::ShardingConstraint(Arc::new(p)), [t])?.swap_remove(0))
            })
        },
    );
    r.effect_func(
        "visualize_sharding(x)",
        "Print which device holds which block of x: a grid over the sharded dimensions, \
         with each block's index ranges, shape and bytes.",
        |interp, a| {
            let t = numpy::to_tensor(&a[0])?;
            let x = t.concrete()?;
            let text = match x.placement() {
                Some(p) if interp.jax_rules => {
                    arr_runtime::display::sharding::visualize_jax(p, x.shape())
                }
                Some(p) => {
                    let color = std::io::IsTerminal::is_terminal(&std::io::stdout())
                        && std::env::var_os("NO_COLOR").is_none();
                    let mut text =
                        arr_runtime::display::sharding::visualize(p, x.shape(), x.dtype(), color);
                    text.push_str(&processes_line(&p.mesh.devices));
                    text
                }
                None if interp.jax_rules => {
                    arr_runtime::display::sharding::jax_grid(&[vec!["CPU 0".to_string()]])
                }
                None => format!(
                    "{} is not sharded: the host holds all of it\n",
                    arr_runtime::display::type_string(&t)
                ),
            };
            interp.write_out(&text);
            Ok(Value::None)
        },
    );
    r.effect_func(
        "mesh_report()",
        "The devices as a table: memory resident, steps run, time computing and in \
         collectives, bytes sent; and the sharded arrays alive, with their layout.",
        |_, _| Ok(mesh_table().into_value()),
    );
}

pub(crate) fn object<T: 'static>(v: &Value) -> Option<&T> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<T>(),
        _ => None,
    }
}

/// A named sharding's mesh and its spec (by axis index) for an array of `rank`.
pub(crate) fn sharding_parts(
    s: &ShardingValue,
    rank: usize,
) -> Result<(Arc<Mesh>, Vec<Vec<usize>>)> {
    let p = s.spec.placement(&s.mesh, rank)?;
    Ok((s.mesh.clone(), p.spec))
}

fn mesh_arg(v: &Value, what: &str) -> Result<Arc<Mesh>> {
    object::<MeshValue>(v)
        .map(|m| m.0.clone())
        .ok_or_else(|| Error::type_error(format!("{what}: expected a mesh, not {}", v.type_name())))
}

fn spec_arg(v: &Value, what: &str) -> Result<SpecValue> {
    match v {
        Value::None => Ok(SpecValue(Vec::new())),
        v => object::<SpecValue>(v).cloned().ok_or_else(|| {
            Error::type_error(format!(
                "{what}: expected a partition spec P(...), not {}",
                v.type_name()
            ))
        }),
    }
}

/// Every array of a pytree copied to one device (the host for `cpu`).
fn put_on_device(x: &Value, name: &str) -> Result<Value> {
    let device = crate::device::parse_device(name)?;
    map_leaves(x, &mut |leaf| {
        let t = numpy::to_tensor(leaf)?;
        let Tensor::Concrete(a) = &t else {
            return Err(Error::value_error(
                "device_put of a traced value: a device is chosen outside jit",
            ));
        };
        if a.deleted().is_some() {
            return Err(Error::deleted_array(a));
        }
        let moved = match device {
            Some(d) if a.home() == Some(d.id) => a.clone(),
            Some(d) => Array::on_gpu(
                a.shape(),
                a.dtype(),
                d.upload(&*a.buffer().map_err(|_| Error::deleted_array(a))?),
            ),
            None => Array::from_arc(a.shape(), a.buffer().map_err(|_| Error::deleted_array(a))?),
        };
        Ok(Value::Array(Tensor::from(moved)))
    })
}

/// `device_put(x, s)`: `s` a sharding or device for all of `x`, or a pytree
/// prefix of `x` with one for each part.
fn put(x: &Value, s: &Value) -> Result<Value> {
    match (s, x) {
        (Value::None, _) => Ok(x.clone()),
        (Value::Str(name), _) => put_on_device(x, name),
        (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_)) => {
            let (ss, xs) = (numpy::sequence_items(s)?, numpy::sequence_items(x)?);
            if ss.len() != xs.len() {
                return Err(Error::value_error(format!(
                    "device_put: {} shardings for a {} of {} items",
                    ss.len(),
                    x.type_name(),
                    xs.len()
                )));
            }
            let items = ss
                .iter()
                .zip(&xs)
                .map(|(s, x)| put(x, s))
                .collect::<Result<_>>()?;
            Ok(match x {
                Value::List(_) => Value::list(items),
                _ => Value::tuple(items),
            })
        }
        (Value::Dict(sd), Value::Dict(xd)) => {
            let sd = sd.borrow();
            let mut out = arr_runtime::value::Dict::new();
            // Rebuilt in key order, as JAX rebuilds a dict pytree.
            let xd = xd.borrow();
            let mut entries: Vec<_> = xd.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in entries {
                let s = sd.get(k).ok_or_else(|| {
                    Error::value_error(format!(
                        "device_put: no sharding for key {}",
                        display::repr(&k.to_value())
                    ))
                })?;
                out.insert(k.clone(), put(v, s)?);
            }
            Ok(Value::dict(out))
        }
        (Value::Tuple(_) | Value::List(_) | Value::Dict(_), _) => Err(Error::value_error(format!(
            "device_put: the shardings are a {} but x is a {}",
            s.type_name(),
            x.type_name()
        ))),
        (s, _) => {
            if let Some(d) = object::<DeviceValue>(s) {
                return put_on_device(x, &d.label);
            }
            match arr_runtime::sharding::resolve(s, "device_put")? {
                Some((mesh, spec)) => place_tree(x, &mesh, &spec),
                None => Ok(x.clone()),
            }
        }
    }
}

fn place_tree(x: &Value, mesh: &Arc<Mesh>, spec: &SpecValue) -> Result<Value> {
    map_leaves(x, &mut |leaf| {
        let t = numpy::to_tensor(leaf)?;
        let a = match &t {
            Tensor::Concrete(_) => t.concrete()?,
            Tensor::Traced(_) => {
                return Err(Error::value_error(
                    "device_put of a traced value: use with_sharding_constraint inside jit",
                ))
            }
        };
        let p = spec.placement(mesh, a.ndim())?;
        // JAX's blocks are even; arr's own (Auto) meshes also take uneven ones.
        for d in 0..a.ndim() {
            let explicit = p.spec[d].iter().any(|&ax| mesh.is_explicit(ax));
            if explicit && !a.shape()[d].is_multiple_of(p.parts(d)) {
                return Err(Error::value_error(format!(
                    "device_put: dimension {d} of {} is not divisible by the {} devices \
                     that {} splits it over",
                    arr_runtime::prim::type_str(a.shape(), a.dtype()),
                    p.parts(d),
                    spec.text()
                )));
            }
        }
        Ok(Value::Array(Tensor::from(a.distribute(Arc::new(p))?)))
    })
}

/// The text of `mesh_report()` and the REPL's `:mesh`.
pub fn mesh_report() -> String {
    mesh_table().text()
}

/// `mesh_report()` as a table: one row per device, the live sharded arrays
/// as notes below (HTML in a notebook).
pub fn mesh_table() -> arr_runtime::table::Table {
    let n = devices::count();
    let multi = process::is_multi();
    let mut columns = vec![
        "device",
        "resident",
        "steps",
        "compute ms",
        "collective ms",
        "sent",
    ];
    if multi {
        columns.push("process");
    }
    let mut t = arr_runtime::table::Table::new(&columns).right(&[1, 2, 3, 4, 5]);
    t.title = Some(if multi {
        format!("{n} devices (cpu) on {} processes", process::count())
    } else {
        format!("{n} devices (cpu)")
    });
    for s in process::device_snapshots() {
        let mut row = vec![
            format!("cpu:{}", s.id),
            human_bytes(s.resident_bytes as usize),
            s.steps.to_string(),
            format!("{:.1}", s.compute_ms),
            format!("{:.1}", s.collective_ms),
            human_bytes(s.bytes_sent as usize),
        ];
        if multi {
            row.push(process::owner(s.id).to_string());
        }
        t.row(row);
    }
    for d in arr_kernels::gpu::devices_if_probed() {
        let (used, cached) = (
            d.pool.in_use.load(std::sync::atomic::Ordering::Relaxed),
            d.pool.cached.load(std::sync::atomic::Ordering::Relaxed),
        );
        t.notes.push(format!(
            "{} ({}): {} in use, {} cached for reuse, {} launches",
            d.label(),
            d.driver.describe(),
            human_bytes(used as usize),
            human_bytes(cached as usize),
            d.launches.load(std::sync::atomic::Ordering::Relaxed)
        ));
    }
    let live = Array::live_sharded();
    if live.is_empty() {
        t.notes.push("no sharded arrays".into());
    } else {
        t.notes.push("sharded arrays:".into());
        for a in live {
            if let Some(p) = a.placement() {
                let per: Vec<String> = p
                    .bytes_per_device(a.shape(), a.dtype())
                    .iter()
                    .map(|(d, b)| format!("{d}:{}", human_bytes(*b)))
                    .collect();
                t.notes.push(format!(
                    "  {} on {} {}  [{}]",
                    p.type_text(a.shape(), a.dtype()),
                    p.mesh.describe(),
                    p.spec_text(),
                    per.join(" ")
                ));
            }
        }
    }
    t
}
