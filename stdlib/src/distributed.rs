//! The job across processes as builtins: `distributed.initialize`, global
//! arrays from each process's local data, and checkpoints that every
//! process writes its own shards of and any mesh size reads back.
//!
//! A checkpoint is a directory: `index.json` (the pytree, and per array
//! its shape, dtype, partition spec and blocks) and one raw little-endian
//! file per distinct block. Each block is written by the process holding
//! the first device that has it, so replicas are written once and no
//! process gathers the whole array. Process 0 writes the index last, after
//! every process has written its blocks: a directory without an index is
//! an incomplete checkpoint. Raw files rather than `.npy` keep every dtype
//! (bfloat16 included) bit-exact.

use crate::args::*;
use crate::parallel::object;
use crate::tree::leaves;
use crate::Registry;
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{process, Array, Backend, Buffer, DType};
use arr_runtime::sharding::{MeshValue, ShardingValue, SpecValue};
use arr_runtime::{numpy, Dict, Error, ErrorKind, Interp, Key, Result, Tensor, Value};
use serde_json::{json, Value as Json};
use std::ops::Range;
use std::sync::Arc;

pub(crate) fn register(r: &mut Registry) {
    r.module(
        "distributed",
        "The processes of a job started by mpirun: arr joins them by itself when it \
         starts, so initialize() only checks what it is told.",
        &[
            (
                "initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None)",
                "Join the job's processes (done already when mpirun started arr); \
                 num_processes and process_id, when given, must match what the launcher \
                 set up. The coordinator is MPI's, so coordinator_address is not used.",
                initialize,
            ),
            (
                "is_initialized()",
                "Whether this process is one of several joined into a job.",
                |_, _| Ok(Value::Bool(process::is_multi())),
            ),
            (
                "shutdown()",
                "Nothing to do: the processes leave the job when their programs end.",
                |_, _| Ok(Value::None),
            ),
        ],
    );
    r.func(
        "make_array_from_process_local_data(sharding, local_data, global_shape=None)",
        "One global array laid out by sharding from every process's local_data: the \
         part of the global array that this process's devices hold (all of it in one \
         process). global_shape defaults to local_data's shape scaled by how many \
         processes split each dimension.",
        from_process_local_data,
    );
    r.func(
        "make_array_from_callback(shape, sharding, data_callback, dtype=None)",
        "A global array of shape laid out by sharding, each device's block made by \
         data_callback(index): index is the block's place in the global array, a tuple \
         of slices (slice(None) where a dimension is not split). A replicated layout \
         asks for the whole array once. dtype defaults to the first block's.",
        from_callback,
    );
    r.effect_func(
        "save_checkpoint(path, tree)",
        "Write a pytree of arrays to the directory path: every process writes the blocks \
         of its own devices (no process gathers a whole sharded array), then process 0 \
         writes the index. Overwrites an existing checkpoint.",
        save_checkpoint,
    );
    r.effect_func(
        "load_checkpoint(path, mesh=None, shardings=None)",
        "Read a checkpoint written by save_checkpoint: host arrays, or laid out over mesh \
         by the partition specs they were saved with (a mesh of any size with those axis \
         names), or by shardings (one NamedSharding or a pytree of them).",
        load_checkpoint,
    );
}

fn initialize(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let place = process::init().map_err(|e| {
        Error::new(
            ErrorKind::RuntimeError,
            format!("distributed.initialize: {e}"),
        )
    })?;
    if let Some(n) = opt_int_arg("num_processes", &a[1])? {
        if n != place.count as i64 {
            let how = if place.count == 1 {
                format!(
                    "this process was not started as one of {n}: launch the script with \
                     `mpirun -np {n} arr run script.arr`"
                )
            } else {
                format!("mpirun started {} processes", place.count)
            };
            return Err(Error::value_error(format!(
                "distributed.initialize: num_processes={n}, but {how}"
            )));
        }
    }
    if let Some(p) = opt_int_arg("process_id", &a[2])? {
        if p != place.index as i64 {
            return Err(Error::value_error(format!(
                "distributed.initialize: process_id={p}, but the launcher made this process {}",
                place.index
            )));
        }
    }
    Ok(Value::None)
}

