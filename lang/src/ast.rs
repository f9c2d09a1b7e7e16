//! The abstract syntax tree: plain data, every node carrying the span of its source text.
//!
//! The tree follows Python's grammar closely (so a Python reader recognises every
//! node) but keeps only what arr supports. Spans are byte offsets into the
//! source; `SourceFile` turns them into line:col.

use crate::span::Span;

/// A parsed file, REPL entry or `-e` snippet.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// An expression statement; the REPL echoes the value of a trailing one.
    Expr(Expr),
    /// `a = b = value`: several targets, assigned left to right.
    /// A target is a `Name`, `Tuple`/`List` of targets, `Starred` inside
    /// those, `Subscript` (functional update) or `Attribute`.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value`, e.g. `x += 1`.
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    FunctionDef(FunctionDef),
    ClassDef(ClassDef),
    /// `target: annotation` or `target: annotation = value`.
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    Return(Option<Expr>),
    /// `if`/`elif`/`else`: an `elif` is an `If` alone in `orelse`.
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `for target in iter: body else: orelse` (`orelse` runs when no `break` ended the loop).
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Break,
    Continue,
    Pass,
    Global(Vec<Ident>),
    Nonlocal(Vec<Ident>),
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `raise`, `raise expr` or `raise expr from cause`.
    Raise {
        exc: Option<Expr>,
        cause: Option<Expr>,
    },
    /// `try:` with `except` handlers, `else` and `finally`.
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    /// `with a as x, b:`: the items enter left to right.
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    /// `del a, d[k], obj.attr`.
    Delete(Vec<Expr>),
    /// `import a.b.c`, `import a.b as c`, several separated by commas.
    Import(Vec<ImportAlias>),
    /// `from a.b import c, d as e` or `from a.b import *` (no names).
    ImportFrom {
        module: Ident,
        names: Vec<ImportAlias>,
    },
}

/// One name of an import: a dotted module path (or a name inside one) and
/// its `as` name.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportAlias {
    /// Dotted, as written: `jax.numpy`.
    pub name: Ident,
    pub asname: Option<Ident>,
}

/// `except [type [as name]]: body`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExceptHandler {
    /// None for a bare `except:`.
    pub typ: Option<Expr>,
    pub name: Option<Ident>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// One `expr [as target]` of a `with` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

/// A name together with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A `def` statement or a `lambda` (whose body is one `Return`).
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    /// `"<lambda>"` for a lambda.
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    /// Applied bottom-up, as in Python.
    pub decorators: Vec<Expr>,
    /// The leading string literal of the body, if any (it stays in `body` too).
    pub docstring: Option<String>,
    /// `-> annotation`, never evaluated.
    pub returns: Option<Box<Expr>>,
    pub span: Span,
}

/// A `class` statement: its body runs once, in a namespace of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    pub name: Ident,
    pub bases: Vec<Expr>,
    /// `class C(Base, frozen=True)`: keyword arguments of the header.
    pub keywords: Vec<(Ident, Expr)>,
    pub body: Vec<Stmt>,
    /// Applied bottom-up, as in Python.
    pub decorators: Vec<Expr>,
    pub docstring: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub default: Option<Expr>,
    pub kind: ParamKind,
    /// `name: annotation`, never evaluated.
    pub annotation: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Positional-or-keyword; after a `*args` (or bare `*`) it is keyword-only.
    Normal,
    KeywordOnly,
    /// `*args`
    VarArgs,
    /// `**kwargs`
    VarKwargs,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(String),
    /// Integer literal; `10_000` parses to 10000. Literals beyond i64 are a syntax error.
    Int(i64),
    Float(f64),
    /// An imaginary literal: `2j` is `Imag(2.0)`.
    Imag(f64),
    Str(String),
    /// An f-string: literal pieces and `{expr!conv:spec}` holes.
    FString(Vec<FStringPart>),
    Bool(bool),
    None,
    /// `...`
    Ellipsis,
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `{k: v, **other}`: a `None` key marks a `**other` entry.
    Dict(Vec<(Option<Expr>, Expr)>),
    /// `{a, b}` (never empty: `{}` is a dict).
    Set(Vec<Expr>),
    /// `{elt for target in iter if cond ...}`
    SetComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `name := value`
    NamedExpr {
        target: Ident,
        value: Box<Expr>,
    },
    /// `[elt for target in iter if cond ...]`
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `(elt for target in iter if cond ...)`: a generator.
    GeneratorExp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `{key: value for ...}`
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a and b and c` (short-circuit; yields an operand, as Python does).
    BoolOp {
        op: BoolOpKind,
        values: Vec<Expr>,
    },
    /// Chained comparison `a < b <= c`: `ops.len() == comparators.len()`.
    Compare {
        left: Box<Expr>,
        ops: Vec<CmpOp>,
        comparators: Vec<Expr>,
    },
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Lambda(Box<FunctionDef>),
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    /// `value[index]`; several comma-separated indices form a `Tuple` index.
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lower:upper:step`, only inside a subscript.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    /// `*x` in an assignment target or a list/tuple display.
    Starred(Box<Expr>),
    /// `yield`, `yield value` or `yield from iterable` (`from` true); its
    /// presence makes the enclosing function a generator.
    Yield {
        value: Option<Box<Expr>>,
        from: bool,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum FStringPart {
    Literal(String),
    /// `{expr}`, `{expr!r}`, `{expr:.3f}`; `conversion` is `'r'`, `'s'` or `'a'`.
    Hole {
        expr: Expr,
        conversion: Option<char>,
        spec: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Positional(Expr),
    /// `*xs`
    Starred(Expr),
    Keyword(Ident, Expr),
    /// `**kw`
    DoubleStarred(Expr),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoolOpKind {
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    In,
    NotIn,
    Is,
    IsNot,
}

impl BinOp {
    /// The operator as written in source, e.g. `"//"`.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Pos => "+",
            UnaryOp::Not => "not",
            UnaryOp::Invert => "~",
        }
    }
}
