//! Meshes and placements: which device holds which block of an array.
//!
//! A `Mesh` arranges device ids in an n-dimensional grid with named axes; a
//! `Placement` says, for each array dimension, which mesh axes split it
//! (JAX's `PartitionSpec`). Blocks are as even as possible: a dimension of
//! size d split over k devices gives blocks of ceil(d / k), the last ones
//! smaller or empty (uneven shards). The text forms here — the type
//! `f32[8@data,512@model]` and the device grid of `visualize_sharding` — are
//! what the REPL, scripts and notebooks show.

use crate::{DType, Shape};
use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;

/// Devices in a grid with named axes (row-major over `shape`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    pub shape: Vec<usize>,
    pub axis_names: Vec<Arc<str>>,
    /// Device ids, row-major over `shape`.
    pub devices: Vec<usize>,
}

impl Mesh {
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
            shape,
            axis_names,
            devices,
        })
    }

    pub fn size(&self) -> usize {
        self.devices.len()
    }

    pub fn axis(&self, name: &str) -> Option<usize> {
        self.axis_names.iter().position(|n| &**n == name)
    }

    /// `Mesh('data': 4, 'model': 2)`.
    pub fn describe(&self) -> String {
        let axes: Vec<String> = self
            .axis_names
            .iter()
            .zip(&self.shape)
            .map(|(n, s)| format!("'{n}': {s}"))
            .collect();
        format!("Mesh({})", axes.join(", "))
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
    pub fn coords(&self, mut pos: usize) -> Vec<usize> {
        let mut c = vec![0; self.mesh.shape.len()];
        for a in (0..c.len()).rev() {
            c[a] = pos % self.mesh.shape[a];
            pos /= self.mesh.shape[a];
        }
        c
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

    /// One dimension as the type shows it: `512@model`, `8@(data,model)`, `3`.
    fn dim_text(&self, d: usize, size: usize) -> String {
        match &self.spec[d][..] {
            [] => size.to_string(),
            [a] => format!("{size}@{}", self.mesh.axis_names[*a]),
            axes => {
                let names: Vec<&str> = axes.iter().map(|&a| &*self.mesh.axis_names[a]).collect();
                format!("{size}@({})", names.join(","))
            }
        }
    }

    /// The type with its sharding: `f32[8@data,512@model]`.
    pub fn type_text(&self, shape: &[usize], dtype: DType) -> String {
        let dims: Vec<String> = (0..shape.len())
            .map(|d| self.dim_text(d, shape[d]))
            .collect();
        format!("{}[{}]", dtype.short(), dims.join(","))
    }

    /// `P('data', None)`-style text of the spec.
    pub fn spec_text(&self) -> String {
        let parts: Vec<String> = self
            .spec
            .iter()
            .map(|axes| match &axes[..] {
                [] => "None".to_string(),
                [a] => format!("'{}'", self.mesh.axis_names[*a]),
                many => {
                    let names: Vec<String> = many
                        .iter()
                        .map(|&a| format!("'{}'", self.mesh.axis_names[a]))
                        .collect();
                    format!("({})", names.join(", "))
                }
            })
            .collect();
        format!("P({})", parts.join(", "))
    }
}

/// A colour per device for grids: ANSI 256-colour backgrounds and, for HTML,
/// the same hues as CSS.
pub const PALETTE: [(u8, &str); 8] = [
    (31, "#1f77b4"),
    (166, "#ff7f0e"),
    (34, "#2ca02c"),
    (160, "#d62728"),
    (97, "#9467bd"),
    (94, "#8c564b"),
    (169, "#e377c2"),
    (244, "#7f7f7f"),
];

/// One cell of the grid: the devices holding a block and the block's ranges.
#[derive(Clone, Debug)]
pub struct GridCell {
    pub devices: Vec<usize>,
    pub ranges: Vec<Range<usize>>,
}

/// The grid of blocks over the sharded dimensions: rows are the blocks of
/// the first sharded dimension, columns of the others (flattened; a lone
/// sharded last dimension makes one row of columns), and each
/// cell lists the devices that hold it (several when replicated along some
/// mesh axis). An array with no sharded dimension is one cell.
pub fn grid(p: &Placement, shape: &[usize]) -> (Vec<usize>, Vec<Vec<GridCell>>) {
    let sharded: Vec<usize> = (0..shape.len()).filter(|&d| p.parts(d) > 1).collect();
    // One sharded dimension that is the array's last is drawn across, as a
    // row; otherwise the first sharded dimension runs down the rows.
    let (row_dim, col_dims) = match &sharded[..] {
        [d] if *d + 1 == shape.len() => (None, vec![*d]),
        [r, rest @ ..] => (Some(*r), rest.to_vec()),
        [] => (None, Vec::new()),
    };
    let rows = row_dim.map_or(1, |d| p.parts(d));
    let cols: usize = col_dims.iter().map(|&d| p.parts(d)).product();
    let mut cells: Vec<Vec<GridCell>> = (0..rows)
        .map(|_| {
            (0..cols)
                .map(|_| GridCell {
                    devices: Vec::new(),
                    ranges: Vec::new(),
                })
                .collect()
        })
        .collect();
    for pos in 0..p.mesh.size() {
        let coords = p.coords(pos);
        let r = row_dim.map_or(0, |d| p.block_index(d, &coords));
        let c = col_dims
            .iter()
            .fold(0, |acc, &d| acc * p.parts(d) + p.block_index(d, &coords));
        let cell = &mut cells[r][c];
        cell.devices.push(p.mesh.devices[pos]);
        cell.ranges = p.block(shape, pos);
    }
    (sharded, cells)
}

/// The device grid as text: one box per block with its devices, its index
/// ranges along the sharded dimensions, and its shape and bytes; with
/// `color`, each box is drawn in its first device's colour (ANSI).
pub fn visualize(p: &Placement, shape: &[usize], dtype: DType, color: bool) -> String {
    let (sharded, cells) = grid(p, shape);
    let label = |cell: &GridCell| -> Vec<String> {
        let devs: Vec<String> = cell.devices.iter().map(|d| d.to_string()).collect();
        let mut lines = vec![format!("cpu {}", devs.join(","))];
        if !sharded.is_empty() {
            let ranges: Vec<String> = sharded
                .iter()
                .map(|&d| format!("{}:{}", cell.ranges[d].start, cell.ranges[d].end))
                .collect();
            lines.push(format!("[{}]", ranges.join(", ")));
        }
        let bshape: Shape = cell.ranges.iter().map(|r| r.len()).collect();
        let n: usize = bshape.iter().product();
        let dims: Vec<String> = bshape.iter().map(|x| x.to_string()).collect();
        lines.push(format!("{}[{}]", dtype.short(), dims.join(",")));
        lines.push(human_bytes(n * dtype.size_bytes()));
        lines
    };
    let labels: Vec<Vec<Vec<String>>> = cells
        .iter()
        .map(|row| row.iter().map(label).collect())
        .collect();
    let width = labels
        .iter()
        .flatten()
        .flatten()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    let height = labels.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let ncols = cells.first().map_or(0, Vec::len);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {} ({})",
        p.type_text(shape, dtype),
        p.mesh.describe(),
        p.spec_text()
    );
    let rule = |out: &mut String| {
        out.push('+');
        for _ in 0..ncols {
            out.push_str(&"-".repeat(width));
            out.push('+');
        }
        out.push('\n');
    };
    rule(&mut out);
    for (row, row_cells) in labels.iter().zip(&cells) {
        for line in 0..height {
            out.push('|');
            for (lab, cell) in row.iter().zip(row_cells) {
                let text = lab.get(line).map_or("", String::as_str);
                let pad = width - text.chars().count();
                let body = format!(
                    "{}{}{}",
                    " ".repeat(pad / 2),
                    text,
                    " ".repeat(pad - pad / 2)
                );
                if color {
                    let dev = cell.devices.first().copied().unwrap_or(0);
                    let c = PALETTE[dev % PALETTE.len()].0;
                    let _ = write!(out, "\x1b[48;5;{c}m\x1b[97m{body}\x1b[0m|");
                } else {
                    out.push_str(&body);
                    out.push('|');
                }
            }
            out.push('\n');
        }
        rule(&mut out);
    }
    out
}

