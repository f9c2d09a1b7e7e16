//! The `remat` pass (after fusion): a fused kernel that reads an elementwise
//! result of an earlier kernel computes it again from that kernel's inputs
//! instead, when those inputs are held until then anyway. A training step's
//! backward kernels then recompute GELU's `tanh` and powers from the
//! pre-activation they read already, rather than keeping four full-size
//! intermediates alive from the forward pass to the backward pass — XLA's
//! fusion duplicates cheap producers into their consumers for the same
//! reason. The earlier kernel stops writing a result nothing reads any
//! more. Values do not change: the same scalar operations run on the same
//! inputs in the same dtype.

use crate::prim::Prim;
use crate::transform::graph::{Atom, Eqn, Graph};
use arr_kernels::{Kernel, KernelInput, ScalarOp};
use std::sync::Arc;

/// The most operations a kernel computes again for one value it reads.
const MAX_OPS: usize = 32;
/// A kernel stops taking in more work past this many registers.
const MAX_BODY: usize = 256;

pub fn remat(g: &Graph) -> Graph {
    let mut eqns = g.eqns.clone();
    // Where each variable is made (equation, output) and last read.
    let mut made = vec![None; g.types.len()];
    let mut last_read = vec![None; g.types.len()];
    for (i, e) in eqns.iter().enumerate() {
        for (o, &v) in e.outputs.iter().enumerate() {
            made[v] = Some((i, o));
        }
        for a in &e.inputs {
            if let Atom::Var(v) = a {
                last_read[*v] = Some(i);
            }
        }
    }
    let mut held = vec![false; g.types.len()];
    for &v in &g.invars {
        held[v] = true;
    }
    for a in &g.outvars {
        if let Atom::Var(v) = a {
            held[*v] = true;
        }
    }
    // Whether `u` is alive at equation `at` without any new reading.
    let alive_at =
        |u: usize, at: usize, last_read: &[Option<usize>]| held[u] || last_read[u] >= Some(at);
    let mut changed = false;
    for at in 0..eqns.len() {
        let Prim::Fused(k2) = &eqns[at].prim else {
            continue;
        };
        let mut k2 = (**k2).clone();
        let mut operands = eqns[at].inputs.clone();
        let mut inlined = false;
        let mut n = 0;
        while n < k2.inputs.len() && k2.body.len() <= MAX_BODY {
            let Atom::Var(v) = operands[n] else {
                n += 1;
                continue;
            };
            let recompute = made[v].and_then(|(p, o)| {
                let Prim::Fused(k1) = &eqns[p].prim else {
                    return None;
                };
                let regs = recomputable(k1, o, &k2, n)?;
                // Every input it loads must be held until here anyway.
                let loads_alive = regs.iter().all(|&r| match k1.body[r] {
                    ScalarOp::Load(m) => match eqns[p].inputs[m] {
                        Atom::Var(u) => alive_at(u, at, &last_read),
                        Atom::Lit(_) => true,
                    },
                    _ => true,
                });
                loads_alive.then(|| (k1.clone(), eqns[p].inputs.clone(), o, regs))
            });
            match recompute {
                Some((k1, k1_operands, o, regs)) => {
                    inline(
                        &mut k2,
                        &mut operands,
                        n,
                        &k1,
                        &k1_operands,
                        k1.outputs[o].reg,
                        &regs,
                    );
                    inlined = true;
                    // The load of `v` is gone: input `n` now holds the next one.
                }
                None => n += 1,
            }
        }
        if inlined {
            dedupe(&mut k2);
            changed = true;
            // Update what later equations see: the new reads of this kernel.
            for a in &operands {
                if let Atom::Var(u) = a {
                    last_read[*u] = last_read[*u].max(Some(at));
                }
            }
            eqns[at].prim = Prim::Fused(Arc::new(k2));
            eqns[at].inputs = operands;
        }
    }
    if !changed {
        return g.clone();
    }
    drop_unread_outputs(g, eqns)
}

/// The registers of `k1` that output `o` is computed from (ascending), when
/// `k2`'s input `n` reads that output element for element over the same
/// iteration space and the computation is elementwise and small.
fn recomputable(k1: &Kernel, o: usize, k2: &Kernel, n: usize) -> Option<Vec<usize>> {
    let out = k1.outputs[o];
    let input = &k2.inputs[n];
    if out.reduce.is_some()
        || k1.shape != k2.shape
        || k1.dtype != k2.dtype
        || input.dtype != k1.dtype
        || input.shape != k2.shape
        || !input.is_contiguous(&k2.shape)
    {
        return None;
    }
    let mut needed = vec![false; k1.body.len()];
    needed[out.reg] = true;
    for r in (0..=out.reg).rev() {
        if !needed[r] {
            continue;
        }
        // A per-row value needs the whole row's reduction.
        if let ScalarOp::Reduced(_) = k1.body[r] {
            return None;
        }
        for a in k1.body[r].operands() {
            needed[a] = true;
        }
    }
    let regs: Vec<usize> = (0..k1.body.len()).filter(|&r| needed[r]).collect();
    let ops = regs
        .iter()
        .filter(|&&r| !matches!(k1.body[r], ScalarOp::Load(_) | ScalarOp::Const(_)))
        .count();
    (ops <= MAX_OPS).then_some(regs)
}

