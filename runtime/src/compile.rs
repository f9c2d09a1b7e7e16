//! AST to executable code: scope analysis (Python's rules) and name resolution.
//!
//! Two passes. `analyze` walks every function bottom-up and records what each
//! scope assigns, uses and declares `global`/`nonlocal`. `Lower` then walks
//! top-down, knowing which names enclosing functions provide, and decides for
//! each name: local slot, cell (captured by an inner function, or captured
//! from an outer one), or global.

use crate::code::*;
use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;
use arr_lang::ast::{self, ParamKind};
use arr_lang::{SourceFile, Span};
use indexmap::{IndexMap, IndexSet};
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

/// Global names, interned to dense ids shared by globals and builtins.
#[derive(Default, Debug)]
pub struct Interner {
    ids: FxHashMap<Rc<str>, u32>,
    names: Vec<Rc<str>>,
}

impl Interner {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        let rc: Rc<str> = Rc::from(name);
        self.names.push(rc.clone());
        self.ids.insert(rc, id);
        id
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, id: u32) -> &Rc<str> {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// What pass one learned about one function or comprehension scope.
#[derive(Default, Debug)]
struct ScopeInfo {
    /// Parameters first, then assigned names, in first-seen order.
    locals: IndexSet<String>,
    globals: FxHashSet<String>,
    nonlocals: IndexSet<String>,
    /// Names this scope or its children read but do not define.
    needs: IndexSet<String>,
    /// Own locals that inner scopes capture.
    captured: IndexSet<String>,
}

/// Scope key: the address of the AST node that opens the scope.
type ScopeKey = usize;

fn key_of<T>(node: &T) -> ScopeKey {
    node as *const T as usize
}

#[derive(Default)]
struct Analyzer {
    scopes: FxHashMap<ScopeKey, ScopeInfo>,
    /// The class whose method is being analysed (a bare `super()` reads its name).
    method_of: Option<String>,
}

/// Names assigned, names read, and declarations within one scope (not descending into inner scopes).
#[derive(Default)]
struct Collect {
    assigned: IndexSet<String>,
    used: IndexSet<String>,
    globals: FxHashSet<String>,
    nonlocals: IndexSet<String>,
    child_needs: IndexSet<String>,
    /// The class name, when this is a class body.
    class: Option<String>,
}

impl Analyzer {
    fn function(&mut self, def: &ast::FunctionDef) -> IndexSet<String> {
        let mut c = Collect::default();
        for s in &def.body {
            self.stmt(s, &mut c);
        }
        let params: Vec<String> = def.params.iter().map(|p| p.name.name.clone()).collect();
        self.finish(key_of(def), params, c)
    }

    /// A class body: its names are its own, but functions inside do not
    /// see them (they see the enclosing function's, as in Python), so every
    /// need of an inner scope passes through to the enclosing one.
    fn class_body(&mut self, def: &ast::ClassDef) -> IndexSet<String> {
        let mut c = Collect {
            class: Some(def.name.name.clone()),
            ..Default::default()
        };
        for s in &def.body {
            self.stmt(s, &mut c);
        }
        let mut info = ScopeInfo {
            globals: c.globals,
            nonlocals: c.nonlocals.clone(),
            ..Default::default()
        };
        for a in c.assigned {
            if !info.globals.contains(&a) && !info.nonlocals.contains(&a) {
                info.locals.insert(a);
            }
        }
        for n in c.used.iter().chain(c.nonlocals.iter()) {
            if !info.locals.contains(n) && !info.globals.contains(n) {
                info.needs.insert(n.clone());
            }
        }
        for n in &c.child_needs {
            if !info.globals.contains(n) {
                info.needs.insert(n.clone());
            }
        }
        let needs = info.needs.clone();
        self.scopes.insert(key_of(def), info);
        needs
    }

    fn comprehension(
        &mut self,
        node: &ast::Expr,
        gens: &[ast::Comprehension],
        elts: &[&ast::Expr],
    ) -> IndexSet<String> {
        let mut c = Collect::default();
        for (i, g) in gens.iter().enumerate() {
            self.target(&g.target, &mut c);
            if i > 0 {
                self.expr(&g.iter, &mut c);
            }
            for cond in &g.ifs {
                self.expr(cond, &mut c);
            }
        }
        for e in elts {
            self.expr(e, &mut c);
        }
        self.finish(key_of(node), vec![".0".to_string()], c)
    }

    fn finish(&mut self, key: ScopeKey, params: Vec<String>, c: Collect) -> IndexSet<String> {
        let mut info = ScopeInfo {
            globals: c.globals,
            nonlocals: c.nonlocals.clone(),
            ..Default::default()
        };
        for p in params {
            info.locals.insert(p);
        }
        for a in c.assigned {
            if !info.globals.contains(&a) && !info.nonlocals.contains(&a) {
                info.locals.insert(a);
            }
        }
        for n in c.used.iter().chain(c.nonlocals.iter()) {
            if !info.locals.contains(n) && !info.globals.contains(n) {
                info.needs.insert(n.clone());
            }
        }
        for n in &c.child_needs {
            if info.locals.contains(n) {
                info.captured.insert(n.clone());
            } else if !info.globals.contains(n) {
                info.needs.insert(n.clone());
            }
        }
        let needs = info.needs.clone();
        self.scopes.insert(key, info);
        needs
    }

    fn stmt(&mut self, s: &ast::Stmt, c: &mut Collect) {
        use ast::StmtKind as S;
        match &s.kind {
            S::Expr(e) => self.expr(e, c),
            S::Assign { targets, value } => {
                for t in targets {
                    self.target(t, c);
                }
                self.expr(value, c);
            }
            S::AugAssign { target, value, .. } => {
                self.target(target, c);
                self.expr(target, c);
                self.expr(value, c);
            }
            S::FunctionDef(def) => {
                c.assigned.insert(def.name.name.clone());
                self.def_outer_parts(def, c);
                let outer = std::mem::replace(&mut self.method_of, c.class.clone());
                let needs = self.function(def);
                self.method_of = outer;
                c.child_needs.extend(needs);
            }
            S::ClassDef(def) => {
                c.assigned.insert(def.name.name.clone());
                for e in def
                    .decorators
                    .iter()
                    .chain(&def.bases)
                    .chain(def.keywords.iter().map(|(_, e)| e))
                {
                    self.expr(e, c);
                }
                let outer = self.method_of.take();
                let needs = self.class_body(def);
                self.method_of = outer;
                c.child_needs.extend(needs);
            }
            S::AnnAssign { target, value, .. } => {
                // The annotation is never evaluated; a bare `x: int` still
                // makes `x` local to a function, as in Python.
                self.target(target, c);
                if let Some(v) = value {
                    self.expr(v, c);
                }
                if c.class.is_some() && matches!(target.kind, ast::ExprKind::Name(_)) {
                    c.assigned.insert(ANNOTATIONS.to_string());
                    c.used.insert(ANNOTATIONS.to_string());
                }
            }
            S::Return(e) => {
                if let Some(e) = e {
                    self.expr(e, c)
                }
            }
            S::Raise { exc, cause } => {
                for e in [exc, cause].into_iter().flatten() {
                    self.expr(e, c)
                }
            }
            S::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                body.iter().for_each(|s| self.stmt(s, c));
                for h in handlers {
                    if let Some(t) = &h.typ {
                        self.expr(t, c);
                    }
                    if let Some(n) = &h.name {
                        c.assigned.insert(n.name.clone());
                    }
                    h.body.iter().for_each(|s| self.stmt(s, c));
                }
                orelse.iter().chain(finalbody).for_each(|s| self.stmt(s, c));
            }
            S::With { items, body } => {
                for item in items {
                    self.expr(&item.context, c);
                    if let Some(t) = &item.target {
                        self.target(t, c);
                    }
                }
                body.iter().for_each(|s| self.stmt(s, c));
            }
            S::Delete(targets) => targets.iter().for_each(|t| self.del_target(t, c)),
            S::If { test, body, orelse } => {
                self.expr(test, c);
                body.iter().chain(orelse).for_each(|s| self.stmt(s, c));
            }
            S::For {
                target,
                iter,
                body,
                orelse,
            } => {
                self.target(target, c);
                self.expr(iter, c);
                body.iter().chain(orelse).for_each(|s| self.stmt(s, c));
            }
            S::While { test, body, orelse } => {
                self.expr(test, c);
                body.iter().chain(orelse).for_each(|s| self.stmt(s, c));
            }
            S::Global(names) => c.globals.extend(names.iter().map(|n| n.name.clone())),
            S::Nonlocal(names) => c.nonlocals.extend(names.iter().map(|n| n.name.clone())),
            S::Assert { test, msg } => {
                self.expr(test, c);
                if let Some(m) = msg {
                    self.expr(m, c);
                }
            }
            S::Import(names) => {
                for alias in names {
                    let bound = alias.asname.as_ref().map_or_else(
                        || alias.name.name.split('.').next().unwrap_or_default(),
                        |a| a.name.as_str(),
                    );
                    c.assigned.insert(bound.to_string());
                }
            }
            S::ImportFrom { names, .. } => {
                for alias in names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    c.assigned.insert(bound.name.clone());
                }
            }
            S::Break | S::Continue | S::Pass => {}
        }
    }

    /// Decorators, defaults and annotations are evaluated in the enclosing scope.
    fn def_outer_parts(&mut self, def: &ast::FunctionDef, c: &mut Collect) {
        for d in &def.decorators {
            self.expr(d, c);
        }
        for p in &def.params {
            if let Some(d) = &p.default {
                self.expr(d, c);
            }
            if let Some(a) = &p.annotation {
                self.expr(a, c);
            }
        }
        if let Some(r) = &def.returns {
            self.expr(r, c);
        }
    }

    /// `del x` makes `x` local, as an assignment does; `del d[k]` only reads `d`.
    fn del_target(&mut self, t: &ast::Expr, c: &mut Collect) {
        use ast::ExprKind as E;
        match &t.kind {
            E::Name(n) => {
                c.assigned.insert(n.clone());
            }
            E::Tuple(items) | E::List(items) => items.iter().for_each(|i| self.del_target(i, c)),
            _ => self.expr(t, c),
        }
    }

    fn target(&mut self, t: &ast::Expr, c: &mut Collect) {
        use ast::ExprKind as E;
        match &t.kind {
            E::Name(n) => {
                c.assigned.insert(n.clone());
            }
            E::Tuple(items) | E::List(items) => items.iter().for_each(|i| self.target(i, c)),
            E::Starred(inner) => self.target(inner, c),
            E::Subscript { value, index } => {
                // `x[i] = v` rebinds `x` when it is an array, wherever `x`
                // lives: as in Python, it does not make `x` a local
                // (`counts[k] += 1` in a function updates the global dict).
                if !matches!(value.kind, E::Name(_)) {
                    self.target(value, c);
                }
                self.expr(value, c);
                self.expr(index, c);
            }
            E::Attribute { value, .. } => self.expr(value, c),
            _ => self.expr(t, c),
        }
    }

    fn expr(&mut self, e: &ast::Expr, c: &mut Collect) {
        use ast::ExprKind as E;
        match &e.kind {
            E::Name(n) => {
                c.used.insert(n.clone());
            }
            E::Int(_)
            | E::Float(_)
            | E::Imag(_)
            | E::Str(_)
            | E::Bool(_)
            | E::None
            | E::Ellipsis => {}
            E::FString(parts) => {
                for p in parts {
                    if let ast::FStringPart::Hole { expr, .. } = p {
                        self.expr(expr, c);
                    }
                }
            }
            E::List(items) | E::Tuple(items) => items.iter().for_each(|i| self.expr(i, c)),
            E::Dict(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.expr(k, c);
                    }
                    self.expr(v, c);
                }
            }
            E::Set(items) => items.iter().for_each(|i| self.expr(i, c)),
            E::SetComp { elt, generators } => {
                self.expr(&generators[0].iter, c);
                let needs = self.comprehension(e, generators, &[elt]);
                c.child_needs.extend(needs);
            }
            E::NamedExpr { target, value } => {
                c.assigned.insert(target.name.clone());
                self.expr(value, c);
            }
            E::ListComp { elt, generators } | E::GeneratorExp { elt, generators } => {
                self.expr(&generators[0].iter, c);
                let needs = self.comprehension(e, generators, &[elt]);
                c.child_needs.extend(needs);
            }
            E::DictComp {
                key,
                value,
                generators,
            } => {
                self.expr(&generators[0].iter, c);
                let needs = self.comprehension(e, generators, &[key, value]);
                c.child_needs.extend(needs);
            }
            E::Unary { operand, .. } => self.expr(operand, c),
            E::Binary { left, right, .. } => {
                self.expr(left, c);
                self.expr(right, c);
            }
            E::BoolOp { values, .. } => values.iter().for_each(|v| self.expr(v, c)),
            E::Compare {
                left, comparators, ..
            } => {
                self.expr(left, c);
                comparators.iter().for_each(|v| self.expr(v, c));
            }
            E::IfExp { test, body, orelse } => {
                self.expr(test, c);
                self.expr(body, c);
                self.expr(orelse, c);
            }
            E::Lambda(def) => {
                self.def_outer_parts(def, c);
                let outer = self.method_of.take();
                let needs = self.function(def);
                self.method_of = outer;
                c.child_needs.extend(needs);
            }
            E::Call { func, args } => {
                if let (E::Name(n), true, Some(class)) =
                    (&func.kind, args.is_empty(), &self.method_of)
                {
                    if n == "super" {
                        c.used.insert(class.clone());
                    }
                }
                self.expr(func, c);
                for a in args {
                    match a {
                        ast::Arg::Positional(e)
                        | ast::Arg::Starred(e)
                        | ast::Arg::DoubleStarred(e) => self.expr(e, c),
                        ast::Arg::Keyword(_, e) => self.expr(e, c),
                    }
                }
            }
            E::Attribute { value, .. } => self.expr(value, c),
            E::Subscript { value, index } => {
                self.expr(value, c);
                self.expr(index, c);
            }
            E::Slice { lower, upper, step } => {
                for p in [lower, upper, step].into_iter().flatten() {
                    self.expr(p, c);
                }
            }
            E::Starred(inner) => self.expr(inner, c),
            E::Yield { value, .. } => {
                if let Some(v) = value {
                    self.expr(v, c);
                }
            }
        }
    }
}