// ---------------------------------------------------------------------------
// Global arrays from process-local data

fn sharding_arg<'a>(v: &'a Value, what: &str) -> Result<&'a ShardingValue> {
    object::<ShardingValue>(v).ok_or_else(|| {
        Error::type_error(format!(
            "{what}: sharding must be a NamedSharding, not {}",
            v.type_name()
        ))
    })
}

/// The index box the devices of process `p` hold together (their blocks'
/// bounding box), or `None` if `p` holds no device of the mesh.
fn process_box(p: &Placement, shape: &[usize], process: usize) -> Option<Vec<Range<usize>>> {
    p.blocks(shape)
        .into_iter()
        .filter(|(dev, _)| process::owner(*dev) == process)
        .map(|(_, b)| b)
        .reduce(|acc, b| {
            acc.iter()
                .zip(&b)
                .map(|(x, y)| x.start.min(y.start)..x.end.max(y.end))
                .collect()
        })
}

fn from_process_local_data(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    const WHAT: &str = "make_array_from_process_local_data";
    let sh = sharding_arg(&a[0], WHAT)?;
    let local = numpy::to_tensor(&a[1])?.concrete()?.clone();
    let placement = Arc::new(sh.spec.placement(&sh.mesh, local.ndim())?);
    let me = process::index();
    let global: Vec<usize> = match &a[2] {
        Value::None => (0..local.ndim())
            .map(|d| {
                // This process's devices cover `mine` of the dimension's blocks.
                let mut mine: Vec<usize> = (0..placement.mesh.size())
                    .filter(|&pos| process::owner(placement.mesh.devices[pos]) == me)
                    .map(|pos| placement.block_index(d, &placement.coords(pos)))
                    .collect();
                mine.sort_unstable();
                mine.dedup();
                local.shape()[d] * placement.parts(d) / mine.len().max(1)
            })
            .collect(),
        v => numpy::sequence_items(v)?
            .iter()
            .map(|x| int_arg("global_shape", x).map(|i| i.max(0) as usize))
            .collect::<Result<_>>()?,
    };
    if global.len() != local.ndim() {
        return Err(Error::value_error(format!(
            "{WHAT}: global_shape {global:?} has {} dimensions, local_data {:?} has {}",
            global.len(),
            local.shape(),
            local.ndim()
        )));
    }
    let mut bytes = Vec::new();
    process::encode_array(&local, &mut bytes)?;
    let all = process::all_gather_bytes(bytes, WHAT);
    let mut locals = Vec::with_capacity(all.len());
    for (p, b) in all.iter().enumerate() {
        let x = if p == me {
            local.clone()
        } else {
            process::decode_array(b, &mut 0).ok_or_else(|| {
                Error::new(
                    ErrorKind::RuntimeError,
                    format!("{WHAT}: process {p} sent malformed data"),
                )
            })?
        };
        let want = process_box(&placement, &global, p);
        if let Some(want) = &want {
            let want: Vec<usize> = want.iter().map(Range::len).collect();
            if x.shape() != want.as_slice() || x.dtype() != local.dtype() {
                return Err(Error::value_error(format!(
                    "{WHAT}: process {p} holds the block {want:?} of the global shape \
                     {global:?} laid out by {}, but its local_data is {}{:?}",
                    sh.spec.text(),
                    x.dtype().name(),
                    x.shape()
                )));
            }
        }
        locals.push((x, want));
    }
    // Each device's block is cut from its own process's local data.
    let shards = placement
        .blocks(&global)
        .into_iter()
        .map(|(dev, b)| {
            let (x, at) = &locals[process::owner(dev)];
            let at = at.as_ref().expect("the owner of a mesh device has a box");
            let start: Vec<usize> = b.iter().zip(at).map(|(r, o)| r.start - o.start).collect();
            let limit: Vec<usize> = b.iter().zip(at).map(|(r, o)| r.end - o.start).collect();
            arr_kernels::backend::of([x]).slice(x, &start, &limit, &vec![1; x.ndim()])
        })
        .collect();
    Ok(Value::Array(Tensor::from(Array::from_shards(
        &global, placement, shards,
    ))))
}

