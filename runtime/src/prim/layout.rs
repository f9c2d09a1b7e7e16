//! Shardings as part of array types (JAX's explicit sharding): the layout of
//! every primitive's outputs given its operands' layouts, for eager arrays
//! and traced values alike. One exhaustive match over the primitives; the
//! rules are JAX's: elementwise operands combine dimension by dimension
//! (an unsplit dimension takes the other's axes; two different splits of an
//! Explicit axis are a `ShardingTypeError`), reductions drop the reduced
//! dimensions, movement follows its dimensions, a product whose contracted
//! dimension is split is ambiguous unless the caller says where the result
//! goes (`out_sharding=`). Auto axes follow the same rules but never fail:
//! a conflict there leaves the dimension unsplit, for the compiler to choose.

use super::{Aval, Prim};
use crate::error::{Error, ErrorKind, Result};
use arr_kernels::sharding::{Mesh, Placement};
use std::cell::Cell;
use std::sync::Arc;

type Spec = Vec<Vec<usize>>;
type Layouts = Vec<Option<Arc<Placement>>>;

thread_local! {
    /// Set while a product with `out_sharding=` runs: its result is laid
    /// out as asked afterwards, so no split is ambiguous meanwhile.
    static LENIENT: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with layout conflicts resolved silently (unsplit): the caller
/// gives the result its layout afterwards (`out_sharding=`).
pub fn leniently<R>(f: impl FnOnce() -> R) -> R {
    let before = LENIENT.with(|l| l.replace(true));
    let out = f();
    LENIENT.with(|l| l.set(before));
    out
}

/// The layouts of `prim`'s outputs (of types `outs`) from its operands'
/// (`ins`, of types `in_avals`); all None when no operand is laid out.
pub fn out_layouts(
    prim: &Prim,
    ins: &[Option<Arc<Placement>>],
    in_avals: &[Aval],
    outs: &[Aval],
) -> Result<Layouts> {
    let Some(mesh) = common_mesh(prim, ins)? else {
        return Ok(vec![None; outs.len()]);
    };
    // Operands on another mesh (sharing devices) count as unsplit here.
    let specs: Vec<Spec> = ins
        .iter()
        .zip(in_avals)
        .map(|(p, a)| match p {
            Some(p) if *p.mesh == *mesh => p.spec.clone(),
            _ => vec![Vec::new(); a.shape.len()],
        })
        .collect();
    let cx = Cx {
        prim,
        mesh: &mesh,
        in_avals,
        ins,
        strict: !LENIENT.with(Cell::get) && crate::transform::idle(),
        out: outs.first(),
    };
    let one = |spec: Result<Spec>| -> Result<Layouts> { Ok(vec![Some(cx.place(spec?)?)]) };
    let unsplit = || -> Result<Layouts> {
        outs.iter()
            .map(|o| cx.place(vec![Vec::new(); o.shape.len()]).map(Some))
            .collect()
    };
    let out_rank = outs.first().map_or(0, |o| o.shape.len());
    match prim {
        Prim::Unary(_) | Prim::Convert(_) | Prim::Binary(_) | Prim::Select => {
            one(cx.merge(&specs, out_rank))
        }
        Prim::Concatenate { .. } => one(cx.merge(&specs, out_rank)),
        Prim::Reduce { axes, .. } => one(Ok(drop_dims(&specs[0], axes))),
        Prim::ArgReduce { axis, .. } => one(Ok(drop_dims(&specs[0], &[*axis]))),
        Prim::Cumulative { .. } => one(Ok(specs[0].clone())),
        Prim::Sort { .. } | Prim::Argsort { .. } => one(Ok(specs[0].clone())),
        Prim::Transpose(perm) => one(Ok(perm.iter().map(|&d| specs[0][d].clone()).collect())),
        Prim::BroadcastInDim { shape, dims } => {
            let mut out = vec![Vec::new(); shape.len()];
            for (i, &d) in dims.iter().enumerate() {
                if in_avals[0].shape[i] == shape[d] {
                    out[d] = specs[0][i].clone();
                }
            }
            one(Ok(out))
        }
        Prim::Reshape(shape) => one(Ok(reshape(&mesh, &in_avals[0].shape, &specs[0], shape))),
        Prim::Slice {
            start,
            limit,
            stride,
        } => {
            let n = &in_avals[0].shape;
            let keep = |d: usize| start[d] == 0 && limit[d] == n[d] && stride[d] == 1;
            one(Ok(keep_dims(&specs[0], keep)))
        }
        Prim::Rev(dims) => one(Ok(keep_dims(&specs[0], |d| !dims.contains(&d)))),
        // Whole rows: the transformed (last) axis is not split.
        Prim::Fft { .. } => {
            let last = specs[0].len().saturating_sub(1);
            one(Ok(keep_dims(&specs[0], |d| d != last)))
        }
        Prim::Pad { lo, hi, interior } => one(Ok(keep_dims(&specs[0], |d| {
            lo[d] == 0 && hi[d] == 0 && interior[d] == 0
        }))),
        Prim::Scatter { .. } => one(Ok(specs[0].clone())),
        Prim::DotGeneral(dd) => one(cx.dot(dd, &specs)),
        Prim::ShardingConstraint(p) => Ok(vec![Some(p.clone())]),
        // Indexing by arrays, random bits, control flow and compiled
        // groups: the result is whole on every device of the mesh (a debug
        // callback has no result).
        Prim::Gather { .. }
        | Prim::Iota { .. }
        | Prim::Threefry2x32
        | Prim::Cond { .. }
        | Prim::While { .. }
        | Prim::Scan { .. }
        | Prim::CustomVjp { .. }
        | Prim::CustomVjpCall { .. }
        | Prim::Fused(_)
        | Prim::FusedMatmul(_)
        | Prim::Collective(_)
        | Prim::DebugCallback(_)
        | Prim::Check(_) => unsplit(),
    }
}

/// The mesh the laid-out operands share. Arrays on disjoint sets of devices
/// cannot meet in one operation.
fn common_mesh(prim: &Prim, ins: &[Option<Arc<Placement>>]) -> Result<Option<Arc<Mesh>>> {
    let mut mesh: Option<&Arc<Mesh>> = None;
    for p in ins.iter().flatten() {
        match mesh {
            None => mesh = Some(&p.mesh),
            Some(m) if **m == *p.mesh => {}
            Some(m) => {
                if !m.devices.iter().any(|d| p.mesh.devices.contains(d)) {
                    return Err(Error::value_error(format!(
                        "{}: the operands are on disjoint sets of devices: {} on devices {:?} \
                         and {} on devices {:?}; move one with device_put first",
                        prim.ir_name(),
                        describe(m),
                        m.devices,
                        describe(&p.mesh),
                        p.mesh.devices
                    )));
                }
            }
        }
    }
    Ok(mesh.cloned())
}

fn describe(m: &Mesh) -> String {
    crate::display::sharding::MeshText::describe(m)
}

struct Cx<'a> {
    prim: &'a Prim,
    mesh: &'a Arc<Mesh>,
    in_avals: &'a [Aval],
    ins: &'a [Option<Arc<Placement>>],
    /// Whether a conflict is an error: for the user's own operations on
    /// arrays. Under a transformation (jit, grad, vmap, shard_map's body)
    /// the rules' own operations meet layouts the user never wrote, and a
    /// conflict leaves the dimension unsplit for the partitioner.
    strict: bool,
    /// The type of the (first) output, for messages.
    out: Option<&'a Aval>,
}

