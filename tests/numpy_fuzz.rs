//! The NumPy differential fuzz (`numpy_fuzz.py`): seeded random programs of
//! array operations compared with NumPy under JAX's semantics. A fixed seed
//! and a moderate count here; `ARR_FUZZ_PROGRAMS=10000` (and optionally
//! `ARR_FUZZ_SEED`) runs more. Needs numpy as `numpy_differential.rs` does:
//! skipped, saying so, without it, unless `ARR_PYTHON` is set.

use std::path::Path;
use std::process::Command;

#[test]
fn random_programs_agree_with_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the NumPy differential fuzz") else {
        return;
    };
    let programs = std::env::var("ARR_FUZZ_PROGRAMS").unwrap_or_else(|_| "1500".into());
    let seed = std::env::var("ARR_FUZZ_SEED").unwrap_or_else(|_| "1".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/numpy_fuzz.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_arr"))
        .args(["--programs", &programs, "--seed", &seed])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "arr disagrees with NumPy:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
