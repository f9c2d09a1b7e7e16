//! Devices, meshes, partition specs and named shardings as arr values
//! (`devices()[0]`, `mesh(...)`, `P(...)`, `NamedSharding(mesh, spec)`), and
//! their conversion to the kernels' `Placement`, which sharded arrays carry.

use crate::display::sharding::MeshText;
use crate::error::{Error, Result};
use crate::eval::attr::{properties, property, Attribute, Property};
use crate::value::{Object, Value};
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::Array;
use std::any::Any;
use std::sync::Arc;

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

/// `mesh((4, 2), ("data", "model"))`.
#[derive(Debug)]
pub struct MeshValue(pub Arc<Mesh>);

/// `P("data", None)`: per array dimension, the mesh axis names that split it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecValue(pub Vec<Vec<String>>);

/// `NamedSharding(mesh, P(...))`.
#[derive(Debug)]
pub struct ShardingValue {
    pub mesh: Arc<Mesh>,
    pub spec: SpecValue,
}

/// The attributes of a mesh.
const MESH_PROPERTIES: &[Property<MeshValue>] = &[
    Property {
        name: "shape",
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
        name: "devices",
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
];

impl Object for MeshValue {
    fn type_name(&self) -> &'static str {
        "Mesh"
    }
    fn repr(&self) -> String {
        self.0.describe()
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

impl Object for SpecValue {
    fn type_name(&self) -> &'static str {
        "PartitionSpec"
    }
    fn repr(&self) -> String {
        self.text()
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
];

impl Object for ShardingValue {
    fn type_name(&self) -> &'static str {
        "NamedSharding"
    }
    fn repr(&self) -> String {
        format!(
            "NamedSharding({}, {})",
            self.mesh.describe(),
            self.spec.text()
        )
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

/// The sharding of a sharded array, as a value (`x.sharding`); None otherwise.
pub fn sharding_of(a: &Array) -> Value {
    match a.placement() {
        Some(p) => Value::object(ShardingValue {
            mesh: p.mesh.clone(),
            spec: SpecValue::of(p),
        }),
        None => Value::None,
    }
}
