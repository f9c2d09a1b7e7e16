//! The compiler's passes over a `Graph`, each a function from graph to
//! graph that keeps the signature (inputs and output types). Every pass is
//! a named constant; `PIPELINE` (jit's) and `EXACT_PIPELINE` (automatic
//! JIT's) are lists of them, so neither can lose a pass when another is
//! added. `run_pipeline` applies jit's, `:ir --pass NAME` shows the graph
//! after any of its passes, and `:help` lists them with their descriptions.
//!
//! Calls are already inlined when a function is traced (a `jit` inside a
//! traced function traces through), so the pipeline starts from one flat
//! graph.

use crate::prim::{eval_concrete, Aval, Prim};
use crate::tensor::Tensor;
use crate::transform::graph::{self, Atom, Eqn, Graph};
use arr_kernels::{Array, BinaryOp, DType, UnaryOp};
use std::collections::HashMap;

/// A pass: its name (for `:ir --pass NAME` and snapshots), what it does in
/// one line (`:help` prints it), and the rewrite.
#[derive(Clone, Copy)]
pub struct Pass {
    pub name: &'static str,
    pub description: &'static str,
    pub run: fn(&Graph) -> Graph,
}

/// Not a pass: what `:ir --pass traced` shows, the graph before any pass.
pub const TRACED: Pass = Pass {
    name: "traced",
    description: "the graph as traced, before any pass",
    run: Graph::clone,
};

pub const FOLD: Pass = Pass {
    name: "fold",
    description:
        "equations whose inputs are all literal scalars run now; their results become literals",
    run: fold_constants,
};

pub const SIMPLIFY: Pass = Pass {
    name: "simplify",
    description: "identities that remove work: x*1, x+(-0.0), x/1, x**1, constant selects, \
                  converts, reshapes, transposes and broadcasts that change nothing, -(-x), \
                  reshapes of reshapes, transposes of transposes",
    run: simplify,
};

pub const CSE: Pass = Pass {
    name: "cse",
    description: "an equation that repeats an earlier one reuses its outputs",
    run: cse,
};

pub const DOT_TRANSPOSE: Pass = Pass {
    name: "dot_transpose",
    description: "a transposed product becomes the product of swapped operands, \
                  which the GEMM reads in place (may round differently)",
    run: dot_transpose,
};

pub const DOT_OPERANDS: Pass = Pass {
    name: "dot_operands",
    description: "a product of a transposed operand reads the operand before the transpose \
                  (the GEMM takes it through strides; may round differently)",
    run: dot_operands,
};

pub const COMBINE_COLLECTIVES: Pass = Pass {
    name: "combine_collectives",
    description: "all-reduces that can wait for each other become one all-reduce of \
                  all their operands (values unchanged)",
    run: combine_collectives,
};

pub const DCE: Pass = Pass {
    name: "dce",
    description: "equations whose results nothing reads are removed",
    run: graph::dce,
};

pub const FUSE: Pass = Pass {
    name: "fuse",
    description: "runs of elementwise operations, broadcasts of their inputs and \
                  trailing reductions become one fused kernel",
    run: super::fuse::fuse,
};

pub const FUSE_EXACT: Pass = Pass {
    name: "fuse_exact",
    description: "fuse for automatic JIT: elementwise runs of at least 16K elements only, \
                  so every value keeps the interpreter's bits",
    run: super::fuse::fuse_elementwise,
};

pub const FOLD_EPILOGUES: Pass = Pass {
    name: "fold_epilogues",
    description: "a float product read only by one elementwise operation or reduction-free \
                  fused kernel takes it as its epilogue: one fused_matmul",
    run: super::fuse::fold_epilogues,
};

pub const FOLD_EPILOGUES_EXACT: Pass = Pass {
    name: "fold_epilogues_exact",
    description: "fold_epilogues for automatic JIT: products of at least 16K elements \
                  (the product is the eager gemm's, so bits are unchanged)",
    run: super::fuse::fold_epilogues_exact,
};

pub const REMAT: Pass = Pass {
    name: "remat",
    description: "a fused kernel computes an earlier kernel's elementwise result again from \
                  inputs it holds anyway, instead of keeping the result alive (values unchanged)",
    run: super::remat::remat,
};