fn from_callback(interp: &mut Interp, a: Vec<Value>) -> Result<Value> {
    const WHAT: &str = "make_array_from_callback";
    let global = numpy::parse_shape(&a[0])?;
    let sh = sharding_arg(&a[1], WHAT)?;
    let placement = Arc::new(sh.spec.placement(&sh.mesh, global.len())?);
    let dtype = dtype_arg(&a[3])?;
    let parts: Vec<usize> = (0..global.len()).map(|d| placement.parts(d)).collect();
    let mut shards: Vec<Array> = Vec::with_capacity(placement.mesh.size());
    for (pos, (_, block)) in placement.blocks(&global).into_iter().enumerate() {
        if placement.is_replicated() && pos > 0 {
            shards.push(shards[0].clone());
            continue;
        }
        let index = arr_runtime::sharding::index_value(&block, &parts);
        let data = interp.call(&a[2], vec![index], Vec::new())?;
        let x = numpy::to_tensor(&data).map_err(|e| {
            Error::type_error(format!(
                "{WHAT}: data_callback returned {}, not an array: {}",
                data.type_name(),
                e.message
            ))
        })?;
        let x = x.concrete().map_err(|_| {
            Error::new(
                ErrorKind::TransformError,
                format!(
                    "{WHAT}: data_callback returned a traced value; it must return concrete data"
                ),
            )
        })?;
        // JAX's dtypes: NumPy's 64-bit data becomes 32-bit; every block
        // has the first one's (or the one asked for).
        let own = arr_runtime::numpy::x32_of(x.dtype());
        let want_dtype = dtype.or(shards.first().map(Array::dtype)).unwrap_or(own);
        if own != want_dtype {
            return Err(Error::value_error(match dtype {
                Some(d) => format!(
                    "If `dtype` is provided to `jax.make_array_from_callback`, it must match \
                     the dtype of the addressable shards. Got dtype={} and shard dtype={}`.",
                    d.name(),
                    own.name()
                ),
                None => format!(
                    "{WHAT}: data_callback returned {} for device {}, {} for the first block",
                    own.name(),
                    placement.mesh.devices[pos],
                    want_dtype.name()
                ),
            }));
        }
        let x = if x.dtype() == own {
            x.clone()
        } else {
            numpy::convert(Tensor::from(x.clone()), own)?
                .concrete()?
                .clone()
        };
        let want: Vec<usize> = block.iter().map(Range::len).collect();
        if x.shape() != want.as_slice() {
            return Err(Error::value_error(format!(
                "{WHAT}: the block of device {} is {want:?} of the global shape {global:?} \
                 laid out by {}, but data_callback returned shape {:?}",
                placement.mesh.devices[pos],
                sh.spec.text(),
                x.shape()
            )));
        }
        shards.push(x);
    }
    Ok(Value::Array(Tensor::from(Array::from_shards(
        &global, placement, shards,
    ))))
}

// ---------------------------------------------------------------------------
// Checkpoints

fn io_error(message: String) -> Error {
    Error::new(ErrorKind::IOError, message)
}

fn path_of(v: &Value, what: &str) -> Result<std::path::PathBuf> {
    Ok(std::path::PathBuf::from(str_arg(what, v)?))
}

