//! Devices, meshes, partition specs and named shardings as arr values
//! (`devices()[0]`, `mesh(...)`, `P(...)`, `NamedSharding(mesh, spec)`), and
//! their conversion to the kernels' `Placement`, which sharded arrays carry;
//! the context mesh (`set_mesh`) a bare `P(...)` resolves against; axis
//! types; an array's type with its sharding (`typeof`), as JAX prints it.

use crate::display::sharding::MeshText;
use crate::error::{Error, Result};
use crate::eval::attr::{properties, property, Attribute, Property};
use crate::tensor::Tensor;
use crate::value::{Object, Value};
use arr_kernels::sharding::{AxisType, Mesh, Placement};
use arr_kernels::{Array, DType};
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The mesh `set_mesh`/`use_mesh` installed: what a bare `P(...)` means
    /// where a sharding is expected.
    static CONTEXT_MESH: RefCell<Option<Arc<Mesh>>> = const { RefCell::new(None) };
}

/// The context mesh, if one is set.
pub fn context_mesh() -> Option<Arc<Mesh>> {
    CONTEXT_MESH.with(|m| m.borrow().clone())
}

/// Install `mesh` as the context mesh (None clears it); the previous one.
pub fn set_context_mesh(mesh: Option<Arc<Mesh>>) -> Option<Arc<Mesh>> {
    CONTEXT_MESH.with(|m| std::mem::replace(&mut *m.borrow_mut(), mesh))
}

/// One device, as `devices()` lists it: a virtual CPU device of the meshes
/// (id global over every process) or a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceValue {
    pub id: usize,
    /// `cpu:3`, `cuda:0`: the name `set_default_device` takes.
    pub label: String,
    /// JAX's platform name: `cpu` or `gpu`.
    pub platform: &'static str,
    /// The process that computes this device's blocks.
    pub process_index: usize,
}

impl DeviceValue {
    /// The mesh device `id` (its process from the global numbering).
    pub fn cpu(id: usize) -> DeviceValue {
        DeviceValue {
            id,
            label: format!("cpu:{id}"),
            platform: "cpu",
            process_index: arr_kernels::process::owner(id),
        }
    }
}

const DEVICE_PROPERTIES: &[Property<DeviceValue>] = &[
    Property {
        name: "id",
        doc: "The device's number, unique over every process.",
        get: |d| Ok(Value::Int(d.id as i64)),
    },
    Property {
        name: "process_index",
        doc: "The process that holds this device (0 unless run under mpirun).",
        get: |d| Ok(Value::Int(d.process_index as i64)),
    },
    Property {
        name: "platform",
        doc: "'cpu' or 'gpu'.",
        get: |d| Ok(Value::str(d.platform)),
    },
    Property {
        name: "device_kind",
        doc: "What the device is: 'cpu', 'cuda' or 'opencl'.",
        get: |d| Ok(Value::str(d.label.split(':').next().unwrap_or("cpu"))),
    },
    Property {
        name: "name",
        doc: "The name set_default_device takes ('cpu:3', 'cuda:0').",
        get: |d| Ok(Value::str(&d.label)),
    },
];

