//! JAX conformance: every case of `golden.json` (outputs computed by JAX) runs
//! through a fresh session and is compared leaf by leaf within its tolerance.
//!
//! Cases not supported yet are listed in `unsupported.txt`; a listed case that
//! starts passing fails the test too, so that the list only ever shrinks.

use arr_kernels::{Array, Buffer, DType};
use arr_runtime::{numpy, Value};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::Path;

fn decode_array(j: &Json) -> Result<Array, String> {
    let shape: Vec<usize> = j["shape"]
        .as_array()
        .ok_or("shape")?
        .iter()
        .map(|d| d.as_u64().unwrap_or(0) as usize)
        .collect();
    let data = j["data"].as_array().ok_or("data")?;
    let buf = match j["dtype"].as_str().ok_or("dtype")? {
        "float32" => Buffer::F32(
            data.iter()
                .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
                .collect(),
        ),
        "int32" => Buffer::I32(
            data.iter()
                .map(|x| x.as_i64().unwrap_or(0) as i32)
                .collect(),
        ),
        "bool" => Buffer::Bool(data.iter().map(|x| x.as_bool().unwrap_or(false)).collect()),
        other => return Err(format!("unknown dtype {other}")),
    };
    Ok(Array::new(&shape, buf))
}

/// Run one case; Ok(()) when every leaf matches.
/// Run one case; with `jit`, its function is wrapped in `jit(...)` first.
fn run_case(case: &Json, jit: bool) -> Result<(), String> {
    let mut session = arr_stdlib::session();
    let args: Vec<Value> = case["args"]
        .as_array()
        .ok_or("args")?
        .iter()
        .map(|a| decode_array(a).map(|x| Value::Array(x.into())))
        .collect::<Result<_, _>>()?;
    let src = case["fn"].as_str().ok_or("fn")?;
    let src = if jit {
        format!("jit({src})")
    } else {
        src.to_string()
    };
    let src = src.as_str();
    let f = session
        .run_entry(src)
        .map_err(|e| e.render())?
        .ok_or("fn evaluated to None")?;
    let out = session
        .interp
        .call(&f, args, Vec::new())
        .map_err(|e| e.render())?;
    let flatten = session.get("tree_leaves").ok_or("no tree_leaves builtin")?;
    let leaves = match session
        .interp
        .call(&flatten, vec![out], Vec::new())
        .map_err(|e| e.render())?
    {
        Value::List(l) => l.borrow().clone(),
        _ => return Err("tree_leaves did not return a list".into()),
    };
    let expect = case["expect"].as_array().ok_or("expect")?;
    if leaves.len() != expect.len() {
        return Err(format!(
            "{} leaves, expected {}",
            leaves.len(),
            expect.len()
        ));
    }
    let (rtol, atol) = (
        case["rtol"].as_f64().unwrap_or(1e-5),
        case["atol"].as_f64().unwrap_or(1e-6),
    );
    for (i, (leaf, e)) in leaves.iter().zip(expect).enumerate() {
        let want = decode_array(e)?;
        let got = numpy::to_tensor(leaf).map_err(|e| format!("leaf {i}: {}", e.render()))?;
        let got = got
            .concrete()
            .map_err(|e| format!("leaf {i}: {}", e.render()))?;
        if got.shape() != want.shape() {
            return Err(format!(
                "leaf {i}: shape {:?}, expected {:?}",
                got.shape(),
                want.shape()
            ));
        }
        let dtype_ok = match want.dtype() {
            DType::F32 => got.dtype() == DType::F32 || !matches!(leaf, Value::Array(_)),
            DType::I32 => matches!(got.dtype(), DType::I32 | DType::I64),
            d => got.dtype() == d,
        };
        if !dtype_ok {
            return Err(format!(
                "leaf {i}: dtype {}, expected {}",
                got.dtype(),
                want.dtype()
            ));
        }
        for k in 0..want.len() {
            let (g, w) = (got.get_f64(k), want.get_f64(k));
            let close =
                (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan()) || g == w;
            if !close {
                return Err(format!(
                    "leaf {i}: element {k} is {g}, expected {w} (rtol {rtol}, atol {atol})"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let golden: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("golden.json")).unwrap()).unwrap();
    let unsupported: BTreeSet<String> = std::fs::read_to_string(dir.join("unsupported.txt"))
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let cases = golden["cases"].as_array().unwrap();
    let mut passed = 0;
    let mut passed_jit = 0;
    let mut failures = Vec::new();
    let mut newly_passing = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap().to_string();
        let run = |jit| {
            std::panic::catch_unwind(|| run_case(case, jit))
                .unwrap_or_else(|_| Err("panicked".into()))
        };
        match (run(false), unsupported.contains(&name)) {
            (Ok(()), false) => passed += 1,
            (Ok(()), true) => newly_passing.push(name.clone()),
            (Err(e), false) => failures.push(format!("{name}: {e}")),
            (Err(_), true) => {}
        }
        // Every supported case passes again with its function under jit.
        if !unsupported.contains(&name) {
            match run(true) {
                Ok(()) => passed_jit += 1,
                Err(e) => failures.push(format!("{name} under jit: {e}")),
            }
        }
    }
    println!(
        "conformance: {passed}/{} cases pass ({passed_jit} again under jit), {} listed as not yet supported",
        cases.len(),
        unsupported.len()
    );
    assert!(
        failures.is_empty(),
        "failing conformance cases:\n{}",
        failures.join("\n\n")
    );
    assert!(
        newly_passing.is_empty(),
        "these cases pass now; remove them from tests/unsupported.txt: {newly_passing:?}"
    );
}
