//! Per-device programs: a function compiled for one device's block with the
//! device axes bound (so collectives trace with their axis sizes), the cache
//! of compiled programs by signature, and running a program on device
//! workers — one thread per device, each with its inputs and the axis names
//! bound to its rank and its group's communicator.

use crate::error::{Error, ErrorKind, Result};
use crate::jit::{self, exec, Compiled};
use crate::prim::Aval;
use crate::tensor::Tensor;
use crate::transform::collective::{self, AxisGuard};
use crate::value::Value;
use arr_kernels::collectives::Communicator;
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{devices, process, Array};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// One compiled per-device program, with what it takes to put its outputs
/// back together.
#[derive(Clone)]
pub struct Program {
    pub avals: Vec<Aval>,
    /// What else the program was compiled for (pytree structure, static
    /// arguments), as text.
    pub key: String,
    pub compiled: Rc<Compiled>,
    /// The output pytree (leaves are placeholders) and each leaf's mapped axis.
    pub out_tree: Value,
    pub out_dims: Vec<Option<i64>>,
    /// For a pmap of a pmap, each leaf's inner mapped axis too.
    pub inner_dims: Vec<Option<i64>>,
}

/// The programs compiled so far for one SPMD function.
pub type ProgramCache = RefCell<Vec<Program>>;

/// Every axis name of `mesh` bound (for tracing a per-device program) while
/// the guards live.
pub fn bind_mesh_axes(mesh: &Mesh) -> Vec<AxisGuard> {
    mesh.axis_names
        .iter()
        .zip(&mesh.shape)
        .map(|(n, &s)| collective::bind_device_axis(n.clone(), s, None))
        .collect()
}

/// Trace `f` for one device's block with every axis of `mesh` bound, and
/// compile it with `jit`'s pipeline.
pub fn compile_for_mesh(
    mesh: &Mesh,
    avals: &[Aval],
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<Compiled> {
    let _axes = bind_mesh_axes(mesh);
    jit::compile(avals, f)
}

/// The program compiled for these argument types and key: found in the
/// cache, or traced now by `trace` (which returns the flat outputs and
/// their pytree) with the device axes `axes` bound; `out_dims` gives each
/// output leaf's outer and inner mapped axes.
pub fn cached_program(
    programs: &ProgramCache,
    avals: Vec<Aval>,
    key: String,
    axes: &[(Arc<str>, usize)],
    trace: impl FnOnce(Vec<Tensor>) -> Result<(Vec<Tensor>, Value)>,
    out_dims: impl FnOnce(&Value) -> Result<(Vec<Option<i64>>, Vec<Option<i64>>)>,
) -> Result<Program> {
    if let Some(p) = programs
        .borrow()
        .iter()
        .find(|p| p.avals == avals && p.key == key)
    {
        return Ok(p.clone());
    }
    let out_tree = RefCell::new(Value::None);
    let compiled = {
        let _axes: Vec<AxisGuard> = axes
            .iter()
            .map(|(n, size)| collective::bind_device_axis(n.clone(), *size, None))
            .collect();
        jit::compile(&avals, |ts| {
            let (ts, tree) = trace(ts)?;
            *out_tree.borrow_mut() = tree;
            Ok(ts)
        })?
    };
    let out_tree = out_tree.into_inner();
    let (outer, inner) = out_dims(&out_tree)?;
    let p = Program {
        avals,
        key,
        compiled: Rc::new(compiled),
        out_tree,
        out_dims: outer,
        inner_dims: inner,
    };
    programs.borrow_mut().push(p.clone());
    Ok(p)
}

/// One axis name bound on a device worker: (name, axis size, this device's
/// index along it, the communicator of its group).
pub type AxisBinding = (Arc<str>, usize, usize, Arc<dyn Communicator>);

/// Run a compiled per-device program on workers: rank r on device `ids[r]`
/// with the inputs `inputs(r)` (made on the worker) and the axis names
/// `axes(r)`; the outputs by rank. A
/// failing worker aborts `comms`, so the others stop instead of waiting.
pub fn run_program(
    compiled: &Compiled,
    ids: &[usize],
    inputs: &(dyn Fn(usize) -> Vec<Array> + Sync),
    comms: &[Arc<dyn Communicator>],
    what: &str,
    axes: impl Fn(usize) -> Vec<AxisBinding> + Sync,
) -> Result<Vec<Vec<Array>>> {
    // Tensors may hold tracers (`Rc`), so workers get plain arrays.
    let consts: Vec<Array> = compiled
        .consts
        .iter()
        .map(|t| t.concrete().cloned())
        .collect::<Result<_>>()?;
    let graph = compiled.graph.clone();
    let last_use = compiled.last_use();
    // In a job of several processes each runs the ranks of its own devices.
    let local: Vec<usize> = (0..ids.len())
        .filter(|&r| process::is_local(ids[r]))
        .collect();
    let local_ids: Vec<usize> = local.iter().map(|&r| ids[r]).collect();
    let results = devices::run_spmd(&local_ids, |k| {
        let rank = local[k];
        struct AbortOnFail<'a>(&'a [Arc<dyn Communicator>], bool);
        impl Drop for AbortOnFail<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.iter().for_each(|c| c.abort());
                }
            }
        }
        let mut guard = AbortOnFail(comms, false);
        let _axes: Vec<AxisGuard> = axes(rank)
            .into_iter()
            .map(|(name, size, r, comm)| collective::bind_device_axis(name, size, Some((r, comm))))
            .collect();
        let consts: Vec<Tensor> = consts.iter().cloned().map(Tensor::from).collect();
        let args: Vec<Tensor> = inputs(rank).into_iter().map(Tensor::from).collect();
        let out = exec::run(&graph, last_use, &consts, args).and_then(|outs| {
            outs.iter()
                .map(|t| t.concrete().cloned())
                .collect::<Result<Vec<Array>>>()
        });
        if let (Err(e), true) = (&out, process::is_multi()) {
            // Peers on other processes cannot be told to stop waiting: the
            // job ends, with this device's own error.
            process::abort(&format!("{what} on device {}: {}", ids[rank], e.render()));
        }
        guard.1 = out.is_ok();
        out.map_err(|e| (e.kind, e.message.clone()))
    });
    // The first device's own error, rather than another's "a peer failed".
    let mut first_err: Option<(ErrorKind, String)> = None;
    let mut outs = Vec::with_capacity(ids.len());
    for (k, r) in results.into_iter().enumerate() {
        match r {
            Ok(o) => outs.push(o),
            Err((kind, msg)) => {
                let peer = msg.contains("another device");
                if first_err
                    .as_ref()
                    .is_none_or(|(_, m)| m.contains("another device") && !peer)
                {
                    first_err = Some((kind, format!("on device {}: {msg}", local_ids[k])));
                }
            }
        }
    }
    match first_err {
        // Every rank stopped at the same request (those waiting for a peer
        // in a collective gave up): one KeyboardInterrupt, not a device's.
        Some(_) if arr_kernels::interrupt::requested() => Err(Error::interrupted()),
        Some((kind, msg)) => Err(Error::new(kind, format!("{what}: {msg}"))),
        None if local.len() == ids.len() => Ok(outs),
        None => gather_outputs(&local, outs, ids.len(), what),
    }
}

