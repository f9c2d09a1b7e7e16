//! Sharded arrays as text: the partition spec `P('data', None)`, the typed
//! form `f32[8@data,512@model]`, `Mesh('data': 4, 'model': 2)`, byte sizes,
//! and the device grid of `visualize_sharding` and the prompt's echo (plain
//! text, ANSI colours, HTML). The layouts themselves (meshes, placements,
//! block math) are `arr_kernels::sharding`.

use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{DType, Shape};
use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;

/// The text of a mesh (an extension trait, so `mesh.describe()` reads as a method).
pub trait MeshText {
    /// `Mesh('data': 4, 'model': 2)`.
    fn describe(&self) -> String;
}

impl MeshText for Mesh {
    fn describe(&self) -> String {
        let axes: Vec<String> = self
            .axis_names
            .iter()
            .zip(&self.shape)
            .map(|(n, s)| format!("'{n}': {s}"))
            .collect();
        format!("Mesh({})", axes.join(", "))
    }
}

/// The text of a placement: its spec and the type of an array laid out by it.
pub trait PlacementText {
    /// The type with its sharding: `f32[8@data,512@model]`.
    fn type_text(&self, shape: &[usize], dtype: DType) -> String;
    /// `P('data', None)`-style text of the spec.
    fn spec_text(&self) -> String;
}

/// One dimension as the type shows it: `512@model`, `8@(data,model)`, `3`.
fn dim_text(p: &Placement, d: usize, size: usize) -> String {
    match &p.spec[d][..] {
        [] => size.to_string(),
        [a] => format!("{size}@{}", p.mesh.axis_names[*a]),
        axes => {
            let names: Vec<&str> = axes.iter().map(|&a| &*p.mesh.axis_names[a]).collect();
            format!("{size}@({})", names.join(","))
        }
    }
}

impl PlacementText for Placement {
    fn type_text(&self, shape: &[usize], dtype: DType) -> String {
        let dims: Vec<String> = (0..shape.len())
            .map(|d| dim_text(self, d, shape[d]))
            .collect();
        format!("{}[{}]", dtype.short(), dims.join(","))
    }

    fn spec_text(&self) -> String {
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

/// The layout worth drawing beside an echoed array: a split one's. A
/// replicated array's grid is one cell naming every device, which would
/// follow every loss printed from a sharded step; `x.sharding` and
/// `visualize_sharding(x)` still show it.
pub fn drawn(p: Option<&Arc<Placement>>) -> Option<&Arc<Placement>> {
    p.filter(|p| !p.is_replicated())
}

/// The device grid as `jax.debug.visualize_array_sharding` draws it: one
/// box per block naming its devices (`CPU 0,4`), rows along the first
/// dimension and columns along the second, for a JAX program's output.
pub fn visualize_jax(p: &Placement, shape: &[usize]) -> String {
    let (_, cells) = grid(p, shape);
    let labels: Vec<Vec<String>> = cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| {
                    let mut devs = cell.devices.clone();
                    devs.sort_unstable();
                    let devs: Vec<String> = devs.iter().map(|d| d.to_string()).collect();
                    format!("CPU {}", devs.join(","))
                })
                .collect()
        })
        .collect();
    jax_grid(&labels)
}

/// Boxes in rows and columns holding `labels`, drawn as JAX draws a
/// sharding (an array one device holds whole is one box: `CPU 0`).
pub fn jax_grid(labels: &[Vec<String>]) -> String {
    let width = labels
        .iter()
        .flatten()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        + 4;
    let ncols = labels.first().map_or(0, Vec::len);
    let rule = |left: char, mid: char, right: char| {
        let bar = "─".repeat(width);
        let inner: Vec<&str> = (0..ncols).map(|_| bar.as_str()).collect();
        format!("{left}{}{right}\n", inner.join(&mid.to_string()))
    };
    let mut out = rule('┌', '┬', '┐');
    for (i, row) in labels.iter().enumerate() {
        if i > 0 {
            out.push_str(&rule('├', '┼', '┤'));
        }
        out.push('│');
        for text in row {
            let pad = width - text.chars().count();
            let _ = write!(
                out,
                "{}{}{}│",
                " ".repeat(pad / 2),
                text,
                " ".repeat(pad - pad / 2)
            );
        }
        out.push('\n');
    }
    out.push_str(&rule('└', '┴', '┘'));
    out
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
    use std::sync::Arc;

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

    #[test]
    fn types_show_the_axes_that_split_each_dimension() {
        let p = Placement::new(mesh(&[4], &["x"]), vec![vec![0]], 2).unwrap();
        assert_eq!(p.type_text(&[10, 3], DType::F32), "f32[10@x,3]");
        let p = Placement::new(mesh(&[2, 2], &["a", "b"]), vec![vec![0, 1]], 1).unwrap();
        assert_eq!(p.type_text(&[8], DType::F32), "f32[8@(a,b)]");
        assert_eq!(p.spec_text(), "P(('a', 'b'))");
        assert_eq!(p.mesh.describe(), "Mesh('a': 2, 'b': 2)");
    }
}
