//! Tokens: numbers, strings, names, operators, and INDENT/DEDENT from indentation.
//!
//! The token-level grammar (names, numbers, operators, string prefixes) is
//! written with nom combinators. The layout rules (NEWLINE, INDENT, DEDENT,
//! implicit line joining inside brackets, backslash continuation) are a small
//! hand-written loop around them, as in Python's tokenizer.
//!
//! Lexing never fails: a problem becomes a diagnostic and the lexer carries on,
//! so that `highlight` can colour any text and the parser sees every token.

use nom::branch::alt;
use nom::bytes::complete::{take_while, take_while1, take_while_m_n};
use nom::character::complete::{char, one_of, satisfy};
use nom::combinator::{opt, recognize};
use nom::{IResult, Parser};

use crate::{Diagnostic, Span, TokenClass, KEYWORDS};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokenKind {
    Name(String),
    /// One of `crate::KEYWORDS`.
    Keyword(&'static str),
    Int(i64),
    Float(f64),
    /// An imaginary literal (`2j`): the value of its imaginary part.
    Imag(f64),
    Str(Box<StrToken>),
    /// Operators and punctuation, e.g. `"**="` or `"("`.
    Op(&'static str),
    /// End of a logical line.
    Newline,
    Indent,
    Dedent,
    Eof,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// One string literal, escapes already processed. The parser joins adjacent ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StrToken {
    pub is_fstring: bool,
    pub parts: Vec<StrPart>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StrPart {
    Text(String),
    /// `{expr!conv:spec}`: `expr` is where the expression's text lies in the
    /// source; the parser lexes and parses that range on its own.
    Hole {
        expr: Span,
        conversion: Option<char>,
        spec: Option<String>,
    },
}

/// Everything the lexer found, including what only highlighting or the REPL needs.
#[derive(Debug, Default)]
pub(crate) struct Lexed {
    pub tokens: Vec<Token>,
    /// Errors that no further input could fix.
    pub errors: Vec<Diagnostic>,
    /// Errors caused only by the text stopping too early: an open bracket,
    /// an unterminated triple-quoted string, a trailing backslash.
    pub eof_errors: Vec<Diagnostic>,
    pub comments: Vec<Span>,
    pub unknown: Vec<Span>,
    /// Indentation width (in columns) of the block the text ends in.
    pub indent_at_end: usize,
    /// How many indented blocks were still open when the text ended.
    pub open_blocks: usize,
}

/// Longest first, so that `**=` is not read as `**` then `=`.
const OPERATORS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", ">>", "<<", "<=", ">=", "==", "!=",
    "+=", "-=", "*=", "/=", "%=", "@=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "@", "&", "|",
    "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "=",
];

/// Lex a whole file or REPL entry.
pub(crate) fn tokenize(text: &str) -> Lexed {
    Lexer::new(text, 0, false).run()
}

/// Lex the expression of an f-string hole, which starts at byte `offset` of
/// the real source. It behaves as if inside parentheses: newlines are
/// ignored and no NEWLINE/INDENT/DEDENT tokens are made.
pub(crate) fn tokenize_fragment(text: &str, offset: usize) -> Lexed {
    Lexer::new(text, offset, true).run()
}

pub(crate) fn highlight(text: &str) -> Vec<(Span, TokenClass)> {
    let lexed = tokenize(text);
    let mut out = Vec::with_capacity(lexed.tokens.len() + lexed.comments.len());
    for token in &lexed.tokens {
        let class = match &token.kind {
            TokenKind::Name(_) => TokenClass::Name,
            TokenKind::Keyword(_) => TokenClass::Keyword,
            TokenKind::Int(_) | TokenKind::Float(_) | TokenKind::Imag(_) => TokenClass::Number,
            TokenKind::Str(_) => TokenClass::String,
            TokenKind::Op(op) if is_punctuation(op) => TokenClass::Punctuation,
            TokenKind::Op(_) => TokenClass::Operator,
            TokenKind::Newline | TokenKind::Indent | TokenKind::Dedent | TokenKind::Eof => continue,
        };
        out.push((token.span, class));
    }
    out.extend(
        lexed
            .comments
            .iter()
            .map(|&span| (span, TokenClass::Comment)),
    );
    out.extend(
        lexed
            .unknown
            .iter()
            .map(|&span| (span, TokenClass::Unknown)),
    );
    out.sort_by_key(|(span, _)| (span.start, span.end));
    out
}

fn is_punctuation(op: &str) -> bool {
    matches!(
        op,
        "(" | ")" | "[" | "]" | "{" | "}" | "," | ":" | ";" | "." | "->"
    )
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

// ---- token-level grammar (nom) ----

fn name(input: &str) -> IResult<&str, &str> {
    recognize((satisfy(is_ident_start), take_while(is_ident_continue))).parse(input)
}

fn operator(input: &str) -> IResult<&str, &'static str> {
    // The first byte picks the candidates: a prefix test of all 47 (nom's
    // `tag` in a loop) was a fifth of lexing, and start-up lexes the library.
    let bytes = input.as_bytes();
    let first = *bytes.first().unwrap_or(&0);
    if let Some(&op) = OPERATORS
        .iter()
        .find(|op| op.as_bytes()[0] == first && bytes.starts_with(op.as_bytes()))
    {
        return Ok((&input[op.len()..], op));
    }
    Err(nom::Err::Error(nom::error::Error::new(
        input,
        nom::error::ErrorKind::Tag,
    )))
}

/// A string prefix (`r`, `f`, `rf`, `u`, ... in any case) directly followed by a quote.
fn string_prefix(input: &str) -> IResult<&str, &str> {
    let (rest, prefix) = take_while_m_n(1, 2, |c: char| c.is_ascii_alphabetic()).parse(input)?;
    let _ = one_of("'\"").parse(rest)?;
    let lower = prefix.to_ascii_lowercase();
    if matches!(lower.as_str(), "r" | "u" | "f" | "rf" | "fr") {
        Ok((rest, prefix))
    } else {
        Err(nom::Err::Error(nom::error::Error::new(
            input,
            nom::error::ErrorKind::Tag,
        )))
    }
}

/// Digits with underscores; whether the underscores sit between digits is checked later.
fn digit_part(input: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_digit() || c == '_').parse(input)
}

fn exponent(input: &str) -> IResult<&str, &str> {
    recognize((one_of("eE"), opt(one_of("+-")), digit_part)).parse(input)
}

/// The text of a number literal: `0x1F`, `.5`, `1.`, `1_000.5e2`, `10`.
fn number(input: &str) -> IResult<&str, &str> {
    alt((
        recognize((
            char('0'),
            one_of("xXoObB"),
            take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
        )),
        recognize((char('.'), digit_part, opt(exponent))),
        recognize((digit_part, opt((char('.'), opt(digit_part))), opt(exponent))),
    ))
    .parse(input)
}

/// Every `_` must sit between two digits (or, with `after_prefix`, may also
/// directly follow a `0x`-style prefix).
fn underscores_ok(digits: &str, is_digit: impl Fn(char) -> bool, after_prefix: bool) -> bool {
    let chars: Vec<char> = digits.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '_' {
            continue;
        }
        let prev_ok = if i == 0 {
            after_prefix
        } else {
            is_digit(chars[i - 1])
        };
        let next_ok = chars.get(i + 1).is_some_and(|&n| is_digit(n));
        if !prev_ok || !next_ok {
            return false;
        }
    }
    true
}

