//! The SPMD partitioner, the compiler stage of sharded `jit` (`jit(f,
//! in_shardings=..., out_shardings=...)`): `f` is traced on the global
//! types, then the partitioner turns the global graph into
//! one program per device: every value gets a sharding (a partition spec
//! over the mesh) propagated from the inputs, each operation runs on its
//! local blocks, and collectives are inserted where the layouts demand them
//! — a `psum` after a product whose contracting dimension is split (row
//! parallel) or after a reduction over a split dimension, an `all_gather`
//! where an operation needs a dimension whole, `ppermute`s that move only
//! the pieces another device needs where a slice or pad of a split
//! dimension stays split with its blocks shifted (`realign`: q, k and v cut
//! out of a column-split product). The local program then goes
//! through `jit`'s pipeline (`passes.rs`) and runs on the mesh's device
//! workers (`spmd/`); `plan_text` lists the collectives it will execute
//! before anything runs, and `:ir --pass partition` shows the local graph
//! as the partitioner made it (`Partitioned::graph_after`).
//!
//! Each primitive's layout rule lives with its other rules (`prim::partition`
//! dispatches to its family): elementwise operations keep their operands'
//! layout (operands are resharded to the first split one's); broadcasts,
//! transposes and converts map it; reductions drop the reduced dimensions;
//! products keep their free dimensions' layouts; the others say in their
//! family that they gather their operands and compute replicated
//! (`Spmd::replicated`). This file owns what those rules work with.

use super::{passes, Compiled};
use crate::display::sharding::{human_bytes, MeshText};
use crate::error::{Error, Result};
use crate::prim::{bind, type_str, Aval, Prim};
use crate::spmd::blocks::{assemble, donated_blocks_at};
use crate::spmd::program::{compile_for_mesh, MeshGroups};
use crate::tensor::Tensor;
use crate::transform::collective::{Collective, CollectiveOp};
use crate::transform::graph::{self, Atom, Graph};
use crate::transform::ops;
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{Array, Buffer, DType, ReduceOp};
use std::cell::RefCell;
use std::sync::Arc;

/// The partitioner's name among the stages of `:ir --pass`: after `traced`
/// (the global graph), before the passes of `passes::PIPELINE`.
pub const STAGE: &str = "partition";

/// Per dimension, the mesh axes that split it.
pub type Spec = Vec<Vec<usize>>;

/// A local block and its layout.
pub type Local = (Tensor, Spec);

/// The layout of a value no mesh axis splits.
pub fn replicated(rank: usize) -> Spec {
    vec![Vec::new(); rank]
}

/// How many blocks the mesh axes `axes` split a dimension into.
pub fn parts(mesh: &Mesh, axes: &[usize]) -> usize {
    axes.iter().map(|&a| mesh.shape[a]).product()
}

/// One collective the partitioned program runs: what, over which axes, on
/// what local type, how many bytes each device sends, and why.
#[derive(Clone, Debug)]
pub struct PlannedCollective {
    pub what: String,
    pub bytes_per_device: usize,
    pub because: String,
    /// The source position of the operation that needs it.
    pub line: Option<Arc<str>>,
    /// The mesh axis it runs over.
    pub axis: usize,
}

/// The mesh axes that `reshard` moves from one dimension to another with
/// one all-to-all each: (from dimension, to dimension, mesh axis), where a
/// dimension split by exactly that axis becomes whole and another, whole
/// and divisible, becomes split by it.
fn moves(mesh: &Mesh, local: &[usize], from: &Spec, to: &Spec) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut taken = vec![false; to.len()];
    for d1 in 0..from.len() {
        let (&[m], true) = (from[d1].as_slice(), to[d1].is_empty()) else {
            continue;
        };
        let target = (0..to.len()).find(|&d2| {
            !taken[d2]
                && d2 != d1
                && from[d2].is_empty()
                && to[d2] == [m]
                && local[d2].is_multiple_of(mesh.shape[m])
        });
        if let Some(d2) = target {
            taken[d2] = true;
            out.push((d1, d2, m));
        }
    }
    out
}

/// The bytes each device sends to lay a local block of shape `local` out
/// by `to` instead of `from`, as `reshard` does it (all-to-alls, then
/// all-gathers; keeping a block sends nothing): what layout choices weigh.
pub fn reshard_bytes(
    mesh: &Mesh,
    local: &[usize],
    itemsize: usize,
    from: &Spec,
    to: &Spec,
) -> usize {
    if from == to {
        return 0;
    }
    let mut block: usize = local.iter().product::<usize>() * itemsize;
    let mut sent = 0;
    let mut now = from.clone();
    for (d1, d2, m) in moves(mesh, local, from, to) {
        sent += block;
        now[d1].clear();
        now[d2] = vec![m];
    }
    for d in 0..from.len() {
        if now[d] != to[d] {
            for &a in &now[d] {
                sent += block * (mesh.shape[a] - 1);
                block *= mesh.shape[a];
            }
        }
    }
    sent
}

