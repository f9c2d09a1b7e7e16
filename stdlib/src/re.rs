//! `re` (Python's regular expressions) over the regex crate: patterns and
//! matches, `search`/`match`/`fullmatch`/`findall`/`finditer`/`sub`/`subn`/
//! `split`/`escape`, Python's flags and replacement templates, positions in
//! characters. The regex crate guarantees linear time and so has no
//! look-around and no backreferences: such a pattern is an error naming the
//! construct (we use the crate rather than write a backtracking engine).

use crate::args::*;
use crate::parallel::object;
use crate::Registry;
use arr_runtime::value::Object;
use arr_runtime::{Error, Interp, Key, Result, Value};
use regex::Regex;
use std::rc::Rc;

/// Python's flag values (`re.I`, ...) and their inline forms.
const FLAGS: &[(&str, &str, i64, &str)] = &[
    ("I", "IGNORECASE", 2, "i"),
    ("M", "MULTILINE", 8, "m"),
    ("S", "DOTALL", 16, "s"),
    ("X", "VERBOSE", 64, "x"),
];

/// A compiled pattern (`re.compile`).
#[derive(Debug)]
struct PatternValue {
    text: String,
    flags: i64,
    /// The pattern as given, for searching.
    search: Regex,
    /// The pattern that must end where the text ends, for `fullmatch`.
    full: Regex,
}

/// One match: the text searched and each group's span (in bytes; shown in
/// characters, as Python counts).
#[derive(Debug)]
struct MatchValue {
    string: Rc<str>,
    spans: Vec<Option<(usize, usize)>>,
    names: Vec<(String, usize)>,
    pattern: Value,
    pos: usize,
    endpos: usize,
}

