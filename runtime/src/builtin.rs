//! Native functions: one definition (signature text, docstring, Rust function)
//! drives argument binding, `help`, and completion.
//!
//! The signature is written as arr source (`sum(x, axis=None, keepdims=False)`)
//! and parsed with the language's own parser, so defaults, keyword-only
//! parameters and `*args` mean exactly what they mean for user functions.

use crate::code::ParamSpec;
use crate::error::{Error, Result};
use crate::eval::Interp;
use crate::value::Value;
use arr_lang::ast::{self, ParamKind};
use arr_lang::SourceFile;
use indexmap::IndexMap;
use std::fmt;
use std::rc::Rc;

/// The Rust side of a builtin: arguments arrive bound, in signature order
/// (a `*args` parameter as a tuple, `**kwargs` as a dict).
pub type NativeFn = fn(&mut Interp, Vec<Value>) -> Result<Value>;
/// What a builtin runs: a `NativeFn`, or a closure.
pub type BuiltinFn = Rc<dyn Fn(&mut Interp, Vec<Value>) -> Result<Value>>;

pub struct Builtin {
    /// Qualified name, e.g. `random.normal`.
    pub name: Rc<str>,
    pub signature: String,
    pub doc: String,
    pub params: Vec<ParamSpec>,
    pub defaults: Vec<Option<Value>>,
    /// A function pointer for most builtins; a closure for families made
    /// from a table (one builtin per elementwise op).
    pub func: BuiltinFn,
    /// What calling it does besides returning a value: automatic JIT only
    /// compiles code that calls builtins without effects.
    pub effect: Effect,
}

/// The side effects of a builtin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Effect {
    /// None: the result depends only on the arguments.
    #[default]
    Pure,
    /// Observable outside the program, or reads state that changes: output,
    /// files, clocks, the compiler's records.
    World,
    /// Changes its first argument (a list or dict) in place.
    MutatesReceiver,
}

impl fmt::Debug for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<builtin {}>", self.signature)
    }
}

impl Builtin {
    /// Build from a signature such as `"clip(x, a_min=None, a_max=None)"`.
    /// Panics on a malformed signature: they are written in the source, and a
    /// test constructs every builtin.
    pub fn new(
        signature: &str,
        doc: &str,
        func: impl Fn(&mut Interp, Vec<Value>) -> Result<Value> + 'static,
    ) -> Builtin {
        let (name, params, defaults) = parse_signature(signature)
            .unwrap_or_else(|e| panic!("bad builtin signature {signature:?}: {e}"));
        Builtin {
            name: Rc::from(name.as_str()),
            signature: signature.to_string(),
            doc: doc.to_string(),
            params,
            defaults,
            func: Rc::new(func),
            effect: Effect::Pure,
        }
    }

    /// The same builtin, marked as having `effect`.
    pub fn with_effect(mut self, effect: Effect) -> Builtin {
        self.effect = effect;
        self
    }

    /// With a qualified name (`random.normal`), keeping the short signature.
    pub fn qualified(mut self, module: &str) -> Builtin {
        self.name = Rc::from(format!("{module}.{}", self.name).as_str());
        self
    }

    /// `help(name)` text: signature, then the docstring.
    pub fn help(&self) -> String {
        format!("{}\n\n{}", self.signature, self.doc)
    }
}

/// A parsed signature: name, parameters, and their default values.
type Signature = (String, Vec<ParamSpec>, Vec<Option<Value>>);

fn parse_signature(sig: &str) -> std::result::Result<Signature, String> {
    match parse_simple_signature(sig) {
        Some(parsed) => Ok(parsed),
        None => parse_signature_with_parser(sig),
    }
}

