//! `shard_map` on a mesh: the per-device program runs on every device of
//! the mesh, each on its blocks of the arguments, and the blocks it returns
//! are put together by the out specs. Under a transformation it is the same
//! function as nested vmaps, one per mesh axis and named after it, over each
//! input reshaped so that its blocks are indexed by the mesh axes that split
//! it: the values are those of the devices' run, and reverse mode and
//! compilation come with vmap.

use super::blocks::{assemble, blocks_at};
use super::program::{compile_for_mesh, MeshGroups};
use crate::display::sharding::PlacementText;
use crate::error::{Error, Result};
use crate::prim::{bind, Aval, Prim};
use crate::tensor::Tensor;
use crate::transform::batch::vmap_mesh_axis;
use crate::transform::ops;
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::Array;
use std::sync::Arc;

/// Trace `trace` for one device's blocks of `inputs` (laid out by
/// `placements`) with the mesh axes bound, compile it, and run it on every
/// device of `mesh`; `out_layout` gives each output's placement from the
/// ranks of the devices' blocks, by which the outputs are put together.
/// With `check_replicas`, an output whose layout leaves a mesh axis out
/// (replicated along it) must be the same on every device along that axis,
/// as JAX checks: otherwise taking one device's block would be a silent
/// wrong answer.
pub fn run(
    mesh: &Arc<Mesh>,
    inputs: &[Array],
    placements: &[Placement],
    trace: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
    out_layout: impl FnOnce(&[usize]) -> Result<Vec<Placement>>,
    check_replicas: bool,
) -> Result<Vec<Tensor>> {
    let avals: Vec<Aval> = inputs
        .iter()
        .zip(placements)
        .map(|(a, p)| Aval {
            shape: (0..a.ndim()).map(|d| a.shape()[d] / p.parts(d)).collect(),
            dtype: a.dtype(),
        })
        .collect();
    let compiled = {
        let _printing = PrintingOn::enter(mesh);
        compile_for_mesh(mesh, &avals, trace)?
    };
    let groups = MeshGroups::new(mesh)?;
    let blocks = |pos: usize| blocks_at(inputs, placements, pos);
    let outs = groups.run(&compiled, &blocks, "shard_map")?;
    // Reassemble each output from its blocks by the out specs.
    let ranks: Vec<usize> = outs[0].iter().map(Array::ndim).collect();
    let layouts = out_layout(&ranks)?;
    if check_replicas {
        for (i, p) in layouts.iter().enumerate() {
            check_replicated(mesh, p, &outs, i)?;
        }
    }
    Ok(layouts
        .iter()
        .enumerate()
        .map(|(i, p)| Tensor::from(assemble(p, &outs, i)))
        .collect())
}

