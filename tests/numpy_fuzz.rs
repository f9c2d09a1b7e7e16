//! The NumPy differential fuzz (`numpy_fuzz.py`): seeded random programs of
//! array operations compared with NumPy under JAX's semantics. A fixed seed
//! and a moderate count here; `ARR_FUZZ_PROGRAMS=10000` (and optionally
//! `ARR_FUZZ_SEED`) runs more. Needs numpy as `numpy_differential.rs` does:
//! skipped, saying so, without it, unless `ARR_PYTHON` is set.

#[test]
fn random_programs_agree_with_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the NumPy differential fuzz") else {
        return;
    };
    let programs = std::env::var("ARR_FUZZ_PROGRAMS").unwrap_or_else(|_| "1500".into());
    let seed = std::env::var("ARR_FUZZ_SEED").unwrap_or_else(|_| "1".into());
    arr_testkit::run_python_check(
        &python,
        "numpy_fuzz.py",
        env!("CARGO_BIN_EXE_arr"),
        &["--programs", &programs, "--seed", &seed],
        "NumPy",
    );
}