/// The bytes each device sends in collective `op` over `size` devices of
/// a block of `bytes` (a ring's count: a reduce-scatter sends half what an
/// all-reduce does).
fn bytes_sent(op: &CollectiveOp, size: usize, bytes: usize) -> usize {
    match op {
        CollectiveOp::AllReduce(_) => 2 * bytes * (size - 1) / size,
        CollectiveOp::AllGather { .. } => bytes * (size - 1),
        CollectiveOp::ReduceScatter { .. } => bytes * (size - 1) / size,
        CollectiveOp::AllToAll { .. } | CollectiveOp::Permute(_) | CollectiveOp::AxisIndex => bytes,
    }
}

/// How the plan names a collective of operands `of`.
fn what(c: &Collective, of: &str) -> String {
    format!(
        "{} over '{}' ({} devices) of {of}",
        c.name(),
        c.axis,
        c.size
    )
}

/// The plan of the compiled local program: its collectives as the passes
/// left them (some combined into one, some removed), each with the reasons
/// and source lines the partitioner recorded for the ones it replaced.
fn compiled_plan(
    g: &Graph,
    mesh: &Mesh,
    recorded: Vec<PlannedCollective>,
) -> Vec<PlannedCollective> {
    let mut unused: Vec<Option<PlannedCollective>> = recorded.into_iter().map(Some).collect();
    let mut plan = Vec::new();
    for e in &g.eqns {
        let Prim::Collective(c) = &e.prim else {
            continue;
        };
        if matches!(c.op, CollectiveOp::AxisIndex) {
            continue;
        }
        let mut bytes = 0;
        let mut types = Vec::new();
        let mut because: Vec<String> = Vec::new();
        let mut lines: Vec<Arc<str>> = Vec::new();
        for a in &e.inputs {
            let aval = g.atom_aval(a);
            let ty = type_str(&aval.shape, aval.dtype);
            bytes += bytes_sent(
                &c.op,
                c.size,
                aval.shape.iter().product::<usize>() * aval.dtype.size_bytes(),
            );
            let w = what(c, &ty);
            let found = unused
                .iter_mut()
                .find(|p| p.as_ref().is_some_and(|p| p.what == w));
            if let Some(p) = found.and_then(Option::take) {
                if !because.contains(&p.because) {
                    because.push(p.because);
                }
                if let Some(l) = p.line.filter(|l| !lines.contains(l)) {
                    lines.push(l);
                }
            }
            types.push(ty);
        }
        let what = match types.as_slice() {
            [one] => what(c, one),
            _ => what(c, &format!("{} arrays ({})", types.len(), types.join(", "))),
        };
        plan.push(PlannedCollective {
            what,
            bytes_per_device: bytes,
            because: if types.len() > 1 {
                format!("{} bucketed: {}", types.len(), because.join("; "))
            } else {
                because.join("; ")
            },
            line: (!lines.is_empty()).then(|| Arc::from(lines.join(", "))),
            axis: mesh
                .axis_names
                .iter()
                .position(|n| *n == c.axis)
                .unwrap_or(0),
        });
    }
    plan
}

/// The per-device program of a sharded jit: the SPMD interpreter of the
/// global graph, run on one device's blocks (under a trace that records it).
struct Partitioner<'a> {
    mesh: &'a Mesh,
    plan: RefCell<Vec<PlannedCollective>>,
    /// The source position of the global equation being partitioned.
    line: RefCell<Option<Arc<str>>>,
    /// Values already resharded: (value, from, to, result). The three
    /// slices `split` takes of one split product (q, k and v) gather it
    /// once, not three times.
    resharded: RefCell<Vec<(Tensor, Spec, Spec, Tensor)>>,
    /// The sums it inserted: (result, operand, mesh axis). A sum that is
    /// then split over the same axis is a reduce-scatter instead (a
    /// gradient laid out as its FSDP-split parameter).
    summed: RefCell<Vec<(Tensor, Tensor, usize)>>,
    /// The elementwise operations and transposes it ran: (result,
    /// primitive, operands). Splitting the result of one whose operands
    /// are sums splits those sums instead (`lr * grad` laid out as its
    /// FSDP-split parameter).
    elementwise: RefCell<Vec<(Tensor, Prim, Vec<Local>)>>,
}

