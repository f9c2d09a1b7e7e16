//! Running a compiled graph. Each value is dropped right after its last
//! use, so an operand used for the last time is handed to its kernel by
//! value and its buffer is reused for the result in place: this is the
//! memory plan (a chain `x * 2 + 1 - y` allocates once).
//!
//! `donate_argnums`/`donate_argnames` make the arguments' buffers such
//! buffers: `Array::donate` takes the buffer out of the array, so every
//! handle of it (the caller's variables, the pytrees holding it) is deleted
//! from then on and reading it is JAX's "Array has been deleted" error —
//! which is why an array's buffer sits behind a lock rather than being
//! immutable (reads clone the `Arc`). A kernel with several unshared inputs
//! overwrites a donated one first, so results land in the memory the caller
//! gave, as JAX's aliasing does. Arrays the runtime shares between holders
//! (cached scalars, literals of compiled graphs) are pinned: never deleted
//! through one holder. A donation no output can take over is warned about
//! once per compile.

use crate::error::Result;
use crate::prim::{bind, Args, Prim};
use crate::tensor::Tensor;
use crate::transform::graph::{Atom, Graph};

/// For each variable, the index of the last equation reading it
/// (`usize::MAX` for graph outputs, which live to the end).
pub fn last_uses(g: &Graph) -> Vec<usize> {
    let mut last = vec![0; g.types.len()];
    for (i, eqn) in g.eqns.iter().enumerate() {
        for a in &eqn.inputs {
            if let Atom::Var(v) = a {
                last[*v] = i;
            }
        }
    }
    for a in &g.outvars {
        if let Atom::Var(v) = a {
            last[*v] = usize::MAX;
        }
    }
    last
}

/// Run `g` on its constants followed by the arguments.
/// `last` is `last_uses(g)`, computed once when `g` is compiled.
pub fn run(g: &Graph, last: &[usize], consts: &[Tensor], args: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let mut env: Vec<Option<Tensor>> = vec![None; g.types.len()];
    for (&v, t) in g.invars.iter().zip(consts.iter().cloned().chain(args)) {
        env[v] = Some(t);
    }
    for (i, eqn) in g.eqns.iter().enumerate() {
        let mut ins = Args::new();
        for (k, a) in eqn.inputs.iter().enumerate() {
            ins.push(match a {
                Atom::Lit(x) => Tensor::Concrete(x.clone()),
                Atom::Var(v) => {
                    // The last reading (and not read again by this equation) moves the value.
                    let again = eqn.inputs[k + 1..]
                        .iter()
                        .any(|b| matches!(b, Atom::Var(w) if w == v));
                    if last[*v] == i && !again {
                        env[*v].take().expect("defined before use")
                    } else {
                        env[*v].clone().expect("defined before use")
                    }
                }
            });
        }
        if let Prim::Collective(_) = &eqn.prim {
            crate::transform::collective::set_line(eqn.line.clone());
        }
        for (&o, t) in eqn.outputs.iter().zip(bind(&eqn.prim, ins)?) {
            env[o] = Some(t);
        }
    }
    Ok(g.outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => env[*v].clone().expect("output defined"),
            // A literal stays the graph's: the caller may donate its handle.
            Atom::Lit(x) => Tensor::Concrete(x.pinned()),
        })
        .collect())
}
