//! Meshes and placements: which device holds which block of an array.
//!
//! A `Mesh` arranges device ids in an n-dimensional grid with named axes; a
//! `Placement` says, for each array dimension, which mesh axes split it
//! (JAX's `PartitionSpec`). Blocks are as even as possible: a dimension of
//! size d split over k devices gives blocks of ceil(d / k), the last ones
//! smaller or empty (uneven shards). Their text forms (`P(...)`, typed
//! `f32[8@data,512@model]`, device grids) belong to the runtime's displays.

use crate::DType;
use std::ops::Range;
use std::sync::Arc;

/// How JAX's sharding-in-types treats a mesh axis: an `Explicit` axis is
/// part of an array's type (shown by `typeof`, checked by every operation);
/// an `Auto` one is left to the compiler; a `Manual` one is inside `shard_map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisType {
    Explicit,
    Auto,
    Manual,
}

impl AxisType {
    pub fn name(self) -> &'static str {
        match self {
            AxisType::Explicit => "Explicit",
            AxisType::Auto => "Auto",
            AxisType::Manual => "Manual",
        }
    }
}

/// Devices in a grid with named axes (row-major over `shape`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    pub shape: Vec<usize>,
    pub axis_names: Vec<Arc<str>>,
    /// Device ids, row-major over `shape`.
    pub devices: Vec<usize>,
    /// One per axis; `Auto` (layouts left to the compiler) unless the mesh
    /// was made with others.
    pub axis_types: Vec<AxisType>,
}

impl Mesh {
    /// The coordinates of the device at row-major position `pos`.
    pub fn coords(&self, mut pos: usize) -> Vec<usize> {
        let mut c = vec![0; self.shape.len()];
        for a in (0..c.len()).rev() {
            c[a] = pos % self.shape[a];
            pos /= self.shape[a];
        }
        c
    }

    pub fn new(
        shape: Vec<usize>,
        axis_names: Vec<Arc<str>>,
        devices: Vec<usize>,
    ) -> Result<Mesh, String> {
        if shape.len() != axis_names.len() {
            return Err(format!(
                "mesh: {} axis sizes but {} axis names",
                shape.len(),
                axis_names.len()
            ));
        }
        if shape.contains(&0) {
            return Err("mesh: axis sizes must be at least 1".into());
        }
        for (i, n) in axis_names.iter().enumerate() {
            if axis_names[..i].contains(n) {
                return Err(format!("mesh: axis name '{n}' appears twice"));
            }
        }
        let size = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if size != Some(devices.len()) {
            let size = size.map_or("more".to_string(), |n| n.to_string());
            return Err(format!(
                "mesh: shape {shape:?} needs {size} devices, {} given",
                devices.len()
            ));
        }
        Ok(Mesh {
            axis_types: vec![AxisType::Auto; shape.len()],
            shape,
            axis_names,
            devices,
        })
    }

    /// The same mesh with these axis types (one per axis).
    pub fn with_axis_types(mut self, types: Vec<AxisType>) -> Result<Mesh, String> {
        if types.len() != self.shape.len() {
            return Err(format!(
                "mesh: {} axis types for {} axes",
                types.len(),
                self.shape.len()
            ));
        }
        self.axis_types = types;
        Ok(self)
    }

    /// Whether axis `a` is part of array types (JAX's `AxisType.Explicit`).
    pub fn is_explicit(&self, a: usize) -> bool {
        self.axis_types.get(a) == Some(&AxisType::Explicit)
    }

    pub fn size(&self) -> usize {
        self.devices.len()
    }

    pub fn axis(&self, name: &str) -> Option<usize> {
        self.axis_names.iter().position(|n| &**n == name)
    }

    /// The groups a collective over axis `a` runs in: each group's device
    /// ids in their order along `a` (their rank), groups in the order of
    /// their first position; and, per mesh position, its group.
    pub fn axis_groups(&self, a: usize) -> (Vec<Vec<usize>>, Vec<usize>) {
        let mut keys: Vec<Vec<usize>> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of = Vec::with_capacity(self.size());
        for pos in 0..self.size() {
            // The position's coordinates without axis `a`.
            let mut rest = pos;
            let mut key = Vec::with_capacity(self.shape.len());
            for d in (0..self.shape.len()).rev() {
                if d != a {
                    key.push(rest % self.shape[d]);
                }
                rest /= self.shape[d];
            }
            let g = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(self.devices[pos]);
            group_of.push(g);
        }
        (groups, group_of)
    }

    /// Whether a collective over axis `a` exchanges data between processes.
    pub fn axis_crosses_processes(&self, a: usize) -> bool {
        let (groups, _) = self.axis_groups(a);
        groups.iter().any(|g| {
            g.iter()
                .any(|&d| crate::process::owner(d) != crate::process::owner(g[0]))
        })
    }
}

/// How an array is laid out over a mesh: `spec[d]` lists the mesh axes that
/// split array dimension `d` (empty: replicated along it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub mesh: Arc<Mesh>,
    pub spec: Vec<Vec<usize>>,
}

impl Placement {
    /// Check the spec against the mesh and an array rank.
    pub fn new(mesh: Arc<Mesh>, spec: Vec<Vec<usize>>, rank: usize) -> Result<Placement, String> {
        if spec.len() > rank {
            return Err(format!(
                "the partition spec has {} entries, more than the array's rank {rank}",
                spec.len()
            ));
        }
        let mut used = vec![false; mesh.shape.len()];
        for axes in &spec {
            for &a in axes {
                if std::mem::replace(&mut used[a], true) {
                    return Err(format!(
                        "mesh axis '{}' shards two dimensions",
                        mesh.axis_names[a]
                    ));
                }
            }
        }
        let mut spec = spec;
        spec.resize(rank, Vec::new());
        Ok(Placement { mesh, spec })
    }

