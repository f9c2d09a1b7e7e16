//! Differential test against the real NumPy package: the expressions of
//! `numpy_differential.txt` must give NumPy's values. Runs when a Python with
//! numpy is available (`ARR_PYTHON`, as the test script provides), and says
//! so clearly when it is skipped.

#[test]
fn agrees_with_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the NumPy differential test") else {
        return;
    };
    arr_testkit::run_python_check(
        &python,
        "numpy_differential.py",
        env!("CARGO_BIN_EXE_arr"),
        &[],
        "NumPy",
    );
}
