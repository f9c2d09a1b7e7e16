//! Values as mime bundles — `text/plain` always (the REPL's text), and
//! `text/html` for arrays (a table summarised like the text form, plus the
//! device grid of a sharded array) and for objects that have one (tables) —
//! shared by the Jupyter kernel and by Rust notebooks (evcxr), which show a
//! value whose type has an `evcxr_display` method through
//! `EVCXR_BEGIN_CONTENT <mime>` blocks on stdout.

use crate::display::{self, sharding, ElementText};
use crate::output::RichOutput;
use crate::table::escape;
use crate::{Session, Tensor, Value};
use arr_kernels::array::Deleted;
use arr_kernels::Array;

/// A value's representations, best last: `text/plain`, then `text/html` when there is one.
pub fn mime_data(v: &Value) -> Vec<(&'static str, String)> {
    let mut data = vec![("text/plain", display::repr(v))];
    if let Value::Object(o) = v {
        if let Some(html) = o.html() {
            data.push(("text/html", html));
        }
    }
    if let Value::Array(Tensor::Concrete(a)) = v {
        let Ok(mut html) = array_html(a) else {
            // Deleted: its text form says so; there are no elements to tabulate.
            return data;
        };
        // A sharded array also shows which device holds which block: the
        // grid, coloured per device (and as text for plain-text clients).
        if let Some(p) = sharding::drawn(a.placement()) {
            html.push_str(&sharding::visualize_html(p, a.shape(), a.dtype()));
            data[0].1 = format!(
                "{}\n{}",
                display::repr(v),
                sharding::visualize(p, a.shape(), a.dtype(), false).trim_end()
            );
        }
        data.push(("text/html", html));
    }
    data
}

