//! JAX conformance: every case of `golden.json` (outputs computed by JAX) runs
//! through a fresh session and is compared leaf by leaf within its tolerance.
//!
//! Each supported case runs three ways: as given, with its function under
//! `jit`, and with its inputs sharded over a 2x2 mesh.
//!
//! Cases not supported yet are listed in `unsupported.txt`; a listed case that
//! starts passing fails the test too, so that the list only ever shrinks.

use arr_kernels::gpu::{self, render::Dialect};
use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{Array, Buffer, DType};
use arr_runtime::{numpy, Value};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

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

/// How a case is run.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    /// The case's function wrapped in `jit(...)`.
    Jit,
    /// Every input laid out over a 2x2 mesh: its first axis split over
    /// 'a' and its second over 'b' (uneven blocks included).
    Sharded,
    /// On the OpenCL device (PoCL in CI), as given and under `jit`.
    OpenCl,
    OpenClJit,
}

fn sharded(x: Array) -> Array {
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
fn run_case(case: &Json, mode: Mode) -> Result<(), String> {
    let device = match mode {
        Mode::OpenCl | Mode::OpenClJit => Some(gpu::find("opencl")?),
        _ => None,
    };
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
    let src = if matches!(mode, Mode::Jit | Mode::OpenClJit) {
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
    let mut passed_sharded = 0;
    let mut failures = Vec::new();
    let mut newly_passing = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap().to_string();
        let run = |mode| {
            std::panic::catch_unwind(|| run_case(case, mode))
                .unwrap_or_else(|_| Err("panicked".into()))
        };
        match (run(Mode::Plain), unsupported.contains(&name)) {
            (Ok(()), false) => passed += 1,
            (Ok(()), true) => newly_passing.push(name.clone()),
            (Err(e), false) => failures.push(format!("{name}: {e}")),
            (Err(_), true) => {}
        }
        // Every supported case passes again with its function under jit,
        // and with its inputs sharded over a mesh.
        if !unsupported.contains(&name) {
            match run(Mode::Jit) {
                Ok(()) => passed_jit += 1,
                Err(e) => failures.push(format!("{name} under jit: {e}")),
            }
            match run(Mode::Sharded) {
                Ok(()) => passed_sharded += 1,
                Err(e) => failures.push(format!("{name} with sharded inputs: {e}")),
            }
        }
    }
    println!(
        "conformance: {passed}/{} cases pass ({passed_jit} again under jit, {passed_sharded} with sharded inputs), {} listed as not yet supported",
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

/// Every supported case on the OpenCL device, as given and under jit, against
/// JAX's values; every kernel those runs launched is also rendered as CUDA C
/// and compiled by NVRTC for sm_90. Without an OpenCL device (or NVRTC) the
/// part says SKIPPED, unless the test script requires it (`ARR_REQUIRE_OPENCL`,
/// `ARR_REQUIRE_NVRTC`).
#[test]
fn golden_cases_on_opencl_and_their_kernels_under_nvrtc() {
    if let Err(e) = gpu::find("opencl") {
        assert!(
            std::env::var_os("ARR_REQUIRE_OPENCL").is_none(),
            "an OpenCL device is required: {e}"
        );
        println!("SKIPPED: conformance on OpenCL: {e}");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let golden: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("golden.json")).unwrap()).unwrap();
    let unsupported = std::fs::read_to_string(dir.join("unsupported.txt")).unwrap();
    gpu::record::start_shadow(Dialect::Cuda);
    let (mut plain, mut jit, mut failures) = (0, 0, Vec::new());
    let cases = golden["cases"].as_array().unwrap();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        if unsupported
            .lines()
            .any(|l| l.split('#').next().unwrap().trim() == name)
        {
            continue;
        }
        for (mode, count) in [(Mode::OpenCl, &mut plain), (Mode::OpenClJit, &mut jit)] {
            match std::panic::catch_unwind(|| run_case(case, mode))
                .unwrap_or_else(|_| Err("panicked".into()))
            {
                Ok(()) => *count += 1,
                Err(e) => failures.push(format!(
                    "{name} on opencl{}: {e}",
                    if mode == Mode::OpenClJit {
                        " under jit"
                    } else {
                        ""
                    }
                )),
            }
        }
    }
    gpu::set_thread_default(None);
    let kernels = gpu::record::take_shadow();
    println!("conformance on opencl: {plain}/{} cases pass, {jit} under jit; {} distinct kernels launched", cases.len(), kernels.len());
    assert!(
        failures.is_empty(),
        "failing on opencl:\n{}",
        failures.join("\n\n")
    );
    if !gpu::cuda::nvrtc_present() {
        assert!(
            std::env::var_os("ARR_REQUIRE_NVRTC").is_none(),
            "NVRTC is required (libnvrtc.so.13 on LD_LIBRARY_PATH)"
        );
        println!(
            "SKIPPED: NVRTC compile of {} kernels: no libnvrtc on the library path",
            kernels.len()
        );
        return;
    }
    let mut bad = Vec::new();
    for k in &kernels {
        if let Err(log) = gpu::cuda::compile(&k.text, gpu::cuda::DEFAULT_ARCH) {
            bad.push(format!("{}:\n{log}\n{}", k.name, k.text));
        }
    }
    println!(
        "NVRTC compiled {}/{} of those kernels as CUDA C for {}",
        kernels.len() - bad.len(),
        kernels.len(),
        gpu::cuda::DEFAULT_ARCH
    );
    assert!(
        bad.is_empty(),
        "kernels NVRTC rejects:\n{}",
        bad.join("\n\n")
    );
}
