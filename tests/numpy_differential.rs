//! Differential test against the real NumPy package: the expressions of
//! `numpy_differential.txt` must give NumPy's values. Runs when a Python with
//! numpy is available (`ARR_PYTHON`, as the test script provides), and says
//! so clearly when it is skipped.

use std::path::Path;
use std::process::Command;

#[test]
fn agrees_with_numpy() {
    // Under the test script (ARR_PYTHON set) numpy is required; under plain
    // `cargo test` without it the test is skipped, saying so past the capture.
    let given = std::env::var("ARR_PYTHON").ok();
    let python = given.clone().unwrap_or_else(|| "python3".into());
    let has_numpy = Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_numpy {
        assert!(given.is_none(), "ARR_PYTHON={python} cannot import numpy");
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the NumPy differential test needs numpy for {python}; scripts/test.sh installs it"
        );
        return;
    }
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