/// An image's encodings as text: base64 for PNG, the text itself for SVG.
pub fn image_data(formats: &[(&'static str, Vec<u8>)]) -> Vec<(&'static str, String)> {
    formats
        .iter()
        .map(|(mime, bytes)| {
            let text = if *mime == "image/svg+xml" {
                String::from_utf8_lossy(bytes).into_owned()
            } else {
                base64(bytes)
            };
            (*mime, text)
        })
        .collect()
}

/// The blocks evcxr reads from stdout, one per representation.
pub fn evcxr_text(data: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (mime, text) in data {
        out.push_str(&format!(
            "EVCXR_BEGIN_CONTENT {mime}\n{text}\nEVCXR_END_CONTENT\n"
        ));
    }
    out
}

impl Value {
    /// Called by evcxr (a Rust Jupyter kernel) to show a cell's value: an
    /// array as an HTML table, a table as HTML, anything else as text.
    pub fn evcxr_display(&self) {
        print!("{}", evcxr_text(&mime_data(self)));
    }
}

impl Session {
    /// Show `display(...)`, plots (`show()`) and progress bars in an evcxr
    /// notebook: rich output becomes `EVCXR_BEGIN_CONTENT` blocks on stdout
    /// (images as PNG), stderr goes to stderr.
    pub fn use_evcxr_display(&mut self) {
        self.set_rich_output(Box::new(|o| {
            if let RichOutput::Stderr(text) = &o {
                eprint!("{text}");
            } else {
                print!("{}", evcxr_output(o));
            }
        }));
    }
}

/// What an evcxr notebook is sent for one rich output (stderr aside).
pub fn evcxr_output(o: RichOutput) -> String {
    match o {
        // evcxr cannot update an output in place: only fresh ones show.
        RichOutput::Display { update: true, .. }
        | RichOutput::Image { update: true, .. }
        | RichOutput::Mime { update: true, .. }
        | RichOutput::ClearOutput { .. }
        | RichOutput::Stderr(_) => String::new(),
        RichOutput::Display { value, .. } => evcxr_text(&mime_data(&value)),
        RichOutput::Image { formats, .. } => {
            // The best format evcxr shows: PNG when there is one.
            let mut data = image_data(&formats);
            data.sort_by_key(|(m, _)| *m != "image/png");
            data.truncate(1);
            evcxr_text(&data)
        }
        RichOutput::Mime { data, .. } => evcxr_text(&data),
    }
}

/// Arrays of rank 0–2 as a table under their type; higher ranks as a table of
/// the text form's lines would mislead, so they show the text in `<pre>`.
fn array_html(a: &Array) -> Result<String, Deleted> {
    let t = Tensor::Concrete(a.clone());
    let caption = escape(&display::type_string(&t));
    if a.ndim() > 2 {
        return Ok(format!(
            "<div><code>{caption}</code><pre>{}</pre></div>",
            escape(&display::array_str(&t))
        ));
    }
    let text = ElementText::new(a)?;
    let (rows, cols) = match a.shape() {
        [] => (1, 1),
        [n] => (1, *n),
        [r, c] => (*r, *c),
        _ => unreachable!("rank checked above"),
    };
    let row_ids = if a.ndim() == 2 {
        text.shown(rows)
    } else {
        vec![Some(0)]
    };
    let col_ids = text.shown(cols);
    let mut html = format!(
        "<div><code>{caption}</code><table style=\"font-family: monospace; text-align: right\">"
    );
    if a.ndim() == 2 {
        html.push_str("<thead><tr><th></th>");
        for c in &col_ids {
            match c {
                Some(c) => html.push_str(&format!("<th>{c}</th>")),
                None => html.push_str("<th>…</th>"),
            }
        }
        html.push_str("</tr></thead>");
    }
    html.push_str("<tbody>");
    for r in &row_ids {
        html.push_str("<tr>");
        if a.ndim() == 2 {
            match r {
                Some(r) => html.push_str(&format!("<th>{r}</th>")),
                None => html.push_str("<th>⋮</th>"),
            }
        }
        for c in &col_ids {
            let cell = match (r, c) {
                (Some(r), Some(c)) => escape(&text.get(r * cols + c)),
                (None, _) => "⋮".to_string(),
                (_, None) => "…".to_string(),
            };
            html.push_str(&format!("<td>{cell}</td>"));
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table></div>");
    Ok(html)
}

/// Standard base64 with padding (what Jupyter expects for binary mime types).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arr_kernels::Buffer;
    use expect_test::expect;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn large_arrays_are_summarised_in_html() {
        let a = Array::new(
            &[100, 100],
            Buffer::F32((0..10_000).map(|i| i as f32).collect()),
        );
        let html = array_html(&a).unwrap();
        assert!(html.starts_with("<div><code>f32[100,100]</code>"), "{html}");
        // 3 + gap + 3 rows, each with 3 + gap + 3 cells.
        assert_eq!(html.matches("<tr>").count(), 1 + 7);
        assert_eq!(html.matches("<td>").count(), 7 * 7);
        // Values spanning more than 1e3 print in scientific notation, as in NumPy.
        assert!(html.contains("<td>9.999e+03</td>"), "{html}");
        let small = Array::new(&[3], Buffer::F32(vec![1.0, 2.5, -3.0]));
        let html = array_html(&small).unwrap();
        assert!(
            html.contains("<td>2.5</td>") && html.contains("<td>-3.</td>"),
            "{html}"
        );
    }

    #[test]
    fn evcxr_blocks() {
        let a = Value::Array(Tensor::Concrete(Array::new(
            &[2],
            Buffer::F32(vec![1.0, 2.5]),
        )));
        expect![[r#"
            EVCXR_BEGIN_CONTENT text/plain
            f32[2]
            [1.  2.5]
            EVCXR_END_CONTENT
            EVCXR_BEGIN_CONTENT text/html
            <div><code>f32[2]</code><table style="font-family: monospace; text-align: right"><tbody><tr><td>1.</td><td>2.5</td></tr></tbody></table></div>
            EVCXR_END_CONTENT
        "#]]
        .assert_eq(&evcxr_text(&mime_data(&a)));
        expect![[r#"
            EVCXR_BEGIN_CONTENT text/plain
            3
            EVCXR_END_CONTENT
        "#]]
        .assert_eq(&evcxr_text(&mime_data(&Value::Int(3))));
        let png = image_data(&[("image/png", b"\x89PNG".to_vec())]);
        assert_eq!(
            evcxr_text(&png),
            "EVCXR_BEGIN_CONTENT image/png\niVBORw==\nEVCXR_END_CONTENT\n"
        );
    }

    #[test]
    fn evcxr_rich_output() {
        let image = RichOutput::Image {
            formats: vec![
                ("image/svg+xml", b"<svg/>".to_vec()),
                ("image/png", b"\x89PNG".to_vec()),
            ],
            display_id: None,
            update: false,
        };
        assert_eq!(
            evcxr_output(image),
            "EVCXR_BEGIN_CONTENT image/png\niVBORw==\nEVCXR_END_CONTENT\n"
        );
        let bar = |update| RichOutput::Mime {
            data: vec![("text/plain", "3/3".into())],
            display_id: Some("p".into()),
            update,
        };
        assert_eq!(evcxr_output(bar(true)), "");
        assert_eq!(
            evcxr_output(bar(false)),
            "EVCXR_BEGIN_CONTENT text/plain\n3/3\nEVCXR_END_CONTENT\n"
        );
    }
}