/// The name of a class body's dict of annotations.
const ANNOTATIONS: &str = "__annotations__";

/// The resolution context of the function being lowered.
struct FnCtx {
    is_module: bool,
    /// The class name, when this is a class body: its locals are the class
    /// namespace, invisible to the functions inside.
    class: Option<String>,
    locals: IndexMap<String, u32>,
    /// Own captured locals first, then free variables.
    cells: IndexMap<String, u32>,
    globals: FxHashSet<String>,
    /// A comprehension's own frame, where `yield` is not allowed.
    comprehension: bool,
    /// How many `yield`s were lowered in this function so far.
    yields: u32,
}

struct Lower<'a> {
    scopes: FxHashMap<ScopeKey, ScopeInfo>,
    interner: &'a mut Interner,
    file: Rc<SourceFile>,
    stack: Vec<FnCtx>,
    /// Depth of enclosing loops in the current function, for break/continue checks.
    loop_depth: Vec<usize>,
    /// While lowering a method: its class name and first parameter, which
    /// a bare `super()` passes (Python finds them in the frame).
    method_of: Option<(String, String)>,
    /// Compiling the standard library's own source: its module-level
    /// names are `Var::Builtin`.
    library: bool,
}

fn syntax_error(file: &Rc<SourceFile>, span: Span, msg: &str) -> Error {
    let mut e = Error::new(ErrorKind::SyntaxError, msg);
    e.rendered = Some(arr_lang::Diagnostic::new(msg, span).render(file));
    e
}

