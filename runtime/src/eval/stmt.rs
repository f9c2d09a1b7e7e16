//! Statements: blocks, control flow, loops (`for` over `progress(...)`
//! included), and assignment to every kind of target.

use super::expr::seq_index;
use super::{Flow, Frame, Interp, Iter};
use crate::code::*;
use crate::display;
use crate::error::{Error, ErrorKind, Result};
use crate::index;
use crate::jit::auto;
use crate::value::Value;

impl Interp {
    pub(super) fn exec_block(&mut self, stmts: &[Stmt], f: &mut Frame) -> Result<Flow> {
        for s in stmts {
            if crate::transform::graph::recording() {
                crate::transform::graph::set_source(&f.file, s.span);
            }
            match self.exec(s, f)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    #[inline]
    pub(super) fn exec(&mut self, s: &Stmt, f: &mut Frame) -> Result<Flow> {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.eval(e, f)?;
            }
            StmtKind::Assign(targets, value) => {
                let v = self.eval(value, f)?;
                if let [Target::Var(Var::Local(i), _)] = targets.as_slice() {
                    f.locals[*i as usize] = Some(v);
                } else if let [t] = targets.as_slice() {
                    self.assign(t, v, f)?;
                } else {
                    for t in targets {
                        self.assign(t, v.clone(), f)?;
                    }
                }
            }
            _ => return self.exec_other(s, f),
        }
        Ok(Flow::Normal)
    }