impl Object for PatternValue {
    fn type_name(&self) -> &'static str {
        "Pattern"
    }
    fn repr(&self) -> String {
        format!(
            "re.compile({})",
            arr_runtime::display::repr(&Value::str(&self.text))
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        Some(match name {
            "pattern" => Value::str(&self.text),
            "flags" => Value::Int(self.flags | 32),
            "groups" => Value::Int(self.search.captures_len() as i64 - 1),
            "groupindex" => Value::dict(
                group_names(&self.search)
                    .into_iter()
                    .map(|(n, i)| (Key::Str(n.as_str().into()), Value::Int(i as i64)))
                    .collect(),
            ),
            _ => return None,
        })
    }
    fn equals(&self, other: &dyn Object) -> bool {
        other
            .as_any()
            .downcast_ref::<PatternValue>()
            .is_some_and(|o| o.text == self.text && o.flags == self.flags)
    }
    fn hash_key(&self) -> Option<Key> {
        Some(Key::Tuple(Rc::new(vec![
            Key::Str(self.text.as_str().into()),
            Key::Int(self.flags),
        ])))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Object for MatchValue {
    fn type_name(&self) -> &'static str {
        "Match"
    }
    fn repr(&self) -> String {
        let (s, e) = self.span(&Value::Int(0)).unwrap_or((0, 0));
        let (bs, be) = self.spans[0].unwrap_or((0, 0));
        format!(
            "<re.Match object; span=({s}, {e}), match={}>",
            arr_runtime::display::repr(&Value::str(&self.string[bs..be]))
        )
    }
    fn attr(&self, name: &str) -> Option<Value> {
        Some(match name {
            "string" => Value::str(&self.string),
            "re" => self.pattern.clone(),
            "pos" => Value::Int(self.pos as i64),
            "endpos" => Value::Int(self.endpos as i64),
            "lastindex" => match (1..self.spans.len())
                .rev()
                .find(|&i| self.spans[i].is_some())
            {
                Some(i) => Value::Int(i as i64),
                None => Value::None,
            },
            _ => return None,
        })
    }
    fn get_item(&self, index: &Value) -> Option<Result<Value>> {
        Some(self.group(index))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl MatchValue {
    fn index(&self, g: &Value) -> Result<usize> {
        match g {
            Value::Str(name) => self
                .names
                .iter()
                .find(|(n, _)| n == name.as_str())
                .map(|(_, i)| *i)
                .ok_or_else(|| Error::index_error("no such group")),
            v => match v.to_int()? {
                Some(i) if i >= 0 && (i as usize) < self.spans.len() => Ok(i as usize),
                _ => Err(Error::index_error("no such group")),
            },
        }
    }

    fn group(&self, g: &Value) -> Result<Value> {
        Ok(match self.spans[self.index(g)?] {
            Some((s, e)) => Value::str(&self.string[s..e]),
            None => Value::None,
        })
    }

    fn span(&self, g: &Value) -> Result<(i64, i64)> {
        let chars = |b: usize| self.string[..b].chars().count() as i64;
        Ok(match self.spans[self.index(g)?] {
            Some((s, e)) => (chars(s), chars(e)),
            None => (-1, -1),
        })
    }
}

fn group_names(re: &Regex) -> Vec<(String, usize)> {
    re.capture_names()
        .enumerate()
        .filter_map(|(i, n)| n.map(|n| (n.to_string(), i)))
        .collect()
}

/// Python's pattern syntax as the regex crate's: `\Z` is `\z`; inline
/// flags from `flags`. Backreferences and look-around are refused.
fn translate(pattern: &str, flags: i64) -> Result<String> {
    let mut out = String::new();
    let inline: String = FLAGS
        .iter()
        .filter(|f| flags & f.2 != 0)
        .map(|f| f.3)
        .collect();
    if !inline.is_empty() {
        out.push_str(&format!("(?{inline})"));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            match n {
                'Z' => out.push_str("\\z"),
                '1'..='9' => {
                    return Err(unsupported("backreferences (\\1)"));
                }
                _ => {
                    out.push(c);
                    out.push(n);
                }
            }
            i += 2;
            continue;
        }
        if c == '(' && chars.get(i + 1) == Some(&'?') {
            let rest: String = chars[i + 2..chars.len().min(i + 5)].iter().collect();
            if rest.starts_with('=') || rest.starts_with('!') {
                return Err(unsupported("look-ahead (?=...) and (?!...)"));
            }
            if rest.starts_with("<=") || rest.starts_with("<!") {
                return Err(unsupported("look-behind (?<=...) and (?<!...)"));
            }
            if rest.starts_with("P=") {
                return Err(unsupported("backreferences (?P=name)"));
            }
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

fn unsupported(what: &str) -> Error {
    Error::value_error(format!(
        "re: {what} are not supported (arr's regular expressions run in linear time)"
    ))
}

fn compile(pattern: &str, flags: i64) -> Result<PatternValue> {
    let body = translate(pattern, flags)?;
    let build = |p: &str| Regex::new(p).map_err(|e| Error::value_error(format!("re: {e}")));
    Ok(PatternValue {
        text: pattern.to_string(),
        flags,
        search: build(&body)?,
        full: build(&format!("(?:{body})\\z"))?,
    })
}

/// The pattern a function was given: a compiled one, or text and flags.
fn pattern_of(v: &Value, flags: &Value) -> Result<Value> {
    if object::<PatternValue>(v).is_some() {
        return Ok(v.clone());
    }
    let text = str_arg("pattern", v)?;
    let flags = flags.to_int()?.unwrap_or(0);
    Ok(Value::object(compile(text, flags)?))
}

/// Byte offsets of a text's characters (and its end), for positions in characters.
struct Offsets(Vec<usize>);

impl Offsets {
    fn of(text: &str) -> Offsets {
        let mut v: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        v.push(text.len());
        Offsets(v)
    }
    fn byte(&self, ch: usize) -> usize {
        self.0[ch.min(self.0.len() - 1)]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Search,
    Match,
    Full,
}

/// The first match in string[pos:endpos] (anchored at pos for Match and Full).
fn find(
    pat: &Value,
    string: &Rc<str>,
    pos: usize,
    endpos: Option<usize>,
    mode: Mode,
) -> Result<Value> {
    let p = object::<PatternValue>(pat).expect("a compiled pattern");
    let offsets = Offsets::of(string);
    let n = offsets.0.len() - 1;
    let end = endpos.unwrap_or(n).min(n);
    let (from, to) = (offsets.byte(pos.min(end)), offsets.byte(end));
    let re = if mode == Mode::Full {
        &p.full
    } else {
        &p.search
    };
    let Some(caps) = re.captures_at(&string[..to], from) else {
        return Ok(Value::None);
    };
    let whole = caps.get(0).expect("group 0");
    if mode != Mode::Search && whole.start() != from {
        return Ok(Value::None);
    }
    Ok(match_value(pat, string, &caps, pos, end))
}

fn match_value(
    pat: &Value,
    string: &Rc<str>,
    caps: &regex::Captures,
    pos: usize,
    endpos: usize,
) -> Value {
    let p = object::<PatternValue>(pat).expect("a compiled pattern");
    Value::object(MatchValue {
        string: string.clone(),
        spans: (0..caps.len())
            .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
            .collect(),
        names: group_names(&p.search),
        pattern: pat.clone(),
        pos,
        endpos,
    })
}

/// Every non-overlapping match, in order, by Python's rule for empty
/// matches: one may follow a non-empty match where it ends, but not
/// another empty match at the same place (the regex crate's iterator
/// skips both, so the loop is ours).
fn all_matches(pat: &Value, string: &Rc<str>) -> Vec<Value> {
    let p = object::<PatternValue>(pat).expect("a compiled pattern");
    let n = string.chars().count();
    let mut out = Vec::new();
    let (mut pos, mut empty_at) = (0, None);
    while pos <= string.len() {
        let Some(caps) = p.search.captures_at(string, pos) else {
            break;
        };
        let m = caps.get(0).expect("group 0");
        if m.start() == m.end() && empty_at == Some(m.start()) {
            match string[pos..].chars().next() {
                Some(c) => pos += c.len_utf8(),
                None => break,
            }
            continue;
        }
        out.push(match_value(pat, string, &caps, 0, n));
        empty_at = (m.start() == m.end()).then_some(m.end());
        pos = m.end();
    }
    out
}

fn text_arg(v: &Value) -> Result<Rc<str>> {
    Ok(Rc::from(str_arg("string", v)?))
}

fn findall(pat: &Value, string: &Rc<str>) -> Result<Value> {
    let groups = object::<PatternValue>(pat)
        .expect("pattern")
        .search
        .captures_len()
        - 1;
    let text = |m: &MatchValue, g: usize| match m.spans[g] {
        Some((s, e)) => Value::str(&m.string[s..e]),
        None => Value::str(""),
    };
    Ok(Value::list(
        all_matches(pat, string)
            .iter()
            .map(|m| {
                let m = object::<MatchValue>(m).expect("a match");
                match groups {
                    0 => text(m, 0),
                    1 => text(m, 1),
                    k => Value::tuple((1..=k).map(|g| text(m, g)).collect()),
                }
            })
            .collect(),
    ))
}

/// Python's replacement template expanded for one match: `\1`, `\g<1>`,
/// `\g<name>`, and the usual escapes.
fn expand(template: &str, m: &MatchValue) -> Result<String> {
    let mut out = String::new();
    let chars: Vec<char> = template.chars().collect();
    let mut i = 0;
    let group = |out: &mut String, g: Value| -> Result<()> {
        if let Value::Str(s) = m.group(&g)? {
            out.push_str(s.as_str());
        }
        Ok(())
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 == chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = chars[i + 1];
        i += 2;
        match n {
            'g' if chars.get(i) == Some(&'<') => {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == '>')
                    .ok_or_else(|| Error::value_error("re: missing > in \\g<...>"))?;
                let name: String = chars[i + 1..i + close].iter().collect();
                i += close + 1;
                let g = match name.parse::<i64>() {
                    Ok(k) => Value::Int(k),
                    Err(_) => Value::str(&name),
                };
                group(&mut out, g)?;
            }
            '0'..='9' => {
                let mut digits = n.to_string();
                if let Some(d) = chars.get(i).filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    i += 1;
                }
                group(&mut out, Value::Int(digits.parse().unwrap_or(0)))?;
            }
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' => out.push('\\'),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

fn subn(
    interp: &mut Interp,
    pat: &Value,
    repl: &Value,
    string: &Rc<str>,
    count: i64,
) -> Result<(String, i64)> {
    let mut out = String::new();
    let mut last = 0;
    let mut n = 0;
    for m in all_matches(pat, string) {
        if count > 0 && n >= count {
            break;
        }
        let mv = object::<MatchValue>(&m).expect("a match");
        let (s, e) = mv.spans[0].expect("group 0");
        out.push_str(&string[last..s]);
        let piece = match repl {
            Value::Str(t) => expand(t.as_str(), mv)?,
            f => {
                let r = interp.call(f, vec![m.clone()], Vec::new())?;
                str_arg("repl", &r)?.to_string()
            }
        };
        out.push_str(&piece);
        last = e;
        n += 1;
    }
    out.push_str(&string[last..]);
    Ok((out, n))
}

fn split(pat: &Value, string: &Rc<str>, maxsplit: i64) -> Result<Value> {
    let mut out = Vec::new();
    let mut last = 0;
    for (n, m) in all_matches(pat, string).iter().enumerate() {
        if maxsplit > 0 && n as i64 >= maxsplit {
            break;
        }
        let mv = object::<MatchValue>(m).expect("a match");
        let (s, e) = mv.spans[0].expect("group 0");
        out.push(Value::str(&string[last..s]));
        for g in 1..mv.spans.len() {
            out.push(mv.group(&Value::Int(g as i64))?);
        }
        last = e;
    }
    out.push(Value::str(&string[last..]));
    Ok(Value::list(out))
}

/// Python's `re.escape`: a backslash before each special character.
fn escape(text: &str) -> String {
    const SPECIAL: &str = "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c";
    let mut out = String::new();
    for c in text.chars() {
        if SPECIAL.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn match_arg(v: &Value) -> Result<&MatchValue> {
    object::<MatchValue>(v).ok_or_else(|| Error::type_error("expected a match"))
}

fn usize_arg(v: &Value, what: &str) -> Result<Option<usize>> {
    match v {
        Value::None => Ok(None),
        v => Ok(Some(int_arg(what, v)?.max(0) as usize)),
    }
}

pub(crate) fn register(r: &mut Registry) {
    for &(short, long, value, _) in FLAGS {
        r.interp
            .set_builtin(&format!("_re_{short}"), Value::Int(value));
        r.interp
            .set_builtin(&format!("_re_{long}"), Value::Int(value));
    }
    r.func(
        "_re_compile(pattern, flags=0)",
        "re.compile: the pattern compiled (flags: re.I, re.M, re.S, re.X).",
        |_, a| pattern_of(&a[0], &a[1]),
    );
    for (name, mode) in [
        ("search", Mode::Search),
        ("match", Mode::Match),
        ("fullmatch", Mode::Full),
    ] {
        r.func_from(
            &format!("_re_{name}(pattern, string, flags=0)"),
            &format!("re.{name}: the first match of pattern in string (or None)."),
            move |_, a| find(&pattern_of(&a[0], &a[2])?, &text_arg(&a[1])?, 0, None, mode),
        );
        r.method_from(
            "Pattern",
            &format!("{name}(self, string, pos=0, endpos=None)"),
            &format!("Pattern.{name}: the first match in string[pos:endpos] (or None)."),
            move |_, a| {
                let pos = usize_arg(&a[2], "pos")?.unwrap_or(0);
                find(
                    &a[0],
                    &text_arg(&a[1])?,
                    pos,
                    usize_arg(&a[3], "endpos")?,
                    mode,
                )
            },
        );
    }
    r.func(
        "_re_findall(pattern, string, flags=0)",
        "re.findall: every match's text (or its group, or its groups as a tuple).",
        |_, a| findall(&pattern_of(&a[0], &a[2])?, &text_arg(&a[1])?),
    );
    r.method(
        "Pattern",
        "findall(self, string)",
        "Pattern.findall.",
        |_, a| findall(&a[0], &text_arg(&a[1])?),
    );
    r.func(
        "_re_finditer(pattern, string, flags=0)",
        "re.finditer: an iterator over the matches.",
        |i, a| {
            let list = Value::list(all_matches(&pattern_of(&a[0], &a[2])?, &text_arg(&a[1])?));
            i.call(&crate::builtin_named(i, "iter")?, vec![list], Vec::new())
        },
    );
    r.method(
        "Pattern",
        "finditer(self, string)",
        "Pattern.finditer.",
        |i, a| {
            let list = Value::list(all_matches(&a[0], &text_arg(&a[1])?));
            i.call(&crate::builtin_named(i, "iter")?, vec![list], Vec::new())
        },
    );
    r.func(
        "_re_sub(pattern, repl, string, count=0, flags=0)",
        "re.sub: string with the matches replaced by repl (a template with \\1 and \\g<name>, \
         or a function of the match).",
        |i, a| {
            let p = pattern_of(&a[0], &a[4])?;
            Ok(Value::str(
                &subn(i, &p, &a[1], &text_arg(&a[2])?, int_arg("count", &a[3])?)?.0,
            ))
        },
    );
    r.func(
        "_re_subn(pattern, repl, string, count=0, flags=0)",
        "re.subn: (the new string, the number of replacements).",
        |i, a| {
            let p = pattern_of(&a[0], &a[4])?;
            let (s, n) = subn(i, &p, &a[1], &text_arg(&a[2])?, int_arg("count", &a[3])?)?;
            Ok(Value::tuple(vec![Value::str(&s), Value::Int(n)]))
        },
    );
    r.method(
        "Pattern",
        "sub(self, repl, string, count=0)",
        "Pattern.sub.",
        |i, a| {
            Ok(Value::str(
                &subn(i, &a[0], &a[1], &text_arg(&a[2])?, int_arg("count", &a[3])?)?.0,
            ))
        },
    );
    r.method(
        "Pattern",
        "subn(self, repl, string, count=0)",
        "Pattern.subn.",
        |i, a| {
            let (s, n) = subn(i, &a[0], &a[1], &text_arg(&a[2])?, int_arg("count", &a[3])?)?;
            Ok(Value::tuple(vec![Value::str(&s), Value::Int(n)]))
        },
    );
    r.func(
        "_re_split(pattern, string, maxsplit=0, flags=0)",
        "re.split: string cut at the matches (groups of the pattern kept between the pieces).",
        |_, a| {
            split(
                &pattern_of(&a[0], &a[3])?,
                &text_arg(&a[1])?,
                int_arg("maxsplit", &a[2])?,
            )
        },
    );
    r.method(
        "Pattern",
        "split(self, string, maxsplit=0)",
        "Pattern.split.",
        |_, a| split(&a[0], &text_arg(&a[1])?, int_arg("maxsplit", &a[2])?),
    );
    r.func(
        "_re_escape(pattern)",
        "re.escape: the text with every special character escaped.",
        |_, a| Ok(Value::str(&escape(str_arg("pattern", &a[0])?))),
    );
    r.method(
        "Match",
        "group(self, *groups)",
        "The text of a group (0: the whole match; several: a tuple).",
        |_, a| {
            let mv = match_arg(&a[0])?;
            let gs = match &a[1] {
                Value::Tuple(t) => t.to_vec(),
                _ => Vec::new(),
            };
            match gs.as_slice() {
                [] => mv.group(&Value::Int(0)),
                [g] => mv.group(g),
                many => Ok(Value::tuple(
                    many.iter().map(|g| mv.group(g)).collect::<Result<_>>()?,
                )),
            }
        },
    );
    r.method(
        "Match",
        "groups(self, default=None)",
        "The texts of all groups (default for those that did not take part).",
        |_, a| {
            let mv = match_arg(&a[0])?;
            let out = (1..mv.spans.len())
                .map(|g| {
                    mv.group(&Value::Int(g as i64)).map(|v| {
                        if matches!(v, Value::None) {
                            a[1].clone()
                        } else {
                            v
                        }
                    })
                })
                .collect::<Result<_>>()?;
            Ok(Value::tuple(out))
        },
    );
    r.method(
        "Match",
        "groupdict(self, default=None)",
        "The named groups' texts by name.",
        |_, a| {
            let mv = match_arg(&a[0])?;
            let mut d = arr_runtime::Dict::new();
            for (name, i) in &mv.names {
                let v = mv.group(&Value::Int(*i as i64))?;
                let v = if matches!(v, Value::None) {
                    a[1].clone()
                } else {
                    v
                };
                d.insert(Key::Str(name.as_str().into()), v);
            }
            Ok(Value::dict(d))
        },
    );
    for name in ["start", "end", "span"] {
        r.method_from(
            "Match",
            &format!("{name}(self, group=0)"),
            &format!("The {name} of a group's text in the string (-1 if it did not take part)."),
            move |_, a| {
                let (s, e) = match_arg(&a[0])?.span(&a[1])?;
                Ok(match name {
                    "start" => Value::Int(s),
                    "end" => Value::Int(e),
                    _ => Value::tuple(vec![Value::Int(s), Value::Int(e)]),
                })
            },
        );
    }
    r.method(
        "Match",
        "expand(self, template)",
        "The template with the groups filled in.",
        |_, a| {
            Ok(Value::str(&expand(
                str_arg("template", &a[1])?,
                match_arg(&a[0])?,
            )?))
        },
    );
}
