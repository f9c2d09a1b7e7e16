//! Tokens to AST by recursive descent with Python's precedence, and the REPL's
//! "is this entry complete?" check built on the same lexer and parser.
//!
//! The parser stops at the first syntax error. Every way of recursing on
//! input (brackets, unary operators, `**`, `not`, `lambda`, `if`-`else`
//! chains, blocks, f-string holes) goes through `nested`, which turns
//! excessive depth into a "too deeply nested" diagnostic instead of a stack
//! overflow.

use crate::ast::*;
use crate::lexer::{self, Lexed, StrPart, Token, TokenKind};
use crate::{Completeness, Diagnostic, SourceFile, Span};

/// How many nested brackets, unary operators, blocks, ... we accept.
const MAX_DEPTH: usize = 100;

type PResult<T> = Result<T, Diagnostic>;

pub(crate) fn parse_module(text: &str) -> Result<Module, Vec<Diagnostic>> {
    let mut lexed = lexer::tokenize(text);
    let tokens = std::mem::take(&mut lexed.tokens);
    let (result, _) = parse_tokens(text, tokens);
    merge_diagnostics(result, lexed)
}

/// Parse tokens; the second value says whether the parser ran out of input
/// where more lines could complete it (a block header or a decorator at the
/// very end), with the extra indentation to suggest.
fn parse_tokens(text: &str, tokens: Vec<Token>) -> (PResult<Module>, Option<usize>) {
    let mut parser = Parser::new(text, tokens, 0);
    let result = parser.module();
    (result, parser.wants_more)
}

fn merge_diagnostics(result: PResult<Module>, lexed: Lexed) -> Result<Module, Vec<Diagnostic>> {
    let mut diagnostics = lexed.errors;
    diagnostics.extend(lexed.eof_errors);
    diagnostics.sort_by_key(|d| d.span.start);
    match result {
        Ok(module) if diagnostics.is_empty() => Ok(module),
        Ok(_) => Err(diagnostics),
        Err(error) => {
            // A lexical error before the syntax error is usually its cause;
            // otherwise the syntax error comes first.
            let first_lexical = diagnostics.first().map_or(u32::MAX, |d| d.span.start);
            if error.span.start < first_lexical {
                diagnostics.insert(0, error);
            }
            Err(diagnostics)
        }
    }
}

pub(crate) fn check_complete(text: &str) -> Completeness {
    if text.trim().is_empty() {
        return Completeness::Complete;
    }
    let mut lexed = lexer::tokenize(text);
    let block_indent = " ".repeat(lexed.indent_at_end);
    if !lexed.errors.is_empty() {
        return Completeness::Invalid(lexed.errors);
    }
    let tokens = std::mem::take(&mut lexed.tokens);
    let (result, wants_more) = parse_tokens(text, tokens);
    if !lexed.eof_errors.is_empty() {
        // The text stops inside a bracket, a triple-quoted string or after a
        // backslash. More lines can help unless a syntax error comes before
        // the end of the text.
        if let Err(error) = &result {
            if (error.span.start as usize) < text.trim_end().len() {
                return Completeness::Invalid(vec![error.clone()]);
            }
        }
        // Inside a triple-quoted string the next line's indentation is part
        // of the string, so suggest none.
        let in_string = lexed
            .eof_errors
            .iter()
            .any(|d| d.message.contains("triple-quoted"));
        let indent = if in_string {
            String::new()
        } else {
            block_indent
        };
        return Completeness::Incomplete { indent };
    }
    match result {
        Ok(_) => {
            // Like Python's interactive console: an entry that ends inside an
            // indented block is finished by an empty line.
            let last_line = text.rsplit('\n').next().unwrap_or("");
            if lexed.open_blocks > 0 && !last_line.trim().is_empty() {
                Completeness::Incomplete {
                    indent: block_indent,
                }
            } else {
                Completeness::Complete
            }
        }
        Err(error) => match wants_more {
            Some(extra) => Completeness::Incomplete {
                indent: " ".repeat(lexed.indent_at_end + extra),
            },
            None => Completeness::Invalid(vec![error]),
        },
    }
}

struct Parser<'a> {
    /// The whole source: f-string holes point into it.
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    /// End of the last consumed token that is not NEWLINE/INDENT/DEDENT.
    last_end: u32,
    /// Set when the input ended where a REPL should ask for more lines.
    wants_more: Option<usize>,
}

fn is_layout(kind: &TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Newline | TokenKind::Indent | TokenKind::Dedent | TokenKind::Eof
    )
}

fn binary_op(op: &str) -> Option<(BinOp, u8)> {
    // Precedence levels from `|` (loosest) to `* / // % @` (tightest).
    let entry = match op {
        "|" => (BinOp::BitOr, 1),
        "^" => (BinOp::BitXor, 2),
        "&" => (BinOp::BitAnd, 3),
        "<<" => (BinOp::LShift, 4),
        ">>" => (BinOp::RShift, 4),
        "+" => (BinOp::Add, 5),
        "-" => (BinOp::Sub, 5),
        "*" => (BinOp::Mul, 6),
        "/" => (BinOp::Div, 6),
        "//" => (BinOp::FloorDiv, 6),
        "%" => (BinOp::Mod, 6),
        "@" => (BinOp::MatMul, 6),
        _ => return None,
    };
    Some(entry)
}

fn augmented_op(op: &str) -> Option<BinOp> {
    let op = match op {
        "+=" => BinOp::Add,
        "-=" => BinOp::Sub,
        "*=" => BinOp::Mul,
        "/=" => BinOp::Div,
        "//=" => BinOp::FloorDiv,
        "%=" => BinOp::Mod,
        "**=" => BinOp::Pow,
        "@=" => BinOp::MatMul,
        "&=" => BinOp::BitAnd,
        "|=" => BinOp::BitOr,
        "^=" => BinOp::BitXor,
        "<<=" => BinOp::LShift,
        ">>=" => BinOp::RShift,
        _ => return None,
    };
    Some(op)
}

fn closer_for(opener: &str) -> &'static str {
    match opener {
        "(" => ")",
        "[" => "]",
        _ => "}",
    }
}

/// What kind of expression this is, for "cannot assign to ..." messages.
fn describe_expr(expr: &Expr) -> &'static str {
    match &expr.kind {
        ExprKind::Call { .. } => "function call",
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Imag(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None => "literal",
        ExprKind::FString(_) => "f-string expression",
        ExprKind::Ellipsis => "ellipsis",
        ExprKind::Dict(_) => "dict literal",
        ExprKind::Set(_) => "set display",
        ExprKind::SetComp { .. } => "set comprehension",
        ExprKind::NamedExpr { .. } => "named expression",
        ExprKind::ListComp { .. } => "list comprehension",
        ExprKind::GeneratorExp { .. } => "generator expression",
        ExprKind::DictComp { .. } => "dict comprehension",
        ExprKind::Compare { .. } => "comparison",
        ExprKind::IfExp { .. } => "conditional expression",
        ExprKind::Lambda(_) => "lambda",
        ExprKind::Yield { .. } => "yield expression",
        ExprKind::Slice { .. } => "slice",
        ExprKind::Tuple(_) => "tuple",
        ExprKind::List(_) => "list",
        ExprKind::Starred(_) => "starred",
        ExprKind::Name(_) => "name",
        ExprKind::Attribute { .. } => "attribute",
        ExprKind::Subscript { .. } => "subscript",
        ExprKind::Unary { .. } | ExprKind::Binary { .. } | ExprKind::BoolOp { .. } => "expression",
    }
}

