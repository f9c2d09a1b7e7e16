//! Executable code: the AST with every name resolved to a local slot, a cell or a global.
//!
//! `compile` produces this from `arr_lang::ast`; `eval` walks it. Resolving
//! names once, ahead of time, is what makes the interpreter loop cheap: a
//! variable access is an index, never a string lookup.

use crate::value::Value;
use arr_lang::ast::{BinOp, BoolOpKind, CmpOp, ParamKind, UnaryOp};
use arr_lang::{SourceFile, Span};
use std::rc::Rc;

/// Where a variable lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// A slot in the frame's locals.
    Local(u32),
    /// A shared cell: a local captured by an inner function, or a captured
    /// variable of an enclosing one.
    Cell(u32),
    /// A module-level name (interned id), falling back to the builtins.
    Global(u32),
    /// A module-level name of the standard library's own code: it lives
    /// among the builtins (the library's namespace), so that a program's
    /// globals never shadow what the library calls (`shape = (28, 28)` in a
    /// script must not break `nnx.BatchNorm`), as Python modules keep their
    /// own globals.
    Builtin(u32),
}

#[derive(Debug)]
pub struct FuncCode {
    pub name: Rc<str>,
    /// `Class.method` for a method (argument errors name it), else the name.
    pub qualname: Rc<str>,
    pub doc: Option<String>,
    pub params: Vec<ParamSpec>,
    /// Names of the local slots, for messages.
    pub local_names: Vec<Rc<str>>,
    /// Names of the cells: own captured locals first, then free variables.
    pub cell_names: Vec<Rc<str>>,
    /// Number of cells owned by this function (the rest are captured).
    pub own_cells: usize,
    /// Parameters that live in cells: (parameter index, cell index).
    pub param_cells: Vec<(usize, usize)>,
    pub body: Vec<Stmt>,
    pub file: Rc<SourceFile>,
    pub span: Span,
    /// The source text of the definition, for `help` and error messages.
    pub signature: String,
    /// Whether the body yields: a call then gives a generator.
    pub generator: bool,
    /// Whether every `yield` of the body is one the generator executor can
    /// suspend at (`resumable`): the call then gives a lazy generator;
    /// otherwise the body runs to its end at the call, keeping what it yields.
    pub resumable: bool,
}

#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: Rc<str>,
    pub kind: ParamKind,
    pub has_default: bool,
}

#[derive(Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
    /// How many `yield` expressions the statement holds (in its nested
    /// blocks too, not in functions it defines): a generator's executor runs
    /// a statement without any as any other code.
    pub yields: u32,
}

/// Whether a generator body suspends only where its executor can resume:
/// at a statement that is one `yield` (`yield x`, `v = yield x`,
/// `yield from xs`), inside any nesting of `if`, `for`, `while`, `try` and
/// `with` whose other parts (tests, iterables, handlers' classes, context
/// managers) do not yield. A yield elsewhere in an expression (`f((yield))`)
/// is not.
pub fn resumable(body: &[Stmt]) -> bool {
    fn total(block: &[Stmt]) -> u32 {
        block.iter().map(|s| s.yields).sum()
    }
    fn blocks(blocks: &[&[Stmt]], yields: u32) -> bool {
        blocks.iter().map(|b| total(b)).sum::<u32>() == yields
            && blocks.iter().all(|b| resumable(b))
    }
    body.iter().all(|s| {
        if s.yields == 0 {
            return true;
        }
        let one_yield = |e: &Expr| matches!(&e.kind, ExprKind::Yield(..)) && s.yields == 1;
        match &s.kind {
            StmtKind::Expr(e) => one_yield(e),
            StmtKind::Assign(_, e) => one_yield(e),
            StmtKind::If(_, a, b) | StmtKind::For(_, _, a, b) | StmtKind::While(_, a, b) => {
                blocks(&[a, b], s.yields)
            }
            StmtKind::Try(t) => {
                let mut all: Vec<&[Stmt]> = vec![&t.body, &t.orelse, &t.finalbody];
                all.extend(t.handlers.iter().map(|h| h.body.as_slice()));
                blocks(&all, s.yields)
            }
            StmtKind::With(_, body) => blocks(&[body], s.yields),
            _ => false,
        }
    })
}

impl FuncCode {
    /// Where the function's result comes from, for messages about it: the
    /// expression of its only `return` statement, else the definition.
    pub fn result_span(&self) -> Span {
        fn collect(body: &[Stmt], out: &mut Vec<Span>) {
            for s in body {
                match &s.kind {
                    StmtKind::Return(Some(e)) => out.push(e.span),
                    StmtKind::Return(None) => out.push(s.span),
                    StmtKind::If(_, a, b) => {
                        collect(a, out);
                        collect(b, out);
                    }
                    StmtKind::For(_, _, a, b) | StmtKind::While(_, a, b) => {
                        collect(a, out);
                        collect(b, out);
                    }
                    _ => {}
                }
            }
        }
        let mut spans = Vec::new();
        collect(&self.body, &mut spans);
        match spans.as_slice() {
            [one] => *one,
            _ => self.span,
        }
    }
}

