//! The surface's functions defined lazily: start-up scans `surface.arr` for
//! its top-level `def`s and registers each as a builtin whose source is
//! parsed and compiled at its first call, so a fresh process does not lex,
//! parse and compile thousands of lines it will mostly never run. A library
//! written in arr (`optax.arr`) is loaded the same way at its first import.

use arr_lang::SourceFile;
use arr_runtime::compile::compile_module;
use arr_runtime::{Error, ErrorKind, Interp, NativeClosure, Result, Value};
use std::cell::OnceCell;
use std::rc::Rc;

/// One top-level statement of the source (with the decorators, comments
/// and continuation lines that belong to it).
pub struct Chunk<'a> {
    /// The function an undecorated `def` defines; None for anything else
    /// (classes, assignments, decorated definitions), which runs at once.
    pub function: Option<&'a str>,
    /// The statement's text (a slice of the source).
    pub text: &'a str,
    /// The line (from 0) where the statement starts: a function's text is
    /// compiled after as many newlines, so that errors name the line of the
    /// whole file.
    pub line: usize,
    /// How many lines the statement spans.
    pub lines: usize,
    /// The function's docstring, for `help` before the first call.
    pub doc: Option<String>,
    /// The `def` line's signature (`pad(array, pad_width, ...)`), for `help`.
    pub signature: String,
}

/// Split `source` at its top-level statements: a line that starts at column
/// 0 with a name, a keyword or a decorator starts one; indented lines,
/// blank lines, comments and closing brackets continue the current one, and
/// a `def` or `class` after decorators joins them.
pub fn chunks(source: &str) -> Vec<Chunk<'_>> {
    let lines: Vec<&str> = source.split('\n').collect();
    let starts_statement = |l: &str| {
        l.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '@')
    };
    let mut bounds: Vec<usize> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        // Only lines that could start a statement look back (a look-back
        // from every line would be quadratic in a long class).
        let after_decorator = || {
            bounds
                .last()
                .is_some_and(|&b| lines[b..i].iter().all(|d| d.starts_with('@')))
        };
        if starts_statement(l) && !after_decorator() {
            bounds.push(i);
        }
    }
    bounds.push(lines.len());
    // Where each line starts in `source`, so that a statement's text is a slice.
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = 0;
    for l in &lines {
        offsets.push(at);
        at += l.len() + 1;
    }
    offsets.push(source.len() + 1);
    bounds
        .windows(2)
        .map(|w| {
            let body = &lines[w[0]..w[1]];
            let head = body[0];
            let function = head
                .strip_prefix("def ")
                .and_then(|rest| rest.split_once('('))
                .map(|(name, _)| name.trim());
            let text = &source[offsets[w[0]]..offsets[w[1]] - 1];
            Chunk {
                function,
                text,
                line: w[0],
                lines: body.len(),
                doc: function.and_then(|_| docstring(&text[head.len()..])),
                signature: head
                    .strip_prefix("def ")
                    .unwrap_or(head)
                    .trim_end()
                    .trim_end_matches(':')
                    .to_string(),
            }
        })
        .collect()
}

/// Load `source` (whose errors name it `file`) into `s`: its functions as
/// lazy builtins, the rest (run as one script in which each function's lines
/// are blank, so that line numbers stay those of the file) at once. Every
/// function is defined before the rest runs: a top-level assignment must not
/// read a name that a later `def` of the same source redefines (none does).
pub fn load(s: &mut arr_runtime::Session, file: &'static str, source: &'static str) -> Result<()> {
    let chunks = chunks(source);
    let eager = eager_script(file, chunks, |name, stub| s.interp.set_builtin(name, stub));
    s.run_script(file, &eager)
}

/// Load a library's `source` (`optax.arr`, at its first import) as `load`
/// does, with what it defines made builtins at once: the user's namespace
/// stays as it was. Its top-level statements other than functions must each
/// define one name (`X = ...`, `class X`).
pub fn load_library(interp: &mut Interp, file: &'static str, source: &'static str) -> Result<()> {
    let chunks = chunks(source);
    let names: Vec<&str> = chunks
        .iter()
        .filter(|c| c.function.is_none())
        .filter_map(defined_name)
        .collect();
    let eager = eager_script(file, chunks, |name, stub| interp.set_builtin(name, stub));
    let values = run_taking(interp, file, &eager, &names)?;
    for (name, v) in names.iter().zip(values) {
        match v {
            Some(v) => interp.set_builtin(name, v),
            None => {
                return Err(Error::new(
                    ErrorKind::NameError,
                    format!("{file} did not define {name}"),
                ))
            }
        }
    }
    Ok(())
}

/// The script of a source's statements other than its functions (their
/// lines blank), each function handed to `define` as a lazy builtin.
fn eager_script(
    file: &'static str,
    chunks: Vec<Chunk<'static>>,
    mut define: impl FnMut(&str, Value),
) -> String {
    let first = chunks.first().map_or(0, |c| c.line);
    let mut eager = "\n".repeat(first);
    for chunk in chunks {
        match chunk.function {
            Some(name) => {
                eager.push_str(&"\n".repeat(chunk.lines));
                define(name, function(file, name, chunk));
            }
            None => {
                eager.push_str(chunk.text);
                eager.push('\n');
            }
        }
    }
    eager
}