thread_local! {
    /// The meshes whose per-device programs are being traced by eager
    /// `shard_map` calls, innermost last.
    static PRINTING: std::cell::RefCell<Vec<Arc<Mesh>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// While the per-device program of an eager `shard_map` is traced, `print`
/// of a traced value shows every device's block when the program runs, as
/// JAX's eager shard_map does; this is the mesh it runs on.
pub fn printing_mesh() -> Option<Arc<Mesh>> {
    PRINTING.with(|p| p.borrow().last().cloned())
}

struct PrintingOn;

impl PrintingOn {
    fn enter(mesh: &Arc<Mesh>) -> PrintingOn {
        PRINTING.with(|p| p.borrow_mut().push(mesh.clone()));
        PrintingOn
    }
}

impl Drop for PrintingOn {
    fn drop(&mut self) {
        PRINTING.with(|p| {
            p.borrow_mut().pop();
        });
    }
}

/// Python's text of a tuple of these items' texts: `(0,)`, `(0, 1)`.
fn py_tuple(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.as_slice() {
        [one] => format!("({one},)"),
        many => format!("({})", many.join(", ")),
    }
}

/// JAX's text of a value in an eager shard_map: each device's block under
/// its device and mesh coordinates (`blocks` by device id).
pub fn device_blocks_text(mesh: &Mesh, blocks: &[(Option<usize>, Array)]) -> String {
    let names: Vec<&str> = mesh.axis_names.iter().map(|n| &**n).collect();
    let names = format!("({},)", names.join(", "));
    let mut parts = Vec::new();
    for (pos, &device) in mesh.devices.iter().enumerate() {
        let Some((_, block)) = blocks.iter().find(|(d, _)| *d == Some(device)) else {
            continue;
        };
        let idx = py_tuple(mesh.coords(pos).iter().map(|c| c.to_string()));
        parts.push(format!(
            "On {} at mesh coordinates {names} = {idx}:\n{}\n",
            crate::sharding::DeviceValue::cpu(device).label,
            crate::display::array_str(&Tensor::from(block.clone()))
        ));
    }
    parts.join("\n")
}

/// Output `i` is the same on the devices along every mesh axis its
/// layout `p` leaves out.
fn check_replicated(mesh: &Mesh, p: &Placement, outs: &[Vec<Array>], i: usize) -> Result<()> {
    let named: Vec<usize> = p.spec.iter().flatten().copied().collect();
    for a in (0..mesh.shape.len()).filter(|a| !named.contains(a)) {
        for (pos, out) in outs.iter().enumerate() {
            let mut coords = p.coords(pos);
            if coords[a] == 0 {
                continue;
            }
            coords[a] = 0;
            let first = coords
                .iter()
                .zip(&mesh.shape)
                .fold(0, |acc, (c, n)| acc * n + c);
            if out[i].buffer()? != outs[first][i].buffer()? {
                // JAX's words (its check is by types, this one by values).
                return Err(Error::value_error(format!(
                    "shard_map was given out_specs which require replication the values do \
                     not have:\n\nThe mesh given has shape {} with corresponding axis names \
                     {}.\n\nout_specs is {} which implies that the corresponding output value \
                     is replicated across mesh axis '{}', but its blocks differ \
                     across that axis.\n\nCheck if these output values are meant to be \
                     replicated over those mesh axes. If not, consider revising the \
                     corresponding out_specs entries (or reduce them with psum). If so, consider \
                     disabling the check by passing the check_vma=False argument to \
                     `jax.shard_map`.",
                    py_tuple(mesh.shape.iter().map(|n| n.to_string())),
                    py_tuple(mesh.axis_names.iter().map(|n| format!("'{n}'"))),
                    p.spec_text(),
                    mesh.axis_names[a],
                )));
            }
        }
    }
    Ok(())
}

/// `shard_map` under a transformation (`jit`, `grad`, `vmap`): `body` (the
/// function on one device's blocks) under nested named vmaps, one per mesh
/// axis; `out_layout` gives each output's placement from the ranks of its
/// blocks.
pub fn traced(
    mesh: &Arc<Mesh>,
    leaves: &[Tensor],
    placements: &[Placement],
    body: &mut dyn FnMut(Vec<Tensor>) -> Result<Vec<Tensor>>,
    out_layout: impl FnOnce(&[usize]) -> Result<Vec<Placement>>,
) -> Result<Vec<Tensor>> {
    let k = mesh.shape.len();
    let mut inputs = Vec::new();
    let mut has: Vec<Vec<bool>> = Vec::new();
    for (t, p) in leaves.iter().zip(placements) {
        // [mesh axes that split dim 0..., block 0, mesh axes of dim 1..., block 1, ...]
        let mut shape = Vec::new();
        let mut at: Vec<Option<usize>> = vec![None; k];
        for d in 0..t.ndim() {
            for &a in &p.spec[d] {
                at[a] = Some(shape.len());
                shape.push(mesh.shape[a]);
            }
            shape.push(t.shape()[d] / p.parts(d));
        }
        let r = ops::reshape(t, &shape)?;
        // The mesh axes to the front, in mesh order, then the block.
        let front: Vec<usize> = at.iter().flatten().copied().collect();
        let mut perm = front.clone();
        perm.extend((0..shape.len()).filter(|i| !front.contains(i)));
        inputs.push(ops::transpose(&r, &perm)?);
        has.push(at.iter().map(Option::is_some).collect());
    }
    let outs = nest_vmaps(mesh, 0, inputs, &has, body)?;
    let ranks: Vec<usize> = outs.iter().map(|o| o.ndim() - k).collect();
    let layouts = out_layout(&ranks)?;
    // Each output is [mesh axes..., block]: replicas along axes its spec does
    // not name are dropped (index 0), the others merged into their dimensions.
    let mut results = Vec::new();
    for (o, p) in outs.iter().zip(&layouts) {
        let rank = o.ndim() - k;
        let named: Vec<usize> = p.spec.iter().flatten().copied().collect();
        let mut x = o.clone();
        for a in (0..k).rev() {
            if !named.contains(&a) {
                let mut start = vec![0; x.ndim()];
                let mut limit = x.shape().to_vec();
                start[a] = 0;
                limit[a] = 1;
                let sl = bind(
                    &Prim::Slice {
                        start,
                        limit,
                        stride: vec![1; x.ndim()],
                    },
                    [x],
                )?
                .swap_remove(0);
                let mut shape = sl.shape().to_vec();
                shape.remove(a);
                x = ops::reshape(&sl, &shape)?;
            }
        }
        let kept: Vec<usize> = (0..k).filter(|a| named.contains(a)).collect();
        let front = |a: usize| kept.iter().position(|&b| b == a).expect("a named axis");
        let mut perm = Vec::new();
        let mut shape = Vec::new();
        for d in 0..rank {
            for &a in &p.spec[d] {
                perm.push(front(a));
            }
            perm.push(kept.len() + d);
            shape.push(x.shape()[kept.len() + d] * p.parts(d));
        }
        results.push(ops::reshape(&ops::transpose(&x, &perm)?, &shape)?);
    }
    Ok(results)
}

/// The vmap over mesh axis `level` and, inside it, those over the next
/// ones; innermost, `body` on one device's blocks.
fn nest_vmaps(
    mesh: &Mesh,
    level: usize,
    xs: Vec<Tensor>,
    has: &[Vec<bool>],
    body: &mut dyn FnMut(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    if level == mesh.shape.len() {
        return body(xs);
    }
    let in_axes: Vec<Option<usize>> = has.iter().map(|h| h[level].then_some(0)).collect();
    vmap_mesh_axis(
        |ys| nest_vmaps(mesh, level + 1, ys, has, body),
        xs,
        &in_axes,
        mesh.shape[level],
        |_| Some(0),
        mesh.axis_names[level].clone(),
    )
}