/// A type as JAX's short form writes it, with the mesh axes of `spec` on
/// its dimensions: `i32[4@X,4@X]`.
fn short_type(
    mesh: &Mesh,
    shape: &[usize],
    dtype: arr_kernels::DType,
    spec: &[Vec<usize>],
) -> String {
    let short = super::type_str(&[], dtype);
    let dims: Vec<String> = shape
        .iter()
        .enumerate()
        .map(|(d, n)| {
            let axes: Vec<&str> = spec
                .get(d)
                .map(|a| a.iter().map(|&a| &*mesh.axis_names[a]).collect())
                .unwrap_or_default();
            match &axes[..] {
                [] => n.to_string(),
                [a] => format!("{n}@{a}"),
                many => format!("{n}@({})", many.join(",")),
            }
        })
        .collect();
    format!("{}[{}]", short.trim_end_matches("[]"), dims.join(","))
}

impl Cx<'_> {
    /// The placement of a spec; a mesh axis left splitting two dimensions
    /// (two operands each bringing it on another dimension) is a conflict.
    fn place(&self, mut spec: Spec) -> Result<Arc<Placement>> {
        let whole = spec.clone();
        let mut seen = vec![false; self.mesh.shape.len()];
        for axes in spec.iter_mut() {
            let clash = axes
                .iter()
                .filter(|&&a| std::mem::replace(&mut seen[a], true))
                .last()
                .copied();
            if let Some(a) = clash {
                if self.mesh.is_explicit(a) && self.strict {
                    if let Some(out) = self.out.filter(|o| o.shape.len() == whole.len()) {
                        // JAX's words for this conflict.
                        let ins: Vec<String> = self
                            .in_avals
                            .iter()
                            .zip(self.ins)
                            .map(|(a, p)| {
                                let spec = p.as_ref().map(|p| p.spec.clone()).unwrap_or_default();
                                short_type(self.mesh, &a.shape, a.dtype, &spec)
                            })
                            .collect();
                        return Err(Error::new(
                            ErrorKind::ShardingTypeError,
                            format!(
                                "{} operation with inputs: {} produces an illegally sharded \
                                 result: {}",
                                self.prim.ir_name(),
                                ins.join(", "),
                                short_type(self.mesh, &out.shape, out.dtype, &whole)
                            ),
                        ));
                    }
                    return Err(self.conflict(format!(
                        "mesh axis '{}' would split two dimensions of the result",
                        self.mesh.axis_names[a]
                    )));
                }
                axes.clear();
            }
        }
        let rank = spec.len();
        Placement::new(self.mesh.clone(), spec, rank)
            .map(Arc::new)
            .map_err(Error::value_error)
    }

    fn conflict(&self, why: String) -> Error {
        let types: Vec<String> = self
            .in_avals
            .iter()
            .zip(self.ins)
            .map(|(a, p)| {
                crate::sharding::ArrayTypeValue {
                    shape: a.shape.to_vec(),
                    dtype: a.dtype,
                    placement: p.clone(),
                    key: false,
                    weak: false,
                }
                .text()
            })
            .collect();
        Error::new(
            ErrorKind::ShardingTypeError,
            format!("{} of {}: {why}", self.prim.ir_name(), types.join(" and ")),
        )
    }

    fn text(&self, spec: &[usize]) -> String {
        let names: Vec<&str> = spec.iter().map(|&a| &*self.mesh.axis_names[a]).collect();
        match &names[..] {
            [] => "None".into(),
            [a] => format!("'{a}'"),
            many => format!("({})", many.join(", ")),
        }
    }

    /// Elementwise operands (already broadcast; scalars aside) combined
    /// dimension by dimension.
    fn merge(&self, specs: &[Spec], rank: usize) -> Result<Spec> {
        let mut out: Spec = vec![Vec::new(); rank];
        for s in specs.iter().filter(|s| s.len() == rank) {
            for d in 0..rank {
                if s[d].is_empty() || out[d] == s[d] {
                    continue;
                }
                if out[d].is_empty() {
                    out[d] = s[d].clone();
                    continue;
                }
                let explicit = out[d]
                    .iter()
                    .chain(&s[d])
                    .any(|&a| self.mesh.is_explicit(a));
                if explicit && self.strict {
                    return Err(self.conflict(format!(
                        "dimension {d} is split by {} in one operand and by {} in another; \
                         reshard one of them",
                        self.text(&out[d]),
                        self.text(&s[d])
                    )));
                }
                out[d].clear();
            }
        }
        Ok(out)
    }

    /// `dot_general`: batch dimensions combine, free dimensions keep their
    /// splits; a split contracted dimension leaves the result's layout
    /// ambiguous (a sum over devices, or a gather first?).
    fn dot(&self, dd: &arr_kernels::ops::DotDims, specs: &[Spec]) -> Result<Spec> {
        let (l, r) = (&specs[0], &specs[1]);
        for (&i, &j) in dd.lhs_contract.iter().zip(&dd.rhs_contract) {
            let split: Vec<usize> = l[i].iter().chain(&r[j]).copied().collect();
            if split.iter().any(|&a| self.mesh.is_explicit(a)) && self.strict {
                // JAX's words (programs print them); the specs are those of
                // every contracted dimension, as Python tuples.
                let specs = |s: &Spec, dims: &[usize]| {
                    let items: Vec<String> = dims.iter().map(|&d| self.text(&s[d])).collect();
                    match &items[..] {
                        [one] => format!("({one},)"),
                        many => format!("({})", many.join(", ")),
                    }
                };
                return Err(Error::new(
                    ErrorKind::ShardingTypeError,
                    format!(
                        "Contracting dimensions are sharded and it is ambiguous how the output \
                         should be sharded. Please specify the output sharding via the \
                         `out_sharding` parameter. Got lhs_contracting_spec={} and \
                         rhs_contracting_spec={}",
                        specs(l, &dd.lhs_contract),
                        specs(r, &dd.rhs_contract)
                    ),
                ));
            }
        }
        let mut out = Vec::new();
        for (&i, &j) in dd.lhs_batch.iter().zip(&dd.rhs_batch) {
            out.push(
                self.merge(&[vec![l[i].clone()], vec![r[j].clone()]], 1)?
                    .remove(0),
            );
        }
        let free = |s: &Spec, batch: &[usize], contract: &[usize]| -> Spec {
            (0..s.len())
                .filter(|d| !batch.contains(d) && !contract.contains(d))
                .map(|d| s[d].clone())
                .collect()
        };
        out.extend(free(l, &dd.lhs_batch, &dd.lhs_contract));
        out.extend(free(r, &dd.rhs_batch, &dd.rhs_contract));
        Ok(out)
    }
}

