//! Generators: calling a generator function gives a `Generator`, whose body
//! runs up to its next `yield` at each `next`, `send` or `throw`.
//!
//! The evaluator keeps its frames on the Rust stack, so a suspended body
//! cannot be a suspended Rust call. A generator keeps its frame and a
//! *path* instead: for each statement with a `yield` inside that it is in,
//! from the body inwards, the statement's index in its block and its own
//! state (the branch an `if` took, a loop's iterator, the phase of a `try`
//! and the outcome it carries, a `with`'s `__exit__`s). Resuming walks the
//! path back down to the `yield` it stopped at. Statements without a `yield`
//! run as everywhere else (`Interp::exec`), at full speed. A body with a
//! `yield` elsewhere in an expression (`code::resumable`) runs to its end at
//! the call instead, keeping what it yields (`call.rs`).

use super::{Cursor, Flow, Frame, Interp};
use crate::code::*;
use crate::error::{Error, ErrorKind, Result};
use crate::exception;
use crate::value::{Object, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// What a generator is resumed with: the value of the `yield` it stopped
/// at, or an error raised there.
pub enum Input {
    Send(Value),
    Throw(Error),
}

/// How a resumption ended: at a `yield`, or with the body's end (its
/// `return` value).
pub enum Resumed {
    Yield(Value),
    Return(Value),
}

/// What a generator function's call returns.
pub struct Generator {
    name: Rc<str>,
    state: RefCell<State>,
}

enum State {
    /// Not started yet, or suspended at a `yield`.
    Ready(Box<Suspended>),
    Running,
    Done,
}

struct Suspended {
    code: Rc<FuncCode>,
    frame: Frame,
    /// Where the body stopped: one point per enclosing statement.
    path: Vec<Point>,
    started: bool,
}

/// A statement on the way to the `yield` a generator stopped at.
struct Point {
    /// Its index in its block.
    index: usize,
    at: At,
}

/// The state of a statement a generator is inside.
enum At {
    /// `yield x` or `v = yield x`, waiting for the value it evaluates to.
    Yield,
    /// `yield from xs`, passing on the items of xs.
    YieldFrom(Cursor),
    /// An `if` and the branch it took.
    Branch(bool),
    /// A `for` loop (with its iterator) or a `while` loop (without); `orelse`
    /// once its `else` block runs.
    Loop {
        items: Option<Cursor>,
        orelse: bool,
    },
    Try(TryPhase),
    /// A `with`: the `__exit__` of each context entered, outermost first.
    With(Vec<(Value, arr_lang::Span)>),
}

/// Where a `try` is: its body, a handler (with the error it caught), the
/// `else` block, or `finally` (with the outcome it passes on).
enum TryPhase {
    Body,
    Handler(usize, Error),
    Else,
    Finally(Result<Step>),
}

/// How a statement of a generator body ended: as `Flow`, or at a `yield`.
enum Step {
    Normal,
    Break,
    Continue,
    Return(Value),
    Yield(Value),
}

impl From<Flow> for Step {
    fn from(f: Flow) -> Step {
        match f {
            Flow::Normal => Step::Normal,
            Flow::Break => Step::Break,
            Flow::Continue => Step::Continue,
            Flow::Return(v) => Step::Return(v),
        }
    }
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<generator object {}>", self.name)
    }
}

impl Object for Generator {
    fn type_name(&self) -> &'static str {
        "generator"
    }
    fn repr(&self) -> String {
        format!("<generator object {}>", self.name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The generator `v` holds, if it is one.
pub fn generator_of(v: &Value) -> Option<&Generator> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Generator>(),
        _ => None,
    }
}

/// The error `next` raises at the end of an iterator: StopIteration,
/// carrying a generator's return value as `e.value` does in Python.
pub fn stop_iteration(value: Value) -> Error {
    let class = exception::class("StopIteration");
    let args = if matches!(value, Value::None) {
        Vec::new()
    } else {
        vec![value]
    };
    exception::instantiate(&class, args)
        .and_then(|e| exception::raise(e, None))
        .unwrap_or_else(|e| e)
}