    /// Statements other than expressions and assignments (kept out of `exec`'s
    /// hot path so that it stays small).
    #[inline(never)]
    fn exec_other(&mut self, s: &Stmt, f: &mut Frame) -> Result<Flow> {
        match &s.kind {
            StmtKind::Expr(_) | StmtKind::Assign(..) => return self.exec(s, f),
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e, f)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::If(test, body, orelse) => {
                let t = self.eval(test, f)?;
                let t = t.truthy().map_err(|e| e.at(|| f.loc(test.span)))?;
                return self.exec_block(if t { body } else { orelse }, f);
            }
            StmtKind::While(test, body) => loop {
                self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                let t = self.eval(test, f)?;
                if !t.truthy().map_err(|e| e.at(|| f.loc(test.span)))? {
                    break;
                }
                match self.exec_block(body, f)? {
                    Flow::Break => break,
                    Flow::Return(v) => return Ok(Flow::Return(v)),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            StmtKind::For(target, iter, body) => {
                let it = self.eval(iter, f)?;
                if let Some(p) = crate::progress::of(&it) {
                    return self.for_progress(p, s, target, body, f);
                }
                let mut items = self.iterate(&it).map_err(|e| e.at(|| f.loc(iter.span)))?;
                // A loop over a range may be compiled once it is hot.
                let mut until_hot = match it {
                    Value::Range(_) if self.auto.enabled && self.auto.tracing.is_none() => {
                        self.auto.threshold
                    }
                    _ => 0,
                };
                while let Some(item) = items.next() {
                    self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                    self.assign(target, item, f)?;
                    match self.exec_block(body, f)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                    if until_hot > 0 {
                        until_hot -= 1;
                        if until_hot == 0
                            && items.has_next()
                            && self.run_loop_compiled(s, target, body, &mut items, f)?
                        {
                            break;
                        }
                    }
                }
            }
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Pass => {}
            StmtKind::Assert(test, msg) => {
                if !self
                    .eval(test, f)?
                    .truthy()
                    .map_err(|e| e.at(|| f.loc(test.span)))?
                {
                    let m = match msg {
                        Some(m) => display::str(&self.eval(m, f)?),
                        None => String::new(),
                    };
                    return Err(Error::new(ErrorKind::AssertionError, m).at(|| f.loc(s.span)));
                }
            }
            StmtKind::ClassDef(c) => {
                let decorators = self.eval_all(&c.decorators, f)?;
                let bases = self.eval_all(&c.bases, f)?;
                if let Some((k, _)) = c.keywords.first() {
                    return Err(Error::type_error(format!(
                        "class {}: the keyword '{k}' in the class header is not supported",
                        c.name
                    ))
                    .at(|| f.loc(s.span)));
                }
                let Value::Function(body) = self.eval(&c.body, f)? else {
                    unreachable!("a class body compiles to a function")
                };
                let namespace = self.run_class_body(&body)?;
                let mut v = self
                    .make_class(&c.name, c.doc.clone(), bases, namespace)
                    .map_err(|e| e.at(|| f.loc(s.span)))?;
                for d in decorators.iter().rev() {
                    v = self
                        .call(d, vec![v], Vec::new())
                        .map_err(|e| super::at_call(e, f.loc(s.span)))?;
                }
                self.assign(&c.target, v, f)?;
            }
            StmtKind::Raise(e) => {
                let m = match e {
                    Some(e) => display::str(&self.eval(e, f)?),
                    None => "exception raised".to_string(),
                };
                return Err(Error::new(ErrorKind::RuntimeError, m).at(|| f.loc(s.span)));
            }
        }
        Ok(Flow::Normal)
    }

    /// Store into a target. Plain variables are handled here, small enough to
    /// inline into the loops; unpacking and subscripts go to `assign_complex`.
    #[inline]
    pub(super) fn assign(&mut self, t: &Target, v: Value, f: &mut Frame) -> Result<()> {
        match t {
            Target::Var(Var::Local(i), _) => f.locals[*i as usize] = Some(v),
            Target::Var(Var::Cell(i), name) => {
                if self.auto.tracing.is_some() {
                    self.auto.write_cell(&f.cells[*i as usize], name)?;
                }
                *f.cells[*i as usize].borrow_mut() = Some(v)
            }
            Target::Var(Var::Global(id), name) => {
                if self.auto.tracing.is_some() {
                    self.auto.write_global(*id as usize, name)?;
                }
                self.store_global(*id as usize, v)
            }
            _ => return self.assign_complex(t, v, f),
        }
        Ok(())
    }

    #[inline(never)]
    fn assign_complex(&mut self, t: &Target, v: Value, f: &mut Frame) -> Result<()> {
        match t {
            Target::Var(..) => return self.assign(t, v, f),
            Target::Unpack(targets, star, span) => {
                let items: Vec<Value> = self
                    .iterate(&v)
                    .map_err(|e| e.at(|| f.loc(*span)))?
                    .collect();
                match star {
                    None => {
                        if items.len() != targets.len() {
                            let msg = if items.len() > targets.len() {
                                format!("too many values to unpack (expected {})", targets.len())
                            } else {
                                format!(
                                    "not enough values to unpack (expected {}, got {})",
                                    targets.len(),
                                    items.len()
                                )
                            };
                            return Err(Error::value_error(msg).at(|| f.loc(*span)));
                        }
                        for (t, item) in targets.iter().zip(items) {
                            self.assign(t, item, f)?;
                        }
                    }
                    Some(s) => {
                        let after = targets.len() - s - 1;
                        if items.len() < targets.len() - 1 {
                            return Err(Error::value_error(format!(
                                "not enough values to unpack (expected at least {}, got {})",
                                targets.len() - 1,
                                items.len()
                            ))
                            .at(|| f.loc(*span)));
                        }
                        let mut items = items;
                        let tail = items.split_off(items.len() - after);
                        let middle = items.split_off(*s);
                        for (t, item) in targets[..*s].iter().zip(items) {
                            self.assign(t, item, f)?;
                        }
                        self.assign(&targets[*s], Value::list(middle), f)?;
                        for (t, item) in targets[s + 1..].iter().zip(tail) {
                            self.assign(t, item, f)?;
                        }
                    }
                }
            }
            Target::Subscript {
                obj,
                store,
                index,
                span,
            } => {
                let container = self.eval(obj, f)?;
                let idx = self.eval(index, f)?;
                let loc = || f.loc(*span);
                if self.auto.tracing.is_some() {
                    self.auto
                        .mutate(&container, "assigns an item of")
                        .map_err(|e| e.at(loc))?;
                }
                match &container {
                    Value::List(l) => {
                        let n = l.borrow().len();
                        let i = seq_index(&idx, n).map_err(|e| e.at(loc))?;
                        l.borrow_mut()[i] = v;
                    }
                    Value::Dict(d) => {
                        let k = idx.to_key().map_err(|e| e.at(loc))?;
                        d.borrow_mut().insert(k, v);
                    }
                    Value::Array(a) => {
                        let updated = index::set_index(a, &idx, &v).map_err(|e| e.at(loc))?;
                        match store {
                            Some(t) => self.assign(t, Value::Array(updated), f)?,
                            None => {
                                return Err(Error::type_error(
                                    "cannot update an array that is not stored in a variable",
                                )
                                .at(loc))
                            }
                        }
                    }
                    other => {
                        return Err(Error::type_error(format!(
                            "'{}' object does not support item assignment",
                            other.type_name()
                        ))
                        .at(loc))
                    }
                }
            }
            Target::Attribute { obj, attr, span } => {
                let o = self.eval(obj, f)?;
                // Setting an attribute is an effect automatic JIT does not record.
                if self.auto.tracing.is_some() {
                    return Err(auto::not_pure("assigns an attribute"));
                }
                self.set_attr(&o, attr, v)
                    .map_err(|e| e.at(|| f.loc(*span)))?;
            }
        }
        Ok(())
    }

    /// `for x in progress(xs)`: the loop reports each finished item. It is
    /// never compiled automatically (reporting is an effect), so each body
    /// runs in the interpreter, as it does for any non-range loop.
    #[inline(never)]
    fn for_progress(
        &mut self,
        p: &crate::progress::ProgressValue,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        // A progress value made outside and passed into code being traced
        // for automatic JIT: reporting is an effect, so the code stays interpreted.
        if self.auto.tracing.is_some() {
            return Err(auto::not_pure("loops over progress(...), which reports"));
        }
        let mut items = self.iterate(&p.inner)?;
        let total = p.total.or_else(|| items.remaining().map(|n| n as u64));
        let mut reporter = crate::progress::Reporter::start(self, total, p.desc.clone());
        let flow = self.progress_loop(&mut items, &mut reporter, s, target, body, f);
        // Finished on every way out: the end, `break`, `return`, an error.
        reporter.finish(self);
        flow
    }

    fn progress_loop(
        &mut self,
        items: &mut Iter,
        reporter: &mut crate::progress::Reporter,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        for item in items {
            self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
            self.assign(target, item, f)?;
            match self.exec_block(body, f)? {
                Flow::Break => break,
                Flow::Return(v) => return Ok(Flow::Return(v)),
                Flow::Normal | Flow::Continue => {}
            }
            reporter.step(self);
        }
        Ok(Flow::Normal)
    }
}
