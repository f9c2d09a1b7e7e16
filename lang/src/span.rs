//! Byte spans and the source files they point into (line:col, caret excerpts).

use std::fmt;

/// A half-open byte range `[start, end)` into a `SourceFile`'s text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A named piece of source text with a line index.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub col: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// The most characters of one line an excerpt shows.
pub const EXCERPT_CHARS: usize = 120;

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// Line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = (offset as usize).min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        LineCol {
            line: line + 1,
            col: col + 1,
        }
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&e| e - 1);
        self.text
            .get(start..end.max(start))
            .unwrap_or("")
            .trim_end_matches('\r')
    }

    /// `name:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        format!("{}:{}", self.name, self.line_col(span.start))
    }

    /// The span's first line with a caret line under it:
    /// ```text
    ///   3 | y = x + z
    ///     |     ^^^^^
    /// ```
    /// A line longer than `EXCERPT_CHARS` shows only a window of it around
    /// the span's start, cut ends marked `…` (an error on a 1 MB line does
    /// not print it, and its carets, whole).
    pub fn excerpt(&self, span: Span) -> String {
        let start = self.line_col(span.start);
        let line = self.line_text(start.line);
        let end = self.line_col(span.end.max(span.start));
        let chars = line.chars().count();
        let width = if end.line == start.line {
            end.col.saturating_sub(start.col).max(1)
        } else {
            chars.saturating_sub(start.col - 1).max(1)
        };
        let (shown, col, width) = if chars <= EXCERPT_CHARS {
            (line.to_string(), start.col - 1, width)
        } else {
            let from = (start.col - 1)
                .saturating_sub(EXCERPT_CHARS / 4)
                .min(chars - EXCERPT_CHARS);
            let to = from + EXCERPT_CHARS;
            let lead = if from > 0 { "…" } else { "" };
            let tail = if to < chars { "…" } else { "" };
            let text: String = line.chars().skip(from).take(EXCERPT_CHARS).collect();
            let col = start.col - 1 - from + lead.chars().count();
            let width = width.min((to + 1).saturating_sub(start.col - 1)).max(1);
            (format!("{lead}{text}{tail}"), col, width)
        };
        let gutter = start.line.to_string().len();
        format!(
            "{:>g$} |\n{} | {}\n{:>g$} | {}{}",
            "",
            start.line,
            shown,
            "",
            " ".repeat(col),
            "^".repeat(width),
            g = gutter
        )
    }
}
