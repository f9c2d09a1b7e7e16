//! The Jupyter kernel with real clients: `arr kernel install` into a private
//! data directory under the target folder, then Python's jupyter_kernel_test
//! suite, jupyter_client tests of our own (interrupts, bad signatures, aborts,
//! restart, memory), the hostile-input table in one kernel, and the example
//! notebooks through nbconvert and papermill.
//!
//! Python comes from `ARR_PYTHON` (scripts/test.sh installs the packages into
//! .venv); if the packages are missing these tests fail, unless
//! `ARR_SKIP_JUPYTER_TESTS=1` says to skip them.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &str =
    "jupyter_client, jupyter_kernel_test, nbformat, nbconvert, nbclient, papermill";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A private Jupyter environment for one test: data (with the installed
/// kernelspec), runtime and config directories.
struct Jupyter {
    dir: PathBuf,
}

impl Jupyter {
    fn new(name: &str) -> Jupyter {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("jupyter")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let j = Jupyter { dir };
        let out = j
            .env(&mut Command::new(env!("CARGO_BIN_EXE_arr")))
            .args(["kernel", "install"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "arr kernel install failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        j
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn env<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("JUPYTER_DATA_DIR", self.data_dir())
            .env("JUPYTER_PATH", self.data_dir())
            .env("JUPYTER_RUNTIME_DIR", self.dir.join("runtime"))
            .env("JUPYTER_CONFIG_DIR", self.dir.join("config"))
            .env("JUPYTER_PLATFORM_DIRS", "1")
            .env("PYDEVD_DISABLE_FILE_VALIDATION", "1")
            .env("NO_COLOR", "1")
    }

    /// Run a Python script of tests/jupyter/ and fail with its output if it fails.
    fn run_python(&self, python: &str, script: &str, args: &[&str]) {
        let path = root().join("tests/jupyter").join(script);
        let out = self
            .env(&mut Command::new(python))
            .arg(&path)
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{text}");
        assert!(out.status.success(), "{script} failed:\n{text}");
    }
}

/// The Python that has the Jupyter packages, or None to skip. Under the
/// test script (`ARR_PYTHON` set) the packages are required, so CI never
/// skips silently; under plain `cargo test` without them the tests are
/// skipped with a message on the terminal (written past the harness's
/// capture, so it shows even when the test passes).
fn python() -> Option<String> {
    let given = std::env::var("ARR_PYTHON").ok();
    let python = given.clone().unwrap_or_else(|| "python3".into());
    let check = format!("import {PACKAGES}");
    let ok = Command::new(&python)
        .args(["-c", &check])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    let asked_to_skip = std::env::var_os("ARR_SKIP_JUPYTER_TESTS").is_some_and(|v| v == "1");
    if given.is_none() || asked_to_skip {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the Jupyter kernel tests need {PACKAGES} for {python}; scripts/test.sh installs them"
        );
        return None;
    }
    panic!(
        "the Jupyter tests need {PACKAGES} for ARR_PYTHON={python}: run scripts/test.sh \
         (it installs them into .venv), or set ARR_SKIP_JUPYTER_TESTS=1 to skip"
    );
}

#[test]
fn install_writes_a_kernelspec_with_the_absolute_binary() {
    let j = Jupyter::new("install");
    let spec_dir = j.data_dir().join("kernels/arr");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spec_dir.join("kernel.json")).unwrap())
            .unwrap();
    let exe = Path::new(env!("CARGO_BIN_EXE_arr")).canonicalize().unwrap();
    assert_eq!(
        spec["argv"],
        serde_json::json!([
            exe.to_string_lossy(),
            "kernel",
            "--connection-file",
            "{connection_file}"
        ])
    );
    assert_eq!(spec["language"], "arr");
    assert_eq!(spec["display_name"], "arr");
    assert_eq!(spec["interrupt_mode"], "message");
    for logo in ["logo-32x32.png", "logo-64x64.png"] {
        let bytes = std::fs::read(spec_dir.join(logo)).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{logo} is not a PNG"
        );
    }
    // --prefix DIR installs under DIR/share/jupyter.
    let prefix = j.dir.join("prefix");
    let out = Command::new(env!("CARGO_BIN_EXE_arr"))
        .args(["kernel", "install", "--prefix"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(prefix
        .join("share/jupyter/kernels/arr/kernel.json")
        .is_file());
    // --user without JUPYTER_DATA_DIR: the XDG data directory under HOME.
    if cfg!(target_os = "linux") {
        let home = j.dir.join("home");
        let out = Command::new(env!("CARGO_BIN_EXE_arr"))
            .args(["kernel", "install", "--user"])
            .env_remove("JUPYTER_DATA_DIR")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(home
            .join(".local/share/jupyter/kernels/arr/kernel.json")
            .is_file());
    }
}

#[test]
fn kernel_refuses_bad_connection_files() {
    let j = Jupyter::new("bad-connection");
    let arr = || Command::new(env!("CARGO_BIN_EXE_arr"));
    let out = arr().arg("kernel").output().unwrap();
    assert!(!out.status.success());
    let file = j.dir.join("bad.json");
    std::fs::write(&file, "{\"shell_port\": 1}").unwrap();
    let out = arr()
        .args(["kernel", "--connection-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("iopub_port"), "{err}");
}

#[test]
fn jupyter_kernel_test_suite() {
    let Some(python) = python() else { return };
    Jupyter::new("kernel-test").run_python(&python, "test_kernel_spec.py", &["-v"]);
}

#[test]
fn jupyter_client_behaviour() {
    let Some(python) = python() else { return };
    Jupyter::new("client").run_python(&python, "test_client.py", &["-v"]);
}

#[test]
fn notebooks_run_in_nbconvert_and_papermill() {
    let Some(python) = python() else { return };
    let j = Jupyter::new("notebooks");
    let out_dir = j.dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    j.run_python(&python, "run_notebooks.py", &[out_dir.to_str().unwrap()]);
}

/// The hostile-input table (tests/hostile.txt, also run as scripts and in
/// the REPL by tests/hostile.rs) in one kernel: each case's error or value,
/// and a variable defined first survives them all.
#[test]
fn hostile_inputs_in_one_kernel() {
    use arr_testkit::hostile::{self, Expect};
    let Some(python) = python() else { return };
    let j = Jupyter::new("hostile");
    for (file, bytes) in hostile::fixtures() {
        std::fs::write(j.dir.join(file), bytes).unwrap();
    }
    let table = std::fs::read_to_string(root().join("tests/hostile.txt")).unwrap();
    let cases: Vec<serde_json::Value> = hostile::parse(&table)
        .iter()
        .filter(|c| !c.mem_only)
        .map(|c| {
            let mut v = serde_json::json!({"label": c.label(), "code": c.code});
            match &c.expect {
                Expect::Printed(text) => v["printed"] = text.clone().into(),
                Expect::Error { kinds, contains } => {
                    v["kinds"] = kinds.clone().into();
                    v["contains"] = contains.clone().into();
                }
            }
            v
        })
        .collect();
    let path = j.dir.join("hostile.json");
    std::fs::write(&path, serde_json::to_string(&cases).unwrap()).unwrap();
    j.run_python(&python, "hostile.py", &[path.to_str().unwrap()]);
}
