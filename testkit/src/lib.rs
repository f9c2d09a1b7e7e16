//! Helpers the test suites share, so each suite states only what it checks:
//! a session with the standard library (optionally after a setup script),
//! running an entry (a failure panics with the rendered error, source line
//! and caret included), reading its value, truth or error, and snapshots
//! of what a script prints or of IR text.

pub mod hostile;
pub mod programs;

use arr_kernels::Array;
use arr_runtime::{Session, Value};
use expect_test::Expect;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

/// A session with the standard library.
pub fn session() -> Session {
    arr_stdlib::session()
}

/// A session that has run `setup` (a script named `<setup>`).
pub fn session_with(setup: &str) -> Session {
    let mut s = session();
    s.run_script("<setup>", setup)
        .unwrap_or_else(|e| panic!("the setup failed:\n{}", e.render()));
    s
}

/// Run an entry; its value (None for statements). Panics with the rendered error.
pub fn run(s: &mut Session, src: &str) -> Value {
    match s.run_entry(src) {
        Ok(Some(v)) => v,
        Ok(None) => Value::None,
        Err(e) => panic!("{src}\nfailed:\n{}", e.render()),
    }
}

/// Whether the expression `src` is true.
pub fn truthy(s: &mut Session, src: &str) -> bool {
    run(s, src)
        .truthy()
        .unwrap_or_else(|e| panic!("{src} has no truth value: {}", e.render()))
}

/// The array value of the expression `src`.
pub fn array(s: &mut Session, src: &str) -> Array {
    match run(s, src) {
        Value::Array(a) => a.concrete().expect("a concrete array").clone(),
        other => panic!("{src} gave {other:?}, not an array"),
    }
}

/// The error of an entry that must fail, as `Kind: message`.
pub fn error_of(s: &mut Session, src: &str) -> String {
    match s.run_entry(src) {
        Err(e) => format!("{}: {}", e.kind.name(), e.message),
        Ok(v) => panic!("{src}\nsucceeded with {v:?}"),
    }
}

/// Run `src` as a script named `file`, turning a panic into a test failure
/// that names the input (the quality bar: user input never aborts).
pub fn attempt(s: &mut Session, file: &str, src: &str) -> arr_runtime::Result<Option<Value>> {
    catch_unwind(AssertUnwindSafe(|| s.run_entry_named(file, src)))
        .unwrap_or_else(|_| panic!("{src}: panicked"))
}

/// Run `src` as a script named `test.arr` in a fresh session; what it
/// printed, followed by the rendered error (with line and caret) if it failed.
pub fn script_output(src: &str) -> String {
    let mut s = session();
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    s.set_output(Box::new(move |t| sink.borrow_mut().push_str(t)));
    let result = s.run_script("test.arr", src);
    let mut text = out.borrow().clone();
    if let Err(e) = result {
        text.push_str(&e.render());
        text.push('\n');
    }
    text
}

/// Snapshot what a script prints (source → expected text).
pub fn check_output(src: &str, expect: Expect) {
    expect.assert_eq(&script_output(src));
}

/// The text an entry evaluates to (`make_jaxpr(f)(x)`, `f.ir(x)`), or
/// `error: Kind: message` if it fails: for snapshots of IR after a pass.
pub fn text_of(s: &mut Session, src: &str) -> String {
    match s.run_entry(src) {
        Ok(Some(Value::Str(t))) => t.to_string(),
        Ok(other) => panic!("{src} gave {other:?}, not a string"),
        Err(e) => format!("error: {}: {}", e.kind.name(), e.message),
    }
}

/// A table of cases: the arr code its cases need first, and its rows.
pub type Table = (&'static str, String);

/// The rows of a case table: `name | column | ...`, one case a line, with
/// blank lines and `#` comments skipped.
pub fn rows(table: &str, columns: usize) -> Vec<(String, Vec<String>)> {
    table
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let cells: Vec<String> = l.split(" | ").map(|c| c.trim().to_string()).collect();
            assert_eq!(cells.len(), columns + 1, "bad case row: {l}");
            (cells[0].clone(), cells[1..].to_vec())
        })
        .collect()
}