/// jit's pipeline, in order.
pub const PIPELINE: &[Pass] = &[
    FOLD,
    SIMPLIFY,
    CSE,
    DOT_TRANSPOSE,
    DOT_OPERANDS,
    COMBINE_COLLECTIVES,
    DCE,
    FUSE,
    REMAT,
    FOLD_EPILOGUES,
];

/// The pipeline of automatic JIT: only passes that keep every value's bits,
/// so compiled code computes each value as the interpreter would (turning
/// the feature off changes no result). Not `dot_transpose`, whose swapped
/// product may round differently; fusion leaves reductions to their eager
/// kernels (a fused sum adds in another order) and small arrays alone; an
/// epilogue runs on the very product eager `dot_general` computes.
pub const EXACT_PIPELINE: &[Pass] = &[
    FOLD,
    SIMPLIFY,
    CSE,
    COMBINE_COLLECTIVES,
    DCE,
    FUSE_EXACT,
    FOLD_EPILOGUES_EXACT,
];

/// Run the pipeline; with `until`, stop after the pass of that name.
pub fn run_pipeline(g: &Graph, until: Option<&str>) -> Graph {
    run_passes(PIPELINE, g, until)
}

/// Run `passes` in order; with `until`, stop after the pass of that name.
pub fn run_passes(passes: &[Pass], g: &Graph, until: Option<&str>) -> Graph {
    let mut g = g.clone();
    for pass in passes {
        if arr_kernels::interrupt::requested() {
            // Every pass's output is a valid graph; the caller reports the
            // interrupt instead of running it.
            break;
        }
        g = (pass.run)(&g);
        debug_assert!(
            graph::typecheck(&g).is_ok(),
            "after {}: {:?}",
            pass.name,
            graph::typecheck(&g)
        );
        if until == Some(pass.name) {
            break;
        }
    }
    g
}

/// Replacements of variables by atoms, applied to later equations.
#[derive(Default)]
struct Subst(HashMap<usize, Atom>);

impl Subst {
    fn atom(&self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.0.get(v).cloned().unwrap_or(Atom::Var(*v)),
            lit => lit.clone(),
        }
    }

    fn finish(&self, g: &Graph, eqns: Vec<Eqn>) -> Graph {
        Graph {
            types: g.types.clone(),
            invars: g.invars.clone(),
            eqns,
            outvars: g.outvars.iter().map(|a| self.atom(a)).collect(),
            weak_outs: g.weak_outs.clone(),
        }
    }
}

/// Equations whose inputs are all literal scalars run now; their (scalar)
/// results become literals.
pub fn fold_constants(g: &Graph) -> Graph {
    let mut subst = Subst::default();
    let mut eqns = Vec::new();
    for eqn in &g.eqns {
        let inputs: Vec<Atom> = eqn.inputs.iter().map(|a| subst.atom(a)).collect();
        let all_lits = inputs.iter().all(|a| matches!(a, Atom::Lit(_)));
        let scalar_out = eqn.outputs.iter().all(|&o| {
            g.types[o].shape.iter().product::<usize>() <= 1 && g.types[o].shape.is_empty()
        });
        if all_lits
            && scalar_out
            && eqn.prim.subgraphs().is_empty()
            && !eqn.prim.has_effect()
            && !inputs.is_empty()
        {
            let args = inputs
                .iter()
                .map(|a| match a {
                    Atom::Lit(x) => Tensor::Concrete(x.clone()),
                    Atom::Var(_) => unreachable!(),
                })
                .collect::<Vec<_>>();
            if let Ok(outs) = eval_concrete(&eqn.prim, args.into_iter().collect()) {
                for (&o, t) in eqn.outputs.iter().zip(outs) {
                    if let Tensor::Concrete(x) = t {
                        subst.0.insert(o, Atom::Lit(x));
                    }
                }
                continue;
            }
        }
        eqns.push(Eqn {
            prim: eqn.prim.clone(),
            inputs,
            outputs: eqn.outputs.clone(),
            line: eqn.line.clone(),
        });
    }
    subst.finish(g, eqns)
}

