//! Statements: blocks, control flow, loops (`for` over `progress(...)`
//! included), and assignment to every kind of target.

use super::expr::seq_index;
use super::{Cursor, Flow, Frame, Interp};
use crate::code::*;
use crate::display;
use crate::error::{Error, ErrorKind, Result};
use crate::exception;
use crate::index;
use crate::jit::auto;
use crate::numpy;
use crate::value::Value;
use arr_kernels::Flavour;

/// JAX's error for `x[i] = v` on one of its arrays (word for word).
const JAX_IMMUTABLE: &str = "JAX arrays are immutable and do not support in-place item \
    assignment. Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: \
    https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html";

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
            StmtKind::While(test, body, orelse) => loop {
                self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                let t = self.eval(test, f)?;
                if !t.truthy().map_err(|e| e.at(|| f.loc(test.span)))? {
                    return self.exec_block(orelse, f);
                }
                match self.exec_block(body, f)? {
                    Flow::Break => break,
                    Flow::Return(v) => return Ok(Flow::Return(v)),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            StmtKind::For(target, iter, body, orelse) => {
                let it = self.eval(iter, f)?;
                if let Some(p) = crate::progress::of(&it) {
                    return match self.for_progress(p, s, target, body, f)? {
                        Flow::Break => Ok(Flow::Normal),
                        Flow::Normal => self.exec_block(orelse, f),
                        flow => Ok(flow),
                    };
                }
                let mut items = self.iterate(&it).map_err(|e| e.at(|| f.loc(iter.span)))?;
                // A loop over a range may be compiled once it is hot (not
                // one with an `else`, which must know how the loop ended).
                let mut until_hot = match it {
                    Value::Range(_)
                        if self.auto.enabled
                            && orelse.is_empty()
                            && self.auto.tracing.is_none()
                            && !crate::prim::debug_nans() =>
                    {
                        self.auto.threshold
                    }
                    _ => 0,
                };
                while let Some(item) = self
                    .next_item(&mut items)
                    .map_err(|e| e.at(|| f.loc(iter.span)))?
                {
                    self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                    self.assign(target, item, f)?;
                    match self.exec_block(body, f)? {
                        Flow::Break => return Ok(Flow::Normal),
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                    if until_hot > 0 {
                        until_hot -= 1;
                        if let Cursor::Plain(range) = &mut items {
                            if until_hot == 0
                                && range.has_next()
                                && self.run_loop_compiled(s, target, body, range, f)?
                            {
                                break;
                            }
                        }
                    }
                }
                return self.exec_block(orelse, f);
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
                // The header's keywords go to the parent's `__init_subclass__`.
                // A `metaclass` that is a class lends its methods to the
                // class's own protocols (`for m in Color`, `Color(1)`,
                // `len(Color)`: `Interp::method_of`); `type` and
                // `abc.ABCMeta` add nothing arr needs.
                let mut keywords = Vec::new();
                let mut metaclass = None;
                for (k, e) in &c.keywords {
                    let v = self.eval(e, f)?;
                    match (&**k, &v) {
                        ("metaclass", Value::Class(_)) => metaclass = Some(v),
                        ("metaclass", _) => {}
                        _ => keywords.push((k.clone(), v)),
                    }
                }
                let Value::Function(body) = self.eval(&c.body, f)? else {
                    unreachable!("a class body compiles to a function")
                };
                let mut namespace = self.run_class_body(&body)?;
                if let Some(meta) = metaclass {
                    namespace.push((std::rc::Rc::from(crate::class::METACLASS), meta));
                }
                let mut v = self
                    .make_class(&c.name, c.doc.clone(), bases, namespace)
                    .and_then(|v| self.init_subclass(&v, keywords).map(|()| v))
                    .map_err(|e| super::at_call(e, f.loc(s.span)))?;
                for d in decorators.iter().rev() {
                    v = self
                        .call(d, vec![v], Vec::new())
                        .map_err(|e| super::at_call(e, f.loc(s.span)))?;
                }
                self.assign(&c.target, v, f)?;
            }
            StmtKind::Raise(e, cause) => {
                let Some(e) = e else {
                    // A bare `raise` raises the exception being handled, as it was.
                    return Err(self.handling.last().cloned().unwrap_or_else(|| {
                        Error::new(ErrorKind::RuntimeError, "No active exception to reraise")
                            .at(|| f.loc(s.span))
                    }));
                };
                let v = self.eval(e, f)?;
                let cause = match cause {
                    Some(c) => Some(self.eval(c, f)?),
                    None => None,
                };
                let err = exception::raise(v, cause).unwrap_or_else(|e| e);
                return Err(err.at(|| f.loc(s.span)));
            }
            StmtKind::Try(t) => return self.exec_try(t, f),
            StmtKind::With(items, body) => {
                if self.auto.tracing.is_some() {
                    return Err(auto::not_pure(
                        "a with statement, which calls __enter__ and __exit__",
                    ));
                }
                return self.exec_with(items, body, f);
            }
            StmtKind::Delete(targets) => {
                if self.auto.tracing.is_some() {
                    return Err(auto::not_pure("a del statement"));
                }
                for t in targets {
                    self.delete(t, f)?;
                }
            }
            StmtKind::ImportStar(path) => {
                self.import_star(path).map_err(|e| e.at(|| f.loc(s.span)))?
            }
        }
        Ok(Flow::Normal)
    }

    /// `try`: the handlers see an error of the body, `else` runs after a
    /// body that ended normally, `finally` on every way out (its own
    /// `return`, `break` or error replaces the way out).
    fn exec_try(&mut self, t: &Try, f: &mut Frame) -> Result<Flow> {
        // A handler could catch the tracer's own refusals (a traced `if`):
        // automatic JIT leaves such code to the interpreter.
        if self.auto.tracing.is_some() {
            return Err(auto::not_pure("a try statement"));
        }
        let mut result = match self.exec_block(&t.body, f) {
            Ok(Flow::Normal) => self.exec_block(&t.orelse, f),
            Err(e) => self.handle(t, e, f),
            other => other,
        };
        if !t.finalbody.is_empty() {
            // The exception stays "being handled" in `finally` only for a bare raise there.
            let pending = result.as_ref().err().cloned();
            if let Some(e) = &pending {
                self.handling.push(e.clone());
            }
            let fin = self.exec_block(&t.finalbody, f);
            if pending.is_some() {
                self.handling.pop();
            }
            match fin {
                Ok(Flow::Normal) => {}
                other => result = other,
            }
        }
        result
    }

    /// Run the first handler that matches `e`, or give `e` back.
    fn handle(&mut self, t: &Try, e: Error, f: &mut Frame) -> Result<Flow> {
        let Some(k) = self.handler_for(t, &e, f)? else {
            return Err(e);
        };
        let h = &t.handlers[k];
        if let Some(name) = &h.name {
            self.assign(name, exception::instance_of_error(&e), f)?;
        }
        self.handling.push(e);
        let result = self.exec_block(&h.body, f);
        self.handling.pop();
        // As in Python, the name is unbound when the handler ends.
        if let Some(name) = &h.name {
            self.unbind(name, f);
        }
        result
    }

    /// The first handler of `t` that catches `e`, if one does.
    pub(super) fn handler_for(
        &mut self,
        t: &Try,
        e: &Error,
        f: &mut Frame,
    ) -> Result<Option<usize>> {
        for (k, h) in t.handlers.iter().enumerate() {
            let caught = match &h.typ {
                None => true,
                Some(typ) => {
                    let class = self.eval(typ, f)?;
                    exception::matches(e, &class).map_err(|err| err.at(|| f.loc(typ.span)))?
                }
            };
            if caught {
                if e.kind == ErrorKind::KeyboardInterrupt {
                    // Handled: the program goes on, so the request is spent.
                    self.interrupt
                        .store(false, std::sync::atomic::Ordering::Relaxed);
                }
                return Ok(Some(k));
            }
        }
        Ok(None)
    }

    /// `with a as x, b:` — each manager's `__enter__` before the body and
    /// its `__exit__` after, innermost first; an `__exit__` that returns a
    /// true value swallows the exception.
    fn exec_with(
        &mut self,
        items: &[(Expr, Option<Target>)],
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        let mut exits = Vec::new();
        let r = match self.enter_contexts(items, &mut exits, f) {
            Ok(()) => self.exec_block(body, f),
            Err(e) => Err(e),
        };
        self.leave_contexts(exits, r, f, || Flow::Normal)
    }

    /// Enter the contexts of a `with`, left to right, binding their targets;
    /// `exits` gets the `__exit__` (and place) of each one entered, also
    /// when a later one fails.
    pub(super) fn enter_contexts(
        &mut self,
        items: &[(Expr, Option<Target>)],
        exits: &mut Vec<(Value, arr_lang::Span)>,
        f: &mut Frame,
    ) -> Result<()> {
        for (context, target) in items {
            let loc = |f: &Frame| f.loc(context.span);
            let mgr = self.eval(context, f)?;
            let method = |interp: &mut Self, name: &str| {
                interp.attr(&mgr, name).map_err(|_| {
                    Error::type_error(format!(
                        "'{}' object does not support the context manager protocol (missing {name})",
                        mgr.type_name()
                    ))
                })
            };
            let exit = method(self, "__exit__").map_err(|e| e.at(|| loc(f)))?;
            let enter = method(self, "__enter__").map_err(|e| e.at(|| loc(f)))?;
            let entered = self
                .call(&enter, Vec::new(), Vec::new())
                .map_err(|e| e.at(|| loc(f)))?;
            exits.push((exit, context.span));
            if let Some(t) = target {
                self.assign(t, entered, f)?;
            }
        }
        Ok(())
    }

    /// Leave entered contexts, innermost first: each `__exit__` sees the
    /// error the inner ones left (and may swallow it: the way out is then
    /// `swallowed()`), or Nones.
    pub(super) fn leave_contexts<T>(
        &mut self,
        exits: Vec<(Value, arr_lang::Span)>,
        mut r: Result<T>,
        f: &Frame,
        swallowed: impl Fn() -> T,
    ) -> Result<T> {
        for (exit, span) in exits.into_iter().rev() {
            let loc = || f.loc(span);
            r = match r {
                Ok(flow) => {
                    let none = vec![Value::None, Value::None, Value::None];
                    // An error of an inner `__exit__` goes to the outer ones.
                    match self.call(&exit, none, Vec::new()) {
                        Ok(_) => Ok(flow),
                        Err(e) => Err(e.at(loc)),
                    }
                }
                Err(e) => {
                    let args = vec![
                        exception::class_of(&e),
                        exception::instance_of_error(&e),
                        Value::None,
                    ];
                    self.handling.push(e.clone());
                    let swallow = self.call(&exit, args, Vec::new());
                    self.handling.pop();
                    match swallow.and_then(|v| v.truthy()) {
                        Ok(true) => {
                            if e.kind == ErrorKind::KeyboardInterrupt {
                                self.interrupt
                                    .store(false, std::sync::atomic::Ordering::Relaxed);
                            }
                            Ok(swallowed())
                        }
                        Ok(false) => Err(e),
                        Err(raised) => Err(raised.at(loc)),
                    }
                }
            };
        }
        r
    }

    /// Make a variable unbound (the end of an `except ... as name`).
    pub(super) fn unbind(&mut self, t: &Target, f: &mut Frame) {
        match t {
            Target::Var(Var::Local(i), _) => f.locals[*i as usize] = None,
            Target::Var(Var::Cell(i), _) => *f.cells[*i as usize].borrow_mut() = None,
            Target::Var(Var::Global(id), _) => {
                if let Some(slot) = self.globals.get_mut(*id as usize) {
                    *slot = None;
                }
            }
            Target::Var(Var::Builtin(id), _) => {
                if let Some(slot) = self.builtins.get_mut(*id as usize) {
                    *slot = None;
                }
            }
            _ => {}
        }
    }

    /// `del target`: a variable becomes unbound, a list item or dict key goes.
    fn delete(&mut self, t: &Target, f: &mut Frame) -> Result<()> {
        match t {
            Target::Var(var, name) => {
                let bound = match var {
                    Var::Local(i) => f.locals[*i as usize].is_some(),
                    Var::Cell(i) => f.cells[*i as usize].borrow().is_some(),
                    Var::Global(id) => matches!(self.globals.get(*id as usize), Some(Some(_))),
                    Var::Builtin(id) => matches!(self.builtins.get(*id as usize), Some(Some(_))),
                };
                if !bound {
                    let err = match var {
                        Var::Global(_) | Var::Builtin(_) => Error::new(
                            ErrorKind::NameError,
                            format!("name '{name}' is not defined"),
                        ),
                        _ => Error::new(
                            ErrorKind::NameError,
                            format!("local variable '{name}' referenced before assignment"),
                        )
                        .as_class("UnboundLocalError"),
                    };
                    return Err(err);
                }
                self.unbind(t, f);
            }
            Target::Unpack(targets, _, _) => {
                for t in targets {
                    self.delete(t, f)?;
                }
            }
            Target::Subscript {
                obj, index, span, ..
            } => {
                let container = self.eval(obj, f)?;
                let idx = self.eval(index, f)?;
                let loc = || f.loc(*span);
                match &container {
                    Value::List(l) => {
                        let n = l.borrow().len();
                        let i = seq_index(&idx, n).map_err(|e| e.at(loc))?;
                        l.borrow_mut().remove(i);
                    }
                    Value::Dict(d) => {
                        let k = idx.to_key().map_err(|e| e.at(loc))?;
                        if d.borrow_mut().shift_remove(&k).is_none() {
                            return Err(exception::key_error(&idx).at(loc));
                        }
                    }
                    other => {
                        return Err(Error::type_error(format!(
                            "'{}' object does not support item deletion",
                            other.type_name()
                        ))
                        .at(loc))
                    }
                }
            }
            Target::Attribute { obj, attr, span } => {
                let o = self.eval(obj, f)?;
                self.del_attr(&o, attr).map_err(|e| e.at(|| f.loc(*span)))?;
            }
        }
        Ok(())
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
            // The library's module-level names: bound when it loads, out of
            // the loops' way.
            Target::Var(Var::Builtin(id), _) => self.store_builtin(*id as usize, v),
            Target::Var(..) => return self.assign(t, v, f),
            Target::Unpack(targets, star, span) => {
                let items: Vec<Value> = self.items(&v).map_err(|e| e.at(|| f.loc(*span)))?;
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
                        // A NumPy array stays one; a read-only view (`np.asarray`
                        // of a JAX array) refuses the write, as NumPy does.
                        let flavour = a.as_concrete().map_or(Flavour::Jax, |c| c.flavour());
                        if flavour == (Flavour::NumPy { writeable: false }) {
                            return Err(
                                Error::value_error("assignment destination is read-only").at(loc)
                            );
                        }
                        // `x[i] = v` is arr's convenience; a program that
                        // imported JAX gets JAX's immutability error (its
                        // documentation catches it), NumPy arrays stay mutable.
                        // (The standard library's own code keeps the convenience.)
                        if self.jax_rules
                            && !matches!(flavour, Flavour::NumPy { .. })
                            && !crate::transform::graph::is_stdlib_source(&f.file.name)
                        {
                            return Err(Error::type_error(JAX_IMMUTABLE).at(loc));
                        }
                        let updated = index::set_index(a, &idx, &v).map_err(|e| e.at(loc))?;
                        let updated = numpy::with_flavour(Value::Array(updated), flavour);
                        match store {
                            Some(t) => self.assign(t, updated, f)?,
                            None => {
                                return Err(Error::type_error(
                                    "cannot update an array that is not stored in a variable",
                                )
                                .at(loc))
                            }
                        }
                    }
                    Value::Instance(i) if i.class.lookup("__setitem__").is_some() => {
                        let method = self
                            .attr(&container, "__setitem__")
                            .map_err(|e| e.at(loc))?;
                        self.call(&method, vec![idx, v], Vec::new())
                            .map_err(|e| e.at(loc))?;
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
        let total = p.total.or_else(|| match &items {
            Cursor::Plain(known) => known.remaining().map(|n| n as u64),
            Cursor::Next(_) => None,
        });
        let mut reporter = crate::progress::Reporter::start(self, total, p.desc.clone());
        let flow = self.progress_loop(&mut items, &mut reporter, s, target, body, f);
        // Finished on every way out: the end, `break`, `return`, an error.
        reporter.finish(self);
        flow
    }

    fn progress_loop(
        &mut self,
        items: &mut Cursor,
        reporter: &mut crate::progress::Reporter,
        s: &Stmt,
        target: &Target,
        body: &[Stmt],
        f: &mut Frame,
    ) -> Result<Flow> {
        while let Some(item) = self.next_item(items)? {
            self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
            self.assign(target, item, f)?;
            match self.exec_block(body, f)? {
                Flow::Break => return Ok(Flow::Break),
                Flow::Return(v) => return Ok(Flow::Return(v)),
                Flow::Normal | Flow::Continue => {}
            }
            reporter.step(self);
        }
        Ok(Flow::Normal)
    }
}