/// Run `setup`, then each `(name, code)` as a script `name.arr`, in the
/// session `s`; panic listing every case that failed, with its rendered error.
pub fn run_cases(mut s: Session, setup: &str, cases: &[(String, String)]) {
    assert!(!cases.is_empty(), "no cases");
    if let Err(e) = s.run_script("setup.arr", setup) {
        panic!("setup failed:\n{}", e.render());
    }
    let mut failures = Vec::new();
    for (name, code) in cases {
        if let Err(e) = s.run_script(&format!("{name}.arr"), code) {
            failures.push(format!("--- {name}: {code}\n{}", e.render()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Each row `name | c1 | c2 | ...` of `table` becomes the call
/// `check(c1, c2, ...)`, run by `run_cases`: the gradient checks are
/// `check_grads(f, args, order=2)` rows, the batching checks `vcheck(f,
/// in_axes, *args)` rows (a function the suite's setup defines).
pub fn check_rows(s: Session, setup: &str, table: &str, check: &str, columns: usize, extra: &str) {
    let cases: Vec<(String, String)> = rows(table, columns)
        .into_iter()
        .map(|(name, c)| (name, format!("{check}({}{extra})", c.join(", "))))
        .collect();
    run_cases(s, setup, &cases);
}

/// The rendered error of the script `src`, which must fail with `kind`.
pub fn rendered_error(mut s: Session, src: &str, kind: arr_runtime::ErrorKind) -> String {
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    s.set_output(Box::new(move |t| sink.borrow_mut().push_str(t)));
    match s.run_script("errors.arr", src) {
        Ok(()) => panic!("{src}\nshould fail, printed:\n{}", out.borrow()),
        Err(e) => {
            assert_eq!(e.kind, kind, "{src}\nfailed with:\n{}", e.render());
            e.render()
        }
    }
}

/// Say on the terminal that a part of a test was skipped (written past the
/// test harness's capture, so a plain `cargo test` shows it).
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// Whether this machine has an OpenCL device for `what`; without one the
/// test is skipped visibly, unless the test script requires the device
/// (`ARR_REQUIRE_OPENCL`), where its absence fails.
pub fn opencl_present(what: &str) -> bool {
    match arr_kernels::gpu::find("opencl") {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("ARR_REQUIRE_OPENCL").is_none(),
                "{what} needs an OpenCL device: {e}"
            );
            skipped(&format!("{what}: {e}"));
            false
        }
    }
}

/// Whether NVRTC can be opened for `what` (the same policy, `ARR_REQUIRE_NVRTC`).
pub fn nvrtc_present(what: &str) -> bool {
    if arr_kernels::gpu::cuda::nvrtc_present() {
        return true;
    }
    assert!(
        std::env::var_os("ARR_REQUIRE_NVRTC").is_none(),
        "{what} needs NVRTC (libnvrtc.so.13 on LD_LIBRARY_PATH)"
    );
    skipped(&format!("{what}: no libnvrtc on the library path"));
    false
}

/// The Python with numpy the NumPy tests run: `ARR_PYTHON` (which must then
/// import numpy: under the test script numpy is required), else `python3`
/// if it has numpy; None, having said on stderr (past the capture) that
/// `what` is skipped, when there is none.
pub fn python_with_numpy(what: &str) -> Option<String> {
    python_with(&["numpy"], what)
}

/// Run a differential check: `python script arr args...` (the script runs
/// programs under the `arr` binary and under the reference packages); the
/// test fails, with the script's report, unless it exits with success.
pub fn run_python_check(python: &str, script: &str, arr: &str, args: &[&str], against: &str) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests")
        .join(script);
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(arr)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "arr disagrees with {against}:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Python that imports `modules` (`["jax", "optax"]`): `ARR_PYTHON`
/// (which must then import them: the test script installs them), else
/// `python3` if it imports them; None, having said on stderr (past the
/// capture) that `what` is skipped, when there is none.
pub fn python_with(modules: &[&str], what: &str) -> Option<String> {
    let given = std::env::var("ARR_PYTHON").ok();
    let python = given.clone().unwrap_or_else(|| "python3".into());
    let imports = format!("import {}", modules.join(", "));
    let has_them = std::process::Command::new(&python)
        .args(["-c", &imports])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_them {
        return Some(python);
    }
    let names = modules.join(" and ");
    assert!(given.is_none(), "ARR_PYTHON={python} cannot import {names}");
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {what} needs {names} for {python}; scripts/test.sh installs them"
    );
    None
}
