//! The surface's functions defined lazily: start-up scans each surface file
//! (`surface.arr`, `optax.arr`) for its top-level `def`s and registers each
//! as a builtin whose source is parsed and compiled at its first call, so a
//! fresh process does not lex, parse and compile thousands of lines it will
//! mostly never run.

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
    /// The statement's text, after as many newlines as lines precede it, so
    /// that errors name the line of the whole file.
    pub text: String,
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
        let after_decorator = bounds
            .last()
            .is_some_and(|&b| lines[b..i].iter().all(|d| d.starts_with('@')));
        if starts_statement(l) && !after_decorator {
            bounds.push(i);
        }
    }
    bounds.push(lines.len());
    bounds
        .windows(2)
        .map(|w| {
            let body = &lines[w[0]..w[1]];
            let head = body[0];
            let function = head
                .strip_prefix("def ")
                .and_then(|rest| rest.split_once('('))
                .map(|(name, _)| name.trim());
            Chunk {
                function,
                text: "\n".repeat(w[0]) + &body.join("\n"),
                lines: body.len(),
                doc: function.and_then(|_| docstring(body)),
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
pub fn load(s: &mut arr_runtime::Session, file: &'static str, source: &str) -> Result<()> {
    let chunks = chunks(source);
    let first = chunks
        .first()
        .map_or(0, |c| c.text.len() - c.text.trim_start_matches('\n').len());
    let mut eager = "\n".repeat(first);
    for chunk in chunks {
        match chunk.function {
            Some(name) => {
                eager.push_str(&"\n".repeat(chunk.lines));
                let stub = function(file, name, chunk);
                s.interp.set_global(name, stub);
            }
            None => {
                let own = chunk.text.trim_start_matches('\n');
                eager.push_str(own);
                eager.push('\n');
            }
        }
    }
    s.run_script(file, &eager)
}

/// The docstring of a function's lines: the string that opens its body.
fn docstring(body: &[&str]) -> Option<String> {
    let text = body[1..].join("\n");
    let rest = text.trim_start().strip_prefix("\"\"\"")?;
    let end = rest.find("\"\"\"")?;
    Some(rest[..end].to_string())
}

/// A builtin that compiles `text` (one `def name` of `file`) at its first
/// call and then calls the function it defines.
pub fn function(file: &'static str, name: &str, chunk: Chunk) -> Value {
    let (text, doc) = (chunk.text, chunk.doc);
    let compiled: OnceCell<Value> = OnceCell::new();
    let source = Rc::new(text);
    let name_owned = name.to_string();
    let stub = NativeClosure::value(name, move |interp, args, kwargs| {
        let f = match compiled.get() {
            Some(f) => f.clone(),
            None => {
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

/// Run the definition and take the function it bound out of the globals
/// (where a module-level `def` puts it), leaving the user's namespace as it was.
fn compile(interp: &mut Interp, file: &str, name: &str, text: &str) -> Result<Value> {
    let file = Rc::new(SourceFile::new(file, text));
    let module = arr_lang::parse(&file).map_err(|d| {
        Error::new(
            ErrorKind::SyntaxError,
            format!(
                "the stdlib's {name} does not parse: {}",
                d.first().map_or("", |d| d.message.as_str())
            ),
        )
    })?;
    let code = compile_module(&module, file, &mut interp.interner)?;
    let id = interp.interner.intern(name) as usize;
    let before = interp.globals.get(id).cloned().flatten();
    interp.exec_nested(&code)?;
    let f = interp.globals.get_mut(id).and_then(Option::take);
    if let Some(v) = before {
        interp.set_global(name, v);
    }
    f.ok_or_else(|| {
        Error::new(
            ErrorKind::NameError,
            format!("the stdlib did not define {name}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_top_level_statements() {
        let src = "x = {\n    1: 2,\n}\n\n# note\ndef f(a):\n    \"\"\"Doc.\"\"\"\n    return a\n\n@d\ndef g():\n    pass\nclass C:\n    pass\n";
        let cs = chunks(src);
        let heads: Vec<(Option<&str>, usize)> = cs
            .iter()
            .map(|c| (c.function, c.text.matches('\n').count()))
            .collect();
        assert_eq!(heads.len(), 4, "{heads:?}");
        assert_eq!(cs[0].function, None);
        assert_eq!(cs[1].function, Some("f"));
        assert_eq!(cs[1].doc.as_deref(), Some("Doc."));
        assert!(cs[1].text.starts_with("\n\n\n\n\ndef f"));
        assert_eq!(cs[2].function, None, "a decorated def runs at once");
        assert!(cs[2].text.contains("@d\ndef g"));
        assert_eq!(cs[3].function, None);
    }
}
