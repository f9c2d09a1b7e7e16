//! Calls: of user functions (argument binding, frames, recursion depth, a
//! growing stack), builtins (their effects under automatic JIT), native
//! closures, bound methods and dtypes.

use super::{Cell, Flow, Frame, Interp};
use crate::builtin::{bind_args, Builtin, Effect};
use crate::error::{Error, ErrorKind, Result};
use crate::jit::auto;
use crate::numpy;
use crate::value::{Function, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Maximum depth of nested arr calls before a RecursionError.
pub(super) const MAX_DEPTH: usize = 2000;
/// Grow the stack when less than this is left before an arr call...
pub(super) const STACK_RED_ZONE: usize = 256 * 1024;
/// ...by segments of this size.
pub(super) const STACK_SEGMENT: usize = 4 * 1024 * 1024;

impl Interp {
    /// Call any callable value with positional and keyword arguments.
    pub fn call(
        &mut self,
        fv: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        self.check_interrupt()?;
        match fv {
            Value::Function(func) => self.call_function(func, args, kwargs),
            Value::Builtin(b) => {
                let r = self.call_builtin(b, args, kwargs);
                self.run_debug_callbacks(r)
            }
            Value::Native(n) => {
                if n.transform.is_some() && self.auto_jit_candidate(&args, &kwargs) {
                    let name = n.name.clone();
                    let compiled = auto::call(
                        self,
                        fv,
                        &args,
                        &kwargs,
                        || format!("function {name}"),
                        |interp, a, k| (n.f)(interp, a, k),
                    );
                    match compiled {
                        Ok(None) => {}
                        Ok(Some(v)) => return self.run_debug_callbacks(Ok(v)),
                        Err(e) => return self.run_debug_callbacks(Err(e)),
                    }
                }
                let r = (n.f)(self, args, kwargs);
                self.run_debug_callbacks(r)
            }
            Value::BoundMethod(m) => {
                let (recv, method) = &**m;
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(recv.clone());
                all.extend(args);
                // A NumPy array's methods give NumPy arrays (`n.sum()`),
                // with NumPy's 64-bit defaults (`n.mean()` of ints is float64).
                let _numpy = numpy::is_ndarray(recv).then(|| numpy::numpy_defaults(true));
                Ok(numpy::like_operand(recv, self.call(method, all, kwargs)?))
            }
            Value::Class(c) => match self.method_of(fv, "__call__") {
                // A metaclass's `__call__` (an enum's `Color(1)`).
                Some(m) => self.call(&m, args, kwargs),
                None => self.instantiate(c, args, kwargs),
            },
            Value::Instance(i) => match i.class.lookup("__call__") {
                Some(m) => {
                    let mut all = Vec::with_capacity(args.len() + 1);
                    all.push(fv.clone());
                    all.extend(args);
                    self.call(&m, all, kwargs)
                }
                None => Err(Error::type_error(format!(
                    "'{}' object is not callable",
                    i.class.name
                ))),
            },
            Value::DType(d) => {
                if args.len() != 1 || !kwargs.is_empty() {
                    return Err(Error::type_error(format!(
                        "{}() takes one argument",
                        d.name()
                    )));
                }
                Ok(Value::Array(numpy::to_array_as(&args[0], *d)?))
            }
            Value::Object(o) => match o.call(self, fv, args, kwargs) {
                Some(r) => r,
                None => Err(Error::type_error(format!(
                    "'{}' object is not callable",
                    o.type_name()
                ))),
            },
            other => Err(Error::type_error(format!(
                "'{}' object is not callable",
                other.type_name()
            ))),
        }
    }

    /// After a builtin or native function returned: run the debug callbacks
    /// its primitives queued (`prim::debug`), so that what they print comes
    /// before anything the program does next. The call's own error wins.
    #[inline]
    fn run_debug_callbacks(&mut self, r: Result<Value>) -> Result<Value> {
        if !crate::prim::debug::pending() {
            return r;
        }
        let ran = crate::prim::debug::run_pending(self);
        let v = r?;
        ran?;
        Ok(v)
    }

    pub fn call_builtin(
        &mut self,
        b: &Builtin,
        args: Vec<Value>,
        mut kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        // JAX's `out_sharding=` on any array function (creation, random,
        // products): the result laid out as asked; meanwhile no split of
        // the operands is ambiguous. A builtin that takes `out_sharding`
        // or any keyword (`partial(f, out_sharding=...)`) gets it as given.
        if let Some(i) = kwargs.iter().position(|(k, _)| &**k == "out_sharding") {
            let takes = b.params.iter().any(|p| {
                &*p.name == "out_sharding" || p.kind == arr_lang::ast::ParamKind::VarKwargs
            });
            if !takes {
                let sharding = kwargs.remove(i).1;
                let out = crate::prim::layout::leniently(|| self.call_builtin(b, args, kwargs))?;
                return crate::sharding::lay_out(&out, &sharding, &b.name);
            }
        }
        if b.effect != Effect::Pure && self.auto.tracing.is_some() {
            match b.effect {
                Effect::MutatesReceiver => {
                    if let Some(receiver) = args.first() {
                        self.auto
                            .mutate(receiver, &format!("calls {} on", b.name))?;
                    }
                }
                _ => {
                    return Err(auto::not_pure(format!(
                        "calls {}, which has an effect",
                        b.name
                    )))
                }
            }
        }
        let bound = bind_args(&b.name, &b.params, &b.defaults, args, kwargs)?;
        (b.func)(self, bound)
    }

    fn call_function(
        &mut self,
        func: &Rc<Function>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Result<Value> {
        let code = &func.code;
        let bound = bind_args(&code.qualname, &code.params, &func.defaults, args, kwargs)?;
        if !code.generator && self.auto_jit_candidate(&bound, &[]) {
            let region = || format!("function {} ({})", code.name, code.file.location(code.span));
            let compiled = auto::call(
                self,
                &Value::Function(func.clone()),
                &bound,
                &[],
                region,
                |interp, args, _| interp.run_function(func, args),
            )?;
            if let Some(v) = compiled {
                return Ok(v);
            }
        }
        crate::transform::graph::in_callee(|| self.run_function(func, bound))
    }

    /// Run a class body (a function of no parameters) and return the
    /// names it bound, in the order they were first assigned.
    pub(super) fn run_class_body(&mut self, func: &Function) -> Result<Vec<(Rc<str>, Value)>> {
        let code = &func.code;
        let mut cells: Vec<Cell> = (0..code.own_cells)
            .map(|_| Rc::new(RefCell::new(None)))
            .collect();
        cells.extend(func.free_cells.iter().cloned());
        let mut frame = Frame {
            locals: vec![None; code.local_names.len()],
            cells,
            file: code.file.clone(),
            func: code.name.clone(),
        };
        if self.depth >= MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded",
            ));
        }
        self.depth += 1;
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.exec_block(&code.body, &mut frame)
        });
        self.depth -= 1;
        r?;
        Ok(code
            .local_names
            .iter()
            .zip(frame.locals)
            .filter_map(|(name, v)| Some((name.clone(), v?)))
            .collect())
    }

    /// Run a function's body on bound arguments.
    fn run_function(&mut self, func: &Function, bound: Vec<Value>) -> Result<Value> {
        let code = &func.code;
        if self.depth >= MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded",
            ));
        }
        let mut locals = vec![None; code.local_names.len()];
        let mut cells: Vec<Cell> = (0..code.own_cells)
            .map(|_| Rc::new(RefCell::new(None)))
            .collect();
        if self.auto.tracing.is_some() {
            self.auto.fresh_cells(&cells);
        }
        cells.extend(func.free_cells.iter().cloned());
        for (i, v) in bound.into_iter().enumerate() {
            locals[i] = Some(v);
        }
        for &(p, c) in &code.param_cells {
            *cells[c].borrow_mut() = locals[p].take();
        }
        let mut frame = Frame {
            locals,
            cells,
            file: code.file.clone(),
            func: code.name.clone(),
        };
        if code.generator && code.resumable {
            // The body runs at the generator's first `next`.
            return Ok(self.make_generator(code.clone(), frame));
        }
        self.depth += 1;
        if code.generator {
            // A body whose yields cannot all be suspended at (`code::resumable`)
            // runs to its end when called, keeping what it yields. Consumers
            // see the same items in the same order; side effects happen at
            // the call, and a generator that never ends runs until interrupted
            // or out of memory.
            self.yielded.push(Vec::new());
        }
        // Deep arr recursion must not overflow the Rust stack of whatever
        // thread runs the session: grow it on the heap when it runs low.
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.exec_block(&code.body, &mut frame)
        });
        self.depth -= 1;
        if code.generator {
            let items = self.yielded.pop().expect("pushed above");
            r?;
            return Ok(super::IterValue::generator(items));
        }
        match r? {
            Flow::Return(v) => Ok(v),
            _ => Ok(Value::None),
        }
    }
}
