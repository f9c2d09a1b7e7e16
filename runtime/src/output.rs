//! Output beyond `print`'s text — stderr, rich displays, clearing — which a
//! notebook front end renders and a terminal approximates.
//!
//! Builtins (`eprint`, `display`, `update_display`, `clear_output`,
//! `display_image`) only say *what* to show; where it goes is the front end's
//! choice: the Jupyter kernel installs a sink that turns each request into a
//! message, and without one `Interp::emit` falls back to the terminal.

use crate::value::Value;

/// One output request from running code.
pub enum RichOutput {
    /// Text for standard error.
    Stderr(String),
    /// Show a value in its richest form (HTML tables for arrays in a notebook).
    /// With `update`, replace the earlier output that has the same `display_id`.
    Display {
        value: Value,
        display_id: Option<String>,
        update: bool,
    },
    /// Show an image, encoded in one or more formats (`image/png`,
    /// `image/svg+xml`), best first; the front end picks what it can show.
    Image {
        formats: Vec<(&'static str, Vec<u8>)>,
        display_id: Option<String>,
        update: bool,
    },
    /// Ready-made representations by mime type (`text/plain` first, which a
    /// terminal prints): progress bars, tables, the live device view.
    Mime {
        data: Vec<(&'static str, String)>,
        display_id: Option<String>,
        update: bool,
    },
    /// Clear the current cell's output; with `wait`, only when new output arrives.
    ClearOutput { wait: bool },
}

/// Where rich output goes when a front end wants it (the Jupyter kernel).
pub type RichSink = Box<dyn FnMut(RichOutput)>;