fn lit_value(a: &Atom) -> Option<f64> {
    match a {
        Atom::Lit(x) if x.len() == 1 => Some(graph::lit_f64(x)),
        _ => None,
    }
}

/// Whether adding the literal `a` changes nothing, -0.0 included: -0.0 for
/// floats (0.0 + -0.0 is 0.0, -0.0 + -0.0 is -0.0); 0 for integers.
fn neutral_for_add(a: &Atom) -> bool {
    match lit_value(a) {
        Some(x) if a_is_float(a) => x == 0.0 && x.is_sign_negative(),
        Some(x) => x == 0.0,
        None => false,
    }
}

fn a_is_float(a: &Atom) -> bool {
    matches!(a, Atom::Lit(x) if x.dtype().is_float())
}

fn atom_aval(g: &Graph, a: &Atom) -> Aval {
    g.atom_aval(a)
}

/// Algebraic identities that remove work: x*1, x+0, x-0, x/1, x**1,
/// select with a constant predicate, converts, reshapes, transposes and
/// broadcasts that change nothing, double negation, transposes of
/// transposes (composed into one). An equation is replaced
/// only by an operand of exactly its output type.
pub fn simplify(g: &Graph) -> Graph {
    let mut subst = Subst::default();
    let mut eqns: Vec<Eqn> = Vec::new();
    // Which equation defines each variable (for neg(neg x)).
    let mut def: HashMap<usize, usize> = HashMap::new();
    for eqn in &g.eqns {
        let mut inputs: Vec<Atom> = eqn.inputs.iter().map(|a| subst.atom(a)).collect();
        // A reshape of a reshape reshapes the first one's operand (reverse
        // mode makes chains of them around reductions).
        if let (Prim::Reshape(_), Some(Atom::Var(v))) = (&eqn.prim, inputs.first()) {
            if let Some(inner) = def.get(v).map(|&k| &eqns[k]) {
                if matches!(inner.prim, Prim::Reshape(_)) {
                    inputs[0] = inner.inputs[0].clone();
                }
            }
        }
        // A transpose of a transpose is one transpose (or none): reverse
        // mode transposes a weight's gradient back into its layout.
        let mut prim = eqn.prim.clone();
        if let (Prim::Transpose(outer), Some(Atom::Var(v))) = (&eqn.prim, inputs.first()) {
            if let Some(inner) = def.get(v).map(|&k| &eqns[k]) {
                if let Prim::Transpose(first) = &inner.prim {
                    prim = Prim::Transpose(outer.iter().map(|&i| first[i]).collect());
                    inputs[0] = inner.inputs[0].clone();
                }
            }
        }
        let out_aval = if eqn.outputs.len() == 1 {
            Some(&g.types[eqn.outputs[0]])
        } else {
            None
        };
        let same = |a: &Atom| out_aval.is_some_and(|o| atom_aval(g, a) == *o);
        let keep = |i: usize| -> Option<Atom> { same(&inputs[i]).then(|| inputs[i].clone()) };
        let replacement: Option<Atom> = match &prim {
            Prim::Binary(op) => {
                let (l, r) = (lit_value(&inputs[0]), lit_value(&inputs[1]));
                match op {
                    BinaryOp::Mul if r == Some(1.0) => keep(0),
                    BinaryOp::Mul if l == Some(1.0) => keep(1),
                    // x + 0.0 is not x for x = -0.0; x + (-0.0) always is.
                    BinaryOp::Add if neutral_for_add(&inputs[1]) => keep(0),
                    BinaryOp::Add if neutral_for_add(&inputs[0]) => keep(1),
                    BinaryOp::Sub if r == Some(0.0) => keep(0),
                    BinaryOp::Div if r == Some(1.0) => keep(0),
                    BinaryOp::Pow if r == Some(1.0) => keep(0),
                    _ => None,
                }
            }
            Prim::Select => match lit_value(&inputs[0]) {
                Some(c) if c != 0.0 => keep(1),
                Some(_) => keep(2),
                None => None,
            },
            Prim::Convert(_) | Prim::Reshape(_) => keep(0),
            Prim::Transpose(perm) if perm.iter().enumerate().all(|(i, &p)| i == p) => keep(0),
            Prim::BroadcastInDim { dims, .. } if dims.iter().enumerate().all(|(i, &d)| i == d) => {
                keep(0)
            }
            Prim::Unary(UnaryOp::Neg) => match &inputs[0] {
                Atom::Var(v) => def.get(v).and_then(|&k| {
                    let inner: &Eqn = &eqns[k];
                    matches!(inner.prim, Prim::Unary(UnaryOp::Neg))
                        .then(|| inner.inputs[0].clone())
                        .filter(|a| same(a))
                }),
                _ => None,
            },
            _ => None,
        };
        if let Some(a) = replacement {
            subst.0.insert(eqn.outputs[0], a);
            continue;
        }
        for &o in &eqn.outputs {
            def.insert(o, eqns.len());
        }
        eqns.push(Eqn {
            prim,
            inputs,
            outputs: eqn.outputs.clone(),
            line: eqn.line.clone(),
        });
    }
    subst.finish(g, eqns)
}