/// The pytree as JSON, array leaves replaced by their index in `arrays`.
fn tree_json(v: &Value, arrays: &mut Vec<Array>) -> Result<Json> {
    Ok(match v {
        Value::None => Json::Null,
        Value::Bool(b) => json!({ "bool": b }),
        Value::Int(i) => json!({ "int": i }),
        Value::Float(f) => json!({ "float": f }),
        Value::Str(s) => json!({ "str": s.as_str() }),
        Value::List(l) => json!({
            "list": l.borrow().iter().map(|x| tree_json(x, arrays)).collect::<Result<Vec<_>>>()?
        }),
        Value::Tuple(t) => json!({
            "tuple": t.iter().map(|x| tree_json(x, arrays)).collect::<Result<Vec<_>>>()?
        }),
        Value::Dict(d) => {
            let mut items = Vec::new();
            for (k, x) in d.borrow().iter() {
                let key = match k {
                    Key::Str(s) => json!({ "str": &**s }),
                    Key::Int(i) => json!({ "int": i }),
                    _ => {
                        return Err(Error::type_error(
                            "save_checkpoint: dict keys must be strings or ints",
                        ))
                    }
                };
                items.push(json!([key, tree_json(x, arrays)?]));
            }
            json!({ "dict": items })
        }
        Value::Array(t) => {
            arrays.push(t.concrete()?.clone());
            json!({ "array": arrays.len() - 1 })
        }
        other => {
            return Err(Error::type_error(format!(
                "save_checkpoint: cannot save a {} (leaves must be arrays, numbers or strings)",
                other.type_name()
            )))
        }
    })
}

/// Where each array of an index's tree sits (`['layers'][0]['w1']`), by
/// its number: what a load error names.
fn array_paths(j: &Json, path: &str, out: &mut Vec<(usize, String)>) {
    let Some((tag, x)) = j.as_object().and_then(|o| o.iter().next()) else {
        return;
    };
    match tag.as_str() {
        "array" => {
            if let Some(k) = x.as_u64() {
                out.push((k as usize, path.to_string()));
            }
        }
        "list" | "tuple" => {
            for (i, e) in x.as_array().into_iter().flatten().enumerate() {
                array_paths(e, &format!("{path}[{i}]"), out);
            }
        }
        "dict" => {
            for e in x.as_array().into_iter().flatten() {
                let Some([key, v]) = e.as_array().map(Vec::as_slice) else {
                    continue;
                };
                let key = match (key.get("str"), key.get("int")) {
                    (Some(s), _) => format!("[{s}]").replace('"', "'"),
                    (_, Some(i)) => format!("[{i}]"),
                    _ => "[?]".into(),
                };
                array_paths(v, &format!("{path}{key}"), out);
            }
        }
        _ => {}
    }
}

fn tree_value(j: &Json, arrays: &mut dyn FnMut(usize) -> Result<Value>) -> Result<Value> {
    let bad = || io_error("load_checkpoint: index.json is not a checkpoint index".into());
    if j.is_null() {
        return Ok(Value::None);
    }
    let (tag, x) = j
        .as_object()
        .and_then(|o| o.iter().next())
        .ok_or_else(bad)?;
    let items = |x: &Json, arrays: &mut dyn FnMut(usize) -> Result<Value>| -> Result<Vec<Value>> {
        x.as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|e| tree_value(e, arrays))
            .collect()
    };
    Ok(match tag.as_str() {
        "bool" => Value::Bool(x.as_bool().ok_or_else(bad)?),
        "int" => Value::Int(x.as_i64().ok_or_else(bad)?),
        "float" => Value::Float(x.as_f64().ok_or_else(bad)?),
        "str" => Value::str(x.as_str().ok_or_else(bad)?),
        "list" => Value::list(items(x, arrays)?),
        "tuple" => Value::tuple(items(x, arrays)?),
        "array" => arrays(x.as_u64().ok_or_else(bad)? as usize)?,
        "dict" => {
            let mut d = Dict::default();
            for e in x.as_array().ok_or_else(bad)? {
                let pair = e.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
                let key = match tree_value(&pair[0], arrays)? {
                    Value::Str(s) => Key::Str(s.as_str().into()),
                    Value::Int(i) => Key::Int(i),
                    _ => return Err(bad()),
                };
                d.insert(key, tree_value(&pair[1], arrays)?);
            }
            Value::dict(d)
        }
        _ => return Err(bad()),
    })
}