// ---- the layout loop ----

struct Lexer<'a> {
    text: &'a str,
    /// Byte offset into `text`.
    pos: usize,
    /// Added to every span: where `text` starts in the real source.
    offset: usize,
    fragment: bool,
    /// Open brackets and where they are (local offsets).
    brackets: Vec<(char, usize)>,
    /// Open indentation levels: the column with tabs to multiples of 8, and
    /// with tabs as one column. Python raises TabError when the two orders
    /// disagree: the meaning would depend on the tab width.
    indents: Vec<(usize, usize)>,
    at_line_start: bool,
    out: Lexed,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str, offset: usize, fragment: bool) -> Lexer<'a> {
        Lexer {
            text,
            pos: 0,
            offset,
            fragment,
            brackets: Vec::new(),
            indents: vec![(0, 0)],
            at_line_start: !fragment,
            out: Lexed::default(),
        }
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.offset + start, self.offset + end)
    }

    fn char_at(&self, i: usize) -> Option<char> {
        self.text.get(i..)?.chars().next()
    }

    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn push(&mut self, kind: TokenKind, start: usize, end: usize) {
        let span = self.span(start, end);
        self.out.tokens.push(Token { kind, span });
    }

    fn error(&mut self, message: impl Into<String>, start: usize, end: usize) {
        let span = self.span(start, end);
        self.out.errors.push(Diagnostic::new(message, span));
    }

    fn current_indent(&self) -> usize {
        self.indents.last().map_or(0, |&(col, _)| col)
    }

    fn current_alt_indent(&self) -> usize {
        self.indents.last().map_or(0, |&(_, alt)| alt)
    }

    fn last_is_newline(&self) -> bool {
        matches!(
            self.out.tokens.last(),
            None | Some(Token {
                kind: TokenKind::Newline,
                ..
            })
        )
    }

    fn run(mut self) -> Lexed {
        loop {
            if self.at_line_start && self.brackets.is_empty() {
                self.at_line_start = false;
                self.indentation();
            }
            while matches!(self.char_at(self.pos), Some(' ' | '\t' | '\x0c')) {
                self.pos += 1;
            }
            let Some(c) = self.char_at(self.pos) else {
                break;
            };
            match c {
                '#' => self.comment(),
                '\n' | '\r' => self.newline(),
                '\\' => self.backslash(),
                _ => self.token(c),
            }
        }
        self.finish()
    }

    /// At the start of a line outside brackets: measure the indentation and
    /// emit INDENT or DEDENTs. Blank and comment-only lines do not count.
    fn indentation(&mut self) {
        let line_start = self.pos;
        let (mut col, mut alt) = (0, 0);
        loop {
            match self.char_at(self.pos) {
                Some(' ') => {
                    col += 1;
                    alt += 1;
                }
                Some('\t') => {
                    col = (col / 8 + 1) * 8;
                    alt += 1;
                }
                Some('\x0c') => (col, alt) = (0, 0),
                _ => break,
            }
            self.pos += 1;
        }
        if matches!(self.char_at(self.pos), None | Some('#' | '\n' | '\r')) {
            return;
        }
        let top = self.current_indent();
        let inconsistent = if col > top {
            let bad = alt <= self.current_alt_indent();
            self.indents.push((col, alt));
            self.push(TokenKind::Indent, line_start, self.pos);
            bad
        } else {
            while col < self.current_indent() {
                self.indents.pop();
                self.push(TokenKind::Dedent, self.pos, self.pos);
            }
            if col != self.current_indent() {
                let span = self.span(line_start, self.pos);
                self.out.errors.push(Diagnostic::with_class(
                    "IndentationError",
                    "unindent does not match any outer indentation level",
                    span,
                ));
                return;
            }
            alt != self.current_alt_indent()
        };
        if inconsistent {
            let span = self.span(line_start, self.pos);
            self.out.errors.push(Diagnostic::with_class(
                "TabError",
                "inconsistent use of tabs and spaces in indentation",
                span,
            ));
        }
    }

    fn comment(&mut self) {
        let start = self.pos;
        let len = self.rest().find(['\n', '\r']).unwrap_or(self.rest().len());
        self.pos += len;
        let span = self.span(start, self.pos);
        self.out.comments.push(span);
    }

    fn newline(&mut self) {
        let len = if self.rest().starts_with("\r\n") {
            2
        } else {
            1
        };
        if self.brackets.is_empty() && !self.fragment {
            if !self.last_is_newline() {
                self.push(TokenKind::Newline, self.pos, self.pos + len);
            }
            self.at_line_start = true;
        }
        self.pos += len;
    }

    fn backslash(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let after = self.rest();
        let newline_len = if after.starts_with("\r\n") {
            2
        } else if after.starts_with(['\n', '\r']) {
            1
        } else {
            0
        };
        if newline_len > 0 {
            // Explicit line joining: the next line continues this logical line.
            self.pos += newline_len;
            if self.pos >= self.text.len() {
                let span = self.span(start, start + 1);
                self.out.eof_errors.push(Diagnostic::new(
                    "unexpected end of input after line continuation",
                    span,
                ));
            }
        } else if after.is_empty() {
            let span = self.span(start, start + 1);
            self.out.eof_errors.push(Diagnostic::new(
                "unexpected end of input after line continuation",
                span,
            ));
        } else {
            self.error(
                "unexpected character after line continuation character",
                start,
                start + 1,
            );
            let span = self.span(start, start + 1);
            self.out.unknown.push(span);
        }
    }

    fn token(&mut self, c: char) {
        let start = self.pos;
        let rest = self.rest();
        if let Ok((_, prefix)) = string_prefix(rest) {
            let lower = prefix.to_ascii_lowercase();
            self.string(prefix.len(), lower.contains('r'), lower.contains('f'));
        } else if c == '\'' || c == '"' {
            self.string(0, false, false);
        } else if let Ok((_, word)) = name(rest) {
            self.pos += word.len();
            let first = word.as_bytes()[0];
            let kind = match KEYWORDS
                .iter()
                .find(|&&k| k.as_bytes()[0] == first && k == word)
            {
                Some(&keyword) => TokenKind::Keyword(keyword),
                None => TokenKind::Name(word.to_string()),
            };
            self.push(kind, start, self.pos);
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            self.number();
        } else if let Ok((_, op)) = operator(rest) {
            self.pos += op.len();
            self.bracket(op, start);
            self.push(TokenKind::Op(op), start, self.pos);
        } else {
            self.pos += c.len_utf8();
            self.error(
                format!(
                    "invalid character '{}' (U+{:04X})",
                    c.escape_debug(),
                    c as u32
                ),
                start,
                self.pos,
            );
            let span = self.span(start, self.pos);
            self.out.unknown.push(span);
        }
    }

    /// Track bracket depth for implicit line joining. A mismatched closer
    /// still pops: the parser reports the mismatch with better context.
    fn bracket(&mut self, op: &str, start: usize) {
        match op {
            "(" | "[" | "{" => {
                let opener = if op == "(" {
                    '('
                } else if op == "[" {
                    '['
                } else {
                    '{'
                };
                self.brackets.push((opener, start));
            }
            ")" | "]" | "}" => {
                let unmatched = self.brackets.pop().is_none();
                if unmatched && !self.fragment {
                    self.error(format!("unmatched '{op}'"), start, start + 1);
                }
            }
            _ => {}
        }
    }

    fn number(&mut self) {
        let start = self.pos;
        let Ok((_, literal)) = number(self.rest()) else {
            // Unreachable given the caller's check; stay total anyway.
            self.pos += 1;
            self.error("invalid number literal", start, self.pos);
            return;
        };
        self.pos += literal.len();
        // An imaginary literal: a decimal number and `j` (`2j`, `0.5J`, `1e3j`).
        let imaginary = matches!(self.rest().as_bytes().first(), Some(b'j' | b'J'))
            && !self.rest()[1..].starts_with(is_ident_continue)
            && !matches!(
                literal.to_ascii_lowercase().get(..2),
                Some("0x" | "0o" | "0b")
            );
        if imaginary {
            self.pos += 1;
            let cleaned: String = literal.chars().filter(|&c| c != '_').collect();
            let kind = match cleaned.parse::<f64>() {
                Ok(value) if underscores_ok(literal, |c| c.is_ascii_digit(), false) => {
                    TokenKind::Imag(value)
                }
                _ => {
                    self.error("invalid imaginary literal", start, self.pos);
                    TokenKind::Imag(0.0)
                }
            };
            self.push(kind, start, self.pos);
            return;
        }
        // An identifier glued to a number (`1abc`, `1e`) is one bad literal.
        if let Ok((_, tail)) =
            take_while1::<_, _, nom::error::Error<&str>>(is_ident_continue).parse(self.rest())
        {
            self.pos += tail.len();
            self.error("invalid decimal literal", start, self.pos);
            self.push(TokenKind::Int(0), start, self.pos);
            return;
        }
        let kind = self.number_value(literal, start);
        self.push(kind, start, self.pos);
    }

    fn number_value(&mut self, literal: &str, start: usize) -> TokenKind {
        let end = self.pos;
        let lower = literal.to_ascii_lowercase();
        let radix = match lower.get(..2) {
            Some("0x") => Some((16, "hexadecimal")),
            Some("0o") => Some((8, "octal")),
            Some("0b") => Some((2, "binary")),
            _ => None,
        };
        if let Some((radix, what)) = radix {
            let digits = literal.get(2..).unwrap_or("");
            let is_digit = |c: char| c.is_digit(radix);
            let valid = digits.chars().any(is_digit)
                && digits.chars().all(|c| c == '_' || is_digit(c))
                && underscores_ok(digits, is_digit, true);
            if !valid {
                self.error(format!("invalid {what} literal"), start, end);
                return TokenKind::Int(0);
            }
            let cleaned: String = digits.chars().filter(|&c| c != '_').collect();
            return match i64::from_str_radix(&cleaned, radix) {
                Ok(value) => TokenKind::Int(value),
                Err(_) => {
                    self.error("integer literal is too large", start, end);
                    TokenKind::Int(0)
                }
            };
        }
        if !underscores_ok(literal, |c| c.is_ascii_digit(), false) {
            self.error("invalid decimal literal", start, end);
            return TokenKind::Int(0);
        }
        let cleaned: String = literal.chars().filter(|&c| c != '_').collect();
        if cleaned.contains(['.', 'e', 'E']) {
            return match cleaned.parse::<f64>() {
                Ok(value) => TokenKind::Float(value),
                Err(_) => {
                    self.error("invalid float literal", start, end);
                    TokenKind::Float(0.0)
                }
            };
        }
        if cleaned.len() > 1 && cleaned.starts_with('0') && cleaned.chars().any(|c| c != '0') {
            self.error(
                "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
                start,
                end,
            );
            return TokenKind::Int(0);
        }
        match cleaned.parse::<i64>() {
            Ok(value) => TokenKind::Int(value),
            Err(_) => {
                self.error("integer literal is too large", start, end);
                TokenKind::Int(0)
            }
        }
    }

    /// A string literal starting at `self.pos` with a prefix of `prefix_len` bytes.
    fn string(&mut self, prefix_len: usize, raw: bool, fstring: bool) {
        let start = self.pos;
        let quote_pos = start + prefix_len;
        let Some(quote) = self.char_at(quote_pos) else {
            return;
        };
        let triple_quote: String = std::iter::repeat_n(quote, 3).collect();
        let triple = self
            .text
            .get(quote_pos..)
            .is_some_and(|s| s.starts_with(&triple_quote));
        let quote_len = if triple { 3 } else { 1 };
        let mut i = quote_pos + quote_len;
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut terminated = false;
        while let Some(c) = self.char_at(i) {
            if c == quote
                && (!triple
                    || self
                        .text
                        .get(i..)
                        .is_some_and(|s| s.starts_with(&triple_quote)))
            {
                i += quote_len;
                terminated = true;
                break;
            }
            if (c == '\n' || c == '\r') && !triple {
                break;
            }
            if c == '\\' {
                i = self.escape(i, raw, &mut text);
                continue;
            }
            if fstring && c == '{' {
                if self.char_at(i + 1) == Some('{') {
                    text.push('{');
                    i += 2;
                    continue;
                }
                if !text.is_empty() {
                    parts.push(StrPart::Text(std::mem::take(&mut text)));
                }
                match self.fstring_hole(i, quote, triple) {
                    Ok((next, echo, part)) => {
                        if let Some(echo) = echo {
                            parts.push(StrPart::Text(echo));
                        }
                        parts.push(part);
                        i = next;
                        continue;
                    }
                    Err(stop) => {
                        i = stop;
                        if !triple && self.char_at(i) == Some(quote) {
                            // `f"{x"`: the string's own quote closed it inside a hole.
                            self.error("f-string: expecting '}'", stop, stop + 1);
                            i += 1;
                            terminated = true;
                        }
                        break;
                    }
                }
            }
            if fstring && c == '}' {
                if self.char_at(i + 1) == Some('}') {
                    text.push('}');
                    i += 2;
                    continue;
                }
                self.error("f-string: single '}' is not allowed", i, i + 1);
            }
            text.push(c);
            i += c.len_utf8();
        }
        if !text.is_empty() || (parts.is_empty() && !fstring) {
            parts.push(StrPart::Text(text));
        }
        if !terminated {
            if triple {
                let span = self.span(start, i);
                self.out.eof_errors.push(Diagnostic::new(
                    "unterminated triple-quoted string literal",
                    span,
                ));
            } else {
                self.error("unterminated string literal", start, i);
            }
        }
        self.pos = i;
        self.push(
            TokenKind::Str(Box::new(StrToken {
                is_fstring: fstring,
                parts,
            })),
            start,
            i,
        );
    }

    /// Process the escape sequence at `i` (a backslash); returns where scanning goes on.
    fn escape(&mut self, i: usize, raw: bool, text: &mut String) -> usize {
        let after = i + 1;
        let Some(next) = self.char_at(after) else {
            text.push('\\');
            return after;
        };
        let past_next = after + next.len_utf8();
        if raw {
            // Raw strings keep the backslash, but it still stops the quote from ending the string.
            text.push('\\');
            text.push(next);
            return past_next;
        }
        let simple = match next {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            _ => None,
        };
        if let Some(c) = simple {
            text.push(c);
            return past_next;
        }
        match next {
            // Backslash-newline inside a string continues it on the next line.
            '\n' => past_next,
            '\r' => {
                if self.char_at(past_next) == Some('\n') {
                    past_next + 1
                } else {
                    past_next
                }
            }
            '0'..='7' => {
                let digits: String = self
                    .text
                    .get(after..)
                    .unwrap_or("")
                    .chars()
                    .take(3)
                    .take_while(|c| c.is_digit(8))
                    .collect();
                let value = u32::from_str_radix(&digits, 8).unwrap_or(0);
                text.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                after + digits.len()
            }
            'x' | 'u' | 'U' => {
                let width = match next {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits: String = self
                    .text
                    .get(past_next..)
                    .unwrap_or("")
                    .chars()
                    .take(width)
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect();
                let end = past_next + digits.len();
                if digits.len() < width {
                    self.error(format!("truncated \\{next} escape"), i, end);
                    return end;
                }
                match u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(c) => text.push(c),
                    None => self.error("invalid unicode escape", i, end),
                }
                end
            }
            'N' => {
                // `\N{NAME}`: a character by its Unicode name.
                let rest = self.text.get(past_next..).unwrap_or("");
                let name = rest
                    .strip_prefix('{')
                    .and_then(|r| r.split_once('}'))
                    .map(|(name, _)| name)
                    .filter(|name| !name.contains(['\n', '\r', '"', '\'']));
                let Some(name) = name else {
                    self.error("malformed \\N character escape", i, past_next);
                    return past_next;
                };
                let end = past_next + name.len() + 2;
                match unicode_names2::character(name) {
                    Some(c) => text.push(c),
                    None => self.error(
                        format!("unknown Unicode character name in \\N{{{name}}}"),
                        i,
                        end,
                    ),
                }
                end
            }
            _ => {
                // Unknown escapes are kept as written, as Python does.
                text.push('\\');
                text.push(next);
                past_next
            }
        }
    }

    /// Scan an f-string hole starting at the `{` at `open`. Returns where
    /// scanning of the string goes on and the hole, or `Err(at)` when the
    /// string ended (newline or end of text) inside the hole. A
    /// self-documenting hole (`{x=}`) also returns its text, `x=`, which
    /// goes before the value.
    #[allow(clippy::type_complexity)]
    fn fstring_hole(
        &mut self,
        open: usize,
        quote: char,
        triple: bool,
    ) -> Result<(usize, Option<String>, StrPart), usize> {
        let expr_start = open + 1;
        let mut j = expr_start;
        let mut depth = 0usize;
        let mut echo_end = None;
        loop {
            let Some(c) = self.char_at(j) else {
                return Err(j);
            };
            match c {
                '\n' | '\r' if !triple => return Err(j),
                '\'' | '"' => {
                    // A string inside the expression: skip to its closing quote on the same line.
                    if c == quote && !triple {
                        // In a one-line f-string its own quote ends the string (pre-3.12 rule).
                        return Err(j);
                    }
                    let close = self.text.get(j + 1..).and_then(|s| s.find([c, '\n']));
                    match close {
                        Some(k) if self.char_at(j + 1 + k) == Some(c) => j += 1 + k,
                        _ => return Err(j),
                    }
                }
                '(' | '[' | '{' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                '!' if depth == 0 && self.char_at(j + 1) != Some('=') => break,
                ':' if depth == 0 => break,
                // `{x=}`, `{x = !r}`, `{x=:.3f}`: an `=` that is no part of
                // `==`, `!=`, `<=`, `>=` and only whitespace before the end.
                '=' if depth == 0
                    && !matches!(self.char_at(j + 1), Some('='))
                    && !(j > expr_start
                        && matches!(self.char_at(j - 1), Some('=' | '!' | '<' | '>'))) =>
                {
                    let rest = self.text.get(j + 1..).unwrap_or("");
                    let after = rest.trim_start_matches([' ', '\t']);
                    if after.starts_with(['}', '!', ':']) {
                        echo_end = Some(j + 1 + (rest.len() - after.len()));
                        let expr_end = j;
                        j = echo_end.unwrap_or(j + 1);
                        return self.fstring_hole_tail(open, expr_end, j, echo_end, quote, triple);
                    }
                }
                '#' => self.error("f-string expression part cannot include '#'", j, j + 1),
                '\\' => self.error(
                    "f-string expression part cannot include a backslash",
                    j,
                    j + 1,
                ),
                _ => {}
            }
            j += c.len_utf8();
        }
        self.fstring_hole_tail(open, j, j, echo_end, quote, triple)
    }

    /// The rest of an f-string hole after its expression, which ends at
    /// `expr_end`: conversion, spec and `}` from `j` on.
    fn fstring_hole_tail(
        &mut self,
        open: usize,
        expr_end: usize,
        mut j: usize,
        echo_end: Option<usize>,
        quote: char,
        triple: bool,
    ) -> Result<(usize, Option<String>, StrPart), usize> {
        let expr_start = open + 1;
        if self
            .text
            .get(expr_start..expr_end)
            .unwrap_or("")
            .trim()
            .is_empty()
        {
            self.error("f-string: empty expression not allowed", open, expr_end + 1);
        }
        let mut conversion = None;
        if self.char_at(j) == Some('!') {
            j += 1;
            match self.char_at(j) {
                Some(c @ ('r' | 's' | 'a')) => {
                    conversion = Some(c);
                    j += 1;
                }
                Some(c) if c != quote && c != '\n' && c != '\r' => {
                    self.error(
                        "f-string: invalid conversion character: expected 's', 'r', or 'a'",
                        j,
                        j + c.len_utf8(),
                    );
                    j += c.len_utf8();
                }
                _ => return Err(j),
            }
        }
        let mut spec = None;
        if self.char_at(j) == Some(':') {
            j += 1;
            let spec_start = j;
            let mut depth = 0usize;
            loop {
                let Some(c) = self.char_at(j) else {
                    return Err(j);
                };
                match c {
                    '\n' | '\r' if !triple => return Err(j),
                    c if c == quote && !triple => return Err(j),
                    '{' => {
                        // The AST keeps the spec as text, so a hole inside it
                        // could not be evaluated: refuse it rather than print it.
                        if depth == 0 {
                            let message = "f-string: nested replacement fields in a format spec are not supported";
                            self.error(message, j, j + 1);
                        }
                        depth += 1;
                    }
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    _ => {}
                }
                j += c.len_utf8();
            }
            spec = Some(self.text.get(spec_start..j).unwrap_or("").to_string());
        }
        match self.char_at(j) {
            Some('}') => j += 1,
            Some(c) if c != quote && c != '\n' && c != '\r' => {
                self.error("f-string: expecting '}'", j, j + c.len_utf8());
            }
            _ => return Err(j),
        }
        let expr = self.span(expr_start, expr_end);
        let echo = echo_end.map(|end| self.text.get(expr_start..end).unwrap_or("").to_string());
        // `{x=}` shows the repr unless a conversion or a spec says otherwise.
        if echo.is_some() && conversion.is_none() && spec.is_none() {
            conversion = Some('r');
        }
        Ok((
            j,
            echo,
            StrPart::Hole {
                expr,
                conversion,
                spec,
            },
        ))
    }

    fn finish(mut self) -> Lexed {
        let end = self.text.len();
        if let Some(&(opener, at)) = self.brackets.last() {
            let span = self.span(at, at + 1);
            self.out.eof_errors.push(Diagnostic::new(
                format!("'{opener}' was never closed"),
                span,
            ));
        }
        if !self.fragment {
            if !self.last_is_newline() {
                self.push(TokenKind::Newline, end, end);
            }
            self.out.indent_at_end = self.current_indent();
            self.out.open_blocks = self.indents.len().saturating_sub(1);
            for _ in 1..self.indents.len() {
                self.push(TokenKind::Dedent, end, end);
            }
        }
        self.push(TokenKind::Eof, end, end);
        self.out
    }
}