impl Partitioner<'_> {
    fn collective(
        &self,
        op: CollectiveOp,
        axis: usize,
        x: &Tensor,
        because: &str,
    ) -> Result<Tensor> {
        let name: Arc<str> = self.mesh.axis_names[axis].clone();
        let size = self.mesh.shape[axis];
        let c = Collective {
            op: op.clone(),
            axis: name.clone(),
            size,
        };
        let sent = bytes_sent(
            &op,
            size,
            x.shape().iter().product::<usize>() * x.dtype().size_bytes(),
        );
        let out = bind(&Prim::Collective(c.clone()), [x.clone()])?.swap_remove(0);
        if matches!(op, CollectiveOp::AllReduce(ReduceOp::Sum)) {
            self.summed
                .borrow_mut()
                .push((out.clone(), x.clone(), axis));
        }
        self.plan.borrow_mut().push(PlannedCollective {
            what: what(&c, &type_str(x.shape(), x.dtype())),
            bytes_per_device: sent,
            because: because.to_string(),
            line: self.line.borrow().clone(),
            axis,
        });
        Ok(out)
    }

    /// `x`, a sum this partitioner inserted over one mesh axis (or an
    /// elementwise function of such sums and scalars), split over that axis
    /// along one dimension: the reduce-scatter of the sum's operand (half
    /// the bytes of the all-reduce; the sum is then left unread), with the
    /// elementwise work done on the blocks.
    fn scatter_sum(&self, x: &Tensor, from: &Spec, to: &Spec) -> Result<Option<Tensor>> {
        let changed: Vec<usize> = (0..to.len()).filter(|&d| from[d] != to[d]).collect();
        let &[d] = changed.as_slice() else {
            return Ok(None);
        };
        let (&[m], true) = (to[d].as_slice(), from[d].is_empty()) else {
            return Ok(None);
        };
        if !x.shape()[d].is_multiple_of(self.mesh.shape[m]) {
            return Ok(None);
        }
        self.split_sum(x, from, to, d, m, 0)
    }

    fn split_sum(
        &self,
        x: &Tensor,
        from: &Spec,
        to: &Spec,
        d: usize,
        m: usize,
        depth: usize,
    ) -> Result<Option<Tensor>> {
        let operand = self
            .summed
            .borrow()
            .iter()
            .find(|(out, _, axis)| *axis == m && out.same(x))
            .map(|(_, operand, _)| operand.clone());
        if let Some(operand) = operand {
            let op = CollectiveOp::ReduceScatter {
                axis: d,
                tiled: true,
            };
            let because = format!(
                "a sum over '{}' laid out split by it",
                self.mesh.axis_names[m]
            );
            return self.collective(op, m, &operand, &because).map(Some);
        }
        let made = self
            .elementwise
            .borrow()
            .iter()
            .find(|(y, ..)| y.same(x))
            .map(|(_, p, ins)| (p.clone(), ins.clone()));
        let Some((prim, ins)) = made.filter(|_| depth < 8) else {
            return Ok(None);
        };
        if let Prim::Transpose(perm) = &prim {
            // Output dimension d is the operand's perm[d].
            let [(t, s)]: [Local; 1] = ins.try_into().expect("one operand");
            let mut to_in = s.clone();
            to_in[perm[d]] = vec![m];
            let permuted: Spec = perm.iter().map(|&p| s[p].clone()).collect();
            if &permuted != from {
                return Ok(None);
            }
            return match self.split_sum(&t, &s, &to_in, perm[d], m, depth + 1)? {
                Some(b) => Ok(Some(bind(&prim, [b])?.swap_remove(0))),
                None => Ok(None),
            };
        }
        let mut any = false;
        let mut blocks = Vec::with_capacity(ins.len());
        for (t, s) in ins {
            if t.ndim() == 0 {
                blocks.push(t);
                continue;
            }
            if &s != from || t.shape() != x.shape() {
                return Ok(None);
            }
            match self.split_sum(&t, from, to, d, m, depth + 1)? {
                Some(b) => {
                    any = true;
                    blocks.push(b);
                }
                None => blocks.push(self.reshard(&t, from, to, "elementwise on blocks")?),
            }
        }
        if !any {
            return Ok(None);
        }
        Ok(Some(bind(&prim, blocks)?.swap_remove(0)))
    }

    /// This device's block index along a dimension split by `axes`.
    fn block_index(&self, axes: &[usize]) -> Result<Tensor> {
        let mut idx = ops::scalar(0.0, DType::I32);
        for &a in axes {
            let c = Collective {
                op: CollectiveOp::AxisIndex,
                axis: self.mesh.axis_names[a].clone(),
                size: self.mesh.shape[a],
            };
            let i = bind(&Prim::Collective(c), Vec::<Tensor>::new())?.swap_remove(0);
            idx = ops::add(
                &ops::mul(&idx, &ops::scalar(self.mesh.shape[a] as f64, DType::I32))?,
                &i,
            )?;
        }
        Ok(idx)
    }

    /// `x` (local, laid out by `from`) laid out by `to` instead.
    fn reshard(&self, x: &Tensor, from: &Spec, to: &Spec, because: &str) -> Result<Tensor> {
        if from == to {
            return Ok(x.clone());
        }
        // Only traced values: a concrete one may be a view of a shared buffer.
        let traced = matches!(x, Tensor::Traced(_));
        let done = self
            .resharded
            .borrow()
            .iter()
            .find(|(v, f, t, _)| traced && v.same(x) && f == from && t == to)
            .map(|(.., y)| y.clone());
        if let Some(y) = done {
            return Ok(y);
        }
        let y = self.reshard_new(x, from, to, because)?;
        if traced {
            self.resharded
                .borrow_mut()
                .push((x.clone(), from.clone(), to.clone(), y.clone()));
        }
        Ok(y)
    }

    /// `reshard` without the cache: the collectives and block selections.
    fn reshard_new(&self, x: &Tensor, from: &Spec, to: &Spec, because: &str) -> Result<Tensor> {
        if let Some(y) = self.scatter_sum(x, from, to)? {
            return Ok(y);
        }
        let mut x = x.clone();
        let mut now = from.clone();
        for (d1, d2, m) in moves(self.mesh, x.shape(), from, to) {
            x = self.all_to_all(&x, m, d1, d2, because)?;
            now[d1].clear();
            now[d2] = vec![m];
        }
        for d in 0..from.len() {
            if now[d] != to[d] && !now[d].is_empty() {
                // Gather the dimension whole: the innermost axis first.
                for &a in now[d].clone().iter().rev() {
                    x = self.collective(
                        CollectiveOp::AllGather {
                            axis: d,
                            tiled: true,
                        },
                        a,
                        &x,
                        because,
                    )?;
                }
                now[d].clear();
            }
        }
        for d in 0..to.len() {
            if now[d] != to[d] {
                // Keep this device's block: a gather of iota + block * len.
                let len = x.shape()[d] / parts(self.mesh, &to[d]);
                let start = ops::mul(
                    &self.block_index(&to[d])?,
                    &ops::scalar(len as f64, DType::I32),
                )?;
                let idx = ops::add(&ops::iota(DType::I32, &[len], 0)?, &start)?;
                x = bind(&Prim::Gather { axis: d, batch: 0 }, [x, idx])?.swap_remove(0);
                now[d] = to[d].clone();
            }
        }
        Ok(x)
    }

    /// A window of a dimension split by mesh axis `m`, split again by `m`:
    /// `x`'s dimension `d` is one of `n` blocks of a global extent `extent`,
    /// and device j gets the `width` elements from global position
    /// `start + j * width` (positions outside the extent are `pad`). Each
    /// device sends only the pieces another device needs, with one
    /// `ppermute` per round (a device sends one piece a round), and keeps
    /// its own; `None` when that sends more bytes than gathering the
    /// dimension whole would, or the dtype cannot be masked.
    #[allow(clippy::too_many_arguments)]
    fn realign(
        &self,
        x: &Tensor,
        d: usize,
        m: usize,
        extent: usize,
        start: isize,
        width: usize,
        pad: Option<&Tensor>,
        because: &str,
    ) -> Result<Option<Tensor>> {
        let n = self.mesh.shape[m];
        let block = extent / n;
        if !x.dtype().is_float() || block * n != extent || width == 0 {
            return Ok(None);
        }
        // Pieces of `g` elements never straddle a block of either layout.
        let g = gcd(gcd(block, width), start.unsigned_abs());
        let chunks = width / g;
        // Per chunk: for each target j, the source device and its offset
        // (None: the chunk is padding).
        let source = |j: usize, k: usize| -> Option<(usize, usize)> {
            let p = start + (j * width + k * g) as isize;
            (p >= 0 && (p as usize) < extent).then(|| (p as usize / block, p as usize % block))
        };
        let piece_bytes =
            g * x.shape().iter().product::<usize>() / x.shape()[d].max(1) * x.dtype().size_bytes();
        let mut rounds: Vec<Vec<Vec<(usize, usize, usize)>>> = Vec::new();
        for k in 0..chunks {
            // Round r holds each source's r-th piece to send.
            let mut by_round: Vec<Vec<(usize, usize, usize)>> = Vec::new();
            let mut sent = vec![0usize; n];
            for j in 0..n {
                if let Some((i, off)) = source(j, k).filter(|&(i, _)| i != j) {
                    if by_round.len() <= sent[i] {
                        by_round.push(Vec::new());
                    }
                    by_round[sent[i]].push((i, j, off));
                    sent[i] += 1;
                }
            }
            rounds.push(by_round);
        }
        let sends: usize = rounds.iter().map(Vec::len).sum();
        let gather_bytes = x.shape().iter().product::<usize>() * x.dtype().size_bytes() * (n - 1);
        if sends * piece_bytes >= gather_bytes {
            return Ok(None);
        }
        let me = self.block_index(&[m])?;
        // `table[me]` as a scalar of `dtype`.
        let lookup = |table: Vec<i32>, dtype: DType| -> Result<Tensor> {
            let t = ops::concrete(Array::new(&[n], Buffer::I32(table)));
            let one = ops::reshape(&me, &[1])?;
            let v = bind(&Prim::Gather { axis: 0, batch: 0 }, [t, one])?.swap_remove(0);
            ops::convert(&ops::reshape(&v, &[])?, dtype)
        };
        // This device's `g` elements of `x` along `d` from offset `table[me]`.
        let window = |table: Vec<i32>| -> Result<Tensor> {
            let off = lookup(table, DType::I32)?;
            let idx = ops::add(&ops::iota(DType::I32, &[g], 0)?, &off)?;
            Ok(bind(&Prim::Gather { axis: d, batch: 0 }, [x.clone(), idx])?.swap_remove(0))
        };
        let mut pieces = Vec::with_capacity(chunks);
        for (k, by_round) in rounds.into_iter().enumerate() {
            // What this device holds of its own chunk, masked to zero when
            // another device (or the padding) provides it.
            let own: Vec<Option<usize>> = (0..n)
                .map(|j| source(j, k).filter(|&(i, _)| i == j).map(|(_, off)| off))
                .collect();
            let offsets = own.iter().map(|o| o.unwrap_or(0) as i32).collect();
            let mask = own.iter().map(|o| o.is_some() as i32).collect();
            let mut chunk = ops::mul(&window(offsets)?, &lookup(mask, x.dtype())?)?;
            for round in by_round {
                let mut offsets = vec![0i32; n];
                for &(i, _, off) in &round {
                    offsets[i] = off as i32;
                }
                let pairs = round.iter().map(|&(i, j, _)| (i, j)).collect();
                let got =
                    self.collective(CollectiveOp::Permute(pairs), m, &window(offsets)?, because)?;
                chunk = ops::add(&chunk, &got)?;
            }
            if let Some(v) = pad {
                let padded = (0..n).map(|j| source(j, k).is_none() as i32).collect();
                let v = ops::mul(&ops::convert(v, x.dtype())?, &lookup(padded, x.dtype())?)?;
                chunk = ops::add(&chunk, &v)?;
            }
            pieces.push(chunk);
        }
        if pieces.len() == 1 {
            return Ok(pieces.pop());
        }
        let cat = Prim::Concatenate { axis: d };
        Ok(Some(bind(&cat, pieces)?.swap_remove(0)))
    }

    /// `x` split over mesh axis `m` along `d1` instead of `d2`: each device
    /// sends block j of its `d2` to device j and concatenates what it gets
    /// along `d1` (in device order: block i of `d1` came from device i).
    fn all_to_all(
        &self,
        x: &Tensor,
        m: usize,
        d1: usize,
        d2: usize,
        because: &str,
    ) -> Result<Tensor> {
        let n = self.mesh.shape[m];
        let mut split = x.shape().to_vec();
        split[d2] /= n;
        split.insert(d2, n);
        let x = ops::reshape(x, &split)?;
        let op = CollectiveOp::AllToAll {
            split_axis: d2,
            concat_axis: d1,
        };
        let y = self.collective(op, m, &x, because)?;
        let mut merged = y.shape().to_vec();
        merged[d1] *= merged.remove(d1 + 1);
        ops::reshape(&y, &merged)
    }

    /// Run the global graph on this device's blocks.
    fn run(
        &self,
        g: &Graph,
        consts: &[Tensor],
        inputs: Vec<(Tensor, Spec)>,
    ) -> Result<Vec<(Tensor, Spec)>> {
        let mut env: Vec<Option<(Tensor, Spec)>> = vec![None; g.types.len()];
        let n_consts = consts.len();
        for (i, &v) in g.invars.iter().enumerate() {
            env[v] = Some(if i < n_consts {
                (consts[i].clone(), replicated(consts[i].ndim()))
            } else {
                inputs[i - n_consts].clone()
            });
        }
        let read = |env: &Vec<Option<(Tensor, Spec)>>, a: &Atom| -> (Tensor, Spec) {
            match a {
                Atom::Var(v) => env[*v].clone().expect("defined before use"),
                Atom::Lit(x) => (Tensor::from(x.clone()), replicated(x.ndim())),
            }
        };
        for eqn in &g.eqns {
            let ins: Vec<(Tensor, Spec)> = eqn.inputs.iter().map(|a| read(&env, a)).collect();
            *self.line.borrow_mut() = eqn.line.clone();
            let outs = graph::at_line(eqn.line.clone(), || {
                self.eqn(&eqn.prim, g, &eqn.outputs, ins)
            })?;
            for (&o, v) in eqn.outputs.iter().zip(outs) {
                env[o] = Some(v);
            }
        }
        *self.line.borrow_mut() = None;
        Ok(g.outvars.iter().map(|a| read(&env, a)).collect())
    }

    fn eqn(&self, prim: &Prim, g: &Graph, outs: &[usize], ins: Vec<Local>) -> Result<Vec<Local>> {
        let cx = Spmd {
            part: self,
            graph: g,
            outs,
        };
        let elementwise = matches!(
            prim,
            Prim::Unary(_) | Prim::Binary(_) | Prim::Select | Prim::Convert(_) | Prim::Transpose(_)
        );
        let kept = elementwise.then(|| ins.clone());
        let ys = crate::prim::partition(prim, &cx, ins)?;
        if let (Some(ins), [(y, _)]) = (kept, ys.as_slice()) {
            if matches!(y, Tensor::Traced(_)) {
                self.elementwise
                    .borrow_mut()
                    .push((y.clone(), prim.clone(), ins));
            }
        }
        Ok(ys)
    }
}

