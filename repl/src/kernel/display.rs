//! Values as Jupyter mime bundles: `text/plain` always (the REPL's text), and
//! `text/html` for arrays — a table summarised like the text form (at most
//! three rows and columns on each side of a `…` gap for large arrays), and
//! for a sharded array the grid of its devices, coloured per device.

use arr_kernels::{sharding, Array};
use arr_runtime::display::{self, ElementText};
use arr_runtime::{Tensor, Value};
use serde_json::{Map, Value as Json};

/// The mime bundle of a value: `{"text/plain": ..., "text/html": ...}`.
pub fn bundle(v: &Value) -> Json {
    let mut data = Map::new();
    data.insert("text/plain".into(), Json::String(display::repr(v)));
    if let Value::Object(o) = v {
        if let Some(html) = o.html() {
            data.insert("text/html".into(), Json::String(html));
        }
    }
    if let Value::Array(Tensor::Concrete(a)) = v {
        let mut html = array_html(a);
        // A sharded array also shows which device holds which block: the
        // grid, coloured per device (and as text for plain-text clients).
        if let Some(p) = a.placement() {
            html.push_str(&sharding::visualize_html(p, a.shape(), a.dtype()));
            let text = format!(
                "{}\n{}",
                display::repr(v),
                sharding::visualize(p, a.shape(), a.dtype(), false).trim_end()
            );
            data.insert("text/plain".into(), Json::String(text));
        }
        data.insert("text/html".into(), Json::String(html));
    }
    Json::Object(data)
}

/// A bundle of ready-made representations (progress bars, tables).
pub fn mime_bundle(data: &[(&str, String)]) -> Json {
    let map: Map<String, Json> = data
        .iter()
        .map(|(m, t)| (m.to_string(), Json::String(t.clone())))
        .collect();
    Json::Object(map)
}

/// A bundle for an image in one or more encodings (base64 for PNG, text for SVG).
pub fn image_bundle(formats: &[(&str, Vec<u8>)]) -> Json {
    let mut data = Map::new();
    let kinds: Vec<&str> = formats.iter().map(|(m, _)| *m).collect();
    data.insert(
        "text/plain".into(),
        Json::String(format!("<image: {}>", kinds.join(", "))),
    );
    for (mime, bytes) in formats {
        let encoded = if *mime == "image/svg+xml" {
            String::from_utf8_lossy(bytes).into_owned()
        } else {
            base64(bytes)
        };
        data.insert(mime.to_string(), Json::String(encoded));
    }
    Json::Object(data)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Arrays of rank 0–2 as a table under their type; higher ranks as a table of
/// the text form's lines would mislead, so they show the text in `<pre>`.
fn array_html(a: &Array) -> String {
    let t = Tensor::Concrete(a.clone());
    let caption = escape(&display::type_string(&t));
    if a.ndim() > 2 {
        return format!(
            "<div><code>{caption}</code><pre>{}</pre></div>",
            escape(&display::array_str(&t))
        );
    }
    let text = ElementText::new(a);
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
                (Some(r), Some(c)) => escape(&text.get(a, r * cols + c)),
                (None, _) => "⋮".to_string(),
                (_, None) => "…".to_string(),
            };
            html.push_str(&format!("<td>{cell}</td>"));
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table></div>");
    html
}

/// Standard base64 with padding (what Jupyter expects for binary mime types).
fn base64(bytes: &[u8]) -> String {
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
        let html = array_html(&a);
        assert!(html.starts_with("<div><code>f32[100,100]</code>"), "{html}");
        // 3 + gap + 3 rows, each with 3 + gap + 3 cells.
        assert_eq!(html.matches("<tr>").count(), 1 + 7);
        assert_eq!(html.matches("<td>").count(), 7 * 7);
        // Values spanning more than 1e3 print in scientific notation, as in NumPy.
        assert!(html.contains("<td>9.999e+03</td>"), "{html}");
        let small = Array::new(&[3], Buffer::F32(vec![1.0, 2.5, -3.0]));
        let html = array_html(&small);
        assert!(
            html.contains("<td>2.5</td>") && html.contains("<td>-3.</td>"),
            "{html}"
        );
    }
}
