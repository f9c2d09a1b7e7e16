//! The line editor's helper: tab completion from the session, syntax colouring from the lexer.

use arr_lang::TokenClass;
use arr_runtime::Session;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

pub struct ArrHelper {
    pub session: Rc<RefCell<Session>>,
    pub color: bool,
}

impl Completer for ArrHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        // `?name` and `:time expr` complete like plain code.
        let (offset, code) = match before.strip_prefix('?') {
            Some(rest) => (1, rest),
            None => (0, before),
        };
        let Ok(session) = self.session.try_borrow() else {
            return Ok((pos, Vec::new()));
        };
        let (start, names) = session.complete(code);
        let pairs = names
            .into_iter()
            .map(|n| Pair {
                display: n.clone(),
                replacement: n,
            })
            .collect();
        Ok((start + offset, pairs))
    }
}

impl Hinter for ArrHelper {
    type Hint = String;
}

impl Validator for ArrHelper {}

fn style(class: TokenClass) -> Option<&'static str> {
    match class {
        TokenClass::Keyword => Some("\x1b[35m"),
        TokenClass::Number => Some("\x1b[36m"),
        TokenClass::String => Some("\x1b[32m"),
        TokenClass::Comment => Some("\x1b[2m"),
        _ => None,
    }
}

impl Highlighter for ArrHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.color || line.starts_with(':') {
            return Cow::Borrowed(line);
        }
        let mut out = String::with_capacity(line.len() + 32);
        let mut last = 0;
        for (span, class) in arr_lang::highlight(line) {
            let (s, e) = (span.start as usize, span.end as usize);
            if s < last || e > line.len() || !line.is_char_boundary(s) || !line.is_char_boundary(e)
            {
                continue;
            }
            out.push_str(&line[last..s]);
            match style(class) {
                Some(code) => {
                    out.push_str(code);
                    out.push_str(&line[s..e]);
                    out.push_str("\x1b[0m");
                }
                None => out.push_str(&line[s..e]),
            }
            last = e;
        }
        out.push_str(&line[last..]);
        Cow::Owned(out)
    }

    fn highlight_char(&self, _line: &str, _pos: usize, _kind: CmdKind) -> bool {
        self.color
    }
}

impl Helper for ArrHelper {}