/// Matrix-product epilogue: a transpose that swaps a product's free axes
/// becomes the product with its operands swapped (`(a @ b).T` is
/// `b.T @ a.T`, which the GEMM reads in place, where the transpose would
/// copy the result; reverse mode makes these). The product left unused is
/// removed by the next `dce`. Not in the exact pipeline: the swapped product
/// may round differently.
pub fn dot_transpose(g: &Graph) -> Graph {
    let mut def: HashMap<usize, usize> = HashMap::new();
    let mut eqns: Vec<Eqn> = Vec::with_capacity(g.eqns.len());
    for eqn in &g.eqns {
        let swapped = match (&eqn.prim, &eqn.inputs[..]) {
            (Prim::Transpose(perm), [Atom::Var(v)]) => def
                .get(v)
                .and_then(|&k| swap_dot_operands(g, &g.eqns[k], perm)),
            _ => None,
        };
        let (prim, inputs) = swapped.unwrap_or_else(|| (eqn.prim.clone(), eqn.inputs.clone()));
        for &o in &eqn.outputs {
            def.insert(o, eqns.len());
        }
        eqns.push(Eqn {
            prim,
            inputs,
            outputs: eqn.outputs.clone(),
            line: eqn.line.clone(),
        });
    }
    Graph {
        types: g.types.clone(),
        invars: g.invars.clone(),
        eqns,
        outvars: g.outvars.clone(),
        weak_outs: g.weak_outs.clone(),
    }
}

/// Operand transposes: `dot_general(transpose(x, perm), b)` becomes
/// `dot_general(x, b)` with the dimension numbers mapped through `perm`
/// (attention's heads are split by reshape and transpose, and reverse mode
/// transposes operands), so the GEMM reads `x` through strides where the
/// transpose would copy it. Chains of transposes are followed. Only where
/// `perm` keeps the operand's free axes in order (the product's output
/// lists them in operand order). The transposes left unused are removed by
/// the next `dce`. Not in the exact pipeline: a strided operand may take
/// another GEMM path and round differently.
pub fn dot_operands(g: &Graph) -> Graph {
    let mut perm_of: HashMap<usize, (Atom, Vec<usize>)> = HashMap::new();
    let mut out = g.clone();
    for eqn in out.eqns.iter_mut() {
        match (&eqn.prim, &eqn.inputs[..]) {
            (Prim::Transpose(perm), [x]) => {
                // Compose with the operand's own transpose, if any.
                let (src, perm) = match x {
                    Atom::Var(v) => match perm_of.get(v) {
                        Some((src, inner)) => {
                            (src.clone(), perm.iter().map(|&p| inner[p]).collect())
                        }
                        None => (x.clone(), perm.clone()),
                    },
                    _ => (x.clone(), perm.clone()),
                };
                perm_of.insert(eqn.outputs[0], (src, perm));
            }
            (Prim::DotGeneral(d), [a, b]) => {
                let mut d = d.clone();
                let mut inputs = vec![a.clone(), b.clone()];
                for (side, input) in inputs.iter_mut().enumerate() {
                    let Atom::Var(v) = input else {
                        continue;
                    };
                    let Some((src, perm)) = perm_of.get(v) else {
                        continue;
                    };
                    let (batch, contract) = if side == 0 {
                        (&mut d.lhs_batch, &mut d.lhs_contract)
                    } else {
                        (&mut d.rhs_batch, &mut d.rhs_contract)
                    };
                    let free: Vec<usize> = (0..perm.len())
                        .filter(|i| !batch.contains(i) && !contract.contains(i))
                        .map(|i| perm[i])
                        .collect();
                    if free.windows(2).any(|w| w[0] > w[1]) {
                        continue;
                    }
                    for axis in batch.iter_mut().chain(contract.iter_mut()) {
                        *axis = perm[*axis];
                    }
                    *input = src.clone();
                }
                eqn.prim = Prim::DotGeneral(d);
                eqn.inputs = inputs;
            }
            _ => {}
        }
    }
    out
}

