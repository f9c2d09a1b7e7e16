//! Every `examples/*.arr` script runs with its output checked against
//! `examples/NAME.out` (regenerate with `UPDATE_EXAMPLES=1` after reviewing),
//! with automatic JIT on and off.

use std::path::Path;
use std::process::Command;

/// The examples folder and its `.arr` scripts, sorted.
fn example_scripts() -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "arr"))
        .collect();
    scripts.sort();
    (dir, scripts)
}

#[test]
fn examples_produce_their_recorded_output() {
    let (dir, scripts) = example_scripts();
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

/// The numbers in a text and the text between them: outputs of two devices
/// are the same when the text is and each number agrees to float32 rounding
/// (the devices' math libraries differ in the last bits).
fn numbers_and_text(s: &str) -> (Vec<f64>, String) {
    let mut nums = Vec::new();
    let mut text = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts_number =
            b[i].is_ascii_digit() || (b[i] == b'-' && i + 1 < b.len() && b[i + 1].is_ascii_digit());
        if starts_number && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
            let start = i;
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || b[i] == b'.'
                    || b[i] == b'e'
                    || ((b[i] == b'-' || b[i] == b'+') && b[i - 1] == b'e'))
            {
                i += 1;
            }
            match s[start..i].parse::<f64>() {
                Ok(x) => {
                    nums.push(x);
                    text.push('#');
                }
                Err(_) => text.push_str(&s[start..i]),
            }
        } else {
            text.push(b[i] as char);
            i += 1;
        }
    }
    // Padding around numbers depends on their digits (NumPy pads each
    // number's shortest form to the widest), so spaces do not count.
    (nums, text.split_whitespace().collect::<String>())
}

/// Every example on the OpenCL device (PoCL in CI) prints what it prints on
/// the CPU, and every kernel it launched, rendered as CUDA C, compiles with
/// NVRTC. SKIPPED without an OpenCL device unless `ARR_REQUIRE_OPENCL` is set.
#[test]
fn examples_print_the_same_on_opencl_and_their_kernels_compile_as_cuda() {
    if !arr_testkit::opencl_present("examples on OpenCL") {
        return;
    }
    let (dir, scripts) = example_scripts();
    let work = tempfile::tempdir().unwrap();
    let shadow = work.path().join("cuda");
    let mut mismatches = Vec::new();
    for script in &scripts {
        let name = script.file_stem().unwrap().to_string_lossy().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_arr"))
            .args(["--device", "opencl", "run"])
            .arg(script)
            .arg(work.path().join(&name))
            .env("ARR_SHADOW_KERNELS", &shadow)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} failed on opencl:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8_lossy(&out.stdout).to_string();
        let expected = std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap();
        let ((gn, gt), (en, et)) = (numbers_and_text(&got), numbers_and_text(&expected));
        let close = gn.len() == en.len()
            && gn
                .iter()
                .zip(&en)
                .all(|(g, e)| g == e || (g - e).abs() <= 1e-4 * e.abs().max(1e-2));
        if gt != et || !close {
            mismatches.push(format!("{name}:\n--- cpu\n{expected}\n--- opencl\n{got}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "examples that print differently on opencl:\n{}",
        mismatches.join("\n")
    );
    let kernels: Vec<_> = std::fs::read_dir(&shadow)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    println!(
        "{} examples print the same on opencl; {} distinct kernels launched",
        scripts.len(),
        kernels.len()
    );
    if !arr_testkit::nvrtc_present("compiling the kernels as CUDA C") {
        return;
    }
    let mut bad = Vec::new();
    for k in &kernels {
        let text = std::fs::read_to_string(k).unwrap();
        if let Err(log) =
            arr_kernels::gpu::cuda::compile(&text, arr_kernels::gpu::cuda::DEFAULT_ARCH)
        {
            bad.push(format!("{}:\n{log}\n{text}", k.display()));
        }
    }
    println!(
        "NVRTC compiled {}/{} of the examples' kernels for {}",
        kernels.len() - bad.len(),
        kernels.len(),
        arr_kernels::gpu::cuda::DEFAULT_ARCH
    );
    assert!(
        bad.is_empty(),
        "kernels NVRTC rejects:\n{}",
        bad.join("\n\n")
    );
}
