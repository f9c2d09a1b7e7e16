//! Fusion: runs of consecutive elementwise equations over one shape and one
//! float dtype become a single `fused` kernel (`arr_kernels::Kernel`), along
//! with broadcasts of their inputs (folded into load strides) and
//! reductions over trailing axes of their results (reductions fused with
//! their producers). A fused kernel makes one pass over its inputs with no
//! full-size intermediates.
//!
//! A reduction's result can be read back in the same kernel (softmax's
//! `exp(x - max(x))`, layer norm's `(x - mean) * rsqrt(var)`): when it is
//! reshaped or broadcast back along the reduced axes, it becomes a
//! `ScalarOp::Reduced` register, and elementwise work on such per-row
//! values (`var / n + eps`) is computed in the kernel too. The kernel then
//! visits whole rows (reduce, then use), so a normalisation is one pass over
//! its input instead of several kernels with their intermediates.
//!
//! Then a pass of its own (`fold_epilogues`, after fusion): each float
//! `dot_general` whose result is read by one elementwise equation or one
//! fused kernel without reductions (and nothing else) takes that as its
//! epilogue: the pair becomes one `fused_matmul`
//! (`arr_kernels::MatmulKernel`), whose backend applies the epilogue to the
//! product as it is computed instead of in a second pass over memory.

use crate::prim::{Aval, Prim};
use crate::transform::graph::{lit_f64, Atom, Eqn, Graph};
use arr_kernels::{
    BinaryOp, DType, Kernel, KernelInput, KernelOutput, MatmulKernel, MatmulOperand, ReduceOp,
    ScalarOp, UnaryOp,
};
use std::collections::HashMap;
use std::sync::Arc;

/// What `try_add` restores when an equation does not fit: the lengths of
/// the body and inputs, and the maps into them.
struct Snapshot {
    body: usize,
    inputs: usize,
    input_of: HashMap<(usize, Vec<usize>), usize>,
    loaded: HashMap<usize, usize>,
    reduced_reg: HashMap<usize, usize>,
}

/// The group being built: its iteration space, register dtype, equations,
/// and how each variable of the group maps to a register.
struct Group {
    shape: Vec<usize>,
    dtype: DType,
    eqns: Vec<usize>,
    body: Vec<ScalarOp>,
    inputs: Vec<KernelInput>,
    /// External variables (and how they are read) → input number.
    input_of: HashMap<(usize, Vec<usize>), usize>,
    reg_of: HashMap<usize, usize>,
    /// The register already holding each input, so a value is loaded once.
    loaded: HashMap<usize, usize>,
    /// Reductions: (output variable, register, op).
    reductions: Vec<(usize, usize, ReduceOp)>,
    reduce_axes: Option<usize>,
    /// Per-row values (a reduction read back, and elementwise work on
    /// such values): variable → register. Their shape is the group's with
    /// the reduced axes of size 1 (or removed, after a reshape); the
    /// register holds the row's value at every element of the row.
    row_of: HashMap<usize, usize>,
    /// The `Reduced` register of each reduction (by index in `reductions`).
    reduced_reg: HashMap<usize, usize>,
    /// Whether reductions may join (not in the exact pipeline: a fused sum
    /// adds in another order than the eager one).
    fuse_reductions: bool,
}

/// Whether an op computes on a kernel's float registers exactly as its eager
/// kernel does on `operand` elements (from its op-table row). Bool data
/// sits in registers as 0/1: ops defined only on bools run their bool
/// function there and comparisons order 0/1 as false/true, but float
/// arithmetic would leave 0/1 (`True + True` is 2.0).
fn on_registers(accepts: impl Fn(DType) -> bool, comparison: bool, operand: DType) -> bool {
    accepts(operand)
        && (is_float(operand) || (operand == DType::Bool && (!accepts(DType::F32) || comparison)))
}

fn unary_fusible(g: &Graph, op: UnaryOp, eqn: &Eqn) -> bool {
    let operand = g.atom_aval(&eqn.inputs[0]).dtype;
    on_registers(|d| op.accepts(d), false, operand)
}

fn binary_fusible(g: &Graph, op: BinaryOp, eqn: &Eqn) -> bool {
    let operand = g.atom_aval(&eqn.inputs[0]).dtype;
    on_registers(|d| op.accepts(d), op.is_comparison(), operand)
}