/// The distinct blocks of `a` (a host array has one): their ranges, and
/// the device whose process writes each (the first that holds it).
fn distinct_blocks(a: &Array) -> Vec<(Vec<Range<usize>>, Option<usize>)> {
    let Some(p) = a.placement() else {
        return vec![(a.shape().iter().map(|&d| 0..d).collect(), None)];
    };
    let mut out: Vec<(Vec<Range<usize>>, Option<usize>)> = Vec::new();
    for (dev, b) in p.blocks(a.shape()) {
        if !out.iter().any(|(seen, _)| *seen == b) {
            out.push((b, Some(dev)));
        }
    }
    out
}

fn save_checkpoint(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dir = path_of(&a[0], "path")?;
    let mut arrays = Vec::new();
    let tree = tree_json(&a[1], &mut arrays)?;
    let me = process::index();
    // Every process fails or succeeds together: an error on one (a full
    // disk) must not leave the others waiting at the barrier.
    let mut failure = None;
    if let Err(e) = std::fs::create_dir_all(&dir) {
        failure = Some(format!("cannot create '{}': {e}", dir.display()));
    }
    let index_path = dir.join("index.json");
    if me == 0 && failure.is_none() {
        // An old index would describe blocks this save overwrites.
        let _ = std::fs::remove_file(&index_path);
    }
    process::barrier("save_checkpoint (removing the old index)");
    let mut leaves_json = Vec::new();
    for (k, x) in arrays.iter().enumerate() {
        let mut blocks = Vec::new();
        for (i, (b, dev)) in distinct_blocks(x).into_iter().enumerate() {
            let file = format!("{k}.{i}.bin");
            let writer = dev.map_or(0, process::owner);
            if writer == me && failure.is_none() {
                let block = match x.shards() {
                    Some(shards) => {
                        let pos = x.placement().expect("shards have a placement");
                        let at = (0..pos.mesh.size())
                            .find(|&p| Some(pos.mesh.devices[p]) == dev)
                            .expect("the block's device is on the mesh");
                        shards[at].clone()
                    }
                    None => {
                        let start: Vec<usize> = b.iter().map(|r| r.start).collect();
                        let limit: Vec<usize> = b.iter().map(|r| r.end).collect();
                        arr_kernels::backend::of([x]).slice(x, &start, &limit, &vec![1; x.ndim()])
                    }
                };
                let bytes = block.buffer()?.to_le_bytes();
                if let Err(e) = std::fs::write(dir.join(&file), bytes) {
                    failure = Some(format!("cannot write '{}': {e}", dir.join(&file).display()));
                }
            }
            blocks.push(json!({
                "file": file,
                "start": b.iter().map(|r| r.start).collect::<Vec<_>>(),
                "stop": b.iter().map(|r| r.end).collect::<Vec<_>>(),
            }));
        }
        let spec = x
            .placement()
            .map(|p| SpecValue::of(p).0)
            .unwrap_or_default();
        leaves_json.push(json!({
            "shape": x.shape(),
            "dtype": x.dtype().name(),
            "spec": spec,
            "blocks": blocks,
        }));
    }
    let failures = process::all_gather_bytes(
        failure.unwrap_or_default().into_bytes(),
        "save_checkpoint (writing the blocks)",
    );
    if let Some((p, why)) = failures.iter().enumerate().find(|(_, f)| !f.is_empty()) {
        let who = if process::is_multi() {
            format!("process {p}: ")
        } else {
            String::new()
        };
        return Err(io_error(format!(
            "save_checkpoint: {who}{}",
            String::from_utf8_lossy(why)
        )));
    }
    let mut failure = String::new();
    if me == 0 {
        let index = json!({
            "format": "arr-checkpoint",
            "version": 1,
            "processes": process::count(),
            "tree": tree,
            "arrays": leaves_json,
        });
        let tmp = dir.join("index.json.tmp");
        let written = std::fs::write(&tmp, index.to_string())
            .and_then(|()| std::fs::rename(&tmp, &index_path));
        if let Err(e) = written {
            failure = format!("cannot write '{}': {e}", index_path.display());
        }
    }
    // The others return once the checkpoint is complete (or failed).
    let failures = process::all_gather_bytes(failure.into_bytes(), "save_checkpoint (the index)");
    if !failures[0].is_empty() {
        return Err(io_error(format!(
            "save_checkpoint: {}",
            String::from_utf8_lossy(&failures[0])
        )));
    }
    Ok(Value::None)
}