/// Whether `e` is a StopIteration (the end of an iterator's items).
pub fn is_stop_iteration(e: &Error) -> bool {
    exception::matches(e, &exception::class("StopIteration")).unwrap_or(false)
}

impl Interp {
    /// The generator a call of `code` gives, over its bound `frame`.
    pub(super) fn make_generator(&mut self, code: Rc<FuncCode>, frame: Frame) -> Value {
        let gen = Value::object(Generator {
            name: code.name.clone(),
            state: RefCell::new(State::Ready(Box::new(Suspended {
                code,
                frame,
                path: Vec::new(),
                started: false,
            }))),
        });
        if self.auto.tracing.is_some() {
            let id = generator_of(&gen).map_or(0, |g| g as *const Generator as usize);
            self.auto.fresh_generator(id);
        }
        gen
    }

    /// Run `gen` to its next `yield` (or its end). An error of the body
    /// finishes the generator and leaves here.
    pub fn resume(&mut self, gen: &Generator, input: Input) -> Result<Resumed> {
        // Compiled code replays what a generator made during the trace
        // yields; one made before would not be advanced by it.
        if self.auto.tracing.is_some() {
            self.auto.step_generator(gen as *const Generator as usize)?;
        }
        if self.depth >= super::call::MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded",
            ));
        }
        let previous = std::mem::replace(&mut *gen.state.borrow_mut(), State::Running);
        let mut s = match previous {
            State::Ready(s) => s,
            State::Running => {
                return Err(Error::value_error("generator already executing"));
            }
            State::Done => {
                *gen.state.borrow_mut() = State::Done;
                return match input {
                    Input::Send(_) => Ok(Resumed::Return(Value::None)),
                    Input::Throw(e) => Err(e),
                };
            }
        };
        if !s.started {
            match input {
                Input::Send(Value::None) => {}
                Input::Send(_) => {
                    *gen.state.borrow_mut() = State::Ready(s);
                    return Err(Error::type_error(
                        "can't send non-None value to a just-started generator",
                    ));
                }
                // Thrown in before the body began: the body never runs.
                Input::Throw(e) => {
                    *gen.state.borrow_mut() = State::Done;
                    return Err(e);
                }
            }
            s.started = true;
        }
        // A fresh body has no `yield` waiting for the input.
        let mut input = (!s.path.is_empty()).then_some(input);
        let code = s.code.clone();
        self.depth += 1;
        let r = stacker::maybe_grow(
            super::call::STACK_RED_ZONE,
            super::call::STACK_SEGMENT,
            || self.run_gen(&code.body, &mut s.frame, &mut s.path, 0, &mut input),
        );
        self.depth -= 1;
        let (state, out) = match r {
            Ok(Step::Yield(v)) => (State::Ready(s), Ok(Resumed::Yield(v))),
            Ok(Step::Return(v)) => (State::Done, Ok(Resumed::Return(v))),
            Ok(_) => (State::Done, Ok(Resumed::Return(Value::None))),
            Err(e) => (State::Done, Err(e)),
        };
        *gen.state.borrow_mut() = state;
        out
    }

    /// `gen.close()`: GeneratorExit raised at the `yield` it stopped at, so
    /// that its `finally` blocks and context managers run.
    pub fn close_generator(&mut self, gen: &Generator) -> Result<()> {
        let suspended = matches!(&*gen.state.borrow(), State::Ready(s) if s.started);
        if !suspended {
            *gen.state.borrow_mut() = State::Done;
            return Ok(());
        }
        let exit = exception::raise(exception::class("GeneratorExit"), None).unwrap_or_else(|e| e);
        match self.resume(gen, Input::Throw(exit)) {
            Ok(Resumed::Yield(_)) => {
                *gen.state.borrow_mut() = State::Done;
                Err(Error::new(
                    ErrorKind::RuntimeError,
                    "generator ignored GeneratorExit",
                ))
            }
            Ok(Resumed::Return(_)) => Ok(()),
            Err(e)
                if is_stop_iteration(&e)
                    || exception::matches(&e, &exception::class("GeneratorExit"))
                        .unwrap_or(false) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Run `block` from the start, or from where `path[depth]` says the
    /// body stopped.
    fn run_gen(
        &mut self,
        block: &[Stmt],
        f: &mut Frame,
        path: &mut Vec<Point>,
        depth: usize,
        input: &mut Option<Input>,
    ) -> Result<Step> {
        let start = path.get(depth).map_or(0, |p| p.index);
        for (index, s) in block.iter().enumerate().skip(start) {
            if crate::transform::graph::recording() {
                crate::transform::graph::set_source(&f.file, s.span);
            }
            let step = if s.yields == 0 {
                self.exec(s, f)?.into()
            } else {
                self.gen_stmt(s, index, f, path, depth, input)?
            };
            if !matches!(step, Step::Normal) {
                return Ok(step);
            }
        }
        Ok(Step::Normal)
    }

    /// A statement with a `yield` inside: started afresh, or resumed where
    /// `path[depth]` says. Its point leaves the path unless it suspended.
    fn gen_stmt(
        &mut self,
        s: &Stmt,
        index: usize,
        f: &mut Frame,
        path: &mut Vec<Point>,
        depth: usize,
        input: &mut Option<Input>,
    ) -> Result<Step> {
        if path.len() <= depth {
            match self.gen_enter(s, f)? {
                Ok(at) => path.push(Point { index, at }),
                Err(step) => {
                    if let Step::Yield(_) = step {
                        path.push(Point {
                            index,
                            at: At::Yield,
                        });
                    }
                    return Ok(step);
                }
            }
        }
        let r = self.gen_continue(s, f, path, depth, input);
        if !matches!(r, Ok(Step::Yield(_))) {
            path.truncate(depth);
        }
        r
    }

    /// Start a statement: the state it goes on in, or (`Err`) how it already
    /// ended: a plain `yield` suspends at once.
    fn gen_enter(&mut self, s: &Stmt, f: &mut Frame) -> Result<std::result::Result<At, Step>> {
        Ok(Ok(match &s.kind {
            StmtKind::Expr(e) | StmtKind::Assign(_, e) => {
                let ExprKind::Yield(value, from) = &e.kind else {
                    unreachable!("code::resumable admits only yield statements")
                };
                let v = match value {
                    Some(v) => self.eval(v, f)?,
                    None => Value::None,
                };
                if !from {
                    return Ok(Err(Step::Yield(v)));
                }
                let span = value.as_ref().map_or(e.span, |v| v.span);
                At::YieldFrom(self.iterate(&v).map_err(|e| e.at(|| f.loc(span)))?)
            }
            StmtKind::If(test, _, _) => {
                let t = self.eval(test, f)?;
                At::Branch(t.truthy().map_err(|e| e.at(|| f.loc(test.span)))?)
            }
            StmtKind::While(..) => At::Loop {
                items: None,
                orelse: false,
            },
            StmtKind::For(_, iter, _, _) => {
                let it = self.eval(iter, f)?;
                let items = self.iterate(&it).map_err(|e| e.at(|| f.loc(iter.span)))?;
                At::Loop {
                    items: Some(items),
                    orelse: false,
                }
            }
            // As in `exec`: automatic JIT leaves these to the interpreter.
            StmtKind::Try(_) | StmtKind::With(..) if self.auto.tracing.is_some() => {
                return Err(crate::jit::auto::not_pure(
                    "a try or with statement in a generator",
                ));
            }
            StmtKind::Try(_) => At::Try(TryPhase::Body),
            StmtKind::With(items, _) => {
                let mut exits = Vec::new();
                if let Err(e) = self.enter_contexts(items, &mut exits, f) {
                    // The contexts entered so far are left, innermost first.
                    return Ok(Err(self.leave_contexts(exits, Err(e), f, || Step::Normal)?));
                }
                At::With(exits)
            }
            _ => unreachable!("code::resumable admits only these statements"),
        }))
    }

    /// Go on with a started statement until it suspends or ends.
    fn gen_continue(
        &mut self,
        s: &Stmt,
        f: &mut Frame,
        path: &mut Vec<Point>,
        depth: usize,
        input: &mut Option<Input>,
    ) -> Result<Step> {
        let child = depth + 1;
        match &s.kind {
            StmtKind::Expr(_) | StmtKind::Assign(..) => {
                let value = match &mut path[depth].at {
                    At::Yield => match input.take() {
                        Some(Input::Send(v)) => v,
                        Some(Input::Throw(e)) => return Err(e.at(|| f.loc(s.span))),
                        None => unreachable!("a suspended yield resumes with an input"),
                    },
                    At::YieldFrom(items) => match self.delegate(items, input.take())? {
                        Resumed::Yield(v) => return Ok(Step::Yield(v)),
                        Resumed::Return(v) => v,
                    },
                    _ => unreachable!("a yield statement's point"),
                };
                if let StmtKind::Assign(targets, _) = &s.kind {
                    for t in targets {
                        self.assign(t, value.clone(), f)?;
                    }
                }
                Ok(Step::Normal)
            }
            StmtKind::If(_, body, orelse) => {
                let At::Branch(t) = path[depth].at else {
                    unreachable!("an if's point")
                };
                self.run_gen(if t { body } else { orelse }, f, path, child, input)
            }
            StmtKind::While(_, body, orelse) | StmtKind::For(_, _, body, orelse) => loop {
                let resuming_inside = path.len() > child;
                let At::Loop {
                    items,
                    orelse: in_else,
                } = &mut path[depth].at
                else {
                    unreachable!("a loop's point")
                };
                // Unless resuming inside the loop, decide what runs next.
                if !resuming_inside && !*in_else {
                    self.check_interrupt().map_err(|e| e.at(|| f.loc(s.span)))?;
                    let go_on = match (&s.kind, items) {
                        (StmtKind::While(test, ..), _) => {
                            let t = self.eval(test, f)?;
                            t.truthy().map_err(|e| e.at(|| f.loc(test.span)))?
                        }
                        (StmtKind::For(target, iter, ..), Some(items)) => {
                            match self
                                .next_item(items)
                                .map_err(|e| e.at(|| f.loc(iter.span)))?
                            {
                                Some(item) => {
                                    self.assign(target, item, f)?;
                                    true
                                }
                                None => false,
                            }
                        }
                        _ => unreachable!("a for loop keeps its iterator"),
                    };
                    if !go_on {
                        let At::Loop {
                            orelse: in_else, ..
                        } = &mut path[depth].at
                        else {
                            unreachable!("a loop's point")
                        };
                        *in_else = true;
                    }
                }
                if let At::Loop { orelse: true, .. } = path[depth].at {
                    return self.run_gen(orelse, f, path, child, input);
                }
                match self.run_gen(body, f, path, child, input)? {
                    Step::Break => return Ok(Step::Normal),
                    Step::Normal | Step::Continue => {}
                    other => return Ok(other),
                }
            },
            StmtKind::Try(t) => self.gen_try(t, f, path, depth, input),
            StmtKind::With(_, body) => {
                let r = self.run_gen(body, f, path, child, input);
                if let Ok(Step::Yield(v)) = r {
                    return Ok(Step::Yield(v));
                }
                let At::With(exits) = std::mem::replace(&mut path[depth].at, At::Yield) else {
                    unreachable!("a with's point")
                };
                self.leave_contexts(exits, r, f, || Step::Normal)
            }
            _ => unreachable!("code::resumable admits only these statements"),
        }
    }

    /// `try` in a generator: the same rules as `exec_try`, with each phase
    /// kept in the path so that a `yield` in any block suspends it.
    fn gen_try(
        &mut self,
        t: &Try,
        f: &mut Frame,
        path: &mut Vec<Point>,
        depth: usize,
        input: &mut Option<Input>,
    ) -> Result<Step> {
        let child = depth + 1;
        loop {
            let At::Try(phase) = &mut path[depth].at else {
                unreachable!("a try's point")
            };
            let next = match phase {
                TryPhase::Body => {
                    let r = self.run_gen(&t.body, f, path, child, input);
                    if let Ok(Step::Yield(v)) = r {
                        return Ok(Step::Yield(v));
                    }
                    path.truncate(child);
                    match r {
                        Ok(Step::Normal) => TryPhase::Else,
                        Ok(step) => TryPhase::Finally(Ok(step)),
                        Err(e) => match self.handler_for(t, &e, f) {
                            Ok(Some(k)) => {
                                if let Some(name) = &t.handlers[k].name {
                                    self.assign(name, exception::instance_of_error(&e), f)?;
                                }
                                TryPhase::Handler(k, e)
                            }
                            Ok(None) => TryPhase::Finally(Err(e)),
                            Err(other) => TryPhase::Finally(Err(other)),
                        },
                    }
                }
                TryPhase::Handler(k, e) => {
                    let k = *k;
                    // Handled while its handler runs, not while suspended in it.
                    self.handling.push(e.clone());
                    let r = self.run_gen(&t.handlers[k].body, f, path, child, input);
                    self.handling.pop();
                    if let Ok(Step::Yield(v)) = r {
                        return Ok(Step::Yield(v));
                    }
                    path.truncate(child);
                    if let Some(name) = &t.handlers[k].name {
                        self.unbind(name, f);
                    }
                    TryPhase::Finally(r)
                }
                TryPhase::Else => {
                    let r = self.run_gen(&t.orelse, f, path, child, input);
                    if let Ok(Step::Yield(v)) = r {
                        return Ok(Step::Yield(v));
                    }
                    path.truncate(child);
                    TryPhase::Finally(r)
                }
                TryPhase::Finally(pending) => {
                    let pending_error = pending.as_ref().err().cloned();
                    if let Some(e) = &pending_error {
                        self.handling.push(e.clone());
                    }
                    let r = self.run_gen(&t.finalbody, f, path, child, input);
                    if pending_error.is_some() {
                        self.handling.pop();
                    }
                    if let Ok(Step::Yield(v)) = r {
                        return Ok(Step::Yield(v));
                    }
                    let At::Try(TryPhase::Finally(pending)) =
                        std::mem::replace(&mut path[depth].at, At::Yield)
                    else {
                        unreachable!("in the finally phase")
                    };
                    // Its own `return`, `break` or error replaces the way out.
                    return match r {
                        Ok(Step::Normal) => pending,
                        other => other,
                    };
                }
            };
            path[depth].at = At::Try(next);
        }
    }

    /// One step of `yield from`: a generator is resumed with what this one
    /// was given (`send` and `throw` go through); other iterators give
    /// their next item.
    fn delegate(&mut self, items: &mut Cursor, input: Option<Input>) -> Result<Resumed> {
        if let Cursor::Next(v) = items {
            let v = v.clone();
            if let Some(g) = generator_of(&v) {
                return self.resume(g, input.unwrap_or(Input::Send(Value::None)));
            }
        }
        if let Some(Input::Throw(e)) = input {
            return Err(e);
        }
        Ok(match self.next_item(items)? {
            Some(v) => Resumed::Yield(v),
            None => Resumed::Return(Value::None),
        })
    }
}