/// All-reduces over the same axis (psums of every gradient, say) that do
/// not depend on each other become one all-reduce of all their operands,
/// at the place of the last: one exchange between the devices instead of
/// several (gradient bucketing). What reads an earlier member's results
/// before that place (a weight's update, say) moves after it; nothing a
/// member needs moves, so the order stays a topological one. The
/// communicator decides how to move the group (in one process, without
/// packing it into one buffer first). Every element is still reduced over
/// the same devices in the same order, so values are unchanged.
pub fn combine_collectives(g: &Graph) -> Graph {
    let all_reduce = |e: &Eqn| {
        matches!(&e.prim, Prim::Collective(c)
            if matches!(c.op, crate::transform::collective::CollectiveOp::AllReduce(_)))
    };
    // Most programs have none: nothing to do (not even the `dce` below).
    if !g.eqns.iter().any(all_reduce) {
        return g.clone();
    }
    // Unread all-reduces (the partitioner's sums it turned into
    // reduce-scatters) go first: a group cannot lose a member later.
    let mut out = graph::dce(g);
    // One group at a time: each merge reorders the equations.
    let mut done: Vec<Prim> = Vec::new();
    while let Some(prim) = out
        .eqns
        .iter()
        .find(|e| all_reduce(e) && !done.contains(&e.prim))
        .map(|e| e.prim.clone())
    {
        out = combine_group(&out, &prim);
        done.push(prim);
    }
    out
}

/// The equations that read, directly or not, the outputs of equation `i`
/// (a flag per equation; `i` itself unflagged).
fn descendants(g: &Graph, i: usize) -> Vec<bool> {
    let mut tainted = vec![false; g.types.len()];
    for &o in &g.eqns[i].outputs {
        tainted[o] = true;
    }
    let mut below = vec![false; g.eqns.len()];
    for (k, e) in g.eqns.iter().enumerate().skip(i + 1) {
        let reads = e
            .inputs
            .iter()
            .any(|a| matches!(a, Atom::Var(v) if tainted[*v]));
        if reads {
            below[k] = true;
            for &o in &e.outputs {
                tainted[o] = true;
            }
        }
    }
    below
}