/// How loaded arrays are laid out.
enum Layout<'a> {
    Host,
    /// By their saved specs over this mesh.
    Mesh(Arc<Mesh>),
    /// One sharding for every array, or one per array leaf.
    Shardings(Vec<&'a ShardingValue>),
}

fn load_checkpoint(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    let dir = path_of(&a[0], "path")?;
    let index_path = dir.join("index.json");
    let text = std::fs::read_to_string(&index_path).map_err(|e| {
        io_error(format!(
            "load_checkpoint: cannot read '{}': {e} (a checkpoint whose save did not finish has no index)",
            index_path.display()
        ))
    })?;
    let index: Json = serde_json::from_str(&text)
        .map_err(|e| io_error(format!("load_checkpoint: '{}': {e}", index_path.display())))?;
    if index["format"] != "arr-checkpoint" || index["version"] != 1 {
        return Err(io_error(format!(
            "load_checkpoint: '{}' is not an arr checkpoint index (version 1)",
            index_path.display()
        )));
    }
    let sharding_leaves = leaves(&a[2])?;
    let layout = match (&a[1], &a[2]) {
        (Value::None, Value::None) => Layout::Host,
        (m, Value::None) => {
            Layout::Mesh(object::<MeshValue>(m).map(|m| m.0.clone()).ok_or_else(|| {
                Error::type_error(format!(
                    "load_checkpoint: mesh must be a mesh, not {}",
                    m.type_name()
                ))
            })?)
        }
        (Value::None, _) => Layout::Shardings(
            sharding_leaves
                .iter()
                .map(|l| sharding_arg(l, "load_checkpoint"))
                .collect::<Result<_>>()?,
        ),
        _ => {
            return Err(Error::value_error(
                "load_checkpoint: give mesh or shardings, not both",
            ))
        }
    };
    let specs = index["arrays"].as_array().cloned().unwrap_or_default();
    if let Layout::Shardings(s) = &layout {
        if s.len() != 1 && s.len() != specs.len() {
            return Err(Error::value_error(format!(
                "load_checkpoint: shardings has {} leaves, the checkpoint {} arrays",
                s.len(),
                specs.len()
            )));
        }
    }
    let mut paths = Vec::new();
    array_paths(&index["tree"], "", &mut paths);
    let mut read = |k: usize| -> Result<Value> {
        let spec = specs
            .get(k)
            .ok_or_else(|| io_error(format!("load_checkpoint: the index has no array {k}")))?;
        let x = read_array(&dir, spec).map_err(|mut e| {
            if let Some((_, p)) = paths.iter().find(|(i, _)| *i == k) {
                let at = if p.is_empty() { "the tree itself" } else { p };
                e.message = format!("{} (the array at {at}; nothing was loaded)", e.message);
            }
            e
        })?;
        let placement = match &layout {
            Layout::Host => return Ok(Value::Array(Tensor::from(x))),
            Layout::Mesh(m) => {
                let axes: Vec<Vec<String>> = serde_json::from_value(spec["spec"].clone())
                    .map_err(|e| io_error(format!("load_checkpoint: array {k}'s spec: {e}")))?;
                SpecValue(axes).placement(m, x.ndim())?
            }
            Layout::Shardings(s) => {
                let sh = s[if s.len() == 1 { 0 } else { k }];
                sh.spec.placement(&sh.mesh, x.ndim())?
            }
        };
        Ok(Value::Array(Tensor::from(
            x.distribute(Arc::new(placement))?,
        )))
    };
    tree_value(&index["tree"], &mut read)
}