/// A signature whose parameters are names with literal defaults (numbers,
/// plain strings, None, True, False, `...`), `*`, `*args` and `**kwargs`:
/// almost every builtin's. Start-up registers thousands of builtins, and the
/// language's parser took a tenth of it; anything else (a tuple default, an
/// escape, `/`) returns None and goes to the parser, which is the reference
/// (`signature_paths_agree` checks every builtin against it).
fn parse_simple_signature(sig: &str) -> Option<Signature> {
    let (name, rest) = sig.split_once('(')?;
    let inner = rest.strip_suffix(')')?;
    let valid_name = |n: &str| {
        n.chars()
            .next()
            .is_some_and(|c| c == '_' || c.is_alphabetic())
            && n.chars().all(|c| c == '_' || c.is_alphanumeric())
            && !arr_lang::KEYWORDS.contains(&n)
    };
    if !valid_name(name) {
        return None;
    }
    // Split at commas outside quotes; brackets, escapes and `/` go to the parser.
    let mut pieces = Vec::new();
    let (mut quote, mut start) = (None, 0);
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (_, '\\') => return None,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | ')' | '[' | ']' | '{' | '}' | '/' | ':' | '#') => return None,
            (None, ',') => {
                pieces.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return None;
    }
    pieces.push(&inner[start..]);
    if pieces.last().is_some_and(|p| p.trim().is_empty()) {
        pieces.pop();
    }
    let (mut params, mut defaults) = (Vec::new(), Vec::new());
    let mut keyword_only = false;
    for piece in pieces {
        let piece = piece.trim();
        let (head, default) = match piece.split_once('=') {
            Some((h, d)) => (h.trim(), Some(simple_literal(d.trim())?)),
            None => (piece, None),
        };
        let (kind, pname) = if let Some(n) = head.strip_prefix("**") {
            (ParamKind::VarKwargs, n)
        } else if let Some(n) = head.strip_prefix('*') {
            keyword_only = true;
            if n.is_empty() {
                if default.is_some() {
                    return None;
                }
                continue;
            }
            (ParamKind::VarArgs, n)
        } else if keyword_only {
            (ParamKind::KeywordOnly, head)
        } else {
            (ParamKind::Normal, head)
        };
        if !valid_name(pname)
            || (default.is_some() && kind != ParamKind::Normal && kind != ParamKind::KeywordOnly)
        {
            return None;
        }
        params.push(ParamSpec {
            name: Rc::from(pname),
            kind,
            has_default: default.is_some(),
        });
        defaults.push(default);
    }
    Some((name.to_string(), params, defaults))
}

/// The value of a default the fast path reads: None for anything else.
fn simple_literal(text: &str) -> Option<Value> {
    let digits = |t: &str| {
        t.chars().next().is_some_and(|c| c.is_ascii_digit())
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
            && !t.contains(['_', 'x', 'X', 'o', 'O', 'b', 'B', 'j', 'J'])
    };
    Some(match text {
        "None" => Value::None,
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        "..." => Value::Ellipsis,
        t if t.len() >= 2
            && (t.starts_with('\'') && t.ends_with('\'')
                || t.starts_with('"') && t.ends_with('"')) =>
        {
            Value::str(&t[1..t.len() - 1])
        }
        t => {
            let (negative, body) = match t.strip_prefix('-') {
                Some(b) => (true, b.trim_start()),
                None => (false, t),
            };
            if !digits(body)
                || (body.len() > 1
                    && body.starts_with('0')
                    && !body[1..].starts_with(['.', 'e', 'E']))
            {
                return None;
            }
            if let Ok(i) = body.parse::<i64>() {
                Value::Int(if negative { -i } else { i })
            } else if body.contains(['.', 'e', 'E']) {
                let f = body.parse::<f64>().ok()?;
                Value::Float(if negative { -f } else { f })
            } else {
                return None;
            }
        }
    })
}

/// Whether the fast path reads `sig` as the parser does (or leaves it to
/// the parser): the test of every registered builtin's signature.
#[doc(hidden)]
pub fn signature_paths_agree(sig: &str) -> bool {
    let Some(fast) = parse_simple_signature(sig) else {
        return true;
    };
    let Ok(slow) = parse_signature_with_parser(sig) else {
        return false;
    };
    let shape = |(name, params, defaults): &Signature| {
        format!(
            "{name} {:?} {:?}",
            params
                .iter()
                .map(|p| (p.name.to_string(), p.kind, p.has_default))
                .collect::<Vec<_>>(),
            defaults
        )
    };
    shape(&fast) == shape(&slow)
}

