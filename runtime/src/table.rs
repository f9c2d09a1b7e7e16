//! Tables as values: a header, rows of text cells and notes under them,
//! drawn with comfy-table on a terminal and as an HTML `<table>` in a
//! notebook. `table(x)`, `mesh_report()` and `:mesh` return one.

use crate::eval::attr::{properties, property, Attribute, Property};
use crate::value::{Object, Value};
use comfy_table::{presets, CellAlignment, ContentArrangement};
use std::any::Any;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// A line above the table (`8 devices (cpu)`).
    pub title: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns whose cells are numbers, aligned right.
    pub numeric: Vec<bool>,
    /// Lines below the table.
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            numeric: vec![false; header.len()],
            ..Table::default()
        }
    }

    /// Mark columns (by index) as numeric.
    pub fn right(mut self, columns: &[usize]) -> Table {
        for &c in columns {
            if let Some(n) = self.numeric.get_mut(c) {
                *n = true;
            }
        }
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The terminal form: box-drawing lines, fixed (not terminal-width)
    /// layout so the text is the same everywhere (and in snapshots).
    pub fn text(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(self.header.clone());
        for r in &self.rows {
            t.add_row(r.clone());
        }
        for (i, numeric) in self.numeric.iter().enumerate() {
            if let (true, Some(c)) = (*numeric, t.column_mut(i)) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = String::new();
        if let Some(title) = &self.title {
            out.push_str(title);
            out.push('\n');
        }
        out.push_str(&t.to_string());
        for n in &self.notes {
            out.push('\n');
            out.push_str(n);
        }
        out
    }

    /// The notebook form.
    pub fn html(&self) -> String {
        let mut out = String::from("<div>");
        if let Some(title) = &self.title {
            out.push_str(&format!("<div><b>{}</b></div>", escape(title)));
        }
        out.push_str("<table style=\"font-family: monospace\"><thead><tr>");
        for h in &self.header {
            out.push_str(&format!("<th>{}</th>", escape(h)));
        }
        out.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            out.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let align = if self.numeric.get(i).copied().unwrap_or(false) {
                    "right"
                } else {
                    "left"
                };
                out.push_str(&format!(
                    "<td style=\"text-align: {align}\">{}</td>",
                    escape(c)
                ));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        for n in &self.notes {
            out.push_str(&format!("<pre>{}</pre>", escape(n)));
        }
        out.push_str("</div>");
        out
    }

    pub fn into_value(self) -> Value {
        Value::object(self)
    }
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The attributes of a table.
const TABLE_PROPERTIES: &[Property<Table>] = &[
    Property {
        name: "columns",
        doc: "The column headers, a list of strings.",
        get: |t| {
            Ok(Value::list(
                t.header.iter().map(|h| Value::str(h)).collect(),
            ))
        },
    },
    Property {
        name: "rows",
        doc: "The cells, a list of rows of strings.",
        get: |t| {
            Ok(Value::list(
                t.rows
                    .iter()
                    .map(|r| Value::list(r.iter().map(|c| Value::str(c)).collect()))
                    .collect(),
            ))
        },
    },
];

impl Object for Table {
    fn type_name(&self) -> &'static str {
        "table"
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn html(&self) -> Option<String> {
        Some(Table::html(self))
    }
    fn attr(&self, name: &str) -> Option<Value> {
        property(TABLE_PROPERTIES, self, name).and_then(Result::ok)
    }
    fn attributes(&self) -> Vec<Attribute> {
        properties(TABLE_PROPERTIES)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