/// The name a top-level statement defines: `X` of `X = ...`, `class X` or
/// a decorated `def X`.
fn defined_name<'a>(chunk: &Chunk<'a>) -> Option<&'a str> {
    let head = chunk.text.lines().find(|l| !l.starts_with('@'))?;
    let ident = |t: &'a str| {
        let t = t.trim();
        let ok = t
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_');
        ok.then_some(t)
    };
    if let Some(rest) = head
        .strip_prefix("class ")
        .or_else(|| head.strip_prefix("def "))
    {
        return ident(rest.split(['(', ':']).next()?);
    }
    ident(head.split_once('=')?.0)
}

/// The docstring of a function's body: the string that opens it.
fn docstring(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix("\"\"\"")?;
    let end = rest.find("\"\"\"")?;
    Some(rest[..end].to_string())
}

/// A builtin that compiles its chunk (one `def name` of `file`) at its
/// first call and then calls the function it defines.
pub fn function(file: &'static str, name: &str, chunk: Chunk<'static>) -> Value {
    let (text, line, doc) = (chunk.text, chunk.line, chunk.doc);
    let compiled: OnceCell<Value> = OnceCell::new();
    let name_owned = name.to_string();
    let stub = NativeClosure::value(name, move |interp, args, kwargs| {
        let f = match compiled.get() {
            Some(f) => f.clone(),
            None => {
                let source = "\n".repeat(line) + text;
                let f = compile(interp, file, &name_owned, &source)?;
                compiled.get_or_init(|| f).clone()
            }
        };
        interp.call(&f, args, kwargs)
    });
    if let Value::Native(n) = &stub {
        let mut attrs = n.attrs.borrow_mut();
        attrs.push(("__name__".into(), Value::str(name)));
        attrs.push(("__signature__".into(), Value::str(&chunk.signature)));
        if let Some(d) = doc {
            attrs.push(("__doc__".into(), Value::str(&d)));
        }
    }
    stub
}

/// Run the definition and take the function it bound (the library's
/// module-level names are builtins: `Var::Builtin`), leaving the stub in place.
fn compile(interp: &mut Interp, file: &str, name: &str, text: &str) -> Result<Value> {
    let f = run_taking(interp, file, text, &[name])?.pop().flatten();
    f.ok_or_else(|| {
        Error::new(
            ErrorKind::NameError,
            format!("the stdlib did not define {name}"),
        )
    })
}

/// Run `text` (stdlib source, named `file`) at the top level and take the
/// values it bound to `names` out of the builtins (where the library's own
/// code binds its module-level names), putting back what they held.
fn run_taking(
    interp: &mut Interp,
    file: &str,
    text: &str,
    names: &[&str],
) -> Result<Vec<Option<Value>>> {
    let source = Rc::new(SourceFile::new(file, text));
    let module = arr_lang::parse(&source).map_err(|d| {
        Error::new(
            ErrorKind::SyntaxError,
            format!(
                "the stdlib's {file} does not parse: {}",
                d.first().map_or("", |d| d.message.as_str())
            ),
        )
    })?;
    let code = compile_module(&module, source, &mut interp.interner)?;
    let ids: Vec<usize> = names
        .iter()
        .map(|n| interp.interner.intern(n) as usize)
        .collect();
    let before: Vec<Option<Value>> = ids
        .iter()
        .map(|&id| interp.builtins.get(id).cloned().flatten())
        .collect();
    let ran = interp.exec_nested(&code);
    let taken = ids
        .iter()
        .map(|&id| interp.builtins.get_mut(id).and_then(Option::take))
        .collect();
    for (name, v) in names.iter().zip(before) {
        if let Some(v) = v {
            interp.set_builtin(name, v);
        }
    }
    ran.map(|()| taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_top_level_statements() {
        let src = "x = {\n    1: 2,\n}\n\n# note\ndef f(a):\n    \"\"\"Doc.\"\"\"\n    return a\n\n@d\ndef g():\n    pass\nclass C:\n    pass\n";
        let cs = chunks(src);
        let heads: Vec<(Option<&str>, usize)> = cs.iter().map(|c| (c.function, c.line)).collect();
        assert_eq!(heads.len(), 4, "{heads:?}");
        assert_eq!(cs[0].function, None);
        assert_eq!(cs[1].function, Some("f"));
        assert_eq!(cs[1].doc.as_deref(), Some("Doc."));
        assert_eq!(cs[1].line, 5);
        assert!(cs[1].text.starts_with("def f"));
        assert!(cs[1].text.ends_with("return a\n"), "{:?}", cs[1].text);
        assert_eq!(cs[2].function, None, "a decorated def runs at once");
        assert!(cs[2].text.contains("@d\ndef g"));
        assert_eq!(cs[3].function, None);
    }
}
