//! Differential test against the real flax package: `flax_differential.py`
//! runs every program of `flax_programs/` (Flax NNX models trained with
//! optax, written as a Flax user writes them) under arr and under Python
//! with jax, flax and optax, and their outputs must agree number by number.
//! Runs when a Python with flax is available (`ARR_PYTHON`, as the test
//! script provides), and says so clearly when it is skipped.

#[test]
fn agrees_with_flax() {
    let Some(python) =
        arr_testkit::python_with(&["jax", "flax", "optax"], "the flax differential test")
    else {
        return;
    };
    arr_testkit::run_python_check(
        &python,
        "flax_differential.py",
        env!("CARGO_BIN_EXE_arr"),
        &[],
        "flax",
    );
}