    /// How many blocks dimension `d` is cut into.
    pub fn parts(&self, d: usize) -> usize {
        self.spec[d].iter().map(|&a| self.mesh.shape[a]).product()
    }

    pub fn is_replicated(&self) -> bool {
        self.spec.iter().all(Vec::is_empty)
    }

    /// The mesh coordinates of the device at row-major position `pos`.
    pub fn coords(&self, pos: usize) -> Vec<usize> {
        self.mesh.coords(pos)
    }

    /// Which block of dimension `d` the device at `coords` holds.
    pub fn block_index(&self, d: usize, coords: &[usize]) -> usize {
        self.spec[d]
            .iter()
            .fold(0, |acc, &a| acc * self.mesh.shape[a] + coords[a])
    }

    /// The index ranges of each dimension held by the device at mesh
    /// position `pos` (row-major), for an array of `shape`.
    pub fn block(&self, shape: &[usize], pos: usize) -> Vec<Range<usize>> {
        let coords = self.coords(pos);
        (0..shape.len())
            .map(|d| {
                let k = self.parts(d);
                let len = shape[d].div_ceil(k.max(1));
                let i = self.block_index(d, &coords);
                let lo = (i * len).min(shape[d]);
                lo..((i + 1) * len).min(shape[d])
            })
            .collect()
    }

    /// (device id, block) for every device of the mesh.
    pub fn blocks(&self, shape: &[usize]) -> Vec<(usize, Vec<Range<usize>>)> {
        (0..self.mesh.size())
            .map(|pos| (self.mesh.devices[pos], self.block(shape, pos)))
            .collect()
    }

    /// Bytes each device holds, by device id (replicated blocks count on every device).
    pub fn bytes_per_device(&self, shape: &[usize], dtype: DType) -> Vec<(usize, usize)> {
        self.blocks(shape)
            .into_iter()
            .map(|(dev, b)| {
                let n: usize = b.iter().map(|r| r.len()).product();
                (dev, n * dtype.size_bytes())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;

    fn mesh(shape: &[usize], names: &[&str]) -> Arc<Mesh> {
        let n = shape.iter().product();
        Arc::new(
            Mesh::new(
                shape.to_vec(),
                names.iter().map(|s| Arc::from(*s)).collect(),
                (0..n).collect(),
            )
            .unwrap(),
        )
    }

    /// An array kept as its devices' shards reads as the array they tile,
    /// on uneven blocks and with replicas along an axis the spec leaves out.
    #[test]
    fn an_array_made_of_shards_reads_as_the_whole() {
        let shape = [5usize, 7];
        let whole: Vec<f64> = (0..35).map(|i| i as f64).collect();
        let full = crate::Array::new(&shape, crate::Buffer::F64(whole.clone()));
        for (m, spec) in [
            (mesh(&[2, 3], &["a", "b"]), vec![vec![0], vec![1]]),
            (mesh(&[2, 3], &["a", "b"]), vec![vec![], vec![1]]),
            (mesh(&[3, 2], &["a", "b"]), vec![vec![0, 1], vec![]]),
        ] {
            let p = Arc::new(Placement::new(m, spec, 2).unwrap());
            let shards: Vec<crate::Array> = (0..p.mesh.size())
                .map(|pos| {
                    let b = p.block(&shape, pos);
                    let start: Vec<usize> = b.iter().map(|r| r.start).collect();
                    let limit: Vec<usize> = b.iter().map(|r| r.end).collect();
                    crate::cpu::Cpu.slice(&full, &start, &limit, &[1, 1])
                })
                .collect();
            let a = crate::Array::from_shards(&shape, p.clone(), shards.clone());
            assert_eq!(a.shards().map(<[_]>::len), Some(p.mesh.size()));
            assert_eq!(a.len(), 35);
            assert_eq!(a.to_f64_vec().unwrap(), whole, "{:?}", p.spec);
            assert_eq!(a.placement().map(|q| &**q), Some(&*p));
            // Distributing the whole array makes the same shards.
            let d = full.distribute(p.clone()).unwrap();
            for (x, y) in d.shards().expect("shards").iter().zip(&shards) {
                assert_eq!(x.shape(), y.shape());
                assert_eq!(x.buffer().unwrap(), y.buffer().unwrap());
            }
            assert!(d.same_buffer(&full));
        }
    }

    #[test]
    fn uneven_blocks_cover_every_index_once() {
        let p = Placement::new(mesh(&[4], &["x"]), vec![vec![0]], 2).unwrap();
        let blocks: Vec<Vec<Range<usize>>> = p.blocks(&[10, 3]).into_iter().map(|b| b.1).collect();
        assert_eq!(blocks[0], vec![0..3, 0..3]);
        assert_eq!(blocks[3], vec![9..10, 0..3]);
        let total: usize = blocks.iter().map(|b| b[0].len()).sum();
        assert_eq!(total, 10);
    }

    #[test]
    fn two_axes_on_one_dimension() {
        let p = Placement::new(mesh(&[2, 2], &["a", "b"]), vec![vec![0, 1]], 1).unwrap();
        assert_eq!(p.parts(0), 4);
        let starts: Vec<usize> = p.blocks(&[8]).iter().map(|b| b.1[0].start).collect();
        assert_eq!(starts, vec![0, 2, 4, 6]);
    }

    #[test]
    fn errors() {
        assert!(Mesh::new(vec![2, 2], vec![Arc::from("a")], vec![0, 1, 2, 3]).is_err());
        let m = mesh(&[2], &["a"]);
        assert!(Placement::new(m.clone(), vec![vec![0], vec![0]], 2).is_err());
        assert!(Placement::new(m, vec![vec![0], vec![]], 1).is_err());
    }
}
