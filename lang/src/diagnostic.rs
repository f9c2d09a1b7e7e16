//! Diagnostics: a message, the span it is about, and rendering with an excerpt.

use crate::span::{SourceFile, Span};

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Span,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
        }
    }

    /// `file:line:col: error: message` followed by a caret excerpt.
    pub fn render(&self, file: &SourceFile) -> String {
        format!(
            "{}: syntax error: {}\n{}",
            file.location(self.span),
            self.message,
            file.excerpt(self.span)
        )
    }
}
