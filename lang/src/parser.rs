//! Tokens to AST by recursive descent with Python's precedence.

use crate::{ast::Module, Completeness, Diagnostic};

pub(crate) fn parse_module(text: &str) -> Result<Module, Vec<Diagnostic>> {
    todo!("{}", text.len())
}

pub(crate) fn check_complete(text: &str) -> Completeness {
    todo!("{}", text.len())
}
