//! The evaluator's hooks for automatic JIT (`jit/auto.rs`): the guards a
//! trace records when it reads a global or an outer cell, the test of
//! whether a call may be compiled, and running a hot `for` loop compiled.

use super::{Cell, Flow, Frame, Interp, Iter};
use crate::code::*;
use crate::error::{ErrorKind, Result};
use crate::jit::auto;
use crate::value::Value;
use std::rc::Rc;

impl Interp {
    /// A read of a global or an outer cell while auto-JIT traces (a guard).
    #[cold]
    pub(super) fn note_read(&mut self, var: Var, f: &Frame) -> Result<()> {
        match var {
            Var::Local(_) => Ok(()),
            Var::Cell(i) => self.auto.read_cell(&f.cells[i as usize]),
            Var::Global(id) => {
                let id = id as usize;
                let v = self.globals.get(id).and_then(Option::as_ref);
                self.auto.read_global(id, v)
            }
            // The library binds its names once, when it loads: no guard.
            Var::Builtin(_) => Ok(()),
        }
    }

    fn read_var(&self, var: Var, f: &Frame) -> Option<Value> {
        match var {
            Var::Local(i) => f.locals[i as usize].clone(),
            Var::Cell(i) => f.cells[i as usize].borrow().clone(),
            Var::Global(id) => self.globals.get(id as usize).cloned().flatten(),
            Var::Builtin(id) => self.builtins.get(id as usize).cloned().flatten(),
        }
    }

    fn write_var(&mut self, var: Var, v: Option<Value>, f: &mut Frame) {
        match var {
            Var::Local(i) => f.locals[i as usize] = v,
            Var::Cell(i) => *f.cells[i as usize].borrow_mut() = v,
            Var::Global(id) => {
                let id = id as usize;
                if self.globals.len() <= id {
                    self.globals.resize(id + 1, None);
                }
                self.globals[id] = v;
            }
            Var::Builtin(id) => {
                let id = id as usize;
                if self.builtins.len() <= id {
                    self.builtins.resize(id + 1, None);
                }
                self.builtins[id] = v;
            }
        }
    }

    /// A hot `for` loop over a range: trace one iteration of its body,
    /// compile it, and run the remaining `items` compiled. False if the
    /// body does not compile (the loop then goes on interpreted, and is not
    /// tried again).
    #[cold]
    pub(super) fn run_loop_compiled(
        &mut self,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        items: &mut Iter,
        f: &mut Frame,
    ) -> Result<bool> {
        let key = s as *const Stmt as usize;
        if self.auto.loop_refused(key) || !crate::transform::idle() {
            return Ok(false);
        }
        let region = format!("loop ({})", f.file.location(s.span));
        let after = self.auto.threshold;
        let refuse = |interp: &mut Interp, signature: String, why: String| {
            interp.auto.loop_outcome(
                key,
                region.clone(),
                after,
                signature,
                auto::Outcome::Interpreted(why),
            );
            Ok(false)
        };
        let plan = match auto::plan_loop(target, body) {
            Ok(p) => p,
            Err(why) => return refuse(self, "()".into(), why),
        };
        let values: Vec<Option<Value>> = plan
            .carried
            .iter()
            .map(|(v, _)| self.read_var(*v, f))
            .collect();
        let carry = match auto::describe_carry(&values) {
            Ok(c) => c,
            Err(why) => return refuse(self, "()".into(), why),
        };
        let signature = carry.signature();
        let mut before: Vec<Value> = f.locals.iter().flatten().cloned().collect();
        before.extend(f.cells.iter().filter_map(|c| c.borrow().clone()));
        let cells: Vec<Cell> = plan
            .carried
            .iter()
            .filter_map(|(v, _)| match v {
                Var::Cell(i) => Some(f.cells[*i as usize].clone()),
                _ => None,
            })
            .collect();
        let globals: Vec<usize> = plan
            .carried
            .iter()
            .filter_map(|(v, _)| match v {
                Var::Global(id) => Some(*id as usize),
                _ => None,
            })
            .collect();
        let start = std::time::Instant::now();
        self.auto.begin_loop_trace(&before, &cells, &globals);
        let result = auto::compile_loop(&carry, &values, |vals| {
            for ((v, _), val) in plan.carried.iter().zip(vals) {
                self.write_var(*v, Some(val), f);
            }
            match self.exec_block(body, f)? {
                Flow::Normal | Flow::Continue => {}
                _ => return Err(auto::not_pure("the body leaves the loop")),
            }
            Ok(plan
                .carried
                .iter()
                .map(|(v, _)| self.read_var(*v, f))
                .collect())
        });
        self.auto.end_trace();
        for ((v, _), val) in plan.carried.iter().zip(&values) {
            self.write_var(*v, val.clone(), f);
        }
        let compiled = match result {
            Err(e) if e.kind == ErrorKind::KeyboardInterrupt => return Err(e),
            Err(e) => {
                let why = auto::reason(&e);
                return refuse(self, signature, why);
            }
            Ok(c) => c,
        };
        let outcome = auto::compiled_outcome(&compiled, start);
        self.auto
            .loop_outcome(key, region.clone(), after, signature, outcome);
        // The remaining iterations; on Ctrl-C the variables keep the values
        // of the iterations done, as in the interpreter.
        let mut leaves = carry.leaves;
        let mut last = None;
        let mut stopped = Ok(());
        for item in items.by_ref() {
            if let Err(e) = self.check_interrupt() {
                stopped = Err(e.at(|| f.loc(s.span)));
                break;
            }
            // Taken, not cloned: the executor may then reuse the buffers.
            // So an interrupt is seen between iterations only (above), as
            // the variables would otherwise lose the iterations done: the
            // operations of the body do not see the flag.
            let hidden = arr_kernels::interrupt::Scope::new(None);
            let ran = compiled.run(std::mem::take(&mut leaves));
            drop(hidden);
            match ran {
                Ok(next) => leaves = next,
                Err(e) => {
                    // Not a user error (the types were checked when it was
                    // compiled): the variables keep their values from before.
                    return Err(e.at(|| f.loc(s.span)));
                }
            }
            last = Some(item);
        }
        let after_values = auto::carried_after(&values, leaves);
        for ((v, _), val) in plan.carried.iter().zip(after_values) {
            self.write_var(*v, Some(val), f);
        }
        if let Some(last) = last {
            self.assign(target, last, f)?;
        }
        stopped.map(|_| true)
    }

    /// Whether a call with these arguments might be compiled automatically
    /// (the cheap tests; `auto::call` does the rest).
    pub(super) fn auto_jit_candidate(&self, args: &[Value], kwargs: &[(Rc<str>, Value)]) -> bool {
        let holds_arrays = |v: &Value| {
            matches!(
                v,
                Value::Array(_) | Value::List(_) | Value::Tuple(_) | Value::Dict(_)
            )
        };
        // (jax_debug_nans checks each operation as it runs: nothing is compiled.)
        self.auto.enabled
            && self.auto.tracing.is_none()
            && !crate::prim::debug_nans()
            && (args.iter().any(holds_arrays) || kwargs.iter().any(|(_, v)| holds_arrays(v)))
            && crate::transform::idle()
    }
}