/// Check that `expr` may be assigned to (`=` targets, `for` targets).
fn check_target(expr: &Expr) -> PResult<()> {
    match &expr.kind {
        ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            let mut starred = 0;
            for item in items {
                if let ExprKind::Starred(inner) = &item.kind {
                    starred += 1;
                    if starred > 1 {
                        return Err(Diagnostic::new(
                            "multiple starred expressions in assignment",
                            item.span,
                        ));
                    }
                    check_target(inner)?;
                } else {
                    check_target(item)?;
                }
            }
            Ok(())
        }
        ExprKind::Starred(_) => Err(Diagnostic::new(
            "starred assignment target must be in a list or tuple",
            expr.span,
        )),
        _ => Err(Diagnostic::new(
            format!("cannot assign to {}", describe_expr(expr)),
            expr.span,
        )),
    }
}

/// `del` takes names, subscripts, attributes, and tuples or lists of them.
fn check_del_target(expr: &Expr) -> PResult<()> {
    match &expr.kind {
        ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            items.iter().try_for_each(check_del_target)
        }
        _ => Err(Diagnostic::new(
            format!("cannot delete {}", describe_expr(expr)),
            expr.span,
        )),
    }
}

fn check_aug_target(expr: &Expr) -> PResult<()> {
    match &expr.kind {
        ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
        ExprKind::Tuple(_) | ExprKind::List(_) => Err(Diagnostic::new(
            format!(
                "'{}' is an illegal expression for augmented assignment",
                describe_expr(expr)
            ),
            expr.span,
        )),
        _ => Err(Diagnostic::new(
            format!("cannot assign to {}", describe_expr(expr)),
            expr.span,
        )),
    }
}