impl Group {
    /// The variables the kernel's inputs read, in input order.
    fn operands(&self) -> Vec<Atom> {
        let mut inputs: Vec<(usize, Atom)> = self
            .input_of
            .iter()
            .map(|((v, _), &n)| (n, Atom::Var(*v)))
            .collect();
        inputs.sort_by_key(|(n, _)| *n);
        inputs.into_iter().map(|(_, a)| a).collect()
    }

    fn new(shape: Vec<usize>, dtype: DType, fuse_reductions: bool) -> Group {
        Group {
            shape,
            dtype,
            eqns: Vec::new(),
            body: Vec::new(),
            inputs: Vec::new(),
            input_of: HashMap::new(),
            reg_of: HashMap::new(),
            loaded: HashMap::new(),
            reductions: Vec::new(),
            reduce_axes: None,
            row_of: HashMap::new(),
            reduced_reg: HashMap::new(),
            fuse_reductions,
        }
    }

    /// The shape of a per-row value read elementwise: the group's shape
    /// with its reduced axes of size 1.
    fn row_shape(&self) -> Option<Vec<usize>> {
        let k = self.reduce_axes?;
        let n = self.shape.len();
        Some(
            self.shape[..n - k]
                .iter()
                .copied()
                .chain(vec![1; k])
                .collect(),
        )
    }

    /// The group's shape without its reduced axes (a reduction's result).
    fn outer_shape(&self) -> Option<&[usize]> {
        Some(&self.shape[..self.shape.len() - self.reduce_axes?])
    }

    /// The register holding per-row value `v`: a row value of the group, or
    /// one of its reductions read back (`Reduced`). None for anything else,
    /// and for rows too long to keep in registers.
    fn row_value(&mut self, v: usize) -> Option<usize> {
        if let Some(&r) = self.row_of.get(&v) {
            return Some(r);
        }
        let i = self.reductions.iter().position(|(o, _, _)| *o == v)?;
        let k = self.reduce_axes?;
        let row: usize = self.shape[self.shape.len() - k..].iter().product();
        if row > ROW_MAX {
            return None;
        }
        if let Some(&r) = self.reduced_reg.get(&i) {
            return Some(r);
        }
        // The index into `reductions`; `finish` renumbers it as an output.
        let r = self.push(ScalarOp::Reduced(i));
        self.reduced_reg.insert(i, r);
        Some(r)
    }

    fn push(&mut self, op: ScalarOp) -> usize {
        self.body.push(op);
        self.body.len() - 1
    }

    /// The register for an operand of an elementwise equation (NumPy
    /// broadcasting into the group's shape), or None if it cannot be read.
    fn operand(&mut self, g: &Graph, a: &Atom) -> Option<usize> {
        match a {
            Atom::Lit(x) => Some(self.push(ScalarOp::Const(lit_f64(x)))),
            Atom::Var(v) => {
                if let Some(&r) = self.row_of.get(v) {
                    // A per-row value broadcasts along the row, in its
                    // elementwise shape only.
                    return (self.row_shape().as_deref() == Some(&g.types[*v].shape[..]))
                        .then_some(r);
                }
                if self.reductions.iter().any(|(o, _, _)| o == v) {
                    // A reduction of this kernel is only available after it.
                    return None;
                }
                if let Some(&r) = self.reg_of.get(v) {
                    // A group value is only readable at the group's shape.
                    return (g.types[*v].shape[..] == self.shape[..]).then_some(r);
                }
                let aval = &g.types[*v];
                if aval.shape.len() > self.shape.len() || !readable(aval.dtype, self.dtype) {
                    return None;
                }
                let input = KernelInput::broadcast(aval.dtype, &aval.shape, &self.shape);
                Some(self.load(*v, input))
            }
        }
    }

    fn load(&mut self, v: usize, input: KernelInput) -> usize {
        let key = (v, input.strides.clone());
        let n = match self.input_of.get(&key) {
            Some(&n) => n,
            None => {
                self.inputs.push(input);
                self.input_of.insert(key, self.inputs.len() - 1);
                self.inputs.len() - 1
            }
        };
        if let Some(&r) = self.loaded.get(&n) {
            return r;
        }
        let r = self.push(ScalarOp::Load(n));
        self.loaded.insert(n, r);
        r
    }
}

