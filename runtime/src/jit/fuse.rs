//! Fusion: runs of consecutive elementwise equations over one shape and one
//! float dtype become a single `fused` kernel (`arr_kernels::Kernel`), along
//! with broadcasts of their inputs (folded into load strides) and
//! reductions over trailing axes of their results (reductions fused with
//! their producers). A fused kernel makes one pass over its inputs with no
//! full-size intermediates.
//!
//! Then a pass of its own (`fold_epilogues`, after fusion): each float
//! `dot_general` whose result is read by one elementwise equation or one
//! fused kernel without reductions (and nothing else) takes that as its
//! epilogue: the pair becomes one `fused_matmul`
//! (`arr_kernels::MatmulKernel`), whose backend applies the epilogue to the
//! product as it is computed instead of in a second pass over memory.

use crate::prim::Prim;
use crate::transform::graph::{lit_f64, Atom, Eqn, Graph};
use arr_kernels::{
    BinaryOp, DType, Kernel, KernelInput, KernelOutput, MatmulKernel, MatmulOperand, ReduceOp,
    ScalarOp, UnaryOp,
};
use std::collections::HashMap;
use std::sync::Arc;

/// What `try_add` restores when an equation does not fit: the lengths of
/// the body and inputs, and the input map.
type Snapshot = (usize, usize, HashMap<(usize, Vec<usize>), usize>);

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
            fuse_reductions,
        }
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
        _ => false,
    };
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
    let snapshot = (group.body.len(), group.inputs.len(), group.input_of.clone());
    let rollback = |group: &mut Group, snapshot: Snapshot| {
        group.body.truncate(snapshot.0);
        group.inputs.truncate(snapshot.1);
        group.input_of = snapshot.2;
    };
    let elementwise_out =
        out.shape[..] == group.shape[..] && (out.dtype == group.dtype || out.dtype == DType::Bool);
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
        // A broadcast of an outside value is a strided read.
        Prim::BroadcastInDim { shape, dims } if shape[..] == group.shape[..] => {
            match &eqn.inputs[0] {
                Atom::Var(v)
                    if !group.reg_of.contains_key(v)
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
                Atom::Var(v) if trailing && same_k && group.reg_of.contains_key(v) => {
                    if g.types[*v].dtype != group.dtype {
                        None
                    } else {
                        group.reduce_axes = Some(k);
                        group
                            .reductions
                            .push((eqn.outputs[0], group.reg_of[v], *op));
                        group.eqns.push(i);
                        return true;
                    }
                }
                _ => None,
            }
        }
        _ => None,
    };
    match reg {
        Some(r) => {
            group.reg_of.insert(eqn.outputs[0], r);
            group.eqns.push(i);
            true
        }
        None => {
            rollback(group, snapshot);
            false
        }
    }
}

/// Turn a finished group into one equation, or None if it is not worth it
/// (a single operation) or not expressible (a bool value escapes).
fn finish(g: &Graph, group: Group, used_later: &dyn Fn(usize) -> bool) -> Option<Eqn> {
    let elementwise = group.eqns.len() - group.reductions.len();
    if group.eqns.len() < 2 || elementwise == 0 {
        return None;
    }
    let mut outputs = Vec::new();
    let mut out_vars = Vec::new();
    for &i in &group.eqns {
        let v = g.eqns[i].outputs[0];
        if let Some(&(_, reg, op)) = group.reductions.iter().find(|(o, _, _)| *o == v) {
            outputs.push(KernelOutput {
                reg,
                reduce: Some(op),
            });
            out_vars.push(v);
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
    let inputs = group.operands();
    let kernel = Kernel {
        shape: group.shape,
        dtype: group.dtype,
        inputs: group.inputs,
        body: group.body,
        outputs,
        reduce_axes: group.reduce_axes.unwrap_or(0),
    };
    Some(Eqn {
        prim: Prim::Fused(Arc::new(kernel)),
        inputs,
        outputs: out_vars,
        line: group.eqns.first().and_then(|&i| g.eqns[i].line.clone()),
    })
}

/// Whether an equation reads a value the group defines.
fn reads_group(group: &Group, eqn: &Eqn) -> bool {
    eqn.inputs.iter().any(|a| match a {
        Atom::Var(v) => {
            group.reg_of.contains_key(v) || group.reductions.iter().any(|(o, _, _)| o == v)
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
    let mut eqns: Vec<Eqn> = Vec::new();
    let mut i = 0;
    while i < g.eqns.len() {
        let Some((shape, dtype)) = starts_group(g, &g.eqns[i])
            .filter(|(shape, _)| shape.iter().product::<usize>() >= min_elements)
        else {
            eqns.push(g.eqns[i].clone());
            i += 1;
            continue;
        };
        let mut group = Group::new(shape, dtype, fuse_reductions);
        let mut j = i;
        // Equations that do not fit but read nothing of the group (a
        // broadcast operand computed in between, say) move before it.
        let mut hoisted = Vec::new();
        while j < g.eqns.len() {
            if try_add(g, &mut group, j, &g.eqns[j]) {
                j += 1;
            } else if j > i && !reads_group(&group, &g.eqns[j]) {
                hoisted.push(j);
                j += 1;
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
            j -= 1;
        }
        let members = group.eqns.clone();
        let used_later = |v: usize| {
            outputs.contains(&v)
                || readers
                    .get(&v)
                    .is_some_and(|rs| rs.iter().any(|r| !members.contains(r)))
        };
        match finish(g, group, &used_later) {
            Some(eqn) => {
                eqns.extend(hoisted.iter().map(|&h| g.eqns[h].clone()));
                eqns.push(eqn);
                i = j;
            }
            None => {
                eqns.push(g.eqns[i].clone());
                i += 1;
            }
        }
    }
    Graph {
        types: g.types.clone(),
        invars: g.invars.clone(),
        eqns,
        outvars: g.outvars.clone(),
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
