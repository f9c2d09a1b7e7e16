//! Every `examples/*.arr` script runs with its output checked against
//! `examples/NAME.out` (regenerate with `UPDATE_EXAMPLES=1` after reviewing),
//! with automatic JIT on and off.

use std::path::Path;
use std::process::Command;

#[test]
fn examples_produce_their_recorded_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("examples");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "arr"))
        .collect();
    scripts.sort();
    assert!(
        scripts.len() >= 3,
        "expected at least three example scripts"
    );
    let work = tempfile::tempdir().unwrap();
    let mut mismatches = Vec::new();
    for script in &scripts {
        let name = script.file_stem().unwrap().to_string_lossy().to_string();
        // Automatic JIT on (the default) and off must print the same.
        let run = |auto_jit: bool| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_arr"));
            if !auto_jit {
                cmd.arg("--no-auto-jit");
            }
            let out = cmd
                .arg("run")
                .arg(script)
                .arg(work.path().join(&name))
                .current_dir(work.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name} failed (auto-JIT {auto_jit}):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).to_string()
        };
        let stdout = run(true);
        let interpreted = run(false);
        if stdout != interpreted {
            mismatches.push(format!(
                "{name} with and without auto-JIT:\n--- interpreted\n{interpreted}\n--- auto-JIT\n{stdout}"
            ));
        }
        let expected_path = dir.join(format!("{name}.out"));
        if std::env::var_os("UPDATE_EXAMPLES").is_some() {
            std::fs::write(&expected_path, &stdout).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("missing {}", expected_path.display()));
        if stdout != expected {
            mismatches.push(format!(
                "{name}:\n--- expected\n{expected}\n--- got\n{stdout}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "examples whose output changed:\n{}",
        mismatches.join("\n")
    );
}
