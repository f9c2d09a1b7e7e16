//! GPU devices from the user's side: the compile cache across runs (on
//! OpenCL), a missing CUDA driver as a clear error, and `cuda_source` /
//! `opencl_source`, which need no device at all.

use arr_testkit::{error_of, run, session, text_of};
use std::process::Command;

fn arr(args: &[&str], cache: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_arr"))
        .args(args)
        .env("ARR_CACHE_DIR", cache)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_second_run_of_the_same_program_compiles_nothing() {
    if !arr_testkit::opencl_present("the compile cache across runs") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let program = "x = arange(12.0).reshape(3, 4)\n\
                   f = jit(lambda a: tanh(a @ a.T + 1.0).sum(axis=0))\n\
                   print(f(x), (exp(x) * 2).max())\n\
                   r = jit_stats()[0]\n\
                   print(r['kernels_compiled'], r['kernels_from_disk'])\n\
                   s = kernel_stats()\n\
                   print(s['compiles'], s['disk_hits'])";
    let (ok, first, err) = arr(&["--device", "opencl", "-e", program], cache.path());
    assert!(ok, "{err}");
    let (ok, second, err) = arr(&["--device", "opencl", "-e", program], cache.path());
    assert!(ok, "{err}");
    let counts = |out: &str| -> (u64, u64) {
        let last = out.lines().last().unwrap();
        let mut it = last.split_whitespace().map(|w| w.parse::<u64>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    };
    let (c1, _) = counts(&first);
    let (c2, hits2) = counts(&second);
    assert!(c1 > 0, "the first run compiles: {first}");
    assert_eq!(c2, 0, "the second run compiles nothing: {second}");
    assert_eq!(hits2, c1, "every module of the second run comes from disk");
    assert_eq!(first.lines().next(), second.lines().next(), "same results");
    // jit_stats() carries the same counters for the jitted function's compile.
    let jit_counts = |out: &str| -> (u64, u64) {
        let line = out.lines().rev().nth(1).unwrap();
        let mut it = line.split_whitespace().map(|w| w.parse::<u64>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    };
    let (j1, _) = jit_counts(&first);
    let (j2, jhits2) = jit_counts(&second);
    assert!(j1 > 0 && j1 <= c1, "jit(f) compiled its kernels: {first}");
    assert_eq!(
        (j2, jhits2),
        (0, j1),
        "and found them on disk the second time: {second}"
    );
}

#[test]
fn a_missing_device_is_a_clear_error_and_the_session_survives() {
    if arr_kernels::gpu::find("cuda").is_ok() {
        arr_testkit::skipped("this machine has a CUDA device");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let (ok, _, err) = arr(&["--device", "cuda", "-e", "print(1)"], cache.path());
    assert!(!ok);
    assert!(
        err.contains("--device cuda: no cuda device:") && err.contains("libcuda"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let mut s = session();
    run(&mut s, "x = ones(3)");
    let e = error_of(&mut s, "set_default_device('cuda')");
    assert!(
        e.contains("ValueError") && e.contains("no cuda device"),
        "{e}"
    );
    let e = error_of(&mut s, "set_default_device('tpu')");
    assert!(e.contains("unknown device kind \"tpu\""), "{e}");
    assert_eq!(text_of(&mut s, "str(x.sum())"), "3.0");
    assert_eq!(text_of(&mut s, "default_device()"), "cpu");
}

#[test]
fn cuda_and_opencl_source_render_what_jit_launches_without_a_device() {
    let mut s = session();
    run(&mut s, "def f(x, w):\n    return tanh(x @ w + 1.0).sum(axis=1)\nx = ones((8, 4))\nw = ones((4, 3))");
    let cuda = text_of(&mut s, "cuda_source(f, x, w)");
    assert!(
        cuda.contains("extern \"C\" __global__ void __launch_bounds__(256) arr_gemm("),
        "{cuda}"
    );
    assert!(
        cuda.contains("tanhf("),
        "the epilogue or the fused kernel computes tanh: {cuda}"
    );
    assert!(cuda.contains("arr_reduce"), "{cuda}");
    let cl = text_of(&mut s, "opencl_source(f, x, w)");
    assert!(
        cl.contains("__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void arr_gemm("),
        "{cl}"
    );
    assert!(cl.contains("barrier(CLK_LOCAL_MEM_FENCE)"), "{cl}");
    // Nothing ran and nothing changed: the session still computes on the CPU.
    assert_eq!(text_of(&mut s, "default_device()"), "cpu");
    assert_eq!(
        text_of(&mut s, "str(f(x, w))"),
        text_of(&mut s, "str(tanh(x @ w + 1.0).sum(axis=1))")
    );
    let e = error_of(&mut s, "cuda_source(f, x)");
    assert!(e.contains("TypeError") || e.contains("argument"), "{e}");
    // A failed recording leaves the session on its own device.
    assert_eq!(text_of(&mut s, "default_device()"), "cpu");
    assert_eq!(text_of(&mut s, "str(ones(2).sum())"), "2.0");
}

#[test]
fn a_mesh_runs_on_virtual_devices_of_one_gpu() {
    if !arr_testkit::opencl_present("virtual devices") {
        return;
    }
    let program = "f = pmap(lambda x: psum(x * 2.0 + 1.0, 'i') / 4.0, axis_name='i')\n\
                   print(f(arange(8.0).reshape(4, 2)))\n\
                   print(shard_map(lambda b: psum(b * b, 'i'), mesh((4,), ('i',)), P('i'), P())(arange(8.0)))\n\
                   print(mesh_report())\n\
                   print('device copies', kernel_stats()['device_copies'])";
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_arr"))
        .args(["--device", "opencl", "--devices", "4", "-e", program])
        .env("ARR_GPU_VIRTUAL", "4")
        .env("ARR_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ok, cpu, err) = arr(&["--devices", "4", "-e", program], cache.path());
    assert!(ok, "{err}");
    let results = |t: &str| {
        t.lines()
            .take_while(|l| !l.contains("devices (cpu)") && !l.starts_with("device copies"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        results(&text),
        results(&cpu),
        "the same results on four virtual devices as on the CPU mesh"
    );
    // The collectives moved the peers' parts between the virtual devices
    // themselves (one OpenCL context), not through the host.
    let copies: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("device copies "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a device copy count in {text}"));
    assert!(copies > 0, "collectives copy device to device: {text}");
    for k in 0..4 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("opencl:{k} ")))
            .unwrap_or_else(|| panic!("opencl:{k} in {text}"));
        let launches: u64 = line
            .rsplit(", ")
            .next()
            .unwrap()
            .trim_end_matches(" launches")
            .parse()
            .unwrap();
        assert!(
            launches > 0,
            "mesh device {k} computed on its own virtual device: {line}"
        );
    }
}

#[test]
fn combining_arrays_of_two_devices_is_an_error_with_the_line() {
    if !arr_testkit::opencl_present("two virtual devices") {
        return;
    }
    let program = "a = device_put(arange(8.0), 'opencl:0')\n\
                   b = device_put(ones(8), 'opencl:1')\n\
                   s = device_put(array(2.0), 'opencl:1')\n\
                   print(a.device, b.device, (a * s).sum())\n\
                   c = a + b";
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_arr"))
        .args(["-e", program])
        .env("ARR_GPU_VIRTUAL", "2")
        .env("ARR_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        stdout.trim(),
        "opencl:0 opencl:1 56.0",
        "a scalar may come from another device"
    );
    assert!(
        stderr.contains("operands live on different devices: opencl:0 and opencl:1")
            && stderr.contains(":5:"),
        "{stderr}"
    );
}
