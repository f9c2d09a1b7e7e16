//! Differential test against the real optax package: `optax_differential.py`
//! runs one optax program under arr and under Python with jax and optax, and
//! every parameter after every one of 20 training steps of each optimiser,
//! combinator and schedule must agree. Runs when a Python with optax is
//! available (`ARR_PYTHON`, as the test script provides), and says so
//! clearly when it is skipped.

#[test]
fn agrees_with_optax() {
    let Some(python) = arr_testkit::python_with(&["jax", "optax"], "the optax differential test")
    else {
        return;
    };
    arr_testkit::run_python_check(
        &python,
        "optax_differential.py",
        env!("CARGO_BIN_EXE_arr"),
        &[],
        "optax",
    );
}