/// Compile a parsed module. Global names are interned into `interner`.
pub fn compile_module(
    module: &ast::Module,
    file: Rc<SourceFile>,
    interner: &mut Interner,
) -> Result<ModuleCode> {
    let mut analyzer = Analyzer::default();
    let mut c = Collect::default();
    // Module-level annotations are not kept (no `__annotations__` global).
    for s in &module.body {
        analyzer.stmt(s, &mut c);
    }
    let mut lower = Lower {
        scopes: analyzer.scopes,
        interner,
        file: file.clone(),
        stack: Vec::new(),
        loop_depth: vec![0],
        method_of: None,
        library: crate::transform::graph::is_stdlib_source(&file.name),
    };
    lower.stack.push(FnCtx {
        is_module: true,
        class: None,
        locals: IndexMap::new(),
        cells: IndexMap::new(),
        globals: FxHashSet::default(),
        comprehension: false,
        yields: 0,
    });
    let body = lower.block(&module.body)?;
    Ok(ModuleCode { body, file })
}

impl Lower<'_> {
    fn err(&self, span: Span, msg: &str) -> Error {
        syntax_error(&self.file, span, msg)
    }

    fn ctx(&self) -> &FnCtx {
        self.stack.last().expect("a scope is always open")
    }

    fn resolve(&mut self, name: &str) -> Var {
        let ctx = self.ctx();
        if !ctx.is_module && !ctx.globals.contains(name) {
            // A class body's own names come before what it passes through.
            if ctx.class.is_some() {
                if let Some(&i) = ctx.locals.get(name) {
                    return Var::Local(i);
                }
            }
            if let Some(&i) = ctx.cells.get(name) {
                return Var::Cell(i);
            }
            if let Some(&i) = ctx.locals.get(name) {
                return Var::Local(i);
            }
        }
        let id = self.interner.intern(name);
        match self.library {
            true => Var::Builtin(id),
            false => Var::Global(id),
        }
    }

    /// Names that enclosing function scopes can provide to a new inner scope.
    fn available(&self) -> FxHashSet<String> {
        let mut out = FxHashSet::default();
        for ctx in self.stack.iter().filter(|c| !c.is_module) {
            if ctx.class.is_none() {
                out.extend(
                    ctx.locals
                        .keys()
                        .filter(|n| !ctx.globals.contains(*n))
                        .cloned(),
                );
            }
            out.extend(ctx.cells.keys().cloned());
        }
        out
    }

    fn block(&mut self, stmts: &[ast::Stmt]) -> Result<Vec<Stmt>> {
        stmts.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Result<Stmt> {
        use ast::StmtKind as S;
        let span = s.span;
        let yields_before = self.ctx().yields;
        let kind = match &s.kind {
            S::Expr(e) => StmtKind::Expr(self.expr(e)?),
            S::Assign { targets, value } => {
                let value = self.expr(value)?;
                let targets = targets
                    .iter()
                    .map(|t| self.target(t))
                    .collect::<Result<_>>()?;
                StmtKind::Assign(targets, value)
            }
            S::AugAssign { target, op, value } => {
                if matches!(
                    target.kind,
                    ast::ExprKind::Tuple(_) | ast::ExprKind::List(_)
                ) {
                    return Err(
                        self.err(target.span, "illegal expression for augmented assignment")
                    );
                }
                let load = self.expr(target)?;
                let value = self.expr(value)?;
                let t = self.target(target)?;
                StmtKind::Assign(
                    vec![t],
                    Expr {
                        kind: ExprKind::Binary(*op, Box::new(load), Box::new(value)),
                        span,
                    },
                )
            }
            S::FunctionDef(def) => {
                let method = self.ctx().class.clone().map(|class| {
                    let first = def.params.first().map(|p| p.name.name.clone());
                    (class, first.unwrap_or_default())
                });
                let outer = std::mem::replace(&mut self.method_of, method);
                let f = self.function(def, span);
                self.method_of = outer;
                let f = f?;
                let t = Target::Var(
                    self.resolve(&def.name.name),
                    Rc::from(def.name.name.as_str()),
                );
                StmtKind::Assign(vec![t], f)
            }
            S::ClassDef(def) => self.class(def, span)?,
            S::AnnAssign {
                target,
                annotation,
                value,
            } => return self.annotated(target, annotation, value.as_ref(), span),
            S::Return(e) => {
                if self.ctx().is_module || self.ctx().class.is_some() {
                    return Err(self.err(span, "'return' outside function"));
                }
                StmtKind::Return(e.as_ref().map(|e| self.expr(e)).transpose()?)
            }
            S::If { test, body, orelse } => {
                StmtKind::If(self.expr(test)?, self.block(body)?, self.block(orelse)?)
            }
            S::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let iter = self.expr(iter)?;
                let target = self.target(target)?;
                *self.loop_depth.last_mut().unwrap() += 1;
                let body = self.block(body);
                *self.loop_depth.last_mut().unwrap() -= 1;
                StmtKind::For(target, iter, body?, self.block(orelse)?)
            }
            S::While { test, body, orelse } => {
                let test = self.expr(test)?;
                *self.loop_depth.last_mut().unwrap() += 1;
                let body = self.block(body);
                *self.loop_depth.last_mut().unwrap() -= 1;
                StmtKind::While(test, body?, self.block(orelse)?)
            }
            S::Break | S::Continue => {
                if *self.loop_depth.last().unwrap() == 0 {
                    let word = if matches!(s.kind, S::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    return Err(self.err(span, &format!("'{word}' outside loop")));
                }
                if matches!(s.kind, S::Break) {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                }
            }
            S::Pass | S::Global(_) => StmtKind::Pass,
            S::Nonlocal(names) => {
                if self.ctx().is_module {
                    return Err(self.err(span, "nonlocal declaration not allowed at module level"));
                }
                for n in names {
                    if !self.ctx().cells.contains_key(&n.name) {
                        return Err(self.err(
                            n.span,
                            &format!("no binding for nonlocal '{}' found", n.name),
                        ));
                    }
                }
                StmtKind::Pass
            }
            S::Assert { test, msg } => StmtKind::Assert(
                self.expr(test)?,
                msg.as_ref().map(|m| self.expr(m)).transpose()?,
            ),
            S::Raise { exc, cause } => StmtKind::Raise(
                exc.as_ref().map(|e| self.expr(e)).transpose()?,
                cause.as_ref().map(|e| self.expr(e)).transpose()?,
            ),
            S::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                let body = self.block(body)?;
                let handlers = handlers
                    .iter()
                    .map(|h| {
                        Ok(Handler {
                            typ: h.typ.as_ref().map(|t| self.expr(t)).transpose()?,
                            name: h.name.as_ref().map(|n| {
                                Target::Var(self.resolve(&n.name), Rc::from(n.name.as_str()))
                            }),
                            body: self.block(&h.body)?,
                            span: h.span,
                        })
                    })
                    .collect::<Result<_>>()?;
                StmtKind::Try(Box::new(Try {
                    body,
                    handlers,
                    orelse: self.block(orelse)?,
                    finalbody: self.block(finalbody)?,
                }))
            }
            S::With { items, body } => {
                let items = items
                    .iter()
                    .map(|item| {
                        Ok((
                            self.expr(&item.context)?,
                            item.target.as_ref().map(|t| self.target(t)).transpose()?,
                        ))
                    })
                    .collect::<Result<_>>()?;
                StmtKind::With(items, self.block(body)?)
            }
            S::Delete(targets) => StmtKind::Delete(
                targets
                    .iter()
                    .map(|t| self.del_target(t))
                    .collect::<Result<_>>()?,
            ),
            S::Import(names) => {
                let bindings = names
                    .iter()
                    .map(|alias| {
                        let path: Rc<str> = Rc::from(alias.name.name.as_str());
                        let (bound, top) = match &alias.asname {
                            Some(a) => (a.name.as_str(), false),
                            None => (alias.name.name.split('.').next().unwrap_or_default(), true),
                        };
                        let kind = ExprKind::Import { path, top };
                        (
                            bound,
                            Expr {
                                kind,
                                span: alias.name.span,
                            },
                        )
                    })
                    .collect::<Vec<_>>();
                self.bind_imports(bindings, span)
            }
            S::ImportFrom { module, names } if names.is_empty() => {
                if !self.ctx().is_module {
                    let msg = "import * only allowed at module level";
                    return Err(self.err(span, msg));
                }
                StmtKind::ImportStar(Rc::from(module.name.as_str()))
            }
            S::ImportFrom { module, names } => {
                let bindings = names
                    .iter()
                    .map(|alias| {
                        let kind = ExprKind::ImportFrom {
                            module: Rc::from(module.name.as_str()),
                            name: Rc::from(alias.name.name.as_str()),
                        };
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                        (
                            bound.name.as_str(),
                            Expr {
                                kind,
                                span: alias.name.span,
                            },
                        )
                    })
                    .collect::<Vec<_>>();
                self.bind_imports(bindings, span)
            }
        };
        let yields = self.ctx().yields - yields_before;
        Ok(Stmt { kind, span, yields })
    }

    /// A `del` target: like an assignment's, but an item's container is only read.
    fn del_target(&mut self, t: &ast::Expr) -> Result<Target> {
        use ast::ExprKind as E;
        Ok(match &t.kind {
            E::Tuple(items) | E::List(items) => Target::Unpack(
                items
                    .iter()
                    .map(|i| self.del_target(i))
                    .collect::<Result<_>>()?,
                None,
                t.span,
            ),
            E::Subscript { value, index } => Target::Subscript {
                obj: Box::new(self.expr(value)?),
                store: None,
                index: Box::new(self.expr(index)?),
                span: t.span,
            },
            _ => self.target(t)?,
        })
    }

    /// An import binds each name to its module or member: `import a, b as c`
    /// runs as `a, c = <module a>, <module b>`.
    fn bind_imports(&mut self, bindings: Vec<(&str, Expr)>, span: Span) -> StmtKind {
        let (mut targets, mut values): (Vec<Target>, Vec<Expr>) = bindings
            .into_iter()
            .map(|(name, value)| (Target::Var(self.resolve(name), Rc::from(name)), value))
            .unzip();
        if targets.len() == 1 {
            return StmtKind::Assign(targets, values.remove(0));
        }
        let value = Expr {
            kind: ExprKind::Tuple(values),
            span,
        };
        StmtKind::Assign(
            vec![Target::Unpack(std::mem::take(&mut targets), None, span)],
            value,
        )
    }

    fn target(&mut self, t: &ast::Expr) -> Result<Target> {
        use ast::ExprKind as E;
        Ok(match &t.kind {
            E::Name(n) => Target::Var(self.resolve(n), Rc::from(n.as_str())),
            E::Tuple(items) | E::List(items) => {
                let mut star = None;
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if let E::Starred(inner) = &item.kind {
                        if star.is_some() {
                            return Err(
                                self.err(item.span, "multiple starred expressions in assignment")
                            );
                        }
                        star = Some(i);
                        out.push(self.target(inner)?);
                    } else {
                        out.push(self.target(item)?);
                    }
                }
                Target::Unpack(out, star, t.span)
            }
            E::Subscript { value, index } => {
                let store = match &value.kind {
                    E::Name(_) | E::Subscript { .. } | E::Attribute { .. } => {
                        Some(Box::new(self.target(value)?))
                    }
                    _ => None,
                };
                Target::Subscript {
                    obj: Box::new(self.expr(value)?),
                    store,
                    index: Box::new(self.expr(index)?),
                    span: t.span,
                }
            }
            E::Attribute { value, attr } => Target::Attribute {
                obj: Box::new(self.expr(value)?),
                attr: Rc::from(attr.name.as_str()),
                span: t.span,
            },
            _ => return Err(self.err(t.span, "cannot assign to expression")),
        })
    }

    /// A class statement: the body compiles to a function of no parameters
    /// whose locals become the class namespace.
    fn class(&mut self, def: &ast::ClassDef, span: Span) -> Result<StmtKind> {
        let decorators = self.exprs(&def.decorators)?;
        let bases = self.exprs(&def.bases)?;
        let keywords = def
            .keywords
            .iter()
            .map(|(k, v)| Ok((Rc::from(k.name.as_str()), self.expr(v)?)))
            .collect::<Result<Vec<_>>>()?;
        let (frees, own_cells) = self.open_scope(key_of(def))?;
        self.ctx_mut().class = Some(def.name.name.clone());
        let outer = self.method_of.take();
        let body = self.class_statements(&def.body, span);
        self.method_of = outer;
        let ctx = self.close_scope();
        let body = body?;
        let code = FuncCode {
            name: Rc::from(def.name.name.as_str()),
            qualname: Rc::from(def.name.name.as_str()),
            doc: def.docstring.clone(),
            signature: def.name.name.clone(),
            params: Vec::new(),
            local_names: ctx.locals.keys().map(|k| Rc::from(k.as_str())).collect(),
            cell_names: ctx.cells.keys().map(|k| Rc::from(k.as_str())).collect(),
            own_cells,
            param_cells: Vec::new(),
            body,
            file: self.file.clone(),
            span,
            generator: false,
            resumable: false,
        };
        let captures = self.captures(&frees);
        let body = Expr {
            kind: ExprKind::MakeFunction {
                code: Rc::new(code),
                defaults: Vec::new(),
                captures,
                decorators: Vec::new(),
                annotations: Vec::new(),
            },
            span,
        };
        let target = Target::Var(
            self.resolve(&def.name.name),
            Rc::from(def.name.name.as_str()),
        );
        Ok(StmtKind::ClassDef(Box::new(ClassCode {
            name: Rc::from(def.name.name.as_str()),
            doc: def.docstring.clone(),
            bases,
            keywords,
            decorators,
            body,
            target,
        })))
    }

    /// A class body's statements, with `__annotations__ = {}` first when it
    /// annotates names (each annotation is then stored in it as text).
    fn class_statements(&mut self, body: &[ast::Stmt], span: Span) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        if self.ctx().locals.contains_key(ANNOTATIONS) {
            out.push(Stmt {
                kind: StmtKind::Assign(
                    vec![Target::Var(
                        self.resolve(ANNOTATIONS),
                        Rc::from(ANNOTATIONS),
                    )],
                    Expr {
                        kind: ExprKind::Dict(Vec::new()),
                        span,
                    },
                ),
                span,
                yields: 0,
            });
        }
        for s in body {
            out.push(self.stmt(s)?);
        }
        if out.is_empty() {
            out.push(Stmt {
                kind: StmtKind::Pass,
                span,
                yields: 0,
            });
        }
        Ok(out)
    }

    /// `target: annotation [= value]`: the annotation is kept as its source
    /// text in a class body (as `from __future__ import annotations` would),
    /// and otherwise not evaluated.
    fn annotated(
        &mut self,
        target: &ast::Expr,
        annotation: &ast::Expr,
        value: Option<&ast::Expr>,
        span: Span,
    ) -> Result<Stmt> {
        let mut stmts = Vec::new();
        if let Some(v) = value {
            let v = self.expr(v)?;
            stmts.push(Stmt {
                kind: StmtKind::Assign(vec![self.target(target)?], v),
                span,
                yields: 0,
            });
        } else if !matches!(target.kind, ast::ExprKind::Name(_)) {
            // `obj.x: int` evaluates `obj`, as Python does.
            if let ast::ExprKind::Attribute { value, .. } | ast::ExprKind::Subscript { value, .. } =
                &target.kind
            {
                stmts.push(Stmt {
                    kind: StmtKind::Expr(self.expr(value)?),
                    span,
                    yields: 0,
                });
            }
        }
        if let (Some(_), ast::ExprKind::Name(name)) = (&self.ctx().class, &target.kind) {
            let text = self
                .file
                .text
                .get(annotation.span.start as usize..annotation.span.end as usize)
                .unwrap_or_default()
                .to_string();
            let store = Target::Subscript {
                obj: Box::new(Expr {
                    kind: ExprKind::Load(self.resolve(ANNOTATIONS), Rc::from(ANNOTATIONS)),
                    span,
                }),
                store: None,
                index: Box::new(Expr {
                    kind: ExprKind::Const(Value::str(name)),
                    span,
                }),
                span,
            };
            stmts.push(Stmt {
                kind: StmtKind::Assign(
                    vec![store],
                    Expr {
                        kind: ExprKind::Const(Value::str(&text)),
                        span: annotation.span,
                    },
                ),
                span,
                yields: 0,
            });
        }
        Ok(match stmts.len() {
            0 => Stmt {
                kind: StmtKind::Pass,
                span,
                yields: 0,
            },
            1 => stmts.pop().expect("one statement"),
            _ => Stmt {
                kind: StmtKind::If(
                    Expr {
                        kind: ExprKind::Const(Value::Bool(true)),
                        span,
                    },
                    stmts,
                    Vec::new(),
                ),
                span,
                yields: 0,
            },
        })
    }

    fn ctx_mut(&mut self) -> &mut FnCtx {
        self.stack.last_mut().expect("a scope is always open")
    }

    fn open_scope(&mut self, key: ScopeKey) -> Result<(Vec<String>, usize)> {
        let info = self.scopes.remove(&key).expect("every scope was analysed");
        let available = self.available();
        let mut cells = IndexMap::new();
        for n in &info.captured {
            let i = cells.len() as u32;
            cells.insert(n.clone(), i);
        }
        let own_cells = cells.len();
        let mut frees = Vec::new();
        for n in &info.needs {
            if available.contains(n) && !cells.contains_key(n) {
                let i = cells.len() as u32;
                cells.insert(n.clone(), i);
                frees.push(n.clone());
            } else if info.nonlocals.contains(n) {
                return Err(self.err(
                    Span::default(),
                    &format!("no binding for nonlocal '{n}' found"),
                ));
            }
        }
        let locals = info
            .locals
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        self.stack.push(FnCtx {
            is_module: false,
            class: None,
            locals,
            cells,
            globals: info.globals,
            comprehension: false,
            yields: 0,
        });
        self.loop_depth.push(0);
        Ok((frees, own_cells))
    }

    fn close_scope(&mut self) -> FnCtx {
        self.loop_depth.pop();
        self.stack.pop().expect("scope opened")
    }

    /// Captures for a new closure: the current frame's cell index of each free name.
    fn captures(&mut self, frees: &[String]) -> Vec<u32> {
        frees
            .iter()
            .map(|n| {
                *self
                    .ctx()
                    .cells
                    .get(n)
                    .expect("free variable is available in the enclosing scope")
            })
            .collect()
    }

    /// A bare `super()` inside a method: `super(Class, first_parameter)`.
    fn bare_super(&mut self, func: &ast::Expr, span: Span) -> Result<Option<ExprKind>> {
        let (ast::ExprKind::Name(n), Some((class, first))) = (&func.kind, self.method_of.clone())
        else {
            return Ok(None);
        };
        if n != "super" || first.is_empty() {
            return Ok(None);
        }
        let load = |s: &mut Self, name: &str| Expr {
            kind: ExprKind::Load(s.resolve(name), Rc::from(name)),
            span,
        };
        let args = vec![
            CallArg::Positional(load(self, &class)),
            CallArg::Positional(load(self, &first)),
        ];
        Ok(Some(ExprKind::Call(Box::new(load(self, "super")), args)))
    }

    fn function(&mut self, def: &ast::FunctionDef, span: Span) -> Result<Expr> {
        let decorators = def
            .decorators
            .iter()
            .map(|d| self.expr(d))
            .collect::<Result<Vec<_>>>()?;
        let defaults = def
            .params
            .iter()
            .map(|p| p.default.as_ref().map(|d| self.expr(d)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let mut annotations = Vec::new();
        let named = def
            .params
            .iter()
            .map(|p| (p.name.name.as_str(), p.annotation.as_ref()));
        for (name, a) in named.chain([("return", def.returns.as_deref())]) {
            if let Some(a) = a {
                let text: Rc<str> = Rc::from(
                    self.file
                        .text
                        .get(a.span.start as usize..a.span.end as usize)
                        .unwrap_or_default(),
                );
                annotations.push((Rc::from(name), self.expr(a)?, text));
            }
        }
        let (frees, own_cells) = self.open_scope(key_of(def))?;
        let body = self.block(&def.body);
        let ctx = self.close_scope();
        let mut body = body?;
        if def.name.name == "<lambda>" {
            // A lambda's body is one return; nothing else to do.
        } else if body.is_empty() {
            body.push(Stmt {
                kind: StmtKind::Pass,
                span,
                yields: 0,
            });
        }
        let params: Vec<ParamSpec> = def
            .params
            .iter()
            .map(|p| ParamSpec {
                name: Rc::from(p.name.name.as_str()),
                kind: p.kind,
                has_default: p.default.is_some(),
            })
            .collect();
        let param_cells = params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| ctx.cells.get(&*p.name).map(|&c| (i, c as usize)))
            .collect();
        let qualname = match &self.method_of {
            Some((class, _)) => Rc::from(format!("{class}.{}", def.name.name)),
            None => Rc::from(def.name.name.as_str()),
        };
        let resumable = ctx.yields > 0 && resumable(&body);
        let code = FuncCode {
            name: Rc::from(def.name.name.as_str()),
            qualname,
            doc: def.docstring.clone(),
            signature: signature_text(def),
            params,
            local_names: ctx.locals.keys().map(|k| Rc::from(k.as_str())).collect(),
            cell_names: ctx.cells.keys().map(|k| Rc::from(k.as_str())).collect(),
            own_cells,
            param_cells,
            body,
            file: self.file.clone(),
            span,
            generator: ctx.yields > 0,
            resumable,
        };
        let captures = self.captures(&frees);
        Ok(Expr {
            kind: ExprKind::MakeFunction {
                code: Rc::new(code),
                defaults,
                captures,
                decorators,
                annotations,
            },
            span,
        })
    }

    fn comprehension(
        &mut self,
        e: &ast::Expr,
        gens: &[ast::Comprehension],
        elt: &ast::Expr,
        value: Option<&ast::Expr>,
    ) -> Result<Expr> {
        let first_iter = self.expr(&gens[0].iter)?;
        let (frees, own_cells) = self.open_scope(key_of(e))?;
        self.ctx_mut().comprehension = true;
        let inner = (|| -> Result<Expr> {
            let mut generators = Vec::new();
            for (i, g) in gens.iter().enumerate() {
                let iter = if i == 0 {
                    Expr {
                        kind: ExprKind::Load(Var::Local(0), Rc::from(".0")),
                        span: g.iter.span,
                    }
                } else {
                    self.expr(&g.iter)?
                };
                let target = self.target(&g.target)?;
                let ifs = g.ifs.iter().map(|c| self.expr(c)).collect::<Result<_>>()?;
                generators.push(Generator { target, iter, ifs });
            }
            let elt = Box::new(self.expr(elt)?);
            let value = value.map(|v| self.expr(v).map(Box::new)).transpose()?;
            Ok(Expr {
                kind: ExprKind::Comprehension {
                    elt,
                    value,
                    generators,
                },
                span: e.span,
            })
        })();
        let ctx = self.close_scope();
        let inner = inner?;
        // A generator expression is a generator function of its first
        // iterable: its loops, conditions and a `yield` of the element.
        let lazy = matches!(e.kind, ast::ExprKind::GeneratorExp { .. });
        let body = if lazy {
            vec![generator_body(inner)]
        } else {
            vec![Stmt {
                kind: StmtKind::Return(Some(inner)),
                span: e.span,
                yields: 0,
            }]
        };
        let name = if lazy {
            "<genexpr>"
        } else {
            crate::eval::COMPREHENSION
        };
        let code = FuncCode {
            name: Rc::from(name),
            qualname: Rc::from(name),
            doc: None,
            signature: String::new(),
            params: vec![ParamSpec {
                name: Rc::from(".0"),
                kind: ParamKind::Normal,
                has_default: false,
            }],
            local_names: ctx.locals.keys().map(|k| Rc::from(k.as_str())).collect(),
            cell_names: ctx.cells.keys().map(|k| Rc::from(k.as_str())).collect(),
            own_cells,
            param_cells: Vec::new(),
            body,
            file: self.file.clone(),
            span: e.span,
            generator: lazy,
            resumable: lazy,
        };
        let captures = self.captures(&frees);
        let make = Expr {
            kind: ExprKind::MakeFunction {
                code: Rc::new(code),
                defaults: vec![None],
                captures,
                decorators: Vec::new(),
                annotations: Vec::new(),
            },
            span: e.span,
        };
        Ok(Expr {
            kind: ExprKind::Call(Box::new(make), vec![CallArg::Positional(first_iter)]),
            span: e.span,
        })
    }

    fn exprs(&mut self, es: &[ast::Expr]) -> Result<Vec<Expr>> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    fn boxed(&mut self, e: &ast::Expr) -> Result<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn expr(&mut self, e: &ast::Expr) -> Result<Expr> {
        use ast::ExprKind as E;
        let span = e.span;
        let kind = match &e.kind {
            E::Name(n) => ExprKind::Load(self.resolve(n), Rc::from(n.as_str())),
            E::Int(i) => ExprKind::Const(Value::Int(*i)),
            E::Float(f) => ExprKind::Const(Value::Float(*f)),
            // Python's complex numbers are complex64 scalars (arr has no
            // complex128): `2j` is a 0-d array, shared by every evaluation.
            E::Imag(f) => ExprKind::Const(Value::Array(crate::Tensor::Concrete(
                arr_kernels::Array::new(
                    &[],
                    arr_kernels::Buffer::C64(vec![arr_kernels::complex::C64::new(0.0, *f as f32)]),
                )
                .pinned(),
            ))),
            E::Str(s) => ExprKind::Const(Value::str(s)),
            E::Bool(b) => ExprKind::Const(Value::Bool(*b)),
            E::None => ExprKind::Const(Value::None),
            E::Ellipsis => ExprKind::Const(Value::Ellipsis),
            E::FString(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.push(match p {
                        ast::FStringPart::Literal(s) => FPart::Literal(s.clone()),
                        ast::FStringPart::Hole {
                            expr,
                            conversion,
                            spec,
                        } => FPart::Hole {
                            expr: self.expr(expr)?,
                            conversion: *conversion,
                            spec: spec.clone(),
                        },
                    });
                }
                ExprKind::FString(out)
            }
            E::List(items) => ExprKind::List(self.exprs(items)?),
            E::Tuple(items) => ExprKind::Tuple(self.exprs(items)?),
            E::Dict(items) => ExprKind::Dict(
                items
                    .iter()
                    .map(|(k, v)| {
                        Ok((k.as_ref().map(|k| self.expr(k)).transpose()?, self.expr(v)?))
                    })
                    .collect::<Result<_>>()?,
            ),
            E::Set(items) => ExprKind::Set(self.exprs(items)?),
            E::SetComp { elt, generators } => {
                let items = self.comprehension(e, generators, elt, None)?;
                ExprKind::Set(vec![Expr {
                    kind: ExprKind::Starred(Box::new(items)),
                    span,
                }])
            }
            E::NamedExpr { target, value } => ExprKind::NamedExpr(
                Box::new(Target::Var(
                    self.resolve(&target.name),
                    Rc::from(target.name.as_str()),
                )),
                self.boxed(value)?,
            ),
            E::ListComp { elt, generators } | E::GeneratorExp { elt, generators } => {
                return self.comprehension(e, generators, elt, None)
            }
            E::DictComp {
                key,
                value,
                generators,
            } => return self.comprehension(e, generators, key, Some(value)),
            E::Unary { op, operand } => ExprKind::Unary(*op, self.boxed(operand)?),
            E::Binary { op, left, right } => {
                ExprKind::Binary(*op, self.boxed(left)?, self.boxed(right)?)
            }
            E::BoolOp { op, values } => ExprKind::BoolOp(*op, self.exprs(values)?),
            E::Compare {
                left,
                ops,
                comparators,
            } => {
                let left = self.boxed(left)?;
                let rest = ops
                    .iter()
                    .zip(comparators)
                    .map(|(op, c)| Ok((*op, self.expr(c)?)))
                    .collect::<Result<_>>()?;
                ExprKind::Compare(left, rest)
            }
            E::IfExp { test, body, orelse } => {
                ExprKind::IfExp(self.boxed(test)?, self.boxed(body)?, self.boxed(orelse)?)
            }
            E::Lambda(def) => {
                let outer = self.method_of.take();
                let f = self.function(def, span);
                self.method_of = outer;
                return f;
            }
            E::Call { func, args } => {
                if args.is_empty() {
                    if let Some(kind) = self.bare_super(func, span)? {
                        return Ok(Expr { kind, span });
                    }
                }
                let func = self.boxed(func)?;
                let mut out = Vec::new();
                for a in args {
                    out.push(match a {
                        ast::Arg::Positional(e) => CallArg::Positional(self.expr(e)?),
                        ast::Arg::Starred(e) => CallArg::Starred(self.expr(e)?),
                        ast::Arg::Keyword(name, e) => {
                            CallArg::Keyword(Rc::from(name.name.as_str()), self.expr(e)?)
                        }
                        ast::Arg::DoubleStarred(e) => CallArg::DoubleStarred(self.expr(e)?),
                    });
                }
                ExprKind::Call(func, out)
            }
            E::Attribute { value, attr } => {
                ExprKind::Attribute(self.boxed(value)?, Rc::from(attr.name.as_str()))
            }
            E::Subscript { value, index } => {
                ExprKind::Subscript(self.boxed(value)?, self.boxed(index)?)
            }
            E::Slice { lower, upper, step } => {
                let part = |s: &mut Self, p: &Option<Box<ast::Expr>>| {
                    p.as_ref().map(|e| s.boxed(e)).transpose()
                };
                ExprKind::Slice(part(self, lower)?, part(self, upper)?, part(self, step)?)
            }
            E::Starred(inner) => ExprKind::Starred(self.boxed(inner)?),
            E::Yield { value, from } => {
                let ctx = self.ctx();
                if ctx.is_module || ctx.class.is_some() {
                    return Err(self.err(span, "'yield' outside function"));
                }
                if ctx.comprehension {
                    return Err(self.err(span, "'yield' inside a comprehension"));
                }
                self.ctx_mut().yields += 1;
                let value = value.as_deref().map(|v| self.boxed(v)).transpose()?;
                ExprKind::Yield(value, *from)
            }
        };
        Ok(Expr { kind, span })
    }
}

