//! Running JAX-computed cases (`tests/golden.json`): each case's function on
//! its arguments in a fresh session, compared leaf by leaf within the case's
//! tolerance. Shared by the conformance tests and `arr conformance FILE`
//! (which the GPU check runs on a machine with no toolchain).

use arr_kernels::gpu::{self, GpuDevice};
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{Array, Buffer, DType};
use arr_runtime::{numpy, Value};
use serde_json::Value as Json;
use std::sync::Arc;

pub fn decode_array(j: &Json) -> Result<Array, String> {
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

/// How a case is run.
#[derive(Clone, Copy, PartialEq)]
pub enum Mode {
    Plain,
    /// The case's function wrapped in `jit(...)`.
    Jit,
    /// Every input laid out over a 2x2 mesh: its first axis split over
    /// 'a' and its second over 'b' (uneven blocks included).
    Sharded,
}

pub fn sharded(x: Array) -> Array {
    let mesh = Arc::new(
        Mesh::new(
            vec![2, 2],
            vec![Arc::from("a"), Arc::from("b")],
            vec![0, 1, 2, 3],
        )
        .unwrap(),
    );
    let spec: Vec<Vec<usize>> = (0..x.ndim().min(2)).map(|d| vec![d]).collect();
    let p = Placement::new(mesh, spec, x.ndim()).unwrap();
    x.with_placement(Arc::new(p))
}

/// Run one case; Ok(()) when every leaf matches.
pub fn run_case(case: &Json, mode: Mode, device: Option<&'static GpuDevice>) -> Result<(), String> {
    gpu::set_thread_default(device);
    let mut session = arr_stdlib::session();
    let args: Vec<Value> = case["args"]
        .as_array()
        .ok_or("args")?
        .iter()
        .map(|a| {
            decode_array(a).map(|x| match mode {
                Mode::Sharded if x.ndim() > 0 => Value::Array(sharded(x).into()),
                _ => Value::Array(x.into()),
            })
        })
        .collect::<Result<_, _>>()?;
    let src = case["fn"].as_str().ok_or("fn")?;
    let src = if mode == Mode::Jit {
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
            let (g, w) = (got.get_f64(k).unwrap(), want.get_f64(k).unwrap());
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

/// Every case of a golden file not listed in `unsupported` in `mode` on
/// `device`: how many passed, and a line per failure.
pub fn run_file(
    golden: &Json,
    unsupported: &str,
    mode: Mode,
    device: Option<&'static GpuDevice>,
) -> (usize, Vec<String>) {
    let listed = |name: &str| {
        unsupported
            .lines()
            .any(|l| l.split('#').next().unwrap_or("").trim() == name)
    };
    let (mut passed, mut failures) = (0, Vec::new());
    for case in golden["cases"].as_array().into_iter().flatten() {
        let name = case["name"].as_str().unwrap_or("?");
        if listed(name) {
            continue;
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_case(case, mode, device)
        }))
        .unwrap_or_else(|_| Err("panicked".into()))
        {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    gpu::set_thread_default(None);
    (passed, failures)
}