/// The device grid as an HTML table, each block coloured by its first device.
pub fn visualize_html(p: &Placement, shape: &[usize], dtype: DType) -> String {
    let (sharded, cells) = grid(p, shape);
    let mut out = format!(
        "<div><code>{}</code> on {} <code>{}</code><table style=\"border-collapse:collapse\">",
        p.type_text(shape, dtype),
        p.mesh.describe(),
        p.spec_text()
    );
    for row in &cells {
        out.push_str("<tr>");
        for cell in row {
            let dev = cell.devices.first().copied().unwrap_or(0);
            let color = PALETTE[dev % PALETTE.len()].1;
            let devs: Vec<String> = cell.devices.iter().map(|d| d.to_string()).collect();
            let ranges: Vec<String> = sharded
                .iter()
                .map(|&d| format!("{}:{}", cell.ranges[d].start, cell.ranges[d].end))
                .collect();
            let n: usize = cell.ranges.iter().map(|r| r.len()).product();
            let _ = write!(
                out,
                "<td style=\"background:{color};color:white;padding:6px 12px;border:1px solid white;text-align:center\">cpu {}<br>[{}]<br>{}</td>",
                devs.join(","),
                ranges.join(", "),
                human_bytes(n * dtype.size_bytes())
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    out
}

pub fn human_bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    crate::cpu::slice(&full, &start, &limit, &[1, 1])
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
        assert_eq!(p.type_text(&[10, 3], DType::F32), "f32[10@x,3]");
    }

    #[test]
    fn two_axes_on_one_dimension() {
        let p = Placement::new(mesh(&[2, 2], &["a", "b"]), vec![vec![0, 1]], 1).unwrap();
        assert_eq!(p.parts(0), 4);
        let starts: Vec<usize> = p.blocks(&[8]).iter().map(|b| b.1[0].start).collect();
        assert_eq!(starts, vec![0, 2, 4, 6]);
        assert_eq!(p.type_text(&[8], DType::F32), "f32[8@(a,b)]");
    }

    #[test]
    fn errors() {
        assert!(Mesh::new(vec![2, 2], vec![Arc::from("a")], vec![0, 1, 2, 3]).is_err());
        let m = mesh(&[2], &["a"]);
        assert!(Placement::new(m.clone(), vec![vec![0], vec![0]], 2).is_err());
        assert!(Placement::new(m, vec![vec![0], vec![]], 1).is_err());
    }
}