/// One equation being partitioned, as its primitive's rule sees it: the
/// mesh, the global types of the equation's outputs, and the partitioner's
/// resharding and collectives (which the plan records).
pub struct Spmd<'a> {
    part: &'a Partitioner<'a>,
    graph: &'a Graph,
    outs: &'a [usize],
}

impl Spmd<'_> {
    pub fn mesh(&self) -> &Mesh {
        self.part.mesh
    }

    /// The global type of output `i`.
    pub fn out_type(&self, i: usize) -> &Aval {
        &self.graph.types[self.outs[i]]
    }

    /// `x` (local, laid out by `from`) laid out by `to` instead.
    pub fn reshard(&self, x: &Tensor, from: &Spec, to: &Spec, because: &str) -> Result<Tensor> {
        self.part.reshard(x, from, to, because)
    }

    /// An elementwise `prim` of operands already laid out alike, recorded
    /// as the partitioner records the graph's own (a sum inside a rule,
    /// split later, becomes a reduce-scatter too).
    pub fn elementwise(&self, prim: &Prim, ins: Vec<Local>) -> Result<Tensor> {
        let args: Vec<Tensor> = ins.iter().map(|(t, _)| t.clone()).collect();
        let y = bind(prim, args)?.swap_remove(0);
        self.part
            .elementwise
            .borrow_mut()
            .push((y.clone(), prim.clone(), ins));
        Ok(y)
    }

    /// A window of dimension `d` of `x`, split by mesh axis `m`, split again
    /// by `m` (`Partitioner::realign`).
    #[allow(clippy::too_many_arguments)]
    pub fn realign(
        &self,
        x: &Tensor,
        d: usize,
        m: usize,
        extent: usize,
        start: isize,
        width: usize,
        pad: Option<&Tensor>,
        because: &str,
    ) -> Result<Option<Tensor>> {
        self.part
            .realign(x, d, m, extent, start, width, pad, because)
    }

    /// The bytes each device would send to reshard `x` from `from` to `to`.
    pub fn reshard_bytes(&self, x: &Tensor, from: &Spec, to: &Spec) -> usize {
        reshard_bytes(self.part.mesh, x.shape(), x.dtype().size_bytes(), from, to)
    }

    /// The collective `op` over mesh axis `axis` of `x`, recorded in the
    /// plan with its reason.
    pub fn collective(
        &self,
        op: CollectiveOp,
        axis: usize,
        x: &Tensor,
        because: &str,
    ) -> Result<Tensor> {
        self.part.collective(op, axis, x, because)
    }

    /// The rule of a primitive that works on each row along one axis
    /// (sorts, cumulative sums): that axis whole, the others keep their
    /// split, and the result is laid out as the operand.
    pub fn along_axis(&self, prim: &Prim, ins: Vec<Local>, axis: usize) -> Result<Vec<Local>> {
        let [(x, s)]: [Local; 1] = ins.try_into().expect("one operand");
        let mut to = s.clone();
        to[axis].clear();
        let because = format!("{} along a split dimension", prim.ir_name());
        let x = self.reshard(&x, &s, &to, &because)?;
        Ok(bind(prim, [x])?
            .into_iter()
            .map(|y| (y, to.clone()))
            .collect())
    }

    /// The rule of a primitive that runs replicated: every operand is
    /// gathered whole, and each device computes the whole result.
    pub fn replicated(&self, prim: &Prim, ins: Vec<Local>) -> Result<Vec<Local>> {
        let name = prim.ir_name();
        let mut args = Vec::new();
        for (x, s) in &ins {
            args.push(self.reshard(
                x,
                s,
                &replicated(s.len()),
                &format!("{name} needs whole operands"),
            )?);
        }
        let ys = bind(prim, args)?;
        Ok(ys
            .into_iter()
            .enumerate()
            .map(|(i, y)| (y, replicated(self.out_type(i).shape.len())))
            .collect())
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The global shape of a local block laid out by `s`.
#[allow(clippy::ptr_arg)]
pub fn global_shape(mesh: &Mesh, (x, s): &Local) -> Vec<usize> {
    (0..s.len()).map(|d| global_dim(mesh, x, s, d)).collect()
}

/// The global size of dimension `d` of a local block laid out by `s`.
pub fn global_dim(mesh: &Mesh, x: &Tensor, s: &Spec, d: usize) -> usize {
    x.shape()[d] * parts(mesh, &s[d])
}

/// A sharded jit's compiled program and what it needs to run.
pub struct Partitioned {
    /// The global graph as traced, and its number of constants.
    pub traced: Arc<Graph>,
    pub traced_consts: usize,
    /// The local program: as partitioned (`compiled.traced`) and optimised.
    pub compiled: Compiled,
    pub out_specs: Vec<Spec>,
    pub plan: Vec<PlannedCollective>,
    pub mesh: Arc<Mesh>,
    pub in_specs: Vec<Spec>,
}

/// Trace `f` on the global types, partition it for `mesh` with these input
/// layouts (and output layouts where given), and compile the local program.
pub fn partition(
    mesh: &Arc<Mesh>,
    global: &[Aval],
    in_specs: &[Spec],
    out_wanted: &dyn Fn(usize, usize) -> Option<Spec>,
    f: impl FnOnce(Vec<Tensor>) -> Result<Vec<Tensor>>,
) -> Result<Partitioned> {
    for (a, s) in global.iter().zip(in_specs) {
        for (d, (&n, axes)) in a.shape.iter().zip(s).enumerate() {
            if !n.is_multiple_of(parts(mesh, axes)) {
                return Err(Error::shape_error(format!(
                    "sharded jit: dimension {d} of {} is not divisible by its {} devices",
                    type_str(&a.shape, a.dtype),
                    parts(mesh, axes)
                )));
            }
        }
    }
    // The tracers carry the arguments' layouts, so the function sees the
    // sharded types JAX shows (`typeof` inside jit).
    let layouts: Vec<_> = global
        .iter()
        .zip(in_specs)
        .map(|(a, s)| {
            arr_kernels::sharding::Placement::new(mesh.clone(), s.clone(), a.shape.len())
                .ok()
                .map(Arc::new)
        })
        .collect();
    let closed = graph::trace_laid_out(global, &layouts, true, f)?;
    let g = graph::dce(&closed.graph);
    let consts: Vec<Tensor> = closed.consts.clone();
    let local: Vec<Aval> = global
        .iter()
        .zip(in_specs)
        .map(|(a, s)| Aval {
            shape: (0..a.shape.len())
                .map(|d| a.shape[d] / parts(mesh, &s[d]))
                .collect(),
            dtype: a.dtype,
        })
        .collect();
    let p = Partitioner {
        mesh,
        plan: RefCell::new(Vec::new()),
        line: RefCell::new(None),
        resharded: RefCell::new(Vec::new()),
        summed: RefCell::new(Vec::new()),
        elementwise: RefCell::new(Vec::new()),
    };
    let out_specs = RefCell::new(Vec::new());
    let compiled = compile_for_mesh(mesh, &local, |ts| {
        let inputs = ts.into_iter().zip(in_specs.iter().cloned()).collect();
        let outs = p.run(&g, &consts, inputs)?;
        let mut result = Vec::new();
        let mut specs = Vec::new();
        for (i, (y, s)) in outs.into_iter().enumerate() {
            let (y, s) = match out_wanted(i, y.ndim()) {
                Some(want) if want != s => (p.reshard(&y, &s, &want, "out_shardings")?, want),
                Some(_) | None => (y, s),
            };
            result.push(y);
            specs.push(s);
        }
        *out_specs.borrow_mut() = specs;
        Ok(result)
    })?;
    let compiled_graph = compiled.graph.clone();
    Ok(Partitioned {
        traced: closed.graph.clone(),
        traced_consts: closed.consts.len(),
        compiled,
        out_specs: out_specs.into_inner(),
        plan: compiled_plan(&compiled_graph, mesh, p.plan.into_inner()),
        mesh: mesh.clone(),
        in_specs: in_specs.to_vec(),
    })
}

impl Partitioned {
    /// The graph after stage `until` of the compiler, with its number of
    /// constants: `traced`, the global graph; `partition`, the local graph
    /// as the partitioner made it; a pass of `passes::PIPELINE`, the local
    /// graph after it; `None`, the compiled local program. An unknown name
    /// is an error listing the stages.
    pub fn graph_after(&self, until: Option<&str>) -> Result<(Graph, usize)> {
        let local_consts = self.compiled.consts.len();
        if let Some(name) = until {
            check_stage(name)?;
        }
        Ok(match until {
            None => ((*self.compiled.graph).clone(), local_consts),
            Some("traced") => ((*self.traced).clone(), self.traced_consts),
            Some(STAGE) => ((*self.compiled.traced).clone(), local_consts),
            Some(pass) => (
                passes::run_pipeline(&self.compiled.traced, Some(pass)),
                local_consts,
            ),
        })
    }
}

/// Whether `name` is a stage of a sharded jit's compiler (`traced`,
/// `partition`, a pass); if not, the error lists them.
pub fn check_stage(name: &str) -> Result<()> {
    if name == "traced" || name == STAGE || passes::PIPELINE.iter().any(|x| x.name == name) {
        return Ok(());
    }
    let names: Vec<&str> = passes::PIPELINE.iter().map(|x| x.name).collect();
    Err(Error::value_error(format!(
        "no pass named '{name}'; the stages of a sharded jit are: traced, {STAGE}, {}",
        names.join(", ")
    )))
}

/// Run a partitioned program on its mesh: each device gets its blocks of
/// the global inputs; the outputs come back laid out over the mesh.
/// The inputs marked in `donated` give their buffers to the devices'
/// programs (each device its own shard) and are deleted (`why`).
pub fn run(
    part: &Partitioned,
    inputs: &[Array],
    donated: &[bool],
    why: &str,
) -> Result<Vec<Array>> {
    let mesh = &part.mesh;
    let placements: Vec<Placement> = inputs
        .iter()
        .zip(&part.in_specs)
        .map(|(a, s)| Placement::new(mesh.clone(), s.clone(), a.ndim()).map_err(Error::value_error))
        .collect::<Result<_>>()?;
    let groups = MeshGroups::new(mesh)?;
    let outs = groups.run(
        &part.compiled,
        &|pos| donated_blocks_at(inputs, &placements, pos, donated, why),
        "jit",
    );
    // Deleted whether or not the program ran to the end: their shards
    // may already be gone.
    for (a, d) in inputs.iter().zip(donated) {
        if *d {
            a.delete(why);
        }
    }
    let outs = outs?;
    part.out_specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let rank = outs[0][i].ndim();
            let p = Placement::new(mesh.clone(), s.clone(), rank).map_err(Error::value_error)?;
            Ok(assemble(&p, &outs, i))
        })
        .collect()
}