/// `combine_collectives` for the all-reduces of one `prim`: from the last
/// back, each that no member taken so far depends on joins the group.
fn combine_group(g: &Graph, prim: &Prim) -> Graph {
    let members: Vec<usize> = (0..g.eqns.len())
        .filter(|&i| &g.eqns[i].prim == prim)
        .collect();
    let Some(&last) = members.last() else {
        return g.clone();
    };
    let mut taken = vec![last];
    // Everything that reads a taken member's results.
    let mut moved = descendants(g, last);
    for &m in members.iter().rev().skip(1) {
        let below = descendants(g, m);
        if taken.iter().any(|&t| below[t]) {
            continue;
        }
        taken.push(m);
        for (k, b) in below.into_iter().enumerate() {
            moved[k] |= b;
        }
    }
    if taken.len() < 2 {
        return g.clone();
    }
    taken.reverse();
    let mut eqn = Eqn {
        prim: prim.clone(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        line: g.eqns[last].line.clone(),
    };
    for &m in &taken {
        eqn.inputs.extend(g.eqns[m].inputs.iter().cloned());
        eqn.outputs.extend(g.eqns[m].outputs.iter().copied());
    }
    // Before the merged one: what it does not wait for; after it, what
    // reads its results (in their order), then the rest as they were.
    let mut out = g.clone();
    out.eqns = Vec::with_capacity(g.eqns.len());
    let mut waiting = Vec::new();
    for (i, e) in g.eqns.iter().enumerate() {
        if i == last {
            out.eqns.push(eqn.clone());
            out.eqns.append(&mut waiting);
        } else if moved[i] && i < last {
            waiting.push(e.clone());
        } else if !taken.contains(&i) {
            out.eqns.push(e.clone());
        }
    }
    out
}

/// `transpose(dot_general(a, b), perm)` as `dot_general(b, a)`, when `perm`
/// keeps the batch axes and puts the rhs's free axes before the lhs's (the
/// output order of the swapped product).
fn swap_dot_operands(g: &Graph, dot: &Eqn, perm: &[usize]) -> Option<(Prim, Vec<Atom>)> {
    let Prim::DotGeneral(d) = &dot.prim else {
        return None;
    };
    let rank = |a: &Atom| atom_aval(g, a).shape.len();
    let nb = d.lhs_batch.len();
    let nl = rank(&dot.inputs[0]) - nb - d.lhs_contract.len();
    let nr = rank(&dot.inputs[1]) - nb - d.rhs_contract.len();
    let want: Vec<usize> = (0..nb)
        .chain(nb + nl..nb + nl + nr)
        .chain(nb..nb + nl)
        .collect();
    if perm != want || nl == 0 || nr == 0 {
        return None;
    }
    let dims = arr_kernels::DotDims {
        lhs_batch: d.rhs_batch.clone(),
        rhs_batch: d.lhs_batch.clone(),
        lhs_contract: d.rhs_contract.clone(),
        rhs_contract: d.lhs_contract.clone(),
    };
    Some((
        Prim::DotGeneral(dims),
        vec![dot.inputs[1].clone(), dot.inputs[0].clone()],
    ))
}

/// A literal's identity for CSE: dtype and bits.
fn lit_key(x: &Array) -> (DType, u64) {
    (x.dtype(), graph::lit_f64(x).to_bits())
}

/// Common-subexpression elimination: an equation that repeats an earlier
/// one (same primitive and parameters, same operands) reuses its outputs.
/// Control-flow primitives are left alone (their graphs compare by identity),
/// and so are debug callbacks (each call prints).
pub fn cse(g: &Graph) -> Graph {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Var(usize),
        Lit(DType, u64),
    }
    let mut subst = Subst::default();
    let mut seen: HashMap<(String, Vec<Key>), Vec<usize>> = HashMap::new();
    let mut eqns = Vec::new();
    for eqn in &g.eqns {
        let inputs: Vec<Atom> = eqn.inputs.iter().map(|a| subst.atom(a)).collect();
        if eqn.prim.subgraphs().is_empty() && !eqn.prim.has_effect() {
            let keys = inputs
                .iter()
                .map(|a| match a {
                    Atom::Var(v) => Key::Var(*v),
                    Atom::Lit(x) => {
                        let (d, b) = lit_key(x);
                        Key::Lit(d, b)
                    }
                })
                .collect();
            let key = (format!("{:?}", eqn.prim), keys);
            if let Some(prev) = seen.get(&key) {
                for (&o, &p) in eqn.outputs.iter().zip(prev) {
                    subst.0.insert(o, Atom::Var(p));
                }
                continue;
            }
            seen.insert(key, eqn.outputs.clone());
        }
        eqns.push(Eqn {
            prim: eqn.prim.clone(),
            inputs,
            outputs: eqn.outputs.clone(),
            line: eqn.line.clone(),
        });
    }
    subst.finish(g, eqns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::collective::{bind_device_axis, Collective, CollectiveOp};
    use arr_kernels::ReduceOp;
    use std::sync::Arc;

    fn psum(x: Tensor) -> Tensor {
        let c = Collective {
            op: CollectiveOp::AllReduce(ReduceOp::Sum),
            axis: Arc::from("i"),
            size: 4,
        };
        crate::prim::bind1(&Prim::Collective(c), [x]).unwrap()
    }

    fn names(passes: &[Pass]) -> String {
        passes.iter().map(|p| p.name).collect::<Vec<_>>().join(" ")
    }

    /// Both pipelines, by name: a pass added to one shows up here, and
    /// neither can lose one (the exact one once lost `dce` when a pass was
    /// inserted before the index it was picked by).
    #[test]
    fn the_pipelines_passes() {
        expect_test::expect![[
            "fold simplify cse dot_transpose dot_operands combine_collectives dce fuse remat fold_epilogues"
        ]]
        .assert_eq(&names(PIPELINE));
        expect_test::expect![
            "fold simplify cse combine_collectives dce fuse_exact fold_epilogues_exact"
        ]
        .assert_eq(&names(EXACT_PIPELINE));
        for p in PIPELINE.iter().chain(EXACT_PIPELINE) {
            assert!(
                !p.description.is_empty() && !p.description.contains('\n'),
                "{}",
                p.name
            );
        }
    }

    /// Automatic JIT's pipeline removes computations whose results nothing
    /// reads: here an unused `cos(x) + exp(x)` beside the result.
    #[test]
    fn the_exact_pipeline_removes_dead_code() {
        let f32 = |shape: &[usize]| Aval {
            shape: shape.into(),
            dtype: DType::F32,
        };
        let un = |op, x: &Tensor| crate::prim::bind1(&Prim::Unary(op), [x.clone()]).unwrap();
        let closed = graph::trace(&[f32(&[3])], true, |ts| {
            let used = un(UnaryOp::Sin, &ts[0]);
            let (c, e) = (un(UnaryOp::Cos, &ts[0]), un(UnaryOp::Exp, &ts[0]));
            let _unused = crate::prim::bind1(&Prim::Binary(BinaryOp::Add), [c, e]).unwrap();
            Ok(vec![used])
        })
        .unwrap();
        assert_eq!(closed.graph.eqns.len(), 4, "traced with the dead equations");
        let compiled = run_passes(EXACT_PIPELINE, &closed.graph, None);
        expect_test::expect![[r#"
            { lambda ; a:f32[3]. let
                b:f32[3] = sin a
              in (b,) }"#]]
        .assert_eq(&graph::text(&compiled, 0));
    }

    /// ARCHITECTURE.md's jit paragraph names jit's passes in order.
    #[test]
    fn the_architecture_lists_the_pipeline() {
        let doc = include_str!("../../../ARCHITECTURE.md");
        let list = PIPELINE
            .iter()
            .map(|p| format!("`{}`", p.name))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            doc.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&list),
            "ARCHITECTURE.md should list the pipeline as: {list}"
        );
    }

    /// Three gradients' psums become one; a psum whose result is read before
    /// the last one stays where it is.
    #[test]
    fn all_reduces_are_combined_when_they_can_wait() {
        let _axis = bind_device_axis(Arc::from("i"), 4, None);
        let f32 = |shape: &[usize]| Aval {
            shape: shape.into(),
            dtype: DType::F32,
        };
        let closed = graph::trace(&[f32(&[2, 3]), f32(&[3]), f32(&[])], true, |ts| {
            let early = psum(ts[2].clone());
            let scaled =
                crate::prim::bind1(&Prim::Binary(BinaryOp::Mul), [ts[1].clone(), early.clone()])
                    .unwrap();
            let a = psum(ts[0].clone());
            let b = psum(scaled);
            Ok(vec![a, b, early])
        })
        .unwrap();
        let combined = combine_collectives(&closed.graph);
        let text = graph::text(&combined, 0);
        expect_test::expect![[r#"
            { lambda ; a:f32[2,3] b:f32[3] c:f32[]. let
                d:f32[] = psum[axis_name=i size=4] c
                e:f32[3] = mul b d
                f:f32[2,3] g:f32[3] = psum[axis_name=i size=4] a e
              in (f, g, d) }"#]]
        .assert_eq(&text);
        assert!(graph::typecheck(&combined).is_ok());
    }
}