#[derive(Debug)]
pub enum StmtKind {
    Expr(Expr),
    Assign(Vec<Target>, Expr),
    Return(Option<Expr>),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// `for target in iter: body else: orelse`.
    For(Target, Expr, Vec<Stmt>, Vec<Stmt>),
    /// `while test: body else: orelse`.
    While(Expr, Vec<Stmt>, Vec<Stmt>),
    Break,
    Continue,
    Pass,
    Assert(Expr, Option<Expr>),
    /// `raise [exc [from cause]]`.
    Raise(Option<Expr>, Option<Expr>),
    Try(Box<Try>),
    /// `with` items (context, `as` target), entered left to right, and the body.
    With(Vec<(Expr, Option<Target>)>, Vec<Stmt>),
    /// `del` targets: variables (`Target::Var`), items, attributes, tuples of them.
    Delete(Vec<Target>),
    /// `from module import *` (module level only): binds every public name.
    ImportStar(Rc<str>),
    ClassDef(Box<ClassCode>),
}

/// A `try` statement.
#[derive(Debug)]
pub struct Try {
    pub body: Vec<Stmt>,
    pub handlers: Vec<Handler>,
    pub orelse: Vec<Stmt>,
    pub finalbody: Vec<Stmt>,
}

/// `except [typ [as name]]:`; the name is unbound again after the handler.
#[derive(Debug)]
pub struct Handler {
    pub typ: Option<Expr>,
    pub name: Option<Target>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// A `class` statement: `body` makes the function whose run fills the
/// namespace; the class made from it, decorated, is stored in `target`.
#[derive(Debug)]
pub struct ClassCode {
    pub name: Rc<str>,
    pub doc: Option<String>,
    pub bases: Vec<Expr>,
    pub keywords: Vec<(Rc<str>, Expr)>,
    pub decorators: Vec<Expr>,
    pub body: Expr,
    pub target: Target,
}

#[derive(Debug)]
pub enum Target {
    Var(Var, Rc<str>),
    /// Unpacking; the optional index is the position of a `*rest` target.
    Unpack(Vec<Target>, Option<usize>, Span),
    /// `obj[index] = v`: lists and dicts change in place; an array is
    /// replaced by an updated copy, stored back through `store`.
    Subscript {
        obj: Box<Expr>,
        store: Option<Box<Target>>,
        index: Box<Expr>,
        span: Span,
    },
    Attribute {
        obj: Box<Expr>,
        attr: Rc<str>,
        span: Span,
    },
}

#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug)]
pub enum ExprKind {
    Const(Value),
    Load(Var, Rc<str>),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `{k: v, **d}`: a `None` key is a `**d` entry.
    Dict(Vec<(Option<Expr>, Expr)>),
    /// A set display; a set comprehension is a `Starred` list comprehension in one.
    Set(Vec<Expr>),
    /// `name := value`.
    NamedExpr(Box<Target>, Box<Expr>),
    Starred(Box<Expr>),
    /// `yield value` (`false`) or `yield from iterable` (`true`).
    Yield(Option<Box<Expr>>, bool),
    FString(Vec<FPart>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    BoolOp(BoolOpKind, Vec<Expr>),
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    IfExp(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Create a closure: defaults are evaluated now, `captures` are this
    /// frame's cells handed to the new function, in its free-variable order.
    MakeFunction {
        code: Rc<FuncCode>,
        defaults: Vec<Option<Expr>>,
        captures: Vec<u32>,
        decorators: Vec<Expr>,
        /// Parameter and return annotations: the name (`return` for the
        /// result), the expression and its source text, which stands in
        /// for a value the expression cannot give (an undefined name).
        annotations: Vec<(Rc<str>, Expr, Rc<str>)>,
    },
    Call(Box<Expr>, Vec<CallArg>),
    Attribute(Box<Expr>, Rc<str>),
    Subscript(Box<Expr>, Box<Expr>),
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// The module a dotted path names; with `top`, its first component
    /// (`import a.b` binds `a` once `a.b` is known to exist).
    Import {
        path: Rc<str>,
        top: bool,
    },
    /// `name` from `module`: an attribute, else the submodule `module.name`.
    ImportFrom {
        module: Rc<str>,
        name: Rc<str>,
    },
    /// The inside of a list or dict comprehension, run in its own frame.
    Comprehension {
        elt: Box<Expr>,
        value: Option<Box<Expr>>,
        generators: Vec<Generator>,
    },
}

#[derive(Debug)]
pub struct Generator {
    pub target: Target,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Debug)]
pub enum FPart {
    Literal(String),
    Hole {
        expr: Expr,
        conversion: Option<char>,
        spec: Option<String>,
    },
}

#[derive(Debug)]
pub enum CallArg {
    Positional(Expr),
    Starred(Expr),
    Keyword(Rc<str>, Expr),
    DoubleStarred(Expr),
}

/// Module-level code (a script, a REPL entry).
#[derive(Debug)]
pub struct ModuleCode {
    pub body: Vec<Stmt>,
    pub file: Rc<SourceFile>,
}
