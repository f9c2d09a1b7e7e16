//! JAX conformance: every case of `golden.json` (outputs computed by JAX) runs
//! through a fresh session and is compared leaf by leaf within its tolerance.
//!
//! Each supported case runs three ways: as given, with its function under
//! `jit`, and with its inputs sharded over a 2x2 mesh.
//!
//! Cases not supported yet are listed in `unsupported.txt`; a listed case that
//! starts passing fails the test too, so that the list only ever shrinks.

#[path = "../repl/src/golden.rs"]
mod golden;

use arr_kernels::gpu::{self, render::Dialect};
use golden::{run_case, run_file, Mode};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::Path;

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
            std::panic::catch_unwind(|| run_case(case, mode, None))
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
    if !arr_testkit::opencl_present("conformance on OpenCL") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let golden: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("golden.json")).unwrap()).unwrap();
    let unsupported = std::fs::read_to_string(dir.join("unsupported.txt")).unwrap();
    let device = gpu::find("opencl").ok();
    gpu::record::start_shadow(Dialect::Cuda);
    let cases = golden["cases"].as_array().unwrap();
    let (plain, mut failures) = run_file(&golden, &unsupported, Mode::Plain, device);
    let (jit, jit_failures) = run_file(&golden, &unsupported, Mode::Jit, device);
    failures.extend(jit_failures.into_iter().map(|f| format!("under jit: {f}")));
    let kernels = gpu::record::take_shadow();
    println!("conformance on opencl: {plain}/{} cases pass, {jit} under jit; {} distinct kernels launched", cases.len(), kernels.len());
    assert!(
        failures.is_empty(),
        "failing on opencl:\n{}",
        failures.join("\n\n")
    );
    if !arr_testkit::nvrtc_present("compiling the kernels as CUDA C") {
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