/// The longest row whose reduction a kernel reads back: the executor keeps
/// a row's registers whole, so they must stay in cache.
const ROW_MAX: usize = 1 << 14;

/// Whether a kernel computing in `dtype` can read an input of `d`.
fn readable(d: DType, dtype: DType) -> bool {
    d == dtype || d == DType::Bool
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

/// The iteration space and dtype an equation would start a group with.
fn starts_group(g: &Graph, eqn: &Eqn) -> Option<(Vec<usize>, DType)> {
    let out = &g.types[*eqn.outputs.first()?];
    let in_dtype = eqn.inputs.first().map(|a| g.atom_aval(a).dtype)?;
    let ok = match &eqn.prim {
        Prim::Unary(op) => unary_fusible(g, *op, eqn) && is_float(in_dtype),
        Prim::Binary(op) => binary_fusible(g, *op, eqn) && is_float(in_dtype),
        Prim::Select => is_float(out.dtype),
        // A reduction of an input starts a kernel that may use its result
        // (layer norm's mean).
        Prim::Reduce { op, .. } => {
            is_float(out.dtype)
                && matches!(
                    op,
                    ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod
                )
        }
        _ => false,
    };
    let out = match &eqn.prim {
        Prim::Reduce { .. } => g.atom_aval(&eqn.inputs[0]),
        _ => out.clone(),
    };
    let out = &out;
    let dtype = if is_float(out.dtype) {
        out.dtype
    } else {
        in_dtype
    };
    (ok && out.shape.iter().product::<usize>() > 0).then(|| (out.shape.to_vec(), dtype))
}

/// Try to add an equation to the group; false (and the group unchanged in
/// meaning) if it does not fit.
fn try_add(g: &Graph, group: &mut Group, i: usize, eqn: &Eqn) -> bool {
    // An equation without outputs (a debug callback) joins no kernel.
    let Some(&first) = eqn.outputs.first() else {
        return false;
    };
    let out = &g.types[first];
    let snapshot = Snapshot {
        body: group.body.len(),
        inputs: group.inputs.len(),
        input_of: group.input_of.clone(),
        loaded: group.loaded.clone(),
        reduced_reg: group.reduced_reg.clone(),
    };
    let rollback = |group: &mut Group, snapshot: Snapshot| {
        group.body.truncate(snapshot.body);
        group.inputs.truncate(snapshot.inputs);
        group.input_of = snapshot.input_of;
        group.loaded = snapshot.loaded;
        group.reduced_reg = snapshot.reduced_reg;
    };
    let register_dtype = out.dtype == group.dtype || out.dtype == DType::Bool;
    let elementwise_out = out.shape[..] == group.shape[..] && register_dtype;
    // A per-row value computed elementwise (`var / n + eps`), at the row's
    // shape: its register holds the row's value at every element.
    let row_shape = group.row_shape();
    let row_out =
        !elementwise_out && register_dtype && row_shape.as_deref() == Some(&out.shape[..]);
    let elementwise_out = elementwise_out || row_out;
    let mut to_row = row_out;
    let reg = match &eqn.prim {
        Prim::Unary(op) if elementwise_out && unary_fusible(g, *op, eqn) => {
            let a = group.operand(g, &eqn.inputs[0]);
            a.map(|a| group.push(ScalarOp::Unary(*op, a)))
        }
        Prim::Binary(op) if elementwise_out && binary_fusible(g, *op, eqn) => {
            let a = group.operand(g, &eqn.inputs[0]);
            let b = a.and_then(|_| group.operand(g, &eqn.inputs[1]));
            match (a, b) {
                (Some(a), Some(b)) => Some(group.push(ScalarOp::Binary(*op, a, b))),
                _ => None,
            }
        }
        Prim::Select if elementwise_out => {
            let c = group.operand(g, &eqn.inputs[0]);
            let a = c.and_then(|_| group.operand(g, &eqn.inputs[1]));
            let b = a.and_then(|_| group.operand(g, &eqn.inputs[2]));
            match (c, a, b) {
                (Some(c), Some(a), Some(b)) => Some(group.push(ScalarOp::Select(c, a, b))),
                _ => None,
            }
        }
        // A reduction of the group or a per-row value, between its shapes
        // with and without the reduced axes.
        Prim::Reshape(shape)
            if row_shape.as_deref() == Some(&shape[..])
                || group.outer_shape() == Some(&shape[..]) =>
        {
            to_row = true;
            match &eqn.inputs[0] {
                Atom::Var(v) => group.row_value(*v),
                Atom::Lit(_) => None,
            }
        }
        // ... or broadcast along the row, where it is its register.
        Prim::BroadcastInDim { shape, dims }
            if shape[..] == group.shape[..]
                && matches!(&eqn.inputs[0], Atom::Var(v)
                    if group.row_of.contains_key(v)
                        || group.reductions.iter().any(|(o, _, _)| o == v)) =>
        {
            let Atom::Var(v) = &eqn.inputs[0] else {
                unreachable!("matched above")
            };
            let src = &g.types[*v].shape;
            let along_row = dims.iter().enumerate().all(|(i, &d)| i == d)
                && (row_shape.as_deref() == Some(&src[..])
                    || group.outer_shape() == Some(&src[..]));
            if along_row {
                group.row_value(*v)
            } else {
                None
            }
        }
        // A broadcast of an outside value is a strided read.
        Prim::BroadcastInDim { shape, dims } if shape[..] == group.shape[..] => {
            match &eqn.inputs[0] {
                Atom::Var(v)
                    if !group.reg_of.contains_key(v)
                        && !group.row_of.contains_key(v)
                        && !group.reductions.iter().any(|(o, _, _)| o == v)
                        && readable(g.types[*v].dtype, group.dtype) =>
                {
                    let src = &g.types[*v];
                    let mut strides = vec![0; shape.len()];
                    let mut s = 1;
                    for k in (0..src.shape.len()).rev() {
                        if src.shape[k] != 1 {
                            strides[dims[k]] = s;
                        }
                        s *= src.shape[k];
                    }
                    let input = KernelInput {
                        dtype: src.dtype,
                        shape: src.shape.to_vec(),
                        strides,
                    };
                    Some(group.load(*v, input))
                }
                _ => None,
            }
        }
        // A reduction of a group value over trailing axes ends in an output.
        Prim::Reduce { op, axes }
            if group.fuse_reductions
                && matches!(
                    op,
                    ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod
                ) =>
        {
            let n = group.shape.len();
            let k = axes.len();
            let trailing = k > 0 && k <= n && axes.iter().enumerate().all(|(j, &a)| a + k == n + j);
            let same_k = group.reduce_axes.is_none_or(|r| r == k);
            match &eqn.inputs[0] {
                // A value of the group, or an input at the group's shape.
                Atom::Var(v)
                    if trailing
                        && same_k
                        && g.types[*v].shape[..] == group.shape[..]
                        && g.types[*v].dtype == group.dtype =>
                {
                    match group.operand(g, &eqn.inputs[0]) {
                        Some(r) => {
                            group.reduce_axes = Some(k);
                            group.reductions.push((eqn.outputs[0], r, *op));
                            group.eqns.push(i);
                            return true;
                        }
                        None => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    };
    match reg {
        Some(r) => {
            if to_row {
                group.row_of.insert(eqn.outputs[0], r);
            } else {
                group.reg_of.insert(eqn.outputs[0], r);
            }
            group.eqns.push(i);
            true
        }
        None => {
            rollback(group, snapshot);
            false
        }
    }
}

/// Turn a finished group into its equations (the kernel, then reshapes of
/// per-row values it outputs), or None if it is not worth it (a single
/// operation) or not expressible (a bool value escapes). `types` gets the
/// variables those reshapes read.
fn finish(
    g: &Graph,
    types: &mut Vec<Aval>,
    mut group: Group,
    used_later: &dyn Fn(usize) -> bool,
) -> Option<Vec<Eqn>> {
    let computing = group
        .eqns
        .iter()
        .filter(|&&i| !matches!(g.eqns[i].prim, Prim::Reduce { .. } | Prim::Reshape(_)))
        .count();
    if group.eqns.len() < 2 || computing == 0 {
        return None;
    }
    let mut outputs = Vec::new();
    let mut out_vars = Vec::new();
    let mut reshapes = Vec::new();
    for &i in &group.eqns {
        let v = g.eqns[i].outputs[0];
        if let Some(&(_, reg, op)) = group.reductions.iter().find(|(o, _, _)| *o == v) {
            outputs.push(KernelOutput {
                reg,
                reduce: Some(op),
            });
            out_vars.push(v);
        } else if let Some(&reg) = group.row_of.get(&v).filter(|_| used_later(v)) {
            if g.types[v].dtype != group.dtype {
                return None;
            }
            // A per-row value leaves as the max over its row, which is the
            // value itself (every element of the row holds it).
            outputs.push(KernelOutput {
                reg,
                reduce: Some(ReduceOp::Max),
            });
            let outer = group.outer_shape().expect("row values reduce").to_vec();
            if g.types[v].shape[..] == outer[..] {
                out_vars.push(v);
            } else {
                types.push(Aval {
                    shape: outer.into(),
                    dtype: group.dtype,
                });
                let w = types.len() - 1;
                out_vars.push(w);
                reshapes.push(Eqn {
                    prim: Prim::Reshape(g.types[v].shape.to_vec()),
                    inputs: vec![Atom::Var(w)],
                    outputs: vec![v],
                    line: g.eqns[i].line.clone(),
                });
            }
        } else if used_later(v) {
            if g.types[v].dtype != group.dtype {
                return None;
            }
            outputs.push(KernelOutput {
                reg: group.reg_of[&v],
                reduce: None,
            });
            out_vars.push(v);
        }
    }
    // Reductions read back were numbered by their place in the group;
    // the kernel names them by output.
    for op in group.body.iter_mut() {
        if let ScalarOp::Reduced(r) = op {
            let v = group.reductions[*r].0;
            *r = out_vars
                .iter()
                .position(|&o| o == v)
                .expect("every reduction is an output");
        }
    }
    let inputs = group.operands();
    let kernel = Kernel {
        shape: group.shape,
        dtype: group.dtype,
        inputs: group.inputs,
        body: group.body,
        outputs,
        reduce_axes: group.reduce_axes.unwrap_or(0),
    };
    debug_assert!(kernel.row_values_well_formed(), "{kernel}");
    let fused = Eqn {
        prim: Prim::Fused(Arc::new(kernel)),
        inputs,
        outputs: out_vars,
        line: group.eqns.first().and_then(|&i| g.eqns[i].line.clone()),
    };
    Some(std::iter::once(fused).chain(reshapes).collect())
}

/// Whether an equation reads a value the group defines.
fn reads_group(group: &Group, eqn: &Eqn) -> bool {
    eqn.inputs.iter().any(|a| match a {
        Atom::Var(v) => {
            group.reg_of.contains_key(v)
                || group.row_of.contains_key(v)
                || group.reductions.iter().any(|(o, _, _)| o == v)
        }
        Atom::Lit(_) => false,
    })
}

/// The fusion pass.
pub fn fuse(g: &Graph) -> Graph {
    fuse_with(g, true, 1)
}

/// The fusion pass of the exact pipeline: elementwise chains only, so each
/// value is computed by the same scalar operations, in the same order, as
/// eager mode computes it (reductions stay their own eager kernels).
///
/// Small arrays are left unfused too: a fused kernel's fixed cost (its
/// blocks, registers and threads) exceeds what fusing saves below about
/// `EXACT_FUSE_MIN` elements, and automatic JIT must not make a hot loop
/// over small arrays slower than the interpreter ran it.
pub fn fuse_elementwise(g: &Graph) -> Graph {
    fuse_with(g, false, EXACT_FUSE_MIN)
}

/// The smallest iteration space the exact pipeline fuses.
pub const EXACT_FUSE_MIN: usize = 1 << 14;

fn fuse_with(g: &Graph, fuse_reductions: bool, min_elements: usize) -> Graph {
    // Where each variable is last read (equation index; outputs count as the end).
    let mut readers: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, eqn) in g.eqns.iter().enumerate() {
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                readers.entry(*v).or_default().push(i);
            }
        }
    }
    let outputs: Vec<usize> = g
        .outvars
        .iter()
        .filter_map(|a| match a {
            Atom::Var(v) => Some(*v),
            _ => None,
        })
        .collect();
    let used_later = |v: usize, members: &[usize]| {
        outputs.contains(&v)
            || readers
                .get(&v)
                .is_some_and(|rs| rs.iter().any(|r| !members.contains(r)))
    };
    let mut types = g.types.clone();
    let all: Vec<usize> = (0..g.eqns.len()).collect();
    let mut eqns = Vec::new();
    let fusion = Fusion {
        g,
        fuse_reductions,
        min_elements,
        used_later: &used_later,
    };
    fusion.run(&all, &mut types, &mut eqns);
    Graph {
        types,
        invars: g.invars.clone(),
        eqns,
        outvars: g.outvars.clone(),
        weak_outs: g.weak_outs.clone(),
    }
}

/// One fusion pass over a graph: `run` fuses a run of its equations.
struct Fusion<'a> {
    g: &'a Graph,
    fuse_reductions: bool,
    min_elements: usize,
    /// Whether a variable is read outside the given kernel members.
    used_later: &'a dyn Fn(usize, &[usize]) -> bool,
}

impl Fusion<'_> {
    /// Fuse the equations `run` (indices into the graph, in order) into
    /// `eqns`. A kernel grows past equations that do not fit but read
    /// nothing of it (a broadcast operand computed in between, say): they
    /// move before it, and are fused among themselves first (they may hold
    /// a whole kernel's worth of work: a backward pass computed between a
    /// reduction and its last reader).
    fn run(&self, run: &[usize], types: &mut Vec<Aval>, eqns: &mut Vec<Eqn>) {
        let g = self.g;
        let mut p = 0;
        while p < run.len() {
            let i = run[p];
            let Some((shape, dtype)) = starts_group(g, &g.eqns[i])
                .filter(|(shape, _)| shape.iter().product::<usize>() >= self.min_elements)
            else {
                eqns.push(g.eqns[i].clone());
                p += 1;
                continue;
            };
            let mut group = Group::new(shape, dtype, self.fuse_reductions);
            let mut q = p;
            let mut hoisted = Vec::new();
            while q < run.len() {
                let j = run[q];
                if try_add(g, &mut group, j, &g.eqns[j]) {
                    q += 1;
                } else if q > p && !reads_group(&group, &g.eqns[j]) {
                    hoisted.push(j);
                    q += 1;
                } else {
                    break;
                }
            }
            // Hoisted equations after the group's last member stay where they are.
            while hoisted
                .last()
                .is_some_and(|&h| group.eqns.last().is_some_and(|&l| h > l))
            {
                hoisted.pop();
                q -= 1;
            }
            let members = group.eqns.clone();
            match finish(g, types, group, &|v| (self.used_later)(v, &members)) {
                Some(kernel) => {
                    self.run(&hoisted, types, eqns);
                    eqns.extend(kernel);
                    p = q;
                }
                None => {
                    eqns.push(g.eqns[i].clone());
                    p += 1;
                }
            }
        }
    }
}

