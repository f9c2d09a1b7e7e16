//! `table(x)`: a summary table of a dict of arrays (key, dtype, shape, min,
//! max, mean), or of a list of dicts such as `jit_stats()` (one row each);
//! a text table on the terminal, an HTML table in a notebook.

use crate::Registry;
use arr_runtime::display;
use arr_runtime::table::Table;
use arr_runtime::{Error, Interp, Key, Result, Tensor, Value};

pub(crate) fn register(r: &mut Registry) {
    r.func(
        "table(x)",
        "A table of x: for a dict of arrays one row per key (dtype, shape, min, max, mean); \
         for a list of dicts (jit_stats()) one row per dict and a column per key. \
         Tables print as text and show as HTML in a notebook.",
        table,
    );
}

fn table(_: &mut Interp, a: Vec<Value>) -> Result<Value> {
    match &a[0] {
        Value::Dict(d) => Ok(summary(&d.borrow())?.into_value()),
        Value::List(l) => records(&l.borrow()).map(Table::into_value),
        Value::Object(o) if o.as_any().is::<Table>() => Ok(a[0].clone()),
        other => Err(Error::type_error(format!(
            "table: expected a dict of arrays or a list of dicts, not {}",
            other.type_name()
        ))),
    }
}

fn key_text(k: &Key) -> String {
    match k {
        Key::Str(s) => s.to_string(),
        other => display::repr(&other.to_value()),
    }
}

/// A number as the table shows it: short, like NumPy's `%.4g`.
fn num(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let a = x.abs();
    if (1e-4..1e6).contains(&a) {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.3e}")
    }
}

/// One row per entry of a dict: arrays summarised, other values shown as they print.
pub fn summary(d: &arr_runtime::Dict) -> Result<Table> {
    let mut t = Table::new(&["key", "dtype", "shape", "min", "max", "mean"]).right(&[3, 4, 5]);
    for (k, v) in d {
        let row = match v {
            Value::Array(Tensor::Concrete(a)) => {
                let shape = format!(
                    "({})",
                    a.shape()
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                        + if a.ndim() == 1 { "," } else { "" }
                );
                let xs = a.to_f64_vec()?;
                let (min, max, mean) = if xs.is_empty() {
                    (String::new(), String::new(), String::new())
                } else {
                    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
                    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
                    (num(min), num(max), num(mean))
                };
                vec![
                    key_text(k),
                    a.dtype().name().to_string(),
                    shape,
                    min,
                    max,
                    mean,
                ]
            }
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                let text = display::repr(v);
                vec![
                    key_text(k),
                    v.type_name(),
                    "()".into(),
                    text.clone(),
                    text.clone(),
                    text,
                ]
            }
            other => vec![
                key_text(k),
                other.type_name(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        };
        t.row(row);
    }
    Ok(t)
}

/// One row per dict, one column per key (in order of first appearance).
pub fn records(items: &[Value]) -> Result<Table> {
    let mut columns: Vec<Key> = Vec::new();
    for item in items {
        let Value::Dict(d) = item else {
            return Err(Error::type_error(format!(
                "table: a list must hold dicts, not {}",
                item.type_name()
            )));
        };
        for k in d.borrow().keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let header: Vec<String> = columns.iter().map(key_text).collect();
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header_refs);
    let mut numeric = vec![true; columns.len()];
    for item in items {
        if let Value::Dict(d) = item {
            let d = d.borrow();
            let row = columns
                .iter()
                .enumerate()
                .map(|(i, k)| match d.get(k) {
                    Some(Value::Float(x)) => num(*x),
                    Some(v @ Value::Int(_)) => display::str(v),
                    Some(v) => {
                        numeric[i] = false;
                        display::str(v)
                    }
                    None => String::new(),
                })
                .collect();
            t.row(row);
        }
    }
    let right: Vec<usize> = (0..columns.len()).filter(|&i| numeric[i]).collect();
    Ok(t.right(&right))
}