/// Replace `k2`'s input `n` (and its load) by the registers `regs` of `k1`
/// (which compute `root`), loading `k1`'s inputs as `k2`'s own.
fn inline(
    k2: &mut Kernel,
    operands: &mut Vec<Atom>,
    n: usize,
    k1: &Kernel,
    k1_operands: &[Atom],
    root: usize,
    regs: &[usize],
) {
    // Input `n` leaves; later inputs move down by one.
    k2.inputs.remove(n);
    operands.remove(n);
    let shift = |m: usize| if m > n { m - 1 } else { m };
    // `k1`'s inputs as inputs of `k2` (the same operand and strides share one).
    let input_of = |m: usize, k2: &mut Kernel, operands: &mut Vec<Atom>| -> usize {
        let want: (&Atom, &KernelInput) = (&k1_operands[m], &k1.inputs[m]);
        let found = operands
            .iter()
            .zip(&k2.inputs)
            .position(|(a, i)| same_atom(a, want.0) && i == want.1);
        found.unwrap_or_else(|| {
            operands.push(want.0.clone());
            k2.inputs.push(want.1.clone());
            k2.inputs.len() - 1
        })
    };
    let mut body = Vec::with_capacity(k2.body.len() + regs.len());
    let mut new_reg = vec![usize::MAX; k2.body.len()];
    let mut k1_reg = vec![usize::MAX; k1.body.len()];
    for (r, op) in k2.body.clone().into_iter().enumerate() {
        let op = match op {
            ScalarOp::Load(i) if i == n => {
                for &q in regs {
                    let copied = match k1.body[q] {
                        ScalarOp::Load(j) => ScalarOp::Load(input_of(j, k2, operands)),
                        op => op.map_regs(|x| k1_reg[x]),
                    };
                    k1_reg[q] = body.len();
                    body.push(copied);
                }
                new_reg[r] = k1_reg[root];
                continue;
            }
            ScalarOp::Load(i) => ScalarOp::Load(shift(i)),
            op => op.map_regs(|x| new_reg[x]),
        };
        new_reg[r] = body.len();
        body.push(op);
    }
    for out in k2.outputs.iter_mut() {
        out.reg = new_reg[out.reg];
    }
    k2.body = body;
}

/// One register per distinct operation: values inlined from the same
/// kernel share their common parts (GELU's powers of `h`, say).
fn dedupe(k: &mut Kernel) {
    let mut body: Vec<ScalarOp> = Vec::with_capacity(k.body.len());
    let mut new_reg = vec![0; k.body.len()];
    for (r, op) in k.body.iter().enumerate() {
        let op = op.map_regs(|x| new_reg[x]);
        // Constants compare by bits: -0.0 is not 0.0, and NaN is itself.
        let same = |a: &ScalarOp| match (a, &op) {
            (ScalarOp::Const(x), ScalarOp::Const(y)) => x.to_bits() == y.to_bits(),
            (a, b) => a == b,
        };
        new_reg[r] = match body.iter().position(same) {
            Some(q) => q,
            None => {
                body.push(op);
                body.len() - 1
            }
        };
    }
    for out in k.outputs.iter_mut() {
        out.reg = new_reg[out.reg];
    }
    k.body = body;
}

fn same_atom(a: &Atom, b: &Atom) -> bool {
    matches!((a, b), (Atom::Var(x), Atom::Var(y)) if x == y)
}

/// Fused kernels stop writing results that nothing reads any more (and a
/// kernel left with none is removed).
fn drop_unread_outputs(g: &Graph, mut eqns: Vec<Eqn>) -> Graph {
    let mut read = vec![false; g.types.len()];
    for a in &g.outvars {
        if let Atom::Var(v) = a {
            read[*v] = true;
        }
    }
    for e in &eqns {
        for a in &e.inputs {
            if let Atom::Var(v) = a {
                read[*v] = true;
            }
        }
    }
    eqns.retain_mut(|e| {
        let Prim::Fused(k) = &e.prim else {
            return true;
        };
        let keep: Vec<bool> = e
            .outputs
            .iter()
            .zip(&k.outputs)
            .map(|(&v, out)| read[v] || out.reduce.is_some())
            .collect();
        if keep.iter().all(|&x| x) {
            return true;
        }
        // Row values name reducing outputs by index: renumber them.
        let mut index = vec![usize::MAX; keep.len()];
        let mut next = 0;
        for (j, &kept) in keep.iter().enumerate() {
            if kept {
                index[j] = next;
                next += 1;
            }
        }
        let mut k = (**k).clone();
        for op in k.body.iter_mut() {
            if let ScalarOp::Reduced(j) = op {
                *j = index[*j];
            }
        }
        let mut it = keep.iter();
        k.outputs.retain(|_| *it.next().expect("an output"));
        let mut it = keep.iter();
        e.outputs.retain(|_| *it.next().expect("an output"));
        if k.outputs.is_empty() {
            return false;
        }
        e.prim = Prim::Fused(Arc::new(k));
        true
    });
    let out = Graph { eqns, ..g.clone() };
    debug_assert!(
        crate::transform::graph::typecheck(&out).is_ok(),
        "{:?}",
        crate::transform::graph::typecheck(&out)
    );
    out
}
