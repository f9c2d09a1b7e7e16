//! arr's front end: source text to tokens to AST. Does no IO and never panics.
//!
//! `parse` turns a whole file (or REPL entry) into a `Module` or a list of
//! diagnostics with spans; `check_complete` tells a line editor whether more
//! input is needed; `highlight` classifies tokens for syntax colouring;
//! `pretty` prints the AST as indented text for snapshot tests.

pub mod ast;
pub mod diagnostic;
mod lexer;
mod parser;
pub mod pretty;
pub mod span;

pub use diagnostic::Diagnostic;
pub use span::{LineCol, SourceFile, Span};

/// Parse a whole source file. Never panics, whatever the input.
pub fn parse(file: &SourceFile) -> Result<ast::Module, Vec<Diagnostic>> {
    parser::parse_module(&file.text)
}

/// Whether an interactive entry is finished, as a REPL or Jupyter's
/// `is_complete_request` needs to know.
#[derive(Clone, Debug, PartialEq)]
pub enum Completeness {
    /// Parses; run it.
    Complete,
    /// Could become valid with more lines (open bracket, a block header
    /// ending in `:` without a body yet, an indented block not yet closed by
    /// an empty line, a trailing backslash, an unterminated triple-quoted string).
    /// `indent` is the suggested indentation of the next line.
    Incomplete { indent: String },
    /// No continuation can fix it.
    Invalid(Vec<Diagnostic>),
}

/// Decide whether `text` (one REPL entry, possibly several lines) is complete.
pub fn check_complete(text: &str) -> Completeness {
    parser::check_complete(text)
}

/// Token classes for syntax highlighting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenClass {
    Keyword,
    Name,
    Number,
    String,
    Comment,
    Operator,
    Punctuation,
    /// Text the lexer could not classify (still returned, never an error).
    Unknown,
}

/// Classify every token of `text` for colouring; lenient and total: it
/// never fails, and unknown bytes come back as `Unknown` spans.
pub fn highlight(text: &str) -> Vec<(Span, TokenClass)> {
    lexer::highlight(text)
}

/// The keywords, for completion and highlighting.
pub const KEYWORDS: &[&str] = &[
    "and", "as", "assert", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "False", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "None",
    "nonlocal", "not", "or", "pass", "raise", "return", "True", "try", "while", "with", "yield",
];
