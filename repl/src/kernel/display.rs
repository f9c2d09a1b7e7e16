//! Values as Jupyter mime bundles (JSON objects): the representations come
//! from `arr_runtime::rich`, shared with Rust notebooks (evcxr).

use arr_runtime::rich;
use arr_runtime::Value;
use serde_json::{Map, Value as Json};

/// The mime bundle of a value: `{"text/plain": ..., "text/html": ...}`.
pub fn bundle(v: &Value) -> Json {
    mime_bundle(&rich::mime_data(v))
}

/// A bundle for an image in one or more encodings (base64 for PNG, text for SVG).
pub fn image_bundle(formats: &[(&'static str, Vec<u8>)]) -> Json {
    let kinds: Vec<&str> = formats.iter().map(|(m, _)| *m).collect();
    let mut data = vec![("text/plain", format!("<image: {}>", kinds.join(", ")))];
    data.extend(rich::image_data(formats));
    mime_bundle(&data)
}

/// A bundle of ready-made representations (progress bars, tables).
pub fn mime_bundle(data: &[(&str, String)]) -> Json {
    let map: Map<String, Json> = data
        .iter()
        .map(|(m, t)| (m.to_string(), Json::String(t.clone())))
        .collect();
    Json::Object(map)
}