/// Every rank's outputs, on every process, from each process's own ranks'
/// (`local`, their `outs`): the program's results are then one value in
/// every process, as every other value of an SPMD script is.
fn gather_outputs(
    local: &[usize],
    outs: Vec<Vec<Array>>,
    n: usize,
    what: &str,
) -> Result<Vec<Vec<Array>>> {
    let mut bytes = Vec::new();
    for (&rank, o) in local.iter().zip(&outs) {
        bytes.extend_from_slice(&(rank as u64).to_le_bytes());
        bytes.extend_from_slice(&(o.len() as u64).to_le_bytes());
        for a in o {
            process::encode_array(a, &mut bytes)?;
        }
    }
    let mut by_rank: Vec<Option<Vec<Array>>> = vec![None; n];
    let bad = || Error::value_error(format!("{what}: a process sent outputs arr cannot read"));
    for part in process::all_gather_bytes(bytes, &format!("the outputs of {what}")) {
        let mut at = 0;
        let word = |at: &mut usize| -> Option<usize> {
            let w = part.get(*at..*at + 8)?;
            *at += 8;
            usize::try_from(u64::from_le_bytes(w.try_into().ok()?)).ok()
        };
        while at < part.len() {
            let rank = word(&mut at).filter(|&r| r < n).ok_or_else(bad)?;
            let count = word(&mut at).ok_or_else(bad)?;
            let arrays = (0..count)
                .map(|_| process::decode_array(&part, &mut at))
                .collect::<Option<Vec<Array>>>()
                .ok_or_else(bad)?;
            by_rank[rank] = Some(arrays);
        }
    }
    by_rank
        .into_iter()
        .map(|o| {
            o.ok_or_else(|| Error::value_error(format!("{what}: a device's outputs are missing")))
        })
        .collect()
}

/// The devices of a mesh for one SPMD run: each position's coordinates, and
/// one communicator per group of devices along each mesh axis (the devices
/// that agree on every other coordinate).
pub struct MeshGroups<'a> {
    mesh: &'a Arc<Mesh>,
    coords: Vec<Vec<usize>>,
    comms: Vec<Arc<dyn Communicator>>,
    /// Per position, per mesh axis: its group's index in `comms`.
    group_of: Vec<Vec<usize>>,
}

impl<'a> MeshGroups<'a> {
    pub fn new(mesh: &'a Arc<Mesh>) -> Result<MeshGroups<'a>> {
        let n = mesh.size();
        let p = Placement::new(mesh.clone(), vec![], 0).map_err(Error::value_error)?;
        let coords: Vec<Vec<usize>> = (0..n).map(|pos| p.coords(pos)).collect();
        let mut comms: Vec<Arc<dyn Communicator>> = Vec::new();
        let mut group_of: Vec<Vec<usize>> = vec![Vec::new(); n];
        for a in 0..mesh.shape.len() {
            let (groups, of) = mesh.axis_groups(a);
            for (pos, g) in of.into_iter().enumerate() {
                group_of[pos].push(comms.len() + g);
            }
            // Every process makes every group, in this order.
            comms.extend(groups.iter().map(|devices| process::group(devices)));
        }
        Ok(MeshGroups {
            mesh,
            coords,
            comms,
            group_of,
        })
    }

    /// Run a compiled per-device program on every device of the mesh, each
    /// position with its inputs and every mesh axis name bound.
    pub fn run(
        &self,
        compiled: &Compiled,
        inputs: &(dyn Fn(usize) -> Vec<Array> + Sync),
        what: &str,
    ) -> Result<Vec<Vec<Array>>> {
        let mesh = self.mesh;
        run_program(compiled, &mesh.devices, inputs, &self.comms, what, |pos| {
            mesh.axis_names
                .iter()
                .enumerate()
                .map(|(a, name)| {
                    (
                        name.clone(),
                        mesh.shape[a],
                        self.coords[pos][a],
                        self.comms[self.group_of[pos][a]].clone(),
                    )
                })
                .collect()
        })
    }
}