/// What one step of a partitioned program costs each device: the work of
/// its products and of its other operations, its collectives, and memory.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    /// Multiply-adds of the products, counted twice (flops).
    pub flops: f64,
    /// Elements the other operations write.
    pub elements: f64,
    pub collectives: usize,
    pub bytes_sent: usize,
    pub peak_bytes: usize,
    pub input_bytes: usize,
}

/// The cost of a partitioned program, counted on its local graph before
/// the passes (products are still `dot_general`s there).
pub fn cost(part: &Partitioned, global: &[Aval]) -> Cost {
    let g = &part.compiled.traced;
    let mut c = Cost::default();
    for e in &g.eqns {
        let out: f64 = e
            .outputs
            .iter()
            .map(|&o| g.types[o].shape.iter().product::<usize>() as f64)
            .sum();
        match &e.prim {
            Prim::DotGeneral(d) => {
                let lhs = g.atom_aval(&e.inputs[0]);
                let k: usize = d.lhs_contract.iter().map(|&i| lhs.shape[i]).product();
                c.flops += 2.0 * out * k as f64;
            }
            Prim::Collective(_) => {}
            _ => c.elements += out,
        }
    }
    c.collectives = part.plan.len();
    c.bytes_sent = part.plan.iter().map(|p| p.bytes_per_device).sum();
    c.peak_bytes = peak_bytes(&part.compiled.graph);
    c.input_bytes = input_bytes(part, global);
    c
}

