//! Differential test against the real optax package: `optax_differential.py`
//! runs one optax program under arr and under Python with jax and optax, and
//! every parameter after every one of 20 training steps of each optimiser,
//! combinator and schedule must agree. Runs when a Python with optax is
//! available (`ARR_PYTHON`, as the test script provides), and says so
//! clearly when it is skipped.

use std::path::Path;
use std::process::Command;

#[test]
fn agrees_with_optax() {
    let Some(python) = arr_testkit::python_with(&["jax", "optax"], "the optax differential test")
    else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/optax_differential.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_arr"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "arr disagrees with optax:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