fn drop_dims(spec: &Spec, dims: &[usize]) -> Spec {
    (0..spec.len())
        .filter(|d| !dims.contains(d))
        .map(|d| spec[d].clone())
        .collect()
}

fn keep_dims(spec: &Spec, keep: impl Fn(usize) -> bool) -> Spec {
    (0..spec.len())
        .map(|d| if keep(d) { spec[d].clone() } else { Vec::new() })
        .collect()
}

/// A reshape's layout: dimensions are matched in groups of equal size
/// products; a group's splits go, in order, to its first output dimension
/// when that dimension divides evenly (merging `8@X,4@Y` gives `32@(X,Y)`,
/// splitting `32@X` gives `8@X,4`); dimensions of size 1 come and go freely.
fn reshape(mesh: &Mesh, from: &[usize], spec: &Spec, to: &[usize]) -> Spec {
    let mut out: Spec = vec![Vec::new(); to.len()];
    let (mut i, mut j) = (0, 0);
    while i < from.len() && j < to.len() {
        if from[i] == 1 {
            i += 1;
            continue;
        }
        if to[j] == 1 {
            j += 1;
            continue;
        }
        // The smallest groups [i, i2) and [j, j2) with equal products.
        let (mut i2, mut j2) = (i + 1, j + 1);
        let (mut p, mut q) = (from[i], to[j]);
        while p != q {
            if p < q && i2 < from.len() {
                p *= from[i2];
                i2 += 1;
            } else if q < p && j2 < to.len() {
                q *= to[j2];
                j2 += 1;
            } else {
                return out;
            }
        }
        let axes: Vec<usize> = (i..i2).flat_map(|d| spec[d].clone()).collect();
        let parts: usize = axes.iter().map(|&a| mesh.shape[a]).product();
        if !axes.is_empty() && to[j].is_multiple_of(parts) {
            out[j] = axes;
        }
        i = i2;
        j = j2;
    }
    out
}
