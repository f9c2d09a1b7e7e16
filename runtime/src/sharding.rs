//! Meshes, partition specs and named shardings as arr values (`mesh(...)`,
//! `P(...)`, `NamedSharding(mesh, spec)`), and their conversion to the
//! kernels' `Placement`, which sharded arrays carry.

use crate::display::sharding::MeshText;
use crate::error::{Error, Result};
use crate::value::{Object, Value};
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::Array;
use std::any::Any;
use std::sync::Arc;

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

impl Object for MeshValue {
    fn type_name(&self) -> &'static str {
        "Mesh"
    }
    fn repr(&self) -> String {
        self.0.describe()
    }
    fn attr(&self, name: &str) -> Option<Value> {
        match name {
            "shape" => Some(Value::tuple(
                self.0.shape.iter().map(|&s| Value::Int(s as i64)).collect(),
            )),
            "axis_names" => Some(Value::tuple(
                self.0.axis_names.iter().map(|n| Value::str(n)).collect(),
            )),
            "devices" => Some(Value::list(
                self.0
                    .devices
                    .iter()
                    .map(|&d| Value::Int(d as i64))
                    .collect(),
            )),
            "size" => Some(Value::Int(self.0.size() as i64)),
            _ => None,
        }
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
        match name {
            "mesh" => Some(Value::object(MeshValue(self.mesh.clone()))),
            "spec" => Some(Value::object(self.spec.clone())),
            _ => None,
        }
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