/// The body of a generator expression's function, from the comprehension
/// it was lowered to: `for` loops and `if`s around `yield elt`.
fn generator_body(comprehension: Expr) -> Stmt {
    let span = comprehension.span;
    let ExprKind::Comprehension {
        elt, generators, ..
    } = comprehension.kind
    else {
        unreachable!("lowered as a comprehension")
    };
    let yield_elt = Expr {
        span: elt.span,
        kind: ExprKind::Yield(Some(elt), false),
    };
    let mut stmt = Stmt {
        kind: StmtKind::Expr(yield_elt),
        span,
        yields: 1,
    };
    for g in generators.into_iter().rev() {
        for cond in g.ifs.into_iter().rev() {
            stmt = Stmt {
                kind: StmtKind::If(cond, vec![stmt], Vec::new()),
                span,
                yields: 1,
            };
        }
        stmt = Stmt {
            kind: StmtKind::For(g.target, g.iter, vec![stmt], Vec::new()),
            span,
            yields: 1,
        };
    }
    stmt
}

/// `name(a, b=1, *args)` as written, for help and error messages.
fn signature_text(def: &ast::FunctionDef) -> String {
    let params: Vec<String> = def
        .params
        .iter()
        .map(|p| {
            let prefix = match p.kind {
                ParamKind::VarArgs => "*",
                ParamKind::VarKwargs => "**",
                _ => "",
            };
            match &p.default {
                Some(_) => format!("{prefix}{}=…", p.name.name),
                None => format!("{prefix}{}", p.name.name),
            }
        })
        .collect();
    format!("{}({})", def.name.name, params.join(", "))
}