/// A bare `*x` is only allowed inside a tuple or list, or as an assignment target.
fn check_not_starred(expr: &Expr) -> PResult<()> {
    match expr.kind {
        ExprKind::Starred(_) => Err(Diagnostic::new(
            "cannot use starred expression here",
            expr.span,
        )),
        _ => Ok(()),
    }
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, tokens: Vec<Token>, depth: usize) -> Parser<'a> {
        Parser {
            text,
            tokens,
            pos: 0,
            depth,
            last_end: 0,
            wants_more: None,
        }
    }

    // ---- token helpers ----

    fn peek(&self) -> &TokenKind {
        self.tokens
            .get(self.pos)
            .map_or(&TokenKind::Eof, |t| &t.kind)
    }

    fn peek_at(&self, ahead: usize) -> &TokenKind {
        self.tokens
            .get(self.pos + ahead)
            .map_or(&TokenKind::Eof, |t| &t.kind)
    }

    fn peek_span(&self) -> Span {
        match self.tokens.get(self.pos) {
            Some(token) => token.span,
            None => {
                let end = self.tokens.last().map_or(0, |t| t.span.end);
                Span { start: end, end }
            }
        }
    }

    fn start(&self) -> u32 {
        self.peek_span().start
    }

    /// The span from `start` to the end of the last consumed token.
    fn span_from(&self, start: u32) -> Span {
        Span {
            start,
            end: self.last_end.max(start),
        }
    }

    fn advance(&mut self) -> Span {
        let span = self.peek_span();
        if let Some(token) = self.tokens.get(self.pos) {
            if !is_layout(&token.kind) {
                self.last_end = token.span.end;
            }
            self.pos += 1;
        }
        span
    }

    fn at_op(&self, op: &str) -> bool {
        matches!(self.peek(), TokenKind::Op(o) if *o == op)
    }

    fn at_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), TokenKind::Keyword(k) if *k == keyword)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let found = self.at_op(op);
        if found {
            self.advance();
        }
        found
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let found = self.at_keyword(keyword);
        if found {
            self.advance();
        }
        found
    }

    fn at_eof(&self) -> bool {
        matches!(self.peek(), TokenKind::Eof)
    }

    /// Only layout tokens are left: the text has ended.
    fn at_end_of_input(&self) -> bool {
        self.tokens
            .get(self.pos..)
            .unwrap_or(&[])
            .iter()
            .all(|t| is_layout(&t.kind))
    }

    /// How the current token is named in messages.
    fn describe_current(&self) -> String {
        let span = self.peek_span();
        match self.peek() {
            TokenKind::Newline => "end of line".to_string(),
            TokenKind::Eof => "end of input".to_string(),
            TokenKind::Indent => "indent".to_string(),
            TokenKind::Dedent => "dedent".to_string(),
            TokenKind::Str(_) => "string literal".to_string(),
            _ => {
                let text = self
                    .text
                    .get(span.start as usize..span.end as usize)
                    .unwrap_or("?");
                format!("'{text}'")
            }
        }
    }

    fn unexpected(&self) -> Diagnostic {
        let span = self.peek_span();
        match self.peek() {
            TokenKind::Indent => {
                Diagnostic::with_class("IndentationError", "unexpected indent", span)
            }
            TokenKind::Dedent => {
                Diagnostic::new("unindent does not match any outer indentation level", span)
            }
            _ => Diagnostic::new(
                format!("invalid syntax: unexpected {}", self.describe_current()),
                span,
            ),
        }
    }

    fn expect_op(&mut self, op: &str, context: &str) -> PResult<Span> {
        if self.at_op(op) {
            Ok(self.advance())
        } else {
            let message = format!(
                "expected '{op}' {context}, found {}",
                self.describe_current()
            );
            Err(Diagnostic::new(message, self.peek_span()))
        }
    }

    fn expect_closer(&mut self, opener: &str, open_span: Span) -> PResult<Span> {
        let closer = closer_for(opener);
        if self.at_op(closer) {
            return Ok(self.advance());
        }
        let at = SourceFile::new("", self.text).line_col(open_span.start);
        let message = format!("expected '{closer}' to close the '{opener}' opened at {at}");
        Err(Diagnostic::new(message, self.peek_span()))
    }

    fn expect_name(&mut self, what: &str) -> PResult<Ident> {
        if let TokenKind::Name(name) = self.peek() {
            let name = name.clone();
            let span = self.advance();
            Ok(Ident { name, span })
        } else {
            let message = format!("expected {what}, found {}", self.describe_current());
            Err(Diagnostic::new(message, self.peek_span()))
        }
    }

    /// Run `f` one nesting level deeper, refusing to go past `MAX_DEPTH`.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            return Err(Diagnostic::new("too deeply nested", self.peek_span()));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// Whether the current token can begin an expression (for optional ones,
    /// such as after `return` or after a trailing comma).
    fn at_expression_start(&self) -> bool {
        match self.peek() {
            TokenKind::Name(_)
            | TokenKind::Int(_)
            | TokenKind::Float(_)
            | TokenKind::Imag(_)
            | TokenKind::Str(_) => true,
            TokenKind::Keyword(k) => matches!(*k, "not" | "lambda" | "True" | "False" | "None"),
            TokenKind::Op(op) => matches!(*op, "(" | "[" | "{" | "-" | "+" | "~" | "..." | "*"),
            _ => false,
        }
    }

    // ---- statements ----

    fn module(&mut self) -> PResult<Module> {
        let mut body = Vec::new();
        loop {
            match self.peek() {
                TokenKind::Eof => break,
                TokenKind::Newline => {
                    self.advance();
                }
                _ => body.extend(self.statement()?),
            }
        }
        Ok(Module { body })
    }

    /// One statement line: a compound statement, or simple statements separated by `;`.
    fn statement(&mut self) -> PResult<Vec<Stmt>> {
        match self.peek() {
            TokenKind::Keyword("def") => {
                let start = self.start();
                Ok(vec![self.function_def(start, Vec::new())?])
            }
            TokenKind::Keyword("class") => {
                let start = self.start();
                Ok(vec![self.class_def(start, Vec::new())?])
            }
            TokenKind::Op("@") => Ok(vec![self.decorated()?]),
            TokenKind::Keyword("if") => Ok(vec![self.if_statement()?]),
            TokenKind::Keyword("while") => Ok(vec![self.while_statement()?]),
            TokenKind::Keyword("for") => Ok(vec![self.for_statement()?]),
            TokenKind::Keyword("try") => Ok(vec![self.try_statement()?]),
            TokenKind::Keyword("with") => Ok(vec![self.with_statement()?]),
            _ => self.simple_statements(),
        }
    }

    fn simple_statements(&mut self) -> PResult<Vec<Stmt>> {
        let mut statements = vec![self.small_statement()?];
        while self.eat_op(";") {
            if matches!(self.peek(), TokenKind::Newline | TokenKind::Eof) {
                break;
            }
            statements.push(self.small_statement()?);
        }
        match self.peek() {
            TokenKind::Newline => {
                self.advance();
            }
            TokenKind::Eof => {}
            _ => return Err(self.unexpected()),
        }
        Ok(statements)
    }

    fn small_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let kind = match self.peek() {
            TokenKind::Keyword("pass") => {
                self.advance();
                StmtKind::Pass
            }
            TokenKind::Keyword("break") => {
                self.advance();
                StmtKind::Break
            }
            TokenKind::Keyword("continue") => {
                self.advance();
                StmtKind::Continue
            }
            TokenKind::Keyword("return") => {
                self.advance();
                let value = if self.at_expression_start() {
                    Some(self.star_expressions()?)
                } else {
                    None
                };
                StmtKind::Return(value)
            }
            TokenKind::Keyword("raise") => {
                self.advance();
                let exc = if self.at_expression_start() {
                    Some(self.test()?)
                } else {
                    None
                };
                let cause = if exc.is_some() && self.eat_keyword("from") {
                    Some(self.test()?)
                } else {
                    None
                };
                StmtKind::Raise { exc, cause }
            }
            TokenKind::Keyword("del") => {
                self.advance();
                let targets = match self.target_list()? {
                    Expr {
                        kind: ExprKind::Tuple(items),
                        ..
                    } => items,
                    one => vec![one],
                };
                for t in &targets {
                    check_del_target(t)?;
                }
                StmtKind::Delete(targets)
            }
            TokenKind::Keyword(keyword @ ("global" | "nonlocal")) => {
                let is_global = *keyword == "global";
                self.advance();
                let mut names = vec![self.expect_name("a name")?];
                while self.eat_op(",") {
                    names.push(self.expect_name("a name")?);
                }
                if is_global {
                    StmtKind::Global(names)
                } else {
                    StmtKind::Nonlocal(names)
                }
            }
            TokenKind::Keyword("assert") => {
                self.advance();
                let test = self.test()?;
                let msg = if self.eat_op(",") {
                    Some(self.test()?)
                } else {
                    None
                };
                StmtKind::Assert { test, msg }
            }
            TokenKind::Keyword("import") => {
                self.advance();
                let mut names = vec![self.import_alias(true)?];
                while self.eat_op(",") {
                    names.push(self.import_alias(true)?);
                }
                StmtKind::Import(names)
            }
            TokenKind::Keyword("from") => self.import_from()?,
            TokenKind::Keyword(
                "def" | "class" | "if" | "while" | "for" | "else" | "elif" | "try" | "except"
                | "finally" | "with",
            )
            | TokenKind::Op("@") => {
                return Err(self.unexpected());
            }
            _ => self.expression_statement()?,
        };
        Ok(Stmt {
            kind,
            span: self.span_from(start),
        })
    }

    /// The right side of an expression statement or an assignment: a
    /// `yield` expression or a (starred) expression list.
    fn star_or_yield(&mut self) -> PResult<Expr> {
        if self.at_keyword("yield") {
            self.yield_expr()
        } else {
            self.star_expressions()
        }
    }

    /// `yield`, `yield a, b` or `yield from xs`, the `yield` next.
    fn yield_expr(&mut self) -> PResult<Expr> {
        let start = self.start();
        self.advance();
        let (value, from) = if self.eat_keyword("from") {
            (Some(Box::new(self.test()?)), true)
        } else if self.at_expression_start() {
            (Some(Box::new(self.star_expressions()?)), false)
        } else {
            (None, false)
        };
        Ok(Expr {
            kind: ExprKind::Yield { value, from },
            span: self.span_from(start),
        })
    }

    /// A dotted module path, `a.b.c`, as one identifier spanning it.
    fn dotted_name(&mut self) -> PResult<Ident> {
        let first = self.expect_name("a module name")?;
        let mut name = first.name;
        let mut span = first.span;
        while self.eat_op(".") {
            let next = self.expect_name("a name after '.'")?;
            name.push('.');
            name.push_str(&next.name);
            span = span.to(next.span);
        }
        Ok(Ident { name, span })
    }

    /// `name [as other]`: a dotted module path after `import`, a plain name after `from m import`.
    fn import_alias(&mut self, dotted: bool) -> PResult<ImportAlias> {
        let name = if dotted {
            self.dotted_name()?
        } else {
            self.expect_name("a name to import")?
        };
        let asname = if self.eat_keyword("as") {
            Some(self.expect_name("a name after 'as'")?)
        } else {
            None
        };
        Ok(ImportAlias { name, asname })
    }

    /// `from a.b import c, d as e`, `from a.b import (c, d)` or `from a.b import *`.
    fn import_from(&mut self) -> PResult<StmtKind> {
        self.advance();
        if self.at_op(".") {
            let message = "relative imports are not supported: name the module";
            return Err(Diagnostic::new(message, self.peek_span()));
        }
        let module = self.dotted_name()?;
        if !self.eat_keyword("import") {
            let message = format!("expected 'import', found {}", self.describe_current());
            return Err(Diagnostic::new(message, self.peek_span()));
        }
        if self.eat_op("*") {
            return Ok(StmtKind::ImportFrom {
                module,
                names: Vec::new(),
            });
        }
        let open = self.at_op("(").then(|| self.advance());
        let mut names = vec![self.import_alias(false)?];
        while self.eat_op(",") {
            if open.is_some() && self.at_op(")") {
                break;
            }
            names.push(self.import_alias(false)?);
        }
        if let Some(open_span) = open {
            self.expect_closer("(", open_span)?;
        }
        Ok(StmtKind::ImportFrom { module, names })
    }

    /// An expression, an assignment chain or an augmented assignment.
    fn expression_statement(&mut self) -> PResult<StmtKind> {
        let first = self.star_or_yield()?;
        if let TokenKind::Op(op) = self.peek() {
            if let Some(op) = augmented_op(op) {
                check_aug_target(&first)?;
                self.advance();
                let value = self.star_expressions()?;
                check_not_starred(&value)?;
                return Ok(StmtKind::AugAssign {
                    target: first,
                    op,
                    value,
                });
            }
        }
        if self.at_op(":") {
            return self.annotated_assignment(first);
        }
        if !self.at_op("=") {
            check_not_starred(&first)?;
            return Ok(StmtKind::Expr(first));
        }
        let mut targets = vec![first];
        let value = loop {
            self.advance();
            let next = self.star_or_yield()?;
            if self.at_op("=") {
                targets.push(next);
            } else {
                break next;
            }
        };
        for target in &targets {
            check_target(target)?;
        }
        check_not_starred(&value)?;
        Ok(StmtKind::Assign { targets, value })
    }

    /// `target: annotation [= value]`, the `:` next. Only a name, an
    /// attribute or a subscript can be annotated, as in Python.
    fn annotated_assignment(&mut self, target: Expr) -> PResult<StmtKind> {
        match &target.kind {
            ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => {}
            ExprKind::Tuple(_) => {
                return Err(Diagnostic::new(
                    "only single target (not tuple) can be annotated",
                    target.span,
                ))
            }
            _ => {
                return Err(Diagnostic::new(
                    format!("illegal target for annotation: {}", describe_expr(&target)),
                    target.span,
                ))
            }
        }
        self.advance();
        let annotation = self.test()?;
        let value = if self.eat_op("=") {
            let value = self.star_expressions()?;
            check_not_starred(&value)?;
            Some(value)
        } else {
            None
        };
        Ok(StmtKind::AnnAssign {
            target,
            annotation,
            value,
        })
    }

    /// `:` then either an indented block or simple statements on the same line.
    fn block(&mut self, header: &str, header_span: Span) -> PResult<Vec<Stmt>> {
        self.expect_op(":", &format!("after {header}"))?;
        if !matches!(self.peek(), TokenKind::Newline) {
            return self.simple_statements();
        }
        self.advance();
        if !matches!(self.peek(), TokenKind::Indent) {
            if self.at_end_of_input() {
                self.wants_more = Some(4);
            }
            let line = SourceFile::new("", self.text)
                .line_col(header_span.start)
                .line;
            let message = format!("expected an indented block after {header} on line {line}");
            return Err(Diagnostic::with_class(
                "IndentationError",
                message,
                self.peek_span(),
            ));
        }
        self.advance();
        self.nested(|p| {
            let mut body = Vec::new();
            loop {
                match p.peek() {
                    TokenKind::Dedent => {
                        p.advance();
                        break;
                    }
                    TokenKind::Eof => break,
                    TokenKind::Newline => {
                        p.advance();
                    }
                    _ => body.extend(p.statement()?),
                }
            }
            Ok(body)
        })
    }

    fn decorated(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let mut decorators = Vec::new();
        while self.eat_op("@") {
            decorators.push(self.test()?);
            match self.peek() {
                TokenKind::Newline => {
                    self.advance();
                }
                _ => return Err(self.unexpected()),
            }
        }
        if self.at_keyword("class") {
            return self.class_def(start, decorators);
        }
        if !self.at_keyword("def") {
            if self.at_end_of_input() {
                self.wants_more = Some(0);
            }
            let message = format!(
                "expected 'def' or 'class' after decorator, found {}",
                self.describe_current()
            );
            return Err(Diagnostic::new(message, self.peek_span()));
        }
        self.function_def(start, decorators)
    }

    /// `class Name(bases, keyword=value): body`.
    fn class_def(&mut self, start: u32, decorators: Vec<Expr>) -> PResult<Stmt> {
        let class_span = self.advance();
        let name = self.expect_name("a class name after 'class'")?;
        let mut bases = Vec::new();
        let mut keywords = Vec::new();
        if self.at_op("(") {
            let open = self.advance();
            while !self.at_op(")") {
                if matches!(self.peek(), TokenKind::Name(_))
                    && matches!(self.peek_at(1), TokenKind::Op("="))
                {
                    let key = self.expect_name("a keyword name")?;
                    self.advance();
                    keywords.push((key, self.test()?));
                } else if !keywords.is_empty() {
                    return Err(Diagnostic::new(
                        "positional argument follows keyword argument",
                        self.peek_span(),
                    ));
                } else {
                    bases.push(self.test()?);
                }
                if !self.eat_op(",") {
                    break;
                }
            }
            self.expect_closer("(", open)?;
        }
        let body = self.block("class definition", class_span)?;
        let docstring = match body.first().map(|s| &s.kind) {
            Some(StmtKind::Expr(Expr {
                kind: ExprKind::Str(text),
                ..
            })) => Some(text.clone()),
            _ => None,
        };
        let span = self.span_from(start);
        Ok(Stmt {
            kind: StmtKind::ClassDef(ClassDef {
                name,
                bases,
                keywords,
                body,
                decorators,
                docstring,
                span,
            }),
            span,
        })
    }

    fn function_def(&mut self, start: u32, decorators: Vec<Expr>) -> PResult<Stmt> {
        let def_span = self.advance();
        let name = self.expect_name("a function name after 'def'")?;
        let open = self.expect_op("(", "after the function name")?;
        let params = self.parameters(")")?;
        self.expect_closer("(", open)?;
        let returns = if self.eat_op("->") {
            Some(Box::new(self.test()?))
        } else {
            None
        };
        let body = self.block("function definition", def_span)?;
        let docstring = match body.first().map(|s| &s.kind) {
            Some(StmtKind::Expr(Expr {
                kind: ExprKind::Str(text),
                ..
            })) => Some(text.clone()),
            _ => None,
        };
        let span = self.span_from(start);
        let def = FunctionDef {
            name,
            params,
            body,
            decorators,
            docstring,
            returns,
            span,
        };
        Ok(Stmt {
            kind: StmtKind::FunctionDef(def),
            span,
        })
    }

    /// Parameters of a `def` (up to `)`) or a `lambda` (up to `:`).
    fn parameters(&mut self, closer: &str) -> PResult<Vec<Param>> {
        let mut params: Vec<Param> = Vec::new();
        let mut seen_star = false;
        let mut seen_default = false;
        let mut bare_star: Option<Span> = None;
        let mut seen_kwargs = false;
        while !self.at_op(closer) {
            if seen_kwargs {
                return Err(Diagnostic::new(
                    "parameters cannot follow var-keyword parameter",
                    self.peek_span(),
                ));
            }
            let param = if self.at_op("**") {
                self.advance();
                seen_kwargs = true;
                Param {
                    name: self.expect_name("a parameter name after '**'")?,
                    default: None,
                    kind: ParamKind::VarKwargs,
                    annotation: self.annotation(closer)?,
                }
            } else if self.at_op("*") {
                let star = self.advance();
                if seen_star {
                    return Err(Diagnostic::new("* argument may appear only once", star));
                }
                seen_star = true;
                if matches!(self.peek(), TokenKind::Name(_)) {
                    Param {
                        name: self.expect_name("a parameter name")?,
                        default: None,
                        kind: ParamKind::VarArgs,
                        annotation: self.annotation(closer)?,
                    }
                } else {
                    bare_star = Some(star);
                    if !self.eat_op(",") {
                        break;
                    }
                    continue;
                }
            } else {
                let name = self.expect_name("a parameter name")?;
                let annotation = self.annotation(closer)?;
                let default = if self.eat_op("=") {
                    Some(self.test()?)
                } else {
                    None
                };
                let kind = if seen_star {
                    ParamKind::KeywordOnly
                } else {
                    ParamKind::Normal
                };
                if kind == ParamKind::KeywordOnly {
                    bare_star = None;
                } else if default.is_some() {
                    seen_default = true;
                } else if seen_default {
                    return Err(Diagnostic::new(
                        "parameter without a default follows parameter with a default",
                        name.span,
                    ));
                }
                Param {
                    name,
                    default,
                    kind,
                    annotation,
                }
            };
            if params.iter().any(|p| p.name.name == param.name.name) {
                let message = format!(
                    "duplicate argument '{}' in function definition",
                    param.name.name
                );
                return Err(Diagnostic::new(message, param.name.span));
            }
            params.push(param);
            if !self.eat_op(",") {
                break;
            }
        }
        if let Some(star) = bare_star {
            return Err(Diagnostic::new("named arguments must follow bare *", star));
        }
        Ok(params)
    }

    /// `: annotation` after a parameter of a `def` (a lambda's `:` ends its
    /// parameters instead).
    fn annotation(&mut self, closer: &str) -> PResult<Option<Expr>> {
        if closer == ")" && self.eat_op(":") {
            Ok(Some(self.test()?))
        } else {
            Ok(None)
        }
    }

    fn if_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let header = self.advance();
        let test = self.test()?;
        let body = self.block("'if' statement", header)?;
        let orelse = self.else_clause()?;
        Ok(Stmt {
            kind: StmtKind::If { test, body, orelse },
            span: self.span_from(start),
        })
    }

    /// `elif ...` (an `If` alone in `orelse`), `else: ...`, or nothing.
    fn else_clause(&mut self) -> PResult<Vec<Stmt>> {
        if self.at_keyword("elif") {
            let start = self.start();
            let header = self.advance();
            let test = self.test()?;
            let body = self.block("'elif' statement", header)?;
            let orelse = self.else_clause()?;
            return Ok(vec![Stmt {
                kind: StmtKind::If { test, body, orelse },
                span: self.span_from(start),
            }]);
        }
        if self.at_keyword("else") {
            let header = self.advance();
            return self.block("'else' statement", header);
        }
        Ok(Vec::new())
    }

    fn while_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let header = self.advance();
        let test = self.test()?;
        let body = self.block("'while' statement", header)?;
        let orelse = self.loop_else()?;
        Ok(Stmt {
            kind: StmtKind::While { test, body, orelse },
            span: self.span_from(start),
        })
    }

    fn for_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let header = self.advance();
        let target = self.target_list()?;
        check_target(&target)?;
        if !self.eat_keyword("in") {
            let message = format!(
                "expected 'in' after the 'for' target, found {}",
                self.describe_current()
            );
            return Err(Diagnostic::new(message, self.peek_span()));
        }
        let iter = self.star_expressions()?;
        let body = self.block("'for' statement", header)?;
        let orelse = self.loop_else()?;
        Ok(Stmt {
            kind: StmtKind::For {
                target,
                iter,
                body,
                orelse,
            },
            span: self.span_from(start),
        })
    }

    /// A loop's `else: ...` block, or nothing.
    fn loop_else(&mut self) -> PResult<Vec<Stmt>> {
        if self.at_keyword("else") {
            let header = self.advance();
            return self.block("'else' statement", header);
        }
        Ok(Vec::new())
    }

    fn try_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let header = self.advance();
        let body = self.block("'try' statement", header)?;
        let mut handlers = Vec::new();
        while self.at_keyword("except") {
            let h_start = self.start();
            let h_header = self.advance();
            if let Some(bare) = handlers.iter().find(|h: &&ExceptHandler| h.typ.is_none()) {
                return Err(Diagnostic::new("default 'except:' must be last", bare.span));
            }
            let (typ, name) = if self.at_op(":") {
                (None, None)
            } else {
                let typ = self.test()?;
                let typ = if self.at_op(",") {
                    let mut items = vec![typ];
                    while self.eat_op(",") {
                        items.push(self.test()?);
                    }
                    let span = self.span_from(h_start);
                    Expr {
                        kind: ExprKind::Tuple(items),
                        span,
                    }
                } else {
                    typ
                };
                let name = if self.eat_keyword("as") {
                    Some(self.expect_name("a name after 'as'")?)
                } else {
                    None
                };
                (Some(typ), name)
            };
            let body = self.block("'except' statement", h_header)?;
            handlers.push(ExceptHandler {
                typ,
                name,
                body,
                span: self.span_from(h_start),
            });
        }
        let orelse = if self.at_keyword("else") {
            if handlers.is_empty() {
                return Err(Diagnostic::new(
                    "expected 'except' or 'finally' block",
                    self.peek_span(),
                ));
            }
            let h = self.advance();
            self.block("'else' statement", h)?
        } else {
            Vec::new()
        };
        let finalbody = if self.at_keyword("finally") {
            let h = self.advance();
            self.block("'finally' statement", h)?
        } else {
            Vec::new()
        };
        if handlers.is_empty() && finalbody.is_empty() {
            if self.at_end_of_input() {
                self.wants_more = Some(0);
            }
            return Err(Diagnostic::new(
                "expected 'except' or 'finally' block",
                self.peek_span(),
            ));
        }
        Ok(Stmt {
            kind: StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            },
            span: self.span_from(start),
        })
    }

    fn with_statement(&mut self) -> PResult<Stmt> {
        let start = self.start();
        let header = self.advance();
        let mut items = Vec::new();
        loop {
            let context = self.test()?;
            let target = if self.eat_keyword("as") {
                let t = self.star_or_binary()?;
                check_target(&t)?;
                Some(t)
            } else {
                None
            };
            items.push(WithItem { context, target });
            if !self.eat_op(",") {
                break;
            }
        }
        let body = self.block("'with' statement", header)?;
        Ok(Stmt {
            kind: StmtKind::With { items, body },
            span: self.span_from(start),
        })
    }

    // ---- expressions ----

    /// Comma-separated expressions (with `*x`), a `Tuple` if there is a comma.
    fn star_expressions(&mut self) -> PResult<Expr> {
        self.comma_list(Self::star_or_test)
    }

    /// Items parsed by `item`, separated by commas (a trailing one allowed);
    /// one item without a comma is itself, otherwise a `Tuple`.
    fn comma_list(&mut self, item: fn(&mut Self) -> PResult<Expr>) -> PResult<Expr> {
        let start = self.start();
        let first = item(self)?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if !self.at_expression_start() {
                break;
            }
            items.push(item(self)?);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.span_from(start),
        })
    }

    /// After a first item: `, item` pairs until `closer` (a trailing comma allowed).
    fn more_items(
        &mut self,
        items: &mut Vec<Expr>,
        closer: &str,
        item: fn(&mut Self) -> PResult<Expr>,
    ) -> PResult<()> {
        while self.eat_op(",") {
            if self.at_op(closer) {
                break;
            }
            items.push(item(self)?);
        }
        Ok(())
    }

    fn star_or_test(&mut self) -> PResult<Expr> {
        if self.at_op("*") {
            let start = self.start();
            self.advance();
            let value = self.binary(1)?;
            return Ok(Expr {
                kind: ExprKind::Starred(Box::new(value)),
                span: self.span_from(start),
            });
        }
        self.test()
    }

    /// Targets of `for` and comprehensions: stops before `in`.
    fn target_list(&mut self) -> PResult<Expr> {
        self.comma_list(Self::star_or_binary)
    }

    fn star_or_binary(&mut self) -> PResult<Expr> {
        let start = self.start();
        if self.eat_op("*") {
            let value = self.binary(1)?;
            return Ok(Expr {
                kind: ExprKind::Starred(Box::new(value)),
                span: self.span_from(start),
            });
        }
        self.binary(1)
    }

    /// `lambda`, or `x if c else y`, or a plain `or` expression.
    fn test(&mut self) -> PResult<Expr> {
        if self.at_keyword("lambda") {
            return self.nested(|p| p.lambda());
        }
        let start = self.start();
        let body = self.or_test()?;
        if self.at_op(":=") {
            let ExprKind::Name(name) = &body.kind else {
                let message = format!(
                    "cannot use assignment expressions with {}",
                    describe_expr(&body)
                );
                return Err(Diagnostic::new(message, body.span));
            };
            let target = Ident {
                name: name.clone(),
                span: body.span,
            };
            self.advance();
            let value = self.nested(|p| p.test())?;
            return Ok(Expr {
                kind: ExprKind::NamedExpr {
                    target,
                    value: Box::new(value),
                },
                span: self.span_from(start),
            });
        }
        if !self.eat_keyword("if") {
            return Ok(body);
        }
        let test = self.or_test()?;
        if !self.eat_keyword("else") {
            let message = format!(
                "expected 'else' after 'if' expression, found {}",
                self.describe_current()
            );
            return Err(Diagnostic::new(message, self.peek_span()));
        }
        let orelse = self.nested(|p| p.test())?;
        let kind = ExprKind::IfExp {
            test: Box::new(test),
            body: Box::new(body),
            orelse: Box::new(orelse),
        };
        Ok(Expr {
            kind,
            span: self.span_from(start),
        })
    }

    fn lambda(&mut self) -> PResult<Expr> {
        let start = self.start();
        let keyword = self.advance();
        let params = self.parameters(":")?;
        self.expect_op(":", "after lambda parameters")?;
        let value = self.test()?;
        let body = vec![Stmt {
            span: value.span,
            kind: StmtKind::Return(Some(value)),
        }];
        let span = self.span_from(start);
        let name = Ident {
            name: "<lambda>".to_string(),
            span: keyword,
        };
        let def = FunctionDef {
            name,
            params,
            body,
            decorators: Vec::new(),
            docstring: None,
            returns: None,
            span,
        };
        Ok(Expr {
            kind: ExprKind::Lambda(Box::new(def)),
            span,
        })
    }

    fn or_test(&mut self) -> PResult<Expr> {
        self.bool_op("or", BoolOpKind::Or)
    }

    fn and_test(&mut self) -> PResult<Expr> {
        self.bool_op("and", BoolOpKind::And)
    }

    /// `a or b or c` (and likewise `and`) as one flat `BoolOp`.
    fn bool_op(&mut self, keyword: &str, op: BoolOpKind) -> PResult<Expr> {
        let start = self.start();
        let operand = |p: &mut Self| {
            if op == BoolOpKind::Or {
                p.and_test()
            } else {
                p.not_test()
            }
        };
        let first = operand(self)?;
        if !self.at_keyword(keyword) {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_keyword(keyword) {
            values.push(operand(self)?);
        }
        Ok(Expr {
            kind: ExprKind::BoolOp { op, values },
            span: self.span_from(start),
        })
    }

    fn not_test(&mut self) -> PResult<Expr> {
        if !self.at_keyword("not") {
            return self.comparison();
        }
        let start = self.start();
        self.advance();
        let operand = self.nested(|p| p.not_test())?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Not,
                operand: Box::new(operand),
            },
            span: self.span_from(start),
        })
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let start = self.start();
        let left = self.binary(1)?;
        let mut ops = Vec::new();
        let mut comparators = Vec::new();
        loop {
            let op = match self.peek() {
                TokenKind::Op("==") => CmpOp::Eq,
                TokenKind::Op("!=") => CmpOp::NotEq,
                TokenKind::Op("<") => CmpOp::Lt,
                TokenKind::Op("<=") => CmpOp::LtE,
                TokenKind::Op(">") => CmpOp::Gt,
                TokenKind::Op(">=") => CmpOp::GtE,
                TokenKind::Keyword("in") => CmpOp::In,
                TokenKind::Keyword("not")
                    if matches!(self.peek_at(1), TokenKind::Keyword("in")) =>
                {
                    self.advance();
                    CmpOp::NotIn
                }
                TokenKind::Keyword("is") => {
                    if matches!(self.peek_at(1), TokenKind::Keyword("not")) {
                        self.advance();
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    }
                }
                _ => break,
            };
            self.advance();
            ops.push(op);
            comparators.push(self.binary(1)?);
        }
        if ops.is_empty() {
            return Ok(left);
        }
        let kind = ExprKind::Compare {
            left: Box::new(left),
            ops,
            comparators,
        };
        Ok(Expr {
            kind,
            span: self.span_from(start),
        })
    }

    fn peek_binary_op(&self) -> Option<(BinOp, u8)> {
        match self.peek() {
            TokenKind::Op(symbol) => binary_op(symbol),
            _ => None,
        }
    }

    /// Binary operators from `|` to `* / // % @` by precedence climbing:
    /// operators at level `min_level` or tighter are consumed here.
    fn binary(&mut self, min_level: u8) -> PResult<Expr> {
        let start = self.start();
        let mut left = self.factor()?;
        while let Some((op, level)) = self.peek_binary_op() {
            if level < min_level {
                break;
            }
            self.advance();
            let right = self.binary(level + 1)?;
            let kind = ExprKind::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
            left = Expr {
                kind,
                span: self.span_from(start),
            };
        }
        Ok(left)
    }

    /// Unary `- + ~`, binding looser than `**` (`-x**2` is `-(x**2)`).
    fn factor(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            TokenKind::Op("-") => UnaryOp::Neg,
            TokenKind::Op("+") => UnaryOp::Pos,
            TokenKind::Op("~") => UnaryOp::Invert,
            _ => return self.power(),
        };
        let start = self.start();
        self.advance();
        let operand = self.nested(|p| p.factor())?;
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span: self.span_from(start),
        })
    }

    /// `primary ** factor`, right-associative.
    fn power(&mut self) -> PResult<Expr> {
        let start = self.start();
        let base = self.primary()?;
        if !self.eat_op("**") {
            return Ok(base);
        }
        let exponent = self.nested(|p| p.factor())?;
        let kind = ExprKind::Binary {
            op: BinOp::Pow,
            left: Box::new(base),
            right: Box::new(exponent),
        };
        Ok(Expr {
            kind,
            span: self.span_from(start),
        })
    }

    /// An atom followed by calls, subscripts and attributes.
    fn primary(&mut self) -> PResult<Expr> {
        let start = self.start();
        let mut value = self.atom()?;
        loop {
            if self.at_op("(") {
                let open = self.advance();
                let args = self.nested(|p| p.call_arguments())?;
                self.expect_closer("(", open)?;
                value = Expr {
                    kind: ExprKind::Call {
                        func: Box::new(value),
                        args,
                    },
                    span: self.span_from(start),
                };
            } else if self.at_op("[") {
                let open = self.advance();
                let index = self.nested(|p| p.subscript_index())?;
                self.expect_closer("[", open)?;
                let kind = ExprKind::Subscript {
                    value: Box::new(value),
                    index: Box::new(index),
                };
                value = Expr {
                    kind,
                    span: self.span_from(start),
                };
            } else if self.eat_op(".") {
                let attr = self.expect_name("an attribute name after '.'")?;
                value = Expr {
                    kind: ExprKind::Attribute {
                        value: Box::new(value),
                        attr,
                    },
                    span: self.span_from(start),
                };
            } else {
                break;
            }
        }
        Ok(value)
    }

    fn call_arguments(&mut self) -> PResult<Vec<Arg>> {
        let mut args = Vec::new();
        let mut seen_keyword = false;
        let mut seen_double_star = false;
        while !self.at_op(")") {
            let arg_start = self.peek_span();
            let arg = if self.eat_op("*") {
                if seen_double_star {
                    let message = "iterable argument unpacking follows keyword argument unpacking";
                    return Err(Diagnostic::new(message, arg_start));
                }
                Arg::Starred(self.test()?)
            } else if self.eat_op("**") {
                seen_double_star = true;
                Arg::DoubleStarred(self.test()?)
            } else if matches!(self.peek(), TokenKind::Name(_))
                && matches!(self.peek_at(1), TokenKind::Op("="))
            {
                let name = self.expect_name("a keyword name")?;
                self.advance();
                seen_keyword = true;
                Arg::Keyword(name, self.test()?)
            } else {
                let start = self.start();
                let value = self.test()?;
                let value = if self.at_keyword("for") {
                    // A generator expression as the sole argument: `sum(x for x in xs)`.
                    let generators = self.comprehension_clauses()?;
                    let span = self.span_from(start);
                    let lone = args.is_empty()
                        && (self.at_op(")") || matches!(self.peek_at(1), TokenKind::Op(")")));
                    if !lone {
                        return Err(Diagnostic::new(
                            "generator expression must be parenthesized",
                            span,
                        ));
                    }
                    Expr {
                        kind: ExprKind::GeneratorExp {
                            elt: Box::new(value),
                            generators,
                        },
                        span,
                    }
                } else {
                    value
                };
                if seen_double_star {
                    let message = "positional argument follows keyword argument unpacking";
                    return Err(Diagnostic::new(message, value.span));
                }
                if seen_keyword {
                    return Err(Diagnostic::new(
                        "positional argument follows keyword argument",
                        value.span,
                    ));
                }
                Arg::Positional(value)
            };
            args.push(arg);
            if !self.eat_op(",") {
                break;
            }
        }
        Ok(args)
    }

    /// The inside of `x[...]`: one index, or several forming a `Tuple`.
    fn subscript_index(&mut self) -> PResult<Expr> {
        let start = self.start();
        let first = self.slice_item()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        self.more_items(&mut items, "]", Self::slice_item)?;
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.span_from(start),
        })
    }

    /// `test`, `*x`, or a slice `lower:upper:step` with any part left out.
    fn slice_item(&mut self) -> PResult<Expr> {
        let start = self.start();
        if self.at_op("*") {
            return self.star_or_test();
        }
        let lower = if self.at_op(":") {
            None
        } else {
            Some(self.test()?)
        };
        if !self.at_op(":") {
            if let Some(lower) = lower {
                return Ok(lower);
            }
        }
        self.expect_op(":", "in slice")?;
        let ends_part = |p: &Self| p.at_op(":") || p.at_op(",") || p.at_op("]");
        let upper = if ends_part(self) {
            None
        } else {
            Some(Box::new(self.test()?))
        };
        let mut step = None;
        if self.eat_op(":") && !(self.at_op(",") || self.at_op("]")) {
            step = Some(Box::new(self.test()?));
        }
        let kind = ExprKind::Slice {
            lower: lower.map(Box::new),
            upper,
            step,
        };
        Ok(Expr {
            kind,
            span: self.span_from(start),
        })
    }

    fn atom(&mut self) -> PResult<Expr> {
        let span = self.peek_span();
        let kind = match self.peek() {
            TokenKind::Name(name) => ExprKind::Name(name.clone()),
            TokenKind::Int(value) => ExprKind::Int(*value),
            TokenKind::Float(value) => ExprKind::Float(*value),
            TokenKind::Imag(value) => ExprKind::Imag(*value),
            TokenKind::Keyword("True") => ExprKind::Bool(true),
            TokenKind::Keyword("False") => ExprKind::Bool(false),
            TokenKind::Keyword("None") => ExprKind::None,
            TokenKind::Op("...") => ExprKind::Ellipsis,
            TokenKind::Str(_) => return self.strings(),
            TokenKind::Op("(") => return self.nested(|p| p.parenthesized()),
            TokenKind::Op("[") => return self.nested(|p| p.list_display()),
            TokenKind::Op("{") => return self.nested(|p| p.dict_display()),
            _ => return Err(self.unexpected()),
        };
        self.advance();
        Ok(Expr { kind, span })
    }

    /// Adjacent string literals, joined; an f-string among them makes the whole an f-string.
    fn strings(&mut self) -> PResult<Expr> {
        let start = self.start();
        let mut pieces = Vec::new();
        let mut is_fstring = false;
        while let TokenKind::Str(token) = self.peek() {
            is_fstring |= token.is_fstring;
            pieces.extend(token.parts.clone());
            self.advance();
        }
        let span = self.span_from(start);
        if !is_fstring {
            let mut text = String::new();
            for piece in pieces {
                if let StrPart::Text(piece) = piece {
                    text.push_str(&piece);
                }
            }
            return Ok(Expr {
                kind: ExprKind::Str(text),
                span,
            });
        }
        let mut parts: Vec<FStringPart> = Vec::new();
        for piece in pieces {
            match piece {
                StrPart::Text(text) => {
                    if text.is_empty() {
                        continue;
                    }
                    if let Some(FStringPart::Literal(previous)) = parts.last_mut() {
                        previous.push_str(&text);
                    } else {
                        parts.push(FStringPart::Literal(text));
                    }
                }
                StrPart::Hole {
                    expr,
                    conversion,
                    spec,
                } => {
                    let expr = self.nested(|p| p.fstring_hole(expr))?;
                    parts.push(FStringPart::Hole {
                        expr,
                        conversion,
                        spec,
                    });
                }
            }
        }
        Ok(Expr {
            kind: ExprKind::FString(parts),
            span,
        })
    }

    /// Parse the expression of an f-string hole with spans in the real source.
    fn fstring_hole(&mut self, range: Span) -> PResult<Expr> {
        let start = range.start as usize;
        let Some(source) = self.text.get(start..range.end as usize) else {
            return Err(Diagnostic::new("f-string: invalid expression", range));
        };
        let lexed = lexer::tokenize_fragment(source, start);
        if let Some(error) = lexed.errors.into_iter().chain(lexed.eof_errors).next() {
            return Err(error);
        }
        let mut parser = Parser::new(self.text, lexed.tokens, self.depth);
        if parser.at_eof() {
            return Err(Diagnostic::new(
                "f-string: empty expression not allowed",
                range,
            ));
        }
        let expr = parser.star_expressions().map_err(|error| {
            if parser.at_eof() {
                Diagnostic::new("f-string: expecting an expression before '}'", error.span)
            } else {
                error
            }
        })?;
        if !parser.at_eof() {
            return Err(parser.unexpected());
        }
        Ok(expr)
    }

    /// `()`, `(x)`, `(x,)`, `(a, *b)`, or `(x for x in xs)` (a `GeneratorExp`).
    fn parenthesized(&mut self) -> PResult<Expr> {
        let open = self.advance();
        let start = open.start;
        if self.at_op(")") {
            self.advance();
            return Ok(Expr {
                kind: ExprKind::Tuple(Vec::new()),
                span: self.span_from(start),
            });
        }
        if self.at_keyword("yield") {
            let value = self.yield_expr()?;
            self.expect_closer("(", open)?;
            return Ok(value);
        }
        let first = self.star_or_test()?;
        if self.at_keyword("for") {
            check_not_starred(&first)?;
            let generators = self.comprehension_clauses()?;
            self.expect_closer("(", open)?;
            let kind = ExprKind::GeneratorExp {
                elt: Box::new(first),
                generators,
            };
            return Ok(Expr {
                kind,
                span: self.span_from(start),
            });
        }
        if !self.at_op(",") {
            self.expect_closer("(", open)?;
            check_not_starred(&first)?;
            // Like Python, a parenthesised expression keeps its own span.
            return Ok(first);
        }
        let mut items = vec![first];
        self.more_items(&mut items, ")", Self::star_or_test)?;
        self.expect_closer("(", open)?;
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span: self.span_from(start),
        })
    }

    /// `[]`, `[a, *b]`, or `[e for ...]`.
    fn list_display(&mut self) -> PResult<Expr> {
        let open = self.advance();
        let start = open.start;
        let mut items = Vec::new();
        if !self.at_op("]") {
            let first = self.star_or_test()?;
            if self.at_keyword("for") {
                check_not_starred(&first)?;
                let generators = self.comprehension_clauses()?;
                self.expect_closer("[", open)?;
                let kind = ExprKind::ListComp {
                    elt: Box::new(first),
                    generators,
                };
                return Ok(Expr {
                    kind,
                    span: self.span_from(start),
                });
            }
            items.push(first);
            self.more_items(&mut items, "]", Self::star_or_test)?;
        }
        self.expect_closer("[", open)?;
        Ok(Expr {
            kind: ExprKind::List(items),
            span: self.span_from(start),
        })
    }

    /// `{}`, `{k: v, **d, ...}`, `{k: v for ...}`, `{a, *b}` or `{e for ...}`.
    fn dict_display(&mut self) -> PResult<Expr> {
        let open = self.advance();
        let start = open.start;
        if self.at_op("}") {
            self.advance();
            return Ok(Expr {
                kind: ExprKind::Dict(Vec::new()),
                span: self.span_from(start),
            });
        }
        // The first item decides between a dict and a set.
        if !self.at_op("**") {
            let first = self.star_or_test()?;
            if !self.at_op(":") {
                return self.set_display(open, first);
            }
            check_not_starred(&first)?;
            self.advance();
            let value = self.test()?;
            if self.at_keyword("for") {
                let generators = self.comprehension_clauses()?;
                self.expect_closer("{", open)?;
                let kind = ExprKind::DictComp {
                    key: Box::new(first),
                    value: Box::new(value),
                    generators,
                };
                return Ok(Expr {
                    kind,
                    span: self.span_from(start),
                });
            }
            return self.dict_items(open, vec![(Some(first), value)]);
        }
        self.dict_items(open, Vec::new())
    }

    /// The rest of a dict display after its first pairs.
    fn dict_items(&mut self, open: Span, mut pairs: Vec<(Option<Expr>, Expr)>) -> PResult<Expr> {
        let start = open.start;
        while pairs.is_empty() || self.eat_op(",") {
            if self.at_op("}") {
                break;
            }
            if self.eat_op("**") {
                pairs.push((None, self.binary(1)?));
                continue;
            }
            let key = self.test()?;
            if !self.at_op(":") {
                let message = format!(
                    "expected ':' after the dict key, found {}",
                    self.describe_current()
                );
                return Err(Diagnostic::new(message, self.peek_span()));
            }
            self.advance();
            let value = self.test()?;
            pairs.push((Some(key), value));
        }
        self.expect_closer("{", open)?;
        Ok(Expr {
            kind: ExprKind::Dict(pairs),
            span: self.span_from(start),
        })
    }

    /// The rest of a set display or set comprehension after its first item.
    fn set_display(&mut self, open: Span, first: Expr) -> PResult<Expr> {
        let start = open.start;
        if self.at_keyword("for") {
            check_not_starred(&first)?;
            let generators = self.comprehension_clauses()?;
            self.expect_closer("{", open)?;
            let kind = ExprKind::SetComp {
                elt: Box::new(first),
                generators,
            };
            return Ok(Expr {
                kind,
                span: self.span_from(start),
            });
        }
        let mut items = vec![first];
        self.more_items(&mut items, "}", Self::star_or_test)?;
        self.expect_closer("{", open)?;
        Ok(Expr {
            kind: ExprKind::Set(items),
            span: self.span_from(start),
        })
    }

    /// One or more `for target in iter [if cond]...` clauses.
    fn comprehension_clauses(&mut self) -> PResult<Vec<Comprehension>> {
        let mut generators = Vec::new();
        while self.eat_keyword("for") {
            let target = self.target_list()?;
            check_target(&target)?;
            if !self.eat_keyword("in") {
                let message = format!(
                    "expected 'in' after the comprehension target, found {}",
                    self.describe_current()
                );
                return Err(Diagnostic::new(message, self.peek_span()));
            }
            let iter = self.or_test()?;
            let mut ifs = Vec::new();
            while self.eat_keyword("if") {
                ifs.push(self.or_test()?);
            }
            generators.push(Comprehension { target, iter, ifs });
        }
        Ok(generators)
    }
}