/// The epilogue pass (after fusion): each float `dot_general` whose result
/// only one elementwise equation or one reduction-free fused kernel reads
/// (and is no graph output) takes that reader as its epilogue: the pair
/// becomes a `fused_matmul`, at the reader's place.
pub fn fold_epilogues(g: &Graph) -> Graph {
    fold_epilogues_with(g, 1)
}

/// The epilogue pass of the exact pipeline: products of at least
/// `EXACT_FUSE_MIN` elements, as its fusion does. The product is computed
/// by the gemm calls eager `dot_general` makes, so no value changes.
pub fn fold_epilogues_exact(g: &Graph) -> Graph {
    fold_epilogues_with(g, EXACT_FUSE_MIN)
}

fn fold_epilogues_with(g: &Graph, min_elements: usize) -> Graph {
    let outputs: Vec<usize> = g
        .outvars
        .iter()
        .filter_map(|a| match a {
            Atom::Var(v) => Some(*v),
            _ => None,
        })
        .collect();
    Graph {
        types: g.types.clone(),
        invars: g.invars.clone(),
        eqns: fold_into_products(g, g.eqns.clone(), &outputs, min_elements),
        outvars: g.outvars.clone(),
        weak_outs: g.weak_outs.clone(),
    }
}

/// Fold into each float `dot_general` (of at least `min_elements` elements)
/// the one equation that reads its result, when that is elementwise at the
/// product's shape.
fn fold_into_products(
    g: &Graph,
    eqns: Vec<Eqn>,
    outputs: &[usize],
    min_elements: usize,
) -> Vec<Eqn> {
    let mut readers: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, eqn) in eqns.iter().enumerate() {
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                let r = readers.entry(*v).or_default();
                if r.last() != Some(&i) {
                    r.push(i);
                }
            }
        }
    }
    let mut eqns: Vec<Option<Eqn>> = eqns.into_iter().map(Some).collect();
    for d in 0..eqns.len() {
        let Some(dot) = &eqns[d] else { continue };
        let Prim::DotGeneral(dims) = &dot.prim else {
            continue;
        };
        let v = dot.outputs[0];
        let aval = &g.types[v];
        let size = aval.shape.iter().product::<usize>();
        if !is_float(aval.dtype) || size == 0 || size < min_elements || outputs.contains(&v) {
            continue;
        }
        let r = match readers.get(&v).map(Vec::as_slice) {
            Some(&[r]) => r,
            _ => continue,
        };
        let Some(reader) = &eqns[r] else { continue };
        let Some((epilogue, product, others)) = epilogue(g, reader, v) else {
            continue;
        };
        let operand = |a: &Atom| {
            let aval = g.atom_aval(a);
            MatmulOperand {
                dtype: aval.dtype,
                shape: aval.shape.to_vec(),
            }
        };
        let kernel = MatmulKernel {
            lhs: operand(&dot.inputs[0]),
            rhs: operand(&dot.inputs[1]),
            dims: dims.clone(),
            epilogue,
            product,
        };
        if !kernel.is_well_formed() {
            continue;
        }
        let fused = Eqn {
            prim: Prim::FusedMatmul(Arc::new(kernel)),
            inputs: dot.inputs.iter().cloned().chain(others).collect(),
            outputs: reader.outputs.clone(),
            line: dot.line.clone(),
        };
        eqns[r] = Some(fused);
        eqns[d] = None;
    }
    eqns.into_iter().flatten().collect()
}

