//! `pmap` on the device workers: the per-device program runs on `size`
//! workers, each on its slice of the mapped arguments, and each output
//! stacks the devices' values along its mapped axis — kept as the devices'
//! shards, laid out over a one-axis mesh named after the pmap axis. A pmap
//! of a pmap runs on an (outer, inner) grid of devices with both names bound.

use super::blocks::{mapped_slices_at, slice_at};
use super::program::{run_program, MeshGroups};
use crate::error::{Error, Result};
use crate::jit::Compiled;
use crate::tensor::Tensor;
use crate::transform::batch::out_axis;
use arr_kernels::collectives::Communicator;
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::Array;
use std::sync::Arc;

/// How one level of a pmap maps its function over devices.
pub struct Mapping<'a> {
    /// The axis name collectives use, and the number of devices along it.
    pub name: &'a Arc<str>,
    pub size: usize,
    /// Each input leaf's mapped axis (`None`: every device gets it whole).
    pub in_dims: &'a [Option<usize>],
    /// Each output leaf's mapped axis as given (negative counts from the
    /// end; `None`: not mapped, the first device's value).
    pub out_dims: &'a [Option<i64>],
}

/// Run the compiled per-device program of a pmap on `map.size` device
/// workers, each on its slice of `inputs`; the outputs stacked over the
/// devices. The inputs marked in `donated` give their buffers (an earlier
/// pmap's output gives each device its own slice's) and are deleted (`why`).
pub fn run(
    compiled: &Compiled,
    map: &Mapping,
    inputs: &[Array],
    donated: &[bool],
    why: &str,
) -> Result<Vec<Tensor>> {
    let outs = run_on_devices(compiled, map, inputs, donated, why);
    // Deleted whether or not the program ran to the end: their slices may
    // already be gone.
    for (a, d) in inputs.iter().zip(donated) {
        if *d {
            a.delete(why);
        }
    }
    let outs = outs?;
    let size = map.size;
    // The outputs stay laid out over the devices that computed them: a
    // one-axis mesh named after the pmap axis, split along each out axis.
    let out_mesh = Arc::new(
        Mesh::new(vec![size], vec![map.name.clone()], (0..size).collect())
            .map_err(Error::value_error)?,
    );
    // Each output stacks the devices' values along its out axis; they stay
    // as the devices' shards until something reads the whole array.
    let n_out = outs.first().map_or(0, Vec::len);
    let mut stacked = Vec::with_capacity(n_out);
    for i in 0..n_out {
        let parts: Vec<Array> = outs.iter().map(|o| o[i].clone()).collect();
        stacked.push(Tensor::from(match map.out_dims.get(i).copied().flatten() {
            None => parts[0].clone(),
            Some(a) => {
                let axis = out_axis(a, parts[0].ndim() + 1).min(parts[0].ndim());
                let mut shape = parts[0].shape().to_vec();
                shape.insert(axis, 1);
                let shards: Vec<Array> = parts.iter().map(|p| p.reshape(&shape)).collect();
                shape[axis] = size;
                let mut spec = vec![Vec::new(); shape.len()];
                spec[axis] = vec![0];
                let p = Placement::new(out_mesh.clone(), spec, shape.len())
                    .map_err(Error::value_error)?;
                Array::from_shards(&shape, Arc::new(p), shards)
            }
        }));
    }
    Ok(stacked)
}

/// Run the program on `map.size` device workers, each on its slice of the
/// mapped arguments; the outputs by device.
fn run_on_devices(
    compiled: &Compiled,
    map: &Mapping,
    whole: &[Array],
    donated: &[bool],
    why: &str,
) -> Result<Vec<Vec<Array>>> {
    let (name, size) = (map.name, map.size);
    // Each worker takes its own slices: in parallel, and into its own cache.
    let inputs = |r: usize| mapped_slices_at(whole, map.in_dims, size, r, donated, why);
    let ids: Vec<usize> = (0..size).collect();
    let comm: Arc<dyn Communicator> = arr_kernels::process::group(&ids);
    run_program(
        compiled,
        &ids,
        &inputs,
        std::slice::from_ref(&comm),
        "pmap",
        |rank| vec![(name.clone(), size, rank, comm.clone())],
    )
}

/// `pmap(pmap(g, 'j'), 'i')` on an (n_i, n_j) grid of devices: each device
/// runs `g`'s program on its slice of both mapped axes with both axis names
/// bound — collectives over 'j' among the devices of its row, over 'i'
/// among those of its column — and each output is laid out over the grid.
pub fn run_grid(
    compiled: &Compiled,
    outer: &Mapping,
    inner: &Mapping,
    whole: &[Array],
) -> Result<Vec<Tensor>> {
    let (n_o, n_i) = (outer.size, inner.size);
    let grid = Arc::new(
        Mesh::new(
            vec![n_o, n_i],
            vec![outer.name.clone(), inner.name.clone()],
            (0..n_o * n_i).collect(),
        )
        .map_err(Error::value_error)?,
    );
    let inputs = |pos: usize| -> Vec<Array> {
        let (a, b) = (pos / n_i, pos % n_i);
        whole
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let x = match outer.in_dims[k] {
                    Some(d) => slice_at(x, d, a),
                    None => x.clone(),
                };
                match inner.in_dims[k] {
                    Some(d) => slice_at(&x, d, b),
                    None => x,
                }
            })
            .collect()
    };
    let outs = MeshGroups::new(&grid)?.run(compiled, &inputs, "pmap")?;
    let mut results = Vec::new();
    for (k, (&ax_o, &ax_i)) in outer.out_dims.iter().zip(inner.out_dims).enumerate() {
        let parts: Vec<Array> = outs.iter().map(|o| o[k].clone()).collect();
        if ax_o.is_none() && ax_i.is_none() {
            results.push(Tensor::from(parts[0].clone()));
            continue;
        }
        // Insert the inner axis, then the outer one; note where each lands.
        let mut shape = parts[0].shape().to_vec();
        let mut at_i = None;
        if let Some(a) = ax_i {
            let a = out_axis(a, shape.len() + 1).min(shape.len());
            shape.insert(a, 1);
            at_i = Some(a);
        }
        let mut at_o = None;
        if let Some(a) = ax_o {
            let a = out_axis(a, shape.len() + 1).min(shape.len());
            shape.insert(a, 1);
            at_o = Some(a);
            at_i = at_i.map(|i| if a <= i { i + 1 } else { i });
        }
        let shards: Vec<Array> = parts.iter().map(|x| x.reshape(&shape)).collect();
        let mut spec = vec![Vec::new(); shape.len()];
        if let Some(a) = at_o {
            shape[a] = n_o;
            spec[a] = vec![0];
        }
        if let Some(a) = at_i {
            shape[a] = n_i;
            spec[a] = vec![1];
        }
        let placement =
            Placement::new(grid.clone(), spec, shape.len()).map_err(Error::value_error)?;
        results.push(Tensor::from(Array::from_shards(
            &shape,
            Arc::new(placement),
            shards,
        )));
    }
    Ok(results)
}
