//! The AST as indented S-expression-like text, for snapshot tests and `:ast`.
//!
//! One statement per line; the statements of a block sit on the following
//! lines, indented two more spaces, and the closing parenthesis of the
//! compound statement follows its last one. Every field is printed; spans
//! only by `module_to_string_with_spans`.
//!
//! ```text
//! (def f (params (param x) (param k kwonly (default (int 0))))
//!   (docstring "Doc.")
//!   (expr (str "Doc."))
//!   (return (binop + (name x) (name k))))
//! ```

use std::fmt::Write;

use crate::ast::*;
use crate::span::Span;

pub fn module_to_string(m: &Module) -> String {
    let mut printer = Printer {
        out: String::new(),
        spans: false,
    };
    for stmt in &m.body {
        printer.stmt(stmt, 0);
        printer.out.push('\n');
    }
    printer.out
}

/// Like `module_to_string`, but every statement and expression is followed
/// by its byte span `@start..end`.
pub fn module_to_string_with_spans(m: &Module) -> String {
    let mut printer = Printer {
        out: String::new(),
        spans: true,
    };
    for stmt in &m.body {
        printer.stmt(stmt, 0);
        printer.out.push('\n');
    }
    printer.out
}

struct Printer {
    out: String,
    spans: bool,
}

impl Printer {
    fn span(&mut self, span: Span) {
        if self.spans {
            let _ = write!(self.out, "@{}..{}", span.start, span.end);
        }
    }

    fn newline(&mut self, indent: usize) {
        self.out.push('\n');
        self.out.push_str(&" ".repeat(indent));
    }

    /// The statements of a block, each on its own line at `indent`.
    fn block(&mut self, body: &[Stmt], indent: usize) {
        for stmt in body {
            self.newline(indent);
            self.stmt(stmt, indent);
        }
    }

    /// An `(else ...)` block of an `if` or a loop, when there is one.
    fn else_block(&mut self, orelse: &[Stmt], indent: usize) {
        if !orelse.is_empty() {
            self.newline(indent + 2);
            self.out.push_str("(else");
            self.block(orelse, indent + 4);
            self.out.push(')');
        }
    }