impl Object for DeviceValue {
    fn type_name(&self) -> &'static str {
        "Device"
    }
    fn repr(&self) -> String {
        let kind = match self.platform {
            "cpu" => "Cpu",
            _ if self.label.starts_with("cuda") => "Cuda",
            _ => "OpenCl",
        };
        format!("{kind}Device(id={})", self.id)
    }
    /// `str(device)`: its name, as JAX prints a device (`cpu:0`).
    fn str(&self) -> Option<String> {
        Some(self.label.clone())
    }
    fn hash_key(&self) -> Option<crate::value::Key> {
        use crate::value::Key;
        Some(Key::Tuple(std::rc::Rc::new(vec![
            Key::Str(std::rc::Rc::from(self.label.as_str())),
            Key::Int(self.id as i64),
        ])))
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<DeviceValue>() == Some(self)
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(DEVICE_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(DEVICE_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `SingleDeviceSharding(device)`: the sharding of an array that one device
/// holds whole (what `x.sharding` is for an array that is not split).
#[derive(Debug, Clone, PartialEq)]
pub struct SingleDeviceSharding(pub DeviceValue);

impl Object for SingleDeviceSharding {
    fn type_name(&self) -> &'static str {
        "SingleDeviceSharding"
    }
    fn repr(&self) -> String {
        format!(
            "SingleDeviceSharding(device={}, memory_kind=device)",
            self.0.repr()
        )
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<SingleDeviceSharding>() == Some(self)
    }
    fn attr(&self, name: &str) -> Option<Value> {
        Some(match name {
            "device_set" => crate::set::from_values([Value::object(self.0.clone())]).ok()?,
            "memory_kind" => Value::str("device"),
            "is_fully_replicated" | "is_fully_addressable" => Value::Bool(true),
            "num_devices" => Value::Int(1),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `mesh((4, 2), ("data", "model"))`.
#[derive(Debug)]
pub struct MeshValue(pub Arc<Mesh>);

/// `P("data", None)`: per array dimension, the mesh axis names that split it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecValue(pub Vec<Vec<String>>);

/// `NamedSharding(mesh, P(...))`.
#[derive(Debug, Clone)]
pub struct ShardingValue {
    pub mesh: Arc<Mesh>,
    pub spec: SpecValue,
}

/// `mesh.shape`: JAX's ordered mapping from axis name to size.
pub fn mesh_shape(m: &Mesh) -> Value {
    let mut d = crate::value::Dict::new();
    for (n, &size) in m.axis_names.iter().zip(&m.shape) {
        d.insert(
            crate::value::Key::Str(std::rc::Rc::from(&**n)),
            Value::Int(size as i64),
        );
    }
    Value::dict(d)
}

/// The attributes of a mesh.
const MESH_PROPERTIES: &[Property<MeshValue>] = &[
    Property {
        name: "shape",
        doc: "The number of devices along each axis, by axis name (a dict, as JAX's mapping).",
        get: |m| Ok(mesh_shape(&m.0)),
    },
    Property {
        name: "shape_tuple",
        doc: "(name, size) for each axis, a tuple.",
        get: |m| {
            Ok(Value::tuple(
                m.0.axis_names
                    .iter()
                    .zip(&m.0.shape)
                    .map(|(n, &s)| Value::tuple(vec![Value::str(n), Value::Int(s as i64)]))
                    .collect(),
            ))
        },
    },
    Property {
        name: "axis_sizes",
        doc: "The number of devices along each axis, a tuple.",
        get: |m| {
            Ok(Value::tuple(
                m.0.shape.iter().map(|&s| Value::Int(s as i64)).collect(),
            ))
        },
    },
    Property {
        name: "axis_names",
        doc: "The names of the axes, a tuple of strings.",
        get: |m| {
            Ok(Value::tuple(
                m.0.axis_names.iter().map(|n| Value::str(n)).collect(),
            ))
        },
    },
    Property {
        name: "axis_types",
        doc: "The type of each axis (AxisType.Explicit, Auto or Manual), a tuple.",
        get: |m| {
            Ok(Value::tuple(
                m.0.axis_types
                    .iter()
                    .map(|&t| Value::object(AxisTypeValue(t)))
                    .collect(),
            ))
        },
    },
    Property {
        name: "devices",
        doc: "The devices in the mesh's grid (an array of devices: .shape, .flat, [i, j]).",
        get: |m| {
            Ok(Value::object(DeviceGrid {
                shape: m.0.shape.clone(),
                ids: m.0.devices.clone(),
            }))
        },
    },
    Property {
        name: "device_ids",
        doc: "The device ids, row-major, a list.",
        get: |m| {
            Ok(Value::list(
                m.0.devices.iter().map(|&d| Value::Int(d as i64)).collect(),
            ))
        },
    },
    Property {
        name: "size",
        doc: "The number of devices.",
        get: |m| Ok(Value::Int(m.0.size() as i64)),
    },
    Property {
        name: "empty",
        doc: "Whether the mesh has no devices (False: an empty mesh is get_abstract_mesh()'s).",
        get: |_| Ok(Value::Bool(false)),
    },
];

/// Python's text of a tuple of these items: `(a,)` for one, `(a, b)` else.
fn tuple_text(items: Vec<String>) -> String {
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// `(Explicit, Auto)`: a mesh's axis types as JAX shows them in its reprs.
fn axis_types_text(mesh: &Mesh) -> String {
    tuple_text(
        mesh.axis_types
            .iter()
            .map(|t| t.name().to_string())
            .collect(),
    )
}

/// JAX's `str(mesh)`: `describe()`'s text with the axis types,
/// `Mesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))`.
pub fn mesh_str(mesh: &Mesh) -> String {
    let text = mesh.describe();
    let axes = text.strip_suffix(')').unwrap_or(&text);
    format!("{axes}, axis_types={})", axis_types_text(mesh))
}

impl Object for MeshValue {
    fn type_name(&self) -> &'static str {
        "Mesh"
    }
    /// JAX's: `Mesh(axis_sizes=(2, 4), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))`.
    fn repr(&self) -> String {
        format!(
            "Mesh(axis_sizes={}, axis_names={}, axis_types={})",
            tuple_text(self.0.shape.iter().map(|s| s.to_string()).collect()),
            tuple_text(self.0.axis_names.iter().map(|n| format!("'{n}'")).collect()),
            axis_types_text(&self.0)
        )
    }
    fn str(&self) -> Option<String> {
        Some(mesh_str(&self.0))
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<MeshValue>()
            .is_some_and(|m| *m.0 == *self.0)
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(MESH_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(MESH_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl SpecValue {
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|axes| match &axes[..] {
                [] => "None".to_string(),
                [a] => format!("'{a}'"),
                many => format!(
                    "({})",
                    many.iter()
                        .map(|a| format!("'{a}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect();
        format!("P({})", parts.join(", "))
    }

    /// The placement of an array of `rank` dimensions over `mesh`.
    pub fn placement(&self, mesh: &Arc<Mesh>, rank: usize) -> Result<Placement> {
        let spec = self
            .0
            .iter()
            .map(|axes| {
                axes.iter()
                    .map(|a| {
                        mesh.axis(a).ok_or_else(|| {
                            Error::value_error(format!(
                                "{}: {} has no axis '{a}'",
                                self.text(),
                                mesh.describe()
                            ))
                        })
                    })
                    .collect::<Result<Vec<usize>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        Placement::new(mesh.clone(), spec, rank)
            .map_err(|e| Error::value_error(format!("{}: {e}", self.text())))
    }

    /// The spec of a placement, by axis names.
    pub fn of(p: &Placement) -> SpecValue {
        SpecValue(
            p.spec
                .iter()
                .map(|axes| {
                    axes.iter()
                        .map(|&a| p.mesh.axis_names[a].to_string())
                        .collect()
                })
                .collect(),
        )
    }
}

impl SpecValue {
    /// The spec without trailing unsplit dimensions: `P('x')` and
    /// `P('x', None)` lay out an array the same way, and compare equal.
    fn trimmed(&self) -> &[Vec<String>] {
        let n = self
            .0
            .iter()
            .rposition(|a| !a.is_empty())
            .map_or(0, |i| i + 1);
        &self.0[..n]
    }
}

impl Object for SpecValue {
    fn type_name(&self) -> &'static str {
        "PartitionSpec"
    }
    /// As JAX's (a tuple): one entry shows a trailing comma, `P('x',)`.
    fn repr(&self) -> String {
        let text = self.text();
        match self.0.len() {
            1 => format!("{},)", &text[..text.len() - 1]),
            _ => text,
        }
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<SpecValue>()
            .is_some_and(|o| o.trimmed() == self.trimmed())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The attributes of a named sharding.
const SHARDING_PROPERTIES: &[Property<ShardingValue>] = &[
    Property {
        name: "mesh",
        doc: "The mesh the array is laid out over.",
        get: |s| Ok(Value::object(MeshValue(s.mesh.clone()))),
    },
    Property {
        name: "spec",
        doc: "The partition spec: which mesh axes split each dimension.",
        get: |s| Ok(Value::object(s.spec.clone())),
    },
    Property {
        name: "num_devices",
        doc: "The number of devices of the mesh.",
        get: |s| Ok(Value::Int(s.mesh.size() as i64)),
    },
    Property {
        name: "is_fully_replicated",
        doc: "Whether every device holds the whole array (no dimension is split).",
        get: |s| Ok(Value::Bool(s.spec.0.iter().all(Vec::is_empty))),
    },
    Property {
        name: "is_fully_addressable",
        doc: "Whether this process holds every device of the mesh.",
        get: |s| {
            let me = arr_kernels::process::index();
            Ok(Value::Bool(
                s.mesh
                    .devices
                    .iter()
                    .all(|&d| arr_kernels::process::owner(d) == me),
            ))
        },
    },
    Property {
        name: "device_set",
        doc: "The devices of the mesh (a list: arr has no sets of devices).",
        get: |s| Ok(device_values(&s.mesh.devices)),
    },
    Property {
        name: "memory_kind",
        doc: "Where the blocks live: 'device'.",
        get: |_| Ok(Value::str("device")),
    },
];

/// Device objects for these ids, a list.
pub fn device_values(ids: &[usize]) -> Value {
    Value::list(
        ids.iter()
            .map(|&d| Value::object(DeviceValue::cpu(d)))
            .collect(),
    )
}

impl Object for ShardingValue {
    fn type_name(&self) -> &'static str {
        "NamedSharding"
    }
    fn repr(&self) -> String {
        format!(
            "NamedSharding(mesh={}, spec={}, memory_kind=device)",
            mesh_str(&self.mesh),
            Object::repr(&self.spec)
        )
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<ShardingValue>()
            .is_some_and(|o| *o.mesh == *self.mesh && o.spec.trimmed() == self.spec.trimmed())
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(SHARDING_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(SHARDING_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The mesh and spec a sharding value stands for: a `NamedSharding`, or a
/// bare `P(...)` over the context mesh; None for None.
pub fn resolve(v: &Value, what: &str) -> Result<Option<(Arc<Mesh>, SpecValue)>> {
    let Value::Object(o) = v else {
        return match v {
            Value::None => Ok(None),
            other => Err(Error::type_error(format!(
                "{what}: sharding must be a NamedSharding or P(...), not {}",
                other.type_name()
            ))),
        };
    };
    if let Some(s) = o.as_any().downcast_ref::<ShardingValue>() {
        return Ok(Some((s.mesh.clone(), s.spec.clone())));
    }
    // One device holds the whole array: no layout over a mesh.
    if o.as_any().is::<SingleDeviceSharding>() || o.as_any().is::<DeviceValue>() {
        return Ok(None);
    }
    if let Some(spec) = o.as_any().downcast_ref::<SpecValue>() {
        return match context_mesh() {
            Some(m) => Ok(Some((m, spec.clone()))),
            None => Err(Error::value_error(format!(
                "{what}: {} names no mesh and none is set: use NamedSharding(mesh, {}) \
                 or set_mesh(mesh) first",
                spec.text(),
                spec.text()
            ))),
        };
    }
    Err(Error::type_error(format!(
        "{what}: sharding must be a NamedSharding or P(...), not {}",
        o.type_name()
    )))
}

/// Every array of `tree` laid out by `sharding` (a NamedSharding or a bare
/// P under a context mesh): eagerly moved there, under tracing constrained.
pub fn lay_out(tree: &Value, sharding: &Value, what: &str) -> Result<Value> {
    let Some((mesh, spec)) = resolve(sharding, what)? else {
        return Ok(tree.clone());
    };
    each_array(tree, &mut |t| {
        let p = spec.placement(&mesh, t.ndim())?;
        for d in 0..t.ndim() {
            if !t.shape()[d].is_multiple_of(p.parts(d)) {
                return Err(Error::value_error(format!(
                    "{what}: dimension {d} of {} is not divisible by the {} devices that {} \
                     splits it over",
                    crate::prim::type_str(t.shape(), t.dtype()),
                    p.parts(d),
                    spec.text()
                )));
            }
        }
        crate::prim::bind1(&crate::prim::Prim::ShardingConstraint(Arc::new(p)), [t])
    })
}

/// `tree` with `f` applied to each array of its tuples and lists (what an
/// array function returns: an array, or a few).
fn each_array(tree: &Value, f: &mut dyn FnMut(Tensor) -> Result<Tensor>) -> Result<Value> {
    Ok(match tree {
        Value::Array(t) => Value::Array(f(t.clone())?),
        Value::Tuple(items) => Value::tuple(
            items
                .iter()
                .map(|x| each_array(x, f))
                .collect::<Result<_>>()?,
        ),
        Value::List(items) => {
            let items = items.borrow().clone();
            Value::list(
                items
                    .iter()
                    .map(|x| each_array(x, f))
                    .collect::<Result<_>>()?,
            )
        }
        other => other.clone(),
    })
}

/// The sharding of a sharded array, as a value (`x.sharding`); None otherwise.
pub fn sharding_of(a: &Array) -> Value {
    sharding_value(a.placement().cloned())
}

/// A placement as a sharding value (`x.sharding`, traced or not); None for none.
pub fn sharding_value(p: Option<Arc<Placement>>) -> Value {
    match p {
        Some(p) => Value::object(ShardingValue {
            mesh: p.mesh.clone(),
            spec: SpecValue::of(&p),
        }),
        None => Value::None,
    }
}

/// One per device of the array's mesh (one for an array on one device):
/// its block, the block's index and which copy of that block it is.
pub fn addressable_shards(t: &Tensor) -> Result<Vec<ShardValue>> {
    let a = t.concrete()?;
    let Some(p) = a.placement() else {
        let index = a.shape().iter().map(|&n| 0..n).collect();
        return Ok(vec![ShardValue {
            device: 0,
            index,
            parts: vec![1; a.ndim()],
            data: Value::Array(Tensor::from(Array::from_arc(a.shape(), a.buffer()?))),
            replica_id: 0,
        }]);
    };
    let whole = Array::from_arc(a.shape(), a.buffer()?);
    let mut seen: Vec<Vec<std::ops::Range<usize>>> = Vec::new();
    let mut out = Vec::new();
    for (dev, block) in p.blocks(a.shape()) {
        let replica_id = seen.iter().filter(|b| **b == block).count();
        seen.push(block.clone());
        let start: Vec<usize> = block.iter().map(|r| r.start).collect();
        let limit: Vec<usize> = block.iter().map(|r| r.end).collect();
        let prim = crate::prim::Prim::Slice {
            start,
            limit,
            stride: vec![1; block.len()],
        };
        let data = crate::prim::bind1(&prim, [Tensor::from(whole.clone())])?;
        out.push(ShardValue {
            device: dev,
            index: block,
            parts: (0..a.ndim()).map(|d| p.parts(d)).collect(),
            data: Value::Array(data),
            replica_id,
        });
    }
    out.sort_by_key(|s| s.device);
    Ok(out)
}

/// `AxisType.Explicit`, `AxisType.Auto`, `AxisType.Manual`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisTypeValue(pub AxisType);

impl Object for AxisTypeValue {
    fn type_name(&self) -> &'static str {
        "AxisType"
    }
    /// JAX shows an axis type's repr bare (`(Explicit,)`), its str qualified.
    fn repr(&self) -> String {
        self.0.name().to_string()
    }
    fn str(&self) -> Option<String> {
        Some(format!("AxisType.{}", self.0.name()))
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<AxisTypeValue>() == Some(self)
    }
    fn attr(&self, name: &str) -> Option<Value> {
        (name == "name").then(|| Value::str(self.0.name()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The `AxisType` enumeration itself: its members are attributes.
#[derive(Debug)]
pub struct AxisTypeEnum;

impl Object for AxisTypeEnum {
    fn type_name(&self) -> &'static str {
        "AxisTypeEnum"
    }
    fn repr(&self) -> String {
        "<enum 'AxisType'>".into()
    }
    fn attr(&self, name: &str) -> Option<Value> {
        let t = match name {
            "Explicit" => AxisType::Explicit,
            "Auto" => AxisType::Auto,
            "Manual" => AxisType::Manual,
            _ => return None,
        };
        Some(Value::object(AxisTypeValue(t)))
    }
    fn attributes(&self) -> Vec<Attribute> {
        ["Explicit", "Auto", "Manual"]
            .iter()
            .map(|n| Attribute {
                name: n.to_string(),
                kind: crate::eval::attr::AttrKind::Property,
                doc: format!("AxisType.{n}"),
            })
            .collect()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A grid of devices (`mesh.devices`, `array(devices()).reshape(2, 4)`):
/// NumPy's array of device objects, as far as meshes need one.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceGrid {
    pub shape: Vec<usize>,
    /// Device ids, row-major.
    pub ids: Vec<usize>,
}

impl DeviceGrid {
    /// The grid as nested lists of devices (`tolist()`).
    pub fn nested(&self) -> Value {
        fn level(shape: &[usize], ids: &[usize]) -> Value {
            match shape {
                [] => Value::object(DeviceValue::cpu(ids[0])),
                [n, rest @ ..] => {
                    let step: usize = rest.iter().product();
                    Value::list(
                        (0..*n)
                            .map(|i| level(rest, &ids[i * step..(i + 1) * step]))
                            .collect(),
                    )
                }
            }
        }
        level(&self.shape, &self.ids)
    }

    /// The devices in nested brackets, as NumPy prints an object array:
    /// items separated by `sep`, rows on their own lines (indented by
    /// `indent` more for the repr's `array(` prefix).
    fn nested_text(&self, sep: &str, indent: usize) -> String {
        fn level(shape: &[usize], ids: &[usize], sep: &str, depth: usize, indent: usize) -> String {
            match shape {
                [] => DeviceValue::cpu(ids[0]).repr(),
                [n, rest @ ..] => {
                    let step: usize = rest.iter().product::<usize>().max(1);
                    let parts: Vec<String> = (0..*n)
                        .map(|i| {
                            level(rest, &ids[i * step..(i + 1) * step], sep, depth + 1, indent)
                        })
                        .collect();
                    let between = if rest.is_empty() {
                        sep.to_string()
                    } else {
                        format!(
                            "{}\n{}{}",
                            sep.trim_end(),
                            "\n".repeat(rest.len() - 1),
                            " ".repeat(indent + depth + 1)
                        )
                    };
                    format!("[{}]", parts.join(&between))
                }
            }
        }
        level(&self.shape, &self.ids, sep, 0, indent)
    }

    /// `grid[i]`, `grid[i, j]`, `grid[:4]`, `grid[::-1, 0]`: integers
    /// (negative from the end) drop their dimension, slices keep it, as
    /// NumPy's indexing; a device when every dimension is dropped, else the
    /// sub-grid.
    fn index(&self, index: &Value) -> Result<Value> {
        let idx = match index {
            Value::Tuple(t) => t.to_vec(),
            one => vec![one.clone()],
        };
        if idx.len() > self.shape.len() {
            return Err(Error::index_error(format!(
                "too many indices for a device grid of shape {:?}",
                self.shape
            )));
        }
        // The positions taken along each dimension, and whether it stays.
        let mut picks: Vec<(Vec<usize>, bool)> = Vec::new();
        for (d, &n) in self.shape.iter().enumerate() {
            picks.push(match idx.get(d) {
                None => ((0..n).collect(), true),
                Some(Value::Int(i)) => {
                    let j = if *i < 0 { *i + n as i64 } else { *i };
                    let j = usize::try_from(j).ok().filter(|&j| j < n).ok_or_else(|| {
                        Error::index_error(format!(
                            "index {i} is out of bounds for a grid axis of {n}"
                        ))
                    })?;
                    (vec![j], false)
                }
                Some(Value::Slice(sl)) => {
                    let (start, count, step) =
                        crate::index::slice_range(sl.start, sl.stop, sl.step, n)?;
                    (
                        (0..count as i64)
                            .map(|k| (start + k * step) as usize)
                            .collect(),
                        true,
                    )
                }
                Some(v) => {
                    return Err(Error::type_error(format!(
                        "device grids take integers and slices as indices, got {}",
                        v.type_name()
                    )))
                }
            });
        }
        let mut ids = Vec::new();
        let mut pos = vec![0usize; picks.len()];
        if picks.iter().all(|(p, _)| !p.is_empty()) {
            'outer: loop {
                let flat = pos
                    .iter()
                    .zip(&picks)
                    .zip(&self.shape)
                    .fold(0, |acc, ((&k, (p, _)), &n)| acc * n + p[k]);
                ids.push(self.ids[flat]);
                for d in (0..pos.len()).rev() {
                    pos[d] += 1;
                    if pos[d] < picks[d].0.len() {
                        continue 'outer;
                    }
                    pos[d] = 0;
                }
                break;
            }
        }
        let shape: Vec<usize> = picks
            .iter()
            .filter(|(_, keep)| *keep)
            .map(|(p, _)| p.len())
            .collect();
        Ok(if shape.is_empty() {
            Value::object(DeviceValue::cpu(ids[0]))
        } else {
            Value::object(DeviceGrid { shape, ids })
        })
    }
}

const GRID_PROPERTIES: &[Property<DeviceGrid>] = &[
    Property {
        name: "shape",
        doc: "The grid's shape, a tuple.",
        get: |g| {
            Ok(Value::tuple(
                g.shape.iter().map(|&s| Value::Int(s as i64)).collect(),
            ))
        },
    },
    Property {
        name: "ndim",
        doc: "The grid's number of dimensions.",
        get: |g| Ok(Value::Int(g.shape.len() as i64)),
    },
    Property {
        name: "size",
        doc: "The number of devices.",
        get: |g| Ok(Value::Int(g.ids.len() as i64)),
    },
    Property {
        name: "flat",
        doc: "The devices, row-major, a list.",
        get: |g| Ok(device_values(&g.ids)),
    },
];

impl Object for DeviceGrid {
    fn type_name(&self) -> &'static str {
        "DeviceArray"
    }
    /// NumPy's repr of an array of device objects.
    fn repr(&self) -> String {
        format!("array({}, dtype=object)", self.nested_text(", ", 6))
    }
    /// NumPy's str of an array of device objects.
    fn str(&self) -> Option<String> {
        Some(self.nested_text(" ", 0))
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<DeviceGrid>() == Some(self)
    }
    fn len(&self) -> Option<usize> {
        self.shape.first().copied()
    }
    fn get_item(&self, index: &Value) -> Option<Result<Value>> {
        Some(self.index(index))
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(GRID_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(GRID_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `get_abstract_mesh()`: the context mesh's shape and names, or an empty mesh.
#[derive(Debug)]
pub struct AbstractMeshValue(pub Option<Arc<Mesh>>);

const ABSTRACT_MESH_PROPERTIES: &[Property<AbstractMeshValue>] = &[
    Property {
        name: "empty",
        doc: "Whether no mesh is set.",
        get: |m| Ok(Value::Bool(m.0.is_none())),
    },
    Property {
        name: "shape",
        doc: "The number of devices along each axis, by axis name.",
        get: |m| {
            Ok(match &m.0 {
                Some(mesh) => mesh_shape(mesh),
                None => Value::dict(crate::value::Dict::new()),
            })
        },
    },
    Property {
        name: "axis_names",
        doc: "The names of the axes, a tuple.",
        get: |m| {
            Ok(Value::tuple(m.0.as_ref().map_or(Vec::new(), |mesh| {
                mesh.axis_names.iter().map(|n| Value::str(n)).collect()
            })))
        },
    },
    Property {
        name: "axis_types",
        doc: "The type of each axis, a tuple.",
        get: |m| {
            Ok(Value::tuple(m.0.as_ref().map_or(Vec::new(), |mesh| {
                mesh.axis_types
                    .iter()
                    .map(|&t| Value::object(AxisTypeValue(t)))
                    .collect()
            })))
        },
    },
    Property {
        name: "size",
        doc: "The number of devices (1 for the empty mesh).",
        get: |m| Ok(Value::Int(m.0.as_ref().map_or(1, |mesh| mesh.size()) as i64)),
    },
];

impl Object for AbstractMeshValue {
    fn type_name(&self) -> &'static str {
        "AbstractMesh"
    }
    fn repr(&self) -> String {
        match &self.0 {
            Some(m) => format!("Abstract{}", m.describe()),
            None => "AbstractMesh((), axis_names=())".into(),
        }
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(ABSTRACT_MESH_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(ABSTRACT_MESH_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `typeof(x)`: an array's shape and dtype with the mesh axes that split it,
/// printed as JAX prints it (`float32[8@X,4]`: only Explicit axes show).
#[derive(Debug, Clone)]
pub struct ArrayTypeValue {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub placement: Option<Arc<Placement>>,
    /// Typed PRNG keys (`key<fry>[3]`): `shape` is the keys' shape.
    pub key: bool,
    /// Weakly typed (`~float32[]`, JAX's `weak_type`).
    pub weak: bool,
}

impl ArrayTypeValue {
    /// The type of `t` (its layout, if it has one).
    pub fn of(t: &Tensor) -> ArrayTypeValue {
        let key = crate::numpy::key_shape(t);
        ArrayTypeValue {
            shape: key.unwrap_or(t.shape()).to_vec(),
            dtype: t.dtype(),
            placement: t.placement(),
            key: key.is_some(),
            weak: t.is_weak(),
        }
    }

    pub fn text(&self) -> String {
        let dims: Vec<String> = self
            .shape
            .iter()
            .enumerate()
            .map(|(d, &size)| {
                let axes: Vec<&str> = match &self.placement {
                    Some(p) => p.spec[d]
                        .iter()
                        .filter(|&&a| p.mesh.is_explicit(a))
                        .map(|&a| &*p.mesh.axis_names[a])
                        .collect(),
                    None => Vec::new(),
                };
                match &axes[..] {
                    [] => size.to_string(),
                    [a] => format!("{size}@{a}"),
                    many => format!("{size}@({})", many.join(",")),
                }
            })
            .collect();
        let dtype = if self.key {
            "key<fry>"
        } else {
            self.dtype.name()
        };
        let weak = if self.weak { "~" } else { "" };
        format!("{weak}{dtype}[{}]", dims.join(","))
    }
}

const ARRAY_TYPE_PROPERTIES: &[Property<ArrayTypeValue>] = &[
    Property {
        name: "shape",
        doc: "The size of each dimension, a tuple.",
        get: |t| {
            Ok(Value::tuple(
                t.shape.iter().map(|&s| Value::Int(s as i64)).collect(),
            ))
        },
    },
    Property {
        name: "ndim",
        doc: "The number of dimensions.",
        get: |t| Ok(Value::Int(t.shape.len() as i64)),
    },
    Property {
        name: "dtype",
        doc: "The element type.",
        get: |t| Ok(Value::DType(t.dtype)),
    },
    Property {
        name: "sharding",
        doc: "The NamedSharding of the type (None for an array on one device).",
        get: |t| {
            Ok(match &t.placement {
                Some(p) => Value::object(ShardingValue {
                    mesh: p.mesh.clone(),
                    spec: SpecValue::of(p),
                }),
                None => Value::None,
            })
        },
    },
];

impl Object for ArrayTypeValue {
    fn type_name(&self) -> &'static str {
        "ShapedArray"
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<ArrayTypeValue>()
            .is_some_and(|o| o.text() == self.text())
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(ARRAY_TYPE_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(ARRAY_TYPE_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One device's block of a sharded array (`x.addressable_shards`).
#[derive(Debug)]
pub struct ShardValue {
    pub device: usize,
    /// The block's index ranges, one per dimension.
    pub index: Vec<std::ops::Range<usize>>,
    /// How many blocks each dimension is cut into.
    pub parts: Vec<usize>,
    pub data: Value,
    pub replica_id: usize,
}

const SHARD_PROPERTIES: &[Property<ShardValue>] = &[
    Property {
        name: "device",
        doc: "The device that holds the block.",
        get: |s| Ok(Value::object(DeviceValue::cpu(s.device))),
    },
    Property {
        name: "index",
        doc: "Where the block sits in the array: a tuple of slices.",
        get: |s| Ok(index_value(&s.index, &s.parts)),
    },
    Property {
        name: "data",
        doc: "The block, an array.",
        get: |s| Ok(s.data.clone()),
    },
    Property {
        name: "replica_id",
        doc: "Which copy of this block the device holds (0 for the first).",
        get: |s| Ok(Value::Int(s.replica_id as i64)),
    },
];

/// A block's index as JAX gives it: a tuple of `slice(start, stop, None)`,
/// `slice(None, None, None)` for a dimension cut in `parts` of 1 (whole).
pub fn index_value(index: &[std::ops::Range<usize>], parts: &[usize]) -> Value {
    Value::tuple(
        index
            .iter()
            .zip(parts)
            .map(|(r, &parts)| {
                let cut = parts > 1;
                Value::Slice(std::rc::Rc::new(crate::value::SliceValue {
                    start: cut.then_some(r.start as i64),
                    stop: cut.then_some(r.end as i64),
                    step: None,
                }))
            })
            .collect(),
    )
}

impl Object for ShardValue {
    fn type_name(&self) -> &'static str {
        "Shard"
    }
    fn repr(&self) -> String {
        format!(
            "Shard(device=CpuDevice(id={}), replica_id={})",
            self.device, self.replica_id
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(SHARD_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(SHARD_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
