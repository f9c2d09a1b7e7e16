//! Differential test against the real NumPy package: the expressions of
//! `numpy_differential.txt` must give NumPy's values. Runs when a Python with
//! numpy is available (`ARR_PYTHON`, as the test script provides), and says
//! so clearly when it is skipped.

use std::path::Path;
use std::process::Command;

#[test]
fn agrees_with_numpy() {
    let Some(python) = arr_testkit::python_with_numpy("the NumPy differential test") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/numpy_differential.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_arr"))
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