/// The bytes of this device's blocks of the inputs.
fn input_bytes(part: &Partitioned, global: &[Aval]) -> usize {
    global
        .iter()
        .zip(&part.in_specs)
        .map(|(a, s)| {
            a.shape
                .iter()
                .enumerate()
                .map(|(d, &n)| n / parts(&part.mesh, &s[d]))
                .product::<usize>()
                * a.dtype.size_bytes()
        })
        .sum()
}

/// The text of a plan: each collective with its bytes, then the memory.
pub fn plan_text(part: &Partitioned, global: &[Aval]) -> String {
    let mut out = format!("sharded jit on {}\n", part.mesh.describe());
    if part.plan.is_empty() {
        out.push_str("no collectives\n");
    }
    let mut total = 0;
    for (i, c) in part.plan.iter().enumerate() {
        total += c.bytes_per_device;
        let at = c
            .line
            .as_deref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        // Under mpirun: which collectives leave the process (the slow ones).
        let crosses = if arr_kernels::process::is_multi() {
            if part.mesh.axis_crosses_processes(c.axis) {
                ", across processes"
            } else {
                ", within each process"
            }
        } else {
            ""
        };
        out.push_str(&format!(
            "{:>3}. {}: {} sent per device{crosses}  ({}){at}\n",
            i + 1,
            c.what,
            human_bytes(c.bytes_per_device),
            c.because
        ));
    }
    let input_bytes = input_bytes(part, global);
    out.push_str(&format!(
        "collectives send {} per device; inputs take {}, peak memory {} per device\n",
        human_bytes(total),
        human_bytes(input_bytes),
        human_bytes(peak_bytes(&part.compiled.graph))
    ));
    out
}

/// The most bytes the local program holds at once: inputs, constants and
/// the values computed so far that are still to be read.
fn peak_bytes(g: &Graph) -> usize {
    let size =
        |v: usize| g.types[v].shape.iter().product::<usize>() * g.types[v].dtype.size_bytes();
    let mut last = vec![usize::MAX; g.types.len()];
    for (i, e) in g.eqns.iter().enumerate() {
        for a in &e.inputs {
            if let Atom::Var(v) = a {
                last[*v] = i;
            }
        }
    }
    let mut live: usize = g.invars.iter().map(|&v| size(v)).sum();
    let mut peak = live;
    for (i, e) in g.eqns.iter().enumerate() {
        live += e.outputs.iter().map(|&v| size(v)).sum::<usize>();
        peak = peak.max(live);
        for a in &e.inputs {
            if let Atom::Var(v) = a {
                if last[*v] == i {
                    live -= size(*v);
                    last[*v] = usize::MAX - 1;
                }
            }
        }
    }
    peak
}
