//! Diagnostics: a message, the span it is about, and rendering with an excerpt.

use crate::span::{SourceFile, Span};

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Python's class for it: SyntaxError, or its subclasses IndentationError and TabError.
    pub class: &'static str,
    pub message: String,
    pub span: Span,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::with_class("SyntaxError", message, span)
    }

    pub fn with_class(class: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            class,
            message: message.into(),
            span,
        }
    }

    /// `SyntaxError: message at file:line:col` followed by a caret excerpt,
    /// in the same form as the runtime's errors.
    pub fn render(&self, file: &SourceFile) -> String {
        format!(
            "{}: {} at {}\n{}",
            self.class,
            self.message,
            file.location(self.span),
            file.excerpt(self.span)
        )
    }
}