/// One array of the index, put together from its block files.
fn read_array(dir: &std::path::Path, spec: &Json) -> Result<Array> {
    let bad = |why: String| io_error(format!("load_checkpoint: {why}"));
    let shape: Vec<usize> = serde_json::from_value(spec["shape"].clone())
        .map_err(|e| bad(format!("an array's shape: {e}")))?;
    let dtype = spec["dtype"]
        .as_str()
        .and_then(DType::from_name)
        .ok_or_else(|| bad(format!("unknown dtype {}", spec["dtype"])))?;
    let n = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
    let size = dtype.size_bytes();
    let mut whole = vec![
        0u8;
        n.checked_mul(size)
            .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?
    ];
    let mut covered = 0usize;
    for b in spec["blocks"].as_array().into_iter().flatten() {
        let file = b["file"]
            .as_str()
            .ok_or_else(|| bad("a block without a file".into()))?;
        let start: Vec<usize> =
            serde_json::from_value(b["start"].clone()).map_err(|e| bad(e.to_string()))?;
        let stop: Vec<usize> =
            serde_json::from_value(b["stop"].clone()).map_err(|e| bad(e.to_string()))?;
        if start.len() != shape.len()
            || stop.len() != shape.len()
            || start
                .iter()
                .zip(&stop)
                .zip(&shape)
                .any(|((&s, &e), &d)| s > e || e > d)
        {
            return Err(bad(format!(
                "block {file} lies outside the shape {shape:?}"
            )));
        }
        let path = dir.join(file);
        let bytes = std::fs::read(&path)
            .map_err(|e| bad(format!("cannot read '{}': {e}", path.display())))?;
        let dims: Vec<usize> = start.iter().zip(&stop).map(|(s, e)| e - s).collect();
        let count: usize = dims.iter().product();
        if bytes.len() != count * size {
            return Err(bad(format!(
                "'{}' has {} bytes, a {}{dims:?} block needs {}",
                path.display(),
                bytes.len(),
                dtype.name(),
                count * size
            )));
        }
        copy_block(&mut whole, &shape, &start, &dims, &bytes, size);
        covered += count;
    }
    if covered != n {
        return Err(bad(format!(
            "the blocks of a {}{shape:?} array cover {covered} of its {n} elements",
            dtype.name()
        )));
    }
    let buf = Buffer::from_le_bytes(dtype, &whole).ok_or_else(|| bad("malformed data".into()))?;
    Ok(Array::new(&shape, buf))
}

/// Copy a row-major block of `dims` at `start` into the row-major `whole`
/// of `shape`, a contiguous run of the last dimension at a time.
fn copy_block(
    whole: &mut [u8],
    shape: &[usize],
    start: &[usize],
    dims: &[usize],
    block: &[u8],
    size: usize,
) {
    let rank = shape.len();
    let count: usize = dims.iter().product();
    if count == 0 {
        return;
    }
    let run = dims.last().copied().unwrap_or(1) * size;
    let rows = count / dims.last().copied().unwrap_or(1).max(1);
    for row in 0..rows {
        // The block coordinates of this row, then its offset in `whole`.
        let mut rem = row;
        let mut offset = 0usize;
        let mut stride = 1usize;
        for d in (0..rank).rev() {
            let i = if d + 1 == rank {
                0
            } else {
                let i = rem % dims[d];
                rem /= dims[d];
                i
            };
            offset += (start[d] + i) * stride;
            stride *= shape[d];
        }
        whole[offset * size..offset * size + run]
            .copy_from_slice(&block[row * run..(row + 1) * run]);
    }
}

#[cfg(test)]
mod tests {
    use super::copy_block;

    #[test]
    fn a_block_lands_at_its_place() {
        // A 2x2 block at (1, 1) of a 3x4 array of one-byte elements.
        let mut whole = vec![0u8; 12];
        copy_block(&mut whole, &[3, 4], &[1, 1], &[2, 2], &[1, 2, 3, 4], 1);
        assert_eq!(whole, [0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0]);
        // A 0-d array is one element.
        let mut one = vec![0u8; 4];
        copy_block(&mut one, &[], &[], &[], &[9, 8, 7, 6], 4);
        assert_eq!(one, [9, 8, 7, 6]);
    }
}