/// The epilogue that `reader` makes of a product `v` it alone reads: the
/// kernel, which of its inputs is `v`, and the operands for its other inputs.
fn epilogue(g: &Graph, reader: &Eqn, v: usize) -> Option<(Kernel, usize, Vec<Atom>)> {
    let aval = &g.types[v];
    let (shape, dtype) = (aval.shape.to_vec(), aval.dtype);
    let at = |i: usize| matches!(&reader.inputs[i], Atom::Var(w) if *w == v);
    match &reader.prim {
        Prim::Fused(k) => {
            let stores = k.reduce_axes == 0 && k.outputs.iter().all(|o| o.reduce.is_none());
            let mut reads = (0..reader.inputs.len()).filter(|&i| at(i));
            let product = reads.next()?;
            let fits = stores && k.shape == shape && k.dtype == dtype && reads.next().is_none();
            fits.then(|| {
                let others = (0..reader.inputs.len())
                    .filter(|&i| i != product)
                    .map(|i| reader.inputs[i].clone())
                    .collect();
                ((**k).clone(), product, others)
            })
        }
        Prim::Unary(_) | Prim::Binary(_) | Prim::Select => {
            let mut group = Group::new(shape.clone(), dtype, false);
            let input = KernelInput::broadcast(dtype, &shape, &shape);
            let reg = group.load(v, input);
            group.reg_of.insert(v, reg);
            let out = reader.outputs[0];
            if g.types[out].dtype != dtype || !try_add(g, &mut group, 0, reader) {
                return None;
            }
            let inputs = group.operands();
            let kernel = Kernel {
                shape,
                dtype,
                inputs: group.inputs,
                body: group.body,
                outputs: vec![KernelOutput {
                    reg: group.reg_of[&out],
                    reduce: None,
                }],
                reduce_axes: 0,
            };
            // The product was the first input.
            let others = inputs.into_iter().skip(1).collect();
            Some((kernel, 0, others))
        }
        _ => None,
    }
}
