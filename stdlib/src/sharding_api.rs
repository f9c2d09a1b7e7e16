//! JAX's explicit-sharding API as arr builtins: `make_mesh`, `Mesh`,
//! `AxisType`, the context mesh (`set_mesh`, `use_mesh`,
//! `get_abstract_mesh`) under which a bare `P(...)` is a sharding, `typeof`
//! (an array's type with its sharding), `reshard`, `device_get`,
//! `axis_size`, and the methods of shardings and sharded arrays
//! (`shard_shape`, `addressable_shards`, `devices()`...).

use crate::args::{int_arg, str_arg};
use crate::parallel::object;
use crate::tree::map_leaves;
use crate::Registry;
use arr_kernels::sharding::{AxisType, Mesh};
use arr_kernels::{devices, Array};
use arr_runtime::sharding::{
    context_mesh, set_context_mesh, AbstractMeshValue, ArrayTypeValue, AxisTypeEnum, AxisTypeValue,
    DeviceGrid, DeviceValue, MeshValue, ShardingValue,
};
use arr_runtime::transform::collective;
use arr_runtime::{numpy, Error, NativeClosure, Result, Tensor, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

pub(crate) fn register(r: &mut Registry) {
    register_grid_methods(r);
    r.func(
        "SingleDeviceSharding(device, memory_kind=None)",
        "The sharding of an array one device holds whole (device_put to it keeps the \
         array unsplit).",
        |_, a| match &a[0] {
            Value::Object(o) => match o
                .as_any()
                .downcast_ref::<arr_runtime::sharding::DeviceValue>()
            {
                Some(d) => Ok(Value::object(arr_runtime::sharding::SingleDeviceSharding(
                    d.clone(),
                ))),
                None => Err(Error::type_error(format!(
                    "SingleDeviceSharding: device must be a device (jax.devices()[0]), not {}",
                    o.type_name()
                ))),
            },
            other => Err(Error::type_error(format!(
                "SingleDeviceSharding: device must be a device (jax.devices()[0]), not {}",
                other.type_name()
            ))),
        },
    );
    r.func(
        "make_mesh(axis_shapes, axis_names, axis_types=None, devices=None)",
        "A mesh over the devices (the first ones, or devices): axis_shapes sizes with one \
         name each; every axis Explicit (part of array types) unless axis_types says \
         otherwise. The sizes may multiply to fewer devices than there are: the mesh \
         takes the first ones.",
        |_, a| {
            let shape = sizes(&a[0], "make_mesh")?;
            let names = names(&a[1], "make_mesh")?;
            let mut ids: Vec<usize> = match &a[3] {
                Value::None => (0..devices::count()).collect(),
                v => device_ids(v, "make_mesh")?,
            };
            let n: usize = shape.iter().product();
            if n > ids.len() {
                return Err(Error::value_error(format!(
                    "make_mesh: the mesh shape {shape:?} needs {n} devices, but there are {}",
                    ids.len()
                )));
            }
            // As JAX: a smaller mesh takes the first devices.
            ids.truncate(n);
            let types = axis_types(&a[2], shape.len(), AxisType::Explicit)?;
            mesh_value(shape, names, ids, types)
        },
    );
    r.func(
        "Mesh(devices, axis_names, axis_types=None)",
        "A mesh from a grid of devices (nested lists of devices or ids, or \
         array(devices()).reshape(...)) with one name per axis; axes Auto unless \
         axis_types says otherwise, as JAX's Mesh.",
        |_, a| {
            let (shape, ids) = grid(&a[0])?;
            let names = names(&a[1], "Mesh")?;
            let types = axis_types(&a[2], shape.len(), AxisType::Auto)?;
            mesh_value(shape, names, ids, types)
        },
    );
    r.interp
        .set_builtin("AxisType", Value::object(AxisTypeEnum));
    r.effect_func(
        "set_mesh(mesh)",
        "Make mesh the context mesh: a bare P(...) means NamedSharding(mesh, P(...)) wherever \
         a sharding is taken, and shard_map uses it when given no mesh. Also a context \
         manager (`with set_mesh(mesh):`) that restores the previous mesh on exit.",
        |_, a| {
            let mesh = mesh_arg(&a[0], "set_mesh")?;
            let previous = set_context_mesh(Some(mesh.clone()));
            Ok(mesh_context(mesh, Some(previous)))
        },
    );
    r.effect_func(
        "use_mesh(mesh)",
        "A context manager: mesh is the context mesh inside the `with` block (see set_mesh).",
        |_, a| {
            let mesh = mesh_arg(&a[0], "use_mesh")?;
            Ok(mesh_context(mesh, None))
        },
    );
    r.func(
        "get_abstract_mesh()",
        "The context mesh's axes (.shape, .axis_names, .axis_types), or an empty mesh \
         (.empty is True) when none is set.",
        |_, _| Ok(Value::object(AbstractMeshValue(context_mesh()))),
    );
    r.func(
        "typeof(x)",
        "The type of x as JAX shows it: dtype, shape and the Explicit mesh axes that split \
         each dimension (float32[8@X,4]); inside jit, the traced value's.",
        |_, a| Ok(Value::object(ArrayTypeValue::of(&numpy::to_tensor(&a[0])?))),
    );
    r.func(
        "reshard(x, out_shardings)",
        "x (an array or a pytree of arrays) laid out as out_shardings says (a NamedSharding, \
         or P(...) under a context mesh): moved eagerly, constrained inside jit.",
        |_, a| {
            map_leaves(&a[0], &mut |leaf| {
                let t = Value::Array(numpy::to_tensor(leaf)?);
                arr_runtime::sharding::lay_out(&t, &a[1], "reshard")
            })
        },
    );
    r.func(
        "device_get(x)",
        "x (an array or a pytree of arrays) gathered to the host as NumPy arrays, as \
         JAX's: whole, no longer laid out over devices.",
        |_, a| {
            map_leaves(&a[0], &mut |leaf| match leaf {
                Value::Array(t) => {
                    let a = t.concrete()?;
                    let host = Value::Array(Tensor::from(Array::from_arc(a.shape(), a.buffer()?)));
                    Ok(numpy::with_flavour(host, numpy::NDARRAY))
                }
                other => Ok(other.clone()),
            })
        },
    );
    r.func(
        "axis_size(axis_name)",
        "The number of devices along a bound axis name (inside shard_map, pmap or vmap \
         with axis_name); a tuple of names gives the product.",
        |_, a| {
            let names: Vec<String> = match &a[0] {
                Value::Tuple(_) | Value::List(_) => numpy::sequence_items(&a[0])?
                    .iter()
                    .map(|n| str_arg("axis_name", n).map(str::to_string))
                    .collect::<Result<_>>()?,
                v => vec![str_arg("axis_name", v)?.to_string()],
            };
            let mut n = 1usize;
            for name in &names {
                n *= collective::axis_size(name, "axis_size")?;
            }
            Ok(Value::Int(n as i64))
        },
    );
    r.method(
        "NamedSharding",
        "shard_shape(self, global_shape)",
        "The shape of one device's block of an array of global_shape.",
        |_, a| {
            let s = sharding_of(&a[0])?;
            let shape = sizes(&a[1], "shard_shape")?;
            let p = s.spec.placement(&s.mesh, shape.len())?;
            Ok(Value::tuple(
                (0..shape.len())
                    .map(|d| Value::Int(shape[d].div_ceil(p.parts(d).max(1)) as i64))
                    .collect(),
            ))
        },
    );
    r.method(
        "NamedSharding",
        "is_equivalent_to(self, other, ndim)",
        "Whether other lays out an array of ndim dimensions the same way: the same block \
         on every device.",
        |_, a| {
            let s = sharding_of(&a[0])?;
            let ndim = a[2]
                .to_int()?
                .filter(|&n| n >= 0)
                .ok_or_else(|| Error::type_error("is_equivalent_to: ndim must be an integer"))?
                as usize;
            let p = s.spec.placement(&s.mesh, ndim)?;
            // A shape every split divides, so that equal blocks mean equal layouts.
            let shape = vec![s.mesh.size().max(1); ndim];
            let mut mine = p.blocks(&shape);
            mine.sort_by_key(|(d, _)| *d);
            let theirs = match arr_runtime::sharding::resolve(&a[1], "is_equivalent_to")? {
                Some((mesh, spec)) => {
                    let mut b = spec.placement(&mesh, ndim)?.blocks(&shape);
                    b.sort_by_key(|(d, _)| *d);
                    b
                }
                // One device holding the whole array.
                None => vec![(0, shape.iter().map(|&n| 0..n).collect())],
            };
            Ok(Value::Bool(mine == theirs))
        },
    );
    r.method(
        "NamedSharding",
        "devices_indices_map(self, global_shape)",
        "Each device's block of an array of global_shape: a dict from device to \
         its index (a tuple of slices), in device order.",
        |_, a| {
            let s = sharding_of(&a[0])?;
            let shape = sizes(&a[1], "devices_indices_map")?;
            let p = s.spec.placement(&s.mesh, shape.len())?;
            let mut blocks = p.blocks(&shape);
            blocks.sort_by_key(|(d, _)| *d);
            let parts: Vec<usize> = (0..shape.len()).map(|d| p.parts(d)).collect();
            let mut map = arr_runtime::value::Dict::default();
            for (d, b) in &blocks {
                let device = Value::object(DeviceValue::cpu(*d));
                map.insert(
                    device.to_key()?,
                    arr_runtime::sharding::index_value(b, &parts),
                );
            }
            Ok(Value::dict(map))
        },
    );
    r.method(
        "array",
        "devices(self)",
        "The set of devices that hold a block of the array (in order of id).",
        |_, a| {
            let t = numpy::to_tensor(&a[0])?;
            let mut ids = match t.placement() {
                Some(p) => p.mesh.devices.clone(),
                None => vec![0],
            };
            ids.sort_unstable();
            arr_runtime::set::from_values(
                ids.into_iter().map(|d| Value::object(DeviceValue::cpu(d))),
            )
        },
    );
    r.method(
        "array",
        "addressable_data(self, index)",
        "The block of the array that addressable shard number index holds.",
        |_, a| {
            let shards = arr_runtime::sharding::addressable_shards(&numpy::to_tensor(&a[0])?)?;
            let i = int_arg("index", &a[1])?;
            let n = shards.len();
            let shard = usize::try_from(i)
                .ok()
                .and_then(|i| shards.into_iter().nth(i))
                .ok_or_else(|| {
                    Error::index_error(format!(
                        "addressable_data: index {i} out of range for {n} shards"
                    ))
                })?;
            Ok(shard.data)
        },
    );
}

fn sharding_of(v: &Value) -> Result<&ShardingValue> {
    object::<ShardingValue>(v).ok_or_else(|| {
        Error::type_error(format!("expected a NamedSharding, not {}", v.type_name()))
    })
}

fn mesh_arg(v: &Value, what: &str) -> Result<Arc<Mesh>> {
    object::<MeshValue>(v)
        .map(|m| m.0.clone())
        .ok_or_else(|| Error::type_error(format!("{what}: expected a mesh, not {}", v.type_name())))
}

fn mesh_value(
    shape: Vec<usize>,
    names: Vec<Arc<str>>,
    ids: Vec<usize>,
    types: Vec<AxisType>,
) -> Result<Value> {
    let count = devices::count();
    if let Some(&bad) = ids.iter().find(|&&d| d >= count) {
        return Err(Error::value_error(format!(
            "mesh: device {bad} does not exist (there are {count}; set_devices(n) gives more)"
        )));
    }
    let m = Mesh::new(shape, names, ids)
        .and_then(|m| m.with_axis_types(types))
        .map_err(Error::value_error)?;
    Ok(Value::object(MeshValue(Arc::new(m))))
}

/// A context manager over the context mesh: `__enter__` installs `mesh`
/// (unless `set_mesh` already did: then `previous` is what it replaced),
/// `__exit__` puts the previous one back.
fn mesh_context(mesh: Arc<Mesh>, previous: Option<Option<Arc<Mesh>>>) -> Value {
    let saved = Rc::new(RefCell::new(previous));
    let (m2, s2) = (mesh.clone(), saved.clone());
    let enter = NativeClosure::value("__enter__", move |_, _, _| {
        let mut saved = s2.borrow_mut();
        if saved.is_none() {
            *saved = Some(set_context_mesh(Some(m2.clone())));
        }
        Ok(Value::object(MeshValue(m2.clone())))
    });
    let exit = NativeClosure::value("__exit__", move |_, _, _| {
        if let Some(before) = saved.borrow_mut().take() {
            set_context_mesh(before);
        }
        Ok(Value::Bool(false))
    });
    Value::object(MeshContext { mesh, enter, exit })
}

/// What `set_mesh`/`use_mesh` return: the mesh, usable in a `with` statement.
#[derive(Debug)]
struct MeshContext {
    mesh: Arc<Mesh>,
    enter: Value,
    exit: Value,
}

impl arr_runtime::value::Object for MeshContext {
    fn type_name(&self) -> &'static str {
        "MeshContext"
    }
    fn repr(&self) -> String {
        // As JAX shows the context object (the mesh is `with ... as m`'s value).
        format!(
            "<jax._src.sharding_impls.set_mesh object at {:#x}>",
            self as *const MeshContext as usize
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        match name {
            "__enter__" => Some(self.enter.clone()),
            "__exit__" => Some(self.exit.clone()),
            _ => MeshValue(self.mesh.clone()).attr(name),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn sizes(v: &Value, what: &str) -> Result<Vec<usize>> {
    let items = match v {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v)?,
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|x| {
            let n = int_arg(what, x)?;
            usize::try_from(n)
                .map_err(|_| Error::value_error(format!("{what}: sizes must be >= 0, not {n}")))
        })
        .collect()
}

fn names(v: &Value, what: &str) -> Result<Vec<Arc<str>>> {
    let items = match v {
        Value::Tuple(_) | Value::List(_) => numpy::sequence_items(v)?,
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|x| str_arg("axis_names", x).map(Arc::from))
        .collect::<Result<_>>()
        .map_err(|e| Error::type_error(format!("{what}: {}", e.message)))
}

fn axis_types(v: &Value, n: usize, default: AxisType) -> Result<Vec<AxisType>> {
    match v {
        Value::None => Ok(vec![default; n]),
        Value::Tuple(_) | Value::List(_) => {
            numpy::sequence_items(v)?.iter().map(axis_type).collect()
        }
        one => Ok(vec![axis_type(one)?; n]),
    }
}

fn axis_type(v: &Value) -> Result<AxisType> {
    object::<AxisTypeValue>(v).map(|t| t.0).ok_or_else(|| {
        Error::type_error(format!(
            "axis_types: expected AxisType.Explicit, Auto or Manual, not {}",
            v.type_name()
        ))
    })
}

/// A device given as a device object or an id.
fn device_id(v: &Value, what: &str) -> Result<usize> {
    if let Some(d) = object::<DeviceValue>(v) {
        return Ok(d.id);
    }
    let i = int_arg(what, v)?;
    usize::try_from(i).map_err(|_| Error::value_error(format!("{what}: no device {i}")))
}

fn device_ids(v: &Value, what: &str) -> Result<Vec<usize>> {
    if let Some(g) = object::<DeviceGrid>(v) {
        return Ok(g.ids.clone());
    }
    numpy::sequence_items(v)?
        .iter()
        .map(|d| device_id(d, what))
        .collect()
}

/// The shape and ids of a grid of devices: a DeviceGrid, or nested lists.
fn grid(v: &Value) -> Result<(Vec<usize>, Vec<usize>)> {
    if let Some(g) = object::<DeviceGrid>(v) {
        return Ok((g.shape.clone(), g.ids.clone()));
    }
    match v {
        Value::Tuple(_) | Value::List(_) => {
            let items = numpy::sequence_items(v)?;
            let mut shape = None;
            let mut ids = Vec::new();
            for it in &items {
                let (s, i) = grid(it)?;
                if shape.get_or_insert_with(|| s.clone()) != &s {
                    return Err(Error::value_error("Mesh: the device grid is ragged"));
                }
                ids.extend(i);
            }
            let mut full = vec![items.len()];
            full.extend(shape.unwrap_or_default());
            Ok((full, ids))
        }
        leaf => Ok((Vec::new(), vec![device_id(leaf, "Mesh")?])),
    }
}

/// `array(devices())`: a list of devices as a grid (NumPy's object array).
pub(crate) fn device_grid(v: &Value) -> Result<Option<Value>> {
    let first_is_device = match v {
        Value::List(l) => l
            .borrow()
            .first()
            .is_some_and(|d| object::<DeviceValue>(d).is_some()),
        _ => false,
    };
    if !first_is_device {
        return Ok(None);
    }
    let (shape, ids) = grid(v)?;
    Ok(Some(Value::object(DeviceGrid { shape, ids })))
}

/// `grid.reshape(*shape)` and `grid.tolist()`.
fn register_grid_methods(r: &mut Registry) {
    r.method(
        "DeviceArray",
        "reshape(self, *shape)",
        "The same devices in a grid of another shape.",
        |_, a| {
            let g = object::<DeviceGrid>(&a[0]).expect("a device grid");
            let items = numpy::sequence_items(&a[1])?;
            let shape = match &items[..] {
                [one @ (Value::Tuple(_) | Value::List(_))] => sizes(one, "reshape")?,
                _ => sizes(&Value::tuple(items), "reshape")?,
            };
            if shape.iter().product::<usize>() != g.ids.len() {
                return Err(Error::value_error(format!(
                    "cannot reshape {} devices into shape {shape:?}",
                    g.ids.len()
                )));
            }
            Ok(Value::object(DeviceGrid {
                shape,
                ids: g.ids.clone(),
            }))
        },
    );
    r.method(
        "DeviceArray",
        "tolist(self)",
        "The devices as nested lists.",
        |_, a| Ok(object::<DeviceGrid>(&a[0]).expect("a device grid").nested()),
    );
    r.method(
        "DeviceArray",
        "item(self, *index)",
        "The device at index (a flat position, or one int per dimension).",
        |_, a| {
            let g = object::<DeviceGrid>(&a[0]).expect("a device grid");
            let idx: Vec<i64> = numpy::sequence_items(&a[1])?
                .iter()
                .map(|i| int_arg("index", i))
                .collect::<Result<_>>()?;
            let mut pos = 0usize;
            if idx.len() == 1 {
                pos = usize::try_from(idx[0]).unwrap_or(usize::MAX);
            } else if idx.len() == g.shape.len() {
                for (i, n) in idx.iter().zip(&g.shape) {
                    let i = usize::try_from(*i).ok().filter(|i| i < n);
                    pos = pos * n + i.unwrap_or(usize::MAX / 2);
                }
            }
            g.ids
                .get(pos)
                .map(|&d| Value::object(DeviceValue::cpu(d)))
                .ok_or_else(|| Error::index_error("item: index out of range for the device grid"))
        },
    );
}