    fn stmt(&mut self, stmt: &Stmt, indent: usize) {
        self.out.push('(');
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                self.out.push_str("expr ");
                self.expr(expr);
            }
            StmtKind::Assign { targets, value } => {
                self.out.push_str("assign");
                for target in targets {
                    self.out.push(' ');
                    self.expr(target);
                }
                self.out.push(' ');
                self.expr(value);
            }
            StmtKind::AugAssign { target, op, value } => {
                let _ = write!(self.out, "augassign {}= ", op.symbol());
                self.expr(target);
                self.out.push(' ');
                self.expr(value);
            }
            StmtKind::FunctionDef(def) => self.function_def(def, indent),
            StmtKind::ClassDef(def) => self.class_def(def, indent),
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.out.push_str("annassign ");
                self.expr(target);
                self.out.push(' ');
                self.expr(annotation);
                if let Some(value) = value {
                    self.out.push(' ');
                    self.expr(value);
                }
            }
            StmtKind::Return(value) => {
                self.out.push_str("return");
                if let Some(value) = value {
                    self.out.push(' ');
                    self.expr(value);
                }
            }
            StmtKind::If { test, body, orelse } => {
                self.out.push_str("if ");
                self.expr(test);
                self.block(body, indent + 2);
                self.else_block(orelse, indent);
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                self.out.push_str("for ");
                self.expr(target);
                self.out.push(' ');
                self.expr(iter);
                self.block(body, indent + 2);
                self.else_block(orelse, indent);
            }
            StmtKind::While { test, body, orelse } => {
                self.out.push_str("while ");
                self.expr(test);
                self.block(body, indent + 2);
                self.else_block(orelse, indent);
            }
            StmtKind::Break => self.out.push_str("break"),
            StmtKind::Continue => self.out.push_str("continue"),
            StmtKind::Pass => self.out.push_str("pass"),
            StmtKind::Global(names) | StmtKind::Nonlocal(names) => {
                let keyword = if matches!(stmt.kind, StmtKind::Global(_)) {
                    "global"
                } else {
                    "nonlocal"
                };
                self.out.push_str(keyword);
                for name in names {
                    self.out.push(' ');
                    self.ident(name);
                }
            }
            StmtKind::Assert { test, msg } => {
                self.out.push_str("assert ");
                self.expr(test);
                if let Some(msg) = msg {
                    self.out.push(' ');
                    self.expr(msg);
                }
            }
            StmtKind::Raise { exc, cause } => {
                self.out.push_str("raise");
                if let Some(exc) = exc {
                    self.out.push(' ');
                    self.expr(exc);
                }
                if let Some(cause) = cause {
                    self.out.push_str(" from ");
                    self.expr(cause);
                }
            }
            StmtKind::Import(names) => {
                self.out.push_str("import");
                self.import_names(names);
            }
            StmtKind::ImportFrom { module, names } => {
                self.out.push_str("from ");
                self.ident(module);
                if names.is_empty() {
                    self.out.push_str(" *");
                }
                self.import_names(names);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.out.push_str("try");
                self.block(body, indent + 2);
                for h in handlers {
                    self.newline(indent + 2);
                    self.out.push_str("(except");
                    if let Some(typ) = &h.typ {
                        self.out.push(' ');
                        self.expr(typ);
                    }
                    if let Some(name) = &h.name {
                        self.out.push_str(" as ");
                        self.ident(name);
                    }
                    self.block(&h.body, indent + 4);
                    self.out.push(')');
                }
                for (head, stmts) in [("else", orelse), ("finally", finalbody)] {
                    if !stmts.is_empty() {
                        self.newline(indent + 2);
                        let _ = write!(self.out, "({head}");
                        self.block(stmts, indent + 4);
                        self.out.push(')');
                    }
                }
            }
            StmtKind::With { items, body } => {
                self.out.push_str("with");
                for item in items {
                    self.out.push_str(" (");
                    self.expr(&item.context);
                    if let Some(target) = &item.target {
                        self.out.push_str(" as ");
                        self.expr(target);
                    }
                    self.out.push(')');
                }
                self.block(body, indent + 2);
            }
            StmtKind::Delete(targets) => self.exprs("del", targets),
        }
        self.out.push(')');
        self.span(stmt.span);
    }

    fn import_names(&mut self, names: &[ImportAlias]) {
        for alias in names {
            self.out.push(' ');
            self.ident(&alias.name);
            if let Some(asname) = &alias.asname {
                self.out.push_str(" as ");
                self.ident(asname);
            }
        }
    }

    fn ident(&mut self, ident: &Ident) {
        self.out.push_str(&ident.name);
        self.span(ident.span);
    }

    /// `def name (params ...)` then decorators, docstring and body lines.
    fn function_def(&mut self, def: &FunctionDef, indent: usize) {
        self.out.push_str("def ");
        self.ident(&def.name);
        self.out.push(' ');
        self.params(&def.params);
        if let Some(returns) = &def.returns {
            self.out.push_str(" (returns ");
            self.expr(returns);
            self.out.push(')');
        }
        if !def.decorators.is_empty() {
            self.newline(indent + 2);
            self.out.push_str("(decorators");
            for decorator in &def.decorators {
                self.out.push(' ');
                self.expr(decorator);
            }
            self.out.push(')');
        }
        if let Some(docstring) = &def.docstring {
            self.newline(indent + 2);
            let _ = write!(self.out, "(docstring {docstring:?})");
        }
        self.block(&def.body, indent + 2);
    }

    /// `class name (bases ...)` then keywords, decorators, docstring and body lines.
    fn class_def(&mut self, def: &ClassDef, indent: usize) {
        self.out.push_str("class ");
        self.ident(&def.name);
        self.out.push_str(" (bases");
        for base in &def.bases {
            self.out.push(' ');
            self.expr(base);
        }
        for (key, value) in &def.keywords {
            self.out.push_str(" (keyword ");
            self.ident(key);
            self.out.push(' ');
            self.expr(value);
            self.out.push(')');
        }
        self.out.push(')');
        if !def.decorators.is_empty() {
            self.newline(indent + 2);
            self.out.push_str("(decorators");
            for decorator in &def.decorators {
                self.out.push(' ');
                self.expr(decorator);
            }
            self.out.push(')');
        }
        if let Some(docstring) = &def.docstring {
            self.newline(indent + 2);
            let _ = write!(self.out, "(docstring {docstring:?})");
        }
        self.block(&def.body, indent + 2);
    }

    fn params(&mut self, params: &[Param]) {
        self.out.push_str("(params");
        for param in params {
            self.out.push_str(" (param ");
            self.ident(&param.name);
            match param.kind {
                ParamKind::Normal => {}
                ParamKind::KeywordOnly => self.out.push_str(" kwonly"),
                ParamKind::VarArgs => self.out.push_str(" varargs"),
                ParamKind::VarKwargs => self.out.push_str(" varkwargs"),
            }
            if let Some(annotation) = &param.annotation {
                self.out.push_str(" (annotation ");
                self.expr(annotation);
                self.out.push(')');
            }
            if let Some(default) = &param.default {
                self.out.push_str(" (default ");
                self.expr(default);
                self.out.push(')');
            }
            self.out.push(')');
        }
        self.out.push(')');
    }

    fn exprs(&mut self, head: &str, items: &[Expr]) {
        self.out.push_str(head);
        for item in items {
            self.out.push(' ');
            self.expr(item);
        }
    }

    fn optional(&mut self, expr: Option<&Expr>) {
        match expr {
            Some(expr) => self.expr(expr),
            None => self.out.push('_'),
        }
    }

    fn comprehensions(&mut self, generators: &[Comprehension]) {
        for generator in generators {
            self.out.push_str(" (comp ");
            self.expr(&generator.target);
            self.out.push(' ');
            self.expr(&generator.iter);
            for condition in &generator.ifs {
                self.out.push_str(" (if ");
                self.expr(condition);
                self.out.push(')');
            }
            self.out.push(')');
        }
    }

    fn expr(&mut self, expr: &Expr) {
        self.out.push('(');
        match &expr.kind {
            ExprKind::Name(name) => {
                let _ = write!(self.out, "name {name}");
            }
            ExprKind::Int(value) => {
                let _ = write!(self.out, "int {value}");
            }
            ExprKind::Float(value) => {
                let _ = write!(self.out, "float {value:?}");
            }
            ExprKind::Imag(value) => {
                let _ = write!(self.out, "imag {value:?}");
            }
            ExprKind::Str(text) => {
                let _ = write!(self.out, "str {text:?}");
            }
            ExprKind::FString(parts) => {
                self.out.push_str("fstring");
                for part in parts {
                    match part {
                        FStringPart::Literal(text) => {
                            let _ = write!(self.out, " (lit {text:?})");
                        }
                        FStringPart::Hole {
                            expr,
                            conversion,
                            spec,
                        } => {
                            self.out.push_str(" (hole ");
                            self.expr(expr);
                            if let Some(conversion) = conversion {
                                let _ = write!(self.out, " (conv {conversion})");
                            }
                            if let Some(spec) = spec {
                                let _ = write!(self.out, " (spec {spec:?})");
                            }
                            self.out.push(')');
                        }
                    }
                }
            }
            ExprKind::Bool(value) => self.out.push_str(if *value { "true" } else { "false" }),
            ExprKind::None => self.out.push_str("none"),
            ExprKind::Ellipsis => self.out.push_str("ellipsis"),
            ExprKind::List(items) => self.exprs("list", items),
            ExprKind::Tuple(items) => self.exprs("tuple", items),
            ExprKind::Dict(pairs) => {
                self.out.push_str("dict");
                for (key, value) in pairs {
                    self.out.push_str(" (");
                    match key {
                        Some(key) => self.expr(key),
                        None => self.out.push_str("**"),
                    }
                    self.out.push(' ');
                    self.expr(value);
                    self.out.push(')');
                }
            }
            ExprKind::Set(items) => self.exprs("set", items),
            ExprKind::SetComp { elt, generators } => {
                self.out.push_str("setcomp ");
                self.expr(elt);
                self.comprehensions(generators);
            }
            ExprKind::NamedExpr { target, value } => {
                self.out.push_str("walrus ");
                self.ident(target);
                self.out.push(' ');
                self.expr(value);
            }
            ExprKind::ListComp { elt, generators } => {
                self.out.push_str("listcomp ");
                self.expr(elt);
                self.comprehensions(generators);
            }
            ExprKind::GeneratorExp { elt, generators } => {
                self.out.push_str("genexp ");
                self.expr(elt);
                self.comprehensions(generators);
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                self.out.push_str("dictcomp ");
                self.expr(key);
                self.out.push(' ');
                self.expr(value);
                self.comprehensions(generators);
            }
            ExprKind::Unary { op, operand } => {
                let _ = write!(self.out, "unary {} ", op.symbol());
                self.expr(operand);
            }
            ExprKind::Binary { op, left, right } => {
                let _ = write!(self.out, "binop {} ", op.symbol());
                self.expr(left);
                self.out.push(' ');
                self.expr(right);
            }
            ExprKind::BoolOp { op, values } => {
                let head = match op {
                    BoolOpKind::And => "and",
                    BoolOpKind::Or => "or",
                };
                self.exprs(head, values);
            }
            ExprKind::Compare {
                left,
                ops,
                comparators,
            } => {
                self.out.push_str("compare ");
                self.expr(left);
                for (op, comparator) in ops.iter().zip(comparators) {
                    let _ = write!(self.out, " {} ", op.symbol());
                    self.expr(comparator);
                }
            }
            ExprKind::IfExp { test, body, orelse } => {
                self.out.push_str("ifexp ");
                self.expr(test);
                self.out.push(' ');
                self.expr(body);
                self.out.push(' ');
                self.expr(orelse);
            }
            ExprKind::Lambda(def) => {
                // A lambda's body is one `return`, so it fits on the line.
                self.out.push_str("lambda ");
                self.params(&def.params);
                for stmt in &def.body {
                    self.out.push(' ');
                    self.stmt(stmt, 0);
                }
            }
            ExprKind::Call { func, args } => {
                self.out.push_str("call ");
                self.expr(func);
                for arg in args {
                    self.out.push(' ');
                    match arg {
                        Arg::Positional(value) => self.expr(value),
                        Arg::Starred(value) => {
                            self.out.push_str("(star ");
                            self.expr(value);
                            self.out.push(')');
                        }
                        Arg::Keyword(name, value) => {
                            self.out.push_str("(kw ");
                            self.ident(name);
                            self.out.push(' ');
                            self.expr(value);
                            self.out.push(')');
                        }
                        Arg::DoubleStarred(value) => {
                            self.out.push_str("(dstar ");
                            self.expr(value);
                            self.out.push(')');
                        }
                    }
                }
            }
            ExprKind::Attribute { value, attr } => {
                self.out.push_str("attr ");
                self.expr(value);
                self.out.push(' ');
                self.ident(attr);
            }
            ExprKind::Subscript { value, index } => {
                self.out.push_str("subscript ");
                self.expr(value);
                self.out.push(' ');
                self.expr(index);
            }
            ExprKind::Slice { lower, upper, step } => {
                self.out.push_str("slice ");
                self.optional(lower.as_deref());
                self.out.push(' ');
                self.optional(upper.as_deref());
                self.out.push(' ');
                self.optional(step.as_deref());
            }
            ExprKind::Starred(value) => {
                self.out.push_str("starred ");
                self.expr(value);
            }
            ExprKind::Yield { value, from } => {
                self.out
                    .push_str(if *from { "yieldfrom " } else { "yield " });
                self.optional(value.as_deref());
            }
        }
        self.out.push(')');
        self.span(expr.span);
    }
}