fn parse_signature_with_parser(sig: &str) -> std::result::Result<Signature, String> {
    let src = format!("def {sig}: pass");
    let file = SourceFile::new("<signature>", src);
    let module = arr_lang::parse(&file).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let Some(ast::Stmt {
        kind: ast::StmtKind::FunctionDef(def),
        ..
    }) = module.body.first()
    else {
        return Err("not a function signature".into());
    };
    let mut params = Vec::new();
    let mut defaults = Vec::new();
    for p in &def.params {
        params.push(ParamSpec {
            name: Rc::from(p.name.name.as_str()),
            kind: p.kind,
            has_default: p.default.is_some(),
        });
        defaults.push(p.default.as_ref().map(literal).transpose()?);
    }
    Ok((def.name.name.clone(), params, defaults))
}

/// The value of a literal default (numbers, strings, None, `...`, bools, tuples,
/// negation).
fn literal(e: &ast::Expr) -> std::result::Result<Value, String> {
    use ast::ExprKind as E;
    Ok(match &e.kind {
        E::Int(i) => Value::Int(*i),
        E::Float(f) => Value::Float(*f),
        E::Str(s) => Value::str(s),
        E::Bool(b) => Value::Bool(*b),
        E::None => Value::None,
        E::Ellipsis => Value::Ellipsis,
        E::Tuple(items) => Value::tuple(
            items
                .iter()
                .map(literal)
                .collect::<std::result::Result<_, _>>()?,
        ),
        E::Unary {
            op: ast::UnaryOp::Neg,
            operand,
        } => match literal(operand)? {
            Value::Int(i) => Value::Int(-i),
            Value::Float(f) => Value::Float(-f),
            _ => return Err("bad negated default".into()),
        },
        _ => return Err("defaults of builtins must be literals".into()),
    })
}

/// Match positional and keyword arguments to parameters, Python's way.
/// Returns one value per parameter, in order.
pub fn bind_args(
    fname: &str,
    params: &[ParamSpec],
    defaults: &[Option<Value>],
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Vec<Value>> {
    let mut out: Vec<Option<Value>> = vec![None; params.len()];
    let positional: Vec<usize> = params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind == ParamKind::Normal)
        .map(|(i, _)| i)
        .collect();
    let varargs = params.iter().position(|p| p.kind == ParamKind::VarArgs);
    let varkw = params.iter().position(|p| p.kind == ParamKind::VarKwargs);
    let nargs = args.len();
    let mut extra = Vec::new();
    for (k, v) in args.into_iter().enumerate() {
        match positional.get(k) {
            Some(&i) => out[i] = Some(v),
            None if varargs.is_some() => extra.push(v),
            None => {
                return Err(Error::type_error(format!(
                    "{fname}() takes {} positional argument{} but {nargs} were given",
                    positional.len(),
                    if positional.len() == 1 { "" } else { "s" }
                )))
            }
        }
    }
    if let Some(i) = varargs {
        out[i] = Some(Value::tuple(extra));
    }
    let mut extra_kw = IndexMap::new();
    for (name, v) in kwargs {
        match params.iter().position(|p| {
            *p.name == *name && matches!(p.kind, ParamKind::Normal | ParamKind::KeywordOnly)
        }) {
            Some(i) if out[i].is_some() => {
                return Err(Error::type_error(format!(
                    "{fname}() got multiple values for argument '{name}'"
                )))
            }
            Some(i) => out[i] = Some(v),
            None if varkw.is_some() => {
                extra_kw.insert(crate::value::Key::Str(name), v);
            }
            None => {
                return Err(Error::type_error(format!(
                    "{fname}() got an unexpected keyword argument '{name}'"
                )))
            }
        }
    }
    if let Some(i) = varkw {
        out[i] = Some(Value::dict(extra_kw));
    }
    out.into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Some(v) => Ok(v),
            None => defaults.get(i).cloned().flatten().ok_or_else(|| {
                Error::type_error(format!(
                    "{fname}() missing required argument '{}'",
                    params[i].name
                ))
            }),
        })
        .collect()
}
