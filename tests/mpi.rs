//! Meshes across processes: scripts run under `mpirun` with 2 and 4
//! processes (and 2 processes × 2 virtual devices) print what the
//! in-process mesh of the same size prints; a process that dies, panics
//! or skips a collective ends the job with a message naming the process,
//! the collective, its line and the mesh axis; a checkpoint written by 4
//! processes loads on 2 and in one.
//!
//! The `arr` built with the `mpi` feature comes from `ARR_MPI_BIN` (the
//! test command builds it); without it these tests say SKIPPED, unless
//! `ARR_REQUIRE_MPI` is set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One job at a time: jobs of several processes on two cores, each with a
/// collective timeout, must not starve each other.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mpi_arr() -> Option<(PathBuf, std::sync::MutexGuard<'static, ()>)> {
    let guard = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let found = std::env::var_os("ARR_MPI_BIN")
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .filter(|_| Command::new("mpirun").arg("--version").output().is_ok());
    if found.is_none() {
        assert!(
            std::env::var_os("ARR_REQUIRE_MPI").is_none(),
            "ARR_REQUIRE_MPI is set but ARR_MPI_BIN or mpirun is missing"
        );
        eprintln!("SKIPPED: no mpirun or no arr built with --features mpi (ARR_MPI_BIN)");
    }
    found.map(|bin| (bin, guard))
}

fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write script");
    p
}

/// `arr --devices D run FILE` in one process (the in-process mesh).
fn in_process(bin: &Path, devices: usize, file: &Path) -> Output {
    Command::new(bin)
        .env("NO_COLOR", "1")
        .args(["--devices", &devices.to_string(), "run"])
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .expect("arr starts")
}

/// `mpirun -np N arr --devices D run FILE`, with `env` set for every process.
fn under_mpirun(
    bin: &Path,
    np: usize,
    devices: usize,
    file: &Path,
    env: &[(&str, &str)],
) -> Output {
    let devices = devices.to_string();
    let file = file.to_str().expect("a UTF-8 path");
    mpirun(bin, np, env, &["--devices", &devices, "run", file])
}

/// `bin args` in `np` processes under mpirun, with `env` set in each.
fn mpirun(bin: &Path, np: usize, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-np", &np.to_string()])
        // A safety net only: the job must end by itself long before.
        .args(["--timeout", "120"]);
    for (k, v) in env {
        cmd.args(["-x", &format!("{k}={v}")]);
    }
    cmd.arg(bin)
        .args(args)
        .env("NO_COLOR", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Shared memory between ranks in a container without CMA permissions.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdin(Stdio::null())
        .output()
        .expect("mpirun starts")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The script's output under mpirun equals the in-process mesh's of
/// `np * devices` devices.
fn same_as_in_process(bin: &Path, file: &Path, np: usize, devices: usize) -> String {
    let one = in_process(bin, np * devices, file);
    let (want, err) = text(&one);
    assert!(one.status.success(), "in one process: {err}");
    let job = under_mpirun(bin, np, devices, file, &[]);
    let (got, err) = text(&job);
    assert!(
        job.status.success(),
        "{np} processes x {devices}: {err}\n{got}"
    );
    // The lines that say where the program runs differ by design.
    let results = |s: &str| -> String {
        s.lines()
            .filter(|l| !l.starts_with("process "))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_eq!(
        results(&got),
        results(&want),
        "{np} processes x {devices} devices, stderr:\n{err}"
    );
    got
}

const COLLECTIVES: &str = r#"
x = arange(32.0).reshape(4, 8) * 0.37 - 3.0
ring = [(i, (i + 1) % 4) for i in range(4)]
for name, f in [
    ("psum", lambda v: psum(v, "i")),
    ("pmean", lambda v: pmean(v, "i")),
    ("pmax", lambda v: pmax(v, "i")),
    ("pmin", lambda v: pmin(v, "i")),
    ("all_gather", lambda v: all_gather(v, "i")),
    ("ppermute", lambda v: ppermute(v, "i", ring)),
    ("all_to_all", lambda v: all_to_all(v.reshape(4, 2), "i", 0, 0)),
    ("psum_scatter", lambda v: psum_scatter(v.reshape(4, 2), "i")),
    ("psum_scatter tiled", lambda v: psum_scatter(v, "i", tiled=True)),
    ("axis_index", lambda v: v * axis_index("i")),
    ("several", lambda v: psum((v, v * 2.0, arange(3) + axis_index("i")), "i")),
]:
    print(name, pmap(f, axis_name="i")(x))
print("grad through psum", pmap(grad(lambda v: sum(psum(v * v, "i"))), axis_name="i")(x))
print("process", process_index(), "of", process_count(), "sees", device_count(), "devices")
"#;

const MESH_2D: &str = r#"
m = mesh((2, 2), ("data", "model"))
k1, k2, k3 = random.split(random.key(0), 3)
x = random.normal(k1, (8, 16))
w1 = random.normal(k2, (16, 12)) / 4.0
w2 = random.normal(k3, (12, 6)) / 3.5

def block(x, w1, w2):
    h = tanh(x @ w1)
    return psum(h @ w2, "model"), pmax(sum(x), "data")

y, top = shard_map(block, m,
              in_specs=(P("data", None), P(None, "model"), P("model", None)),
              out_specs=(P("data", None), P()))(x, w1, w2)
print(y)
print(top)
visualize_sharding(y)
print(all(abs(y - tanh(x @ w1) @ w2) < 1e-5))
"#;

const TRAINING: &str = r#"
m = mesh((4,), ("batch",))
s = lambda *spec: NamedSharding(m, P(*spec))
k1, k2 = random.split(random.key(3))
x = random.normal(k1, (32, 5))
y = tanh(x @ random.normal(k2, (5, 1)))

def loss(p, x, y):
    return mean((tanh(x @ p["w"] + p["b"]) - y) ** 2)

def step(p, x, y):
    g = grad(loss)(p, x, y)
    return {k: p[k] - 0.3 * g[k] for k in p}

train = jit(step, in_shardings=({"w": s(), "b": s()}, s("batch", None), s("batch", None)),
            out_shardings={"w": s(), "b": s()})
p = {"w": zeros((5, 1)), "b": zeros(1)}
xs, ys = device_put(x, s("batch", None)), device_put(y, s("batch", None))
for i in range(5):
    p = train(p, xs, ys)
    print(f"step {i}: loss {float(loss(p, x, y)):.6f}")
print(p["w"])
"#;

#[test]
fn every_collective_across_2_and_4_processes_and_2_by_2() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(dir.path(), "collectives.arr", COLLECTIVES);
    same_as_in_process(&bin, &f, 2, 2);
    let out = same_as_in_process(&bin, &f, 4, 1);
    assert!(out.contains("process 0 of 4 sees 4 devices"), "{out}");
    // Only process 0 prints by default.
    assert_eq!(out.matches("\nprocess ").count(), 1, "{out}");
    let two = under_mpirun(&bin, 2, 2, &f, &[]);
    assert!(text(&two).0.contains("process 0 of 2 sees 4 devices"));
}

#[test]
fn shard_map_on_a_2d_mesh_spanning_processes() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(dir.path(), "mesh2d.arr", MESH_2D);
    // The rows ('data') lie in different processes with 2 x 2; every device
    // is its own process with 4 x 1.
    for (np, d) in [(2, 2), (4, 1)] {
        let one = in_process(&bin, 4, &f);
        let job = under_mpirun(&bin, np, d, &f, &[]);
        let (got, err) = text(&job);
        assert!(job.status.success(), "{err}");
        let want = text(&one).0;
        // The layout under mpirun names each device's process below it.
        let line = match np {
            2 => "process 0: cpu 0,1; process 1: cpu 2,3\n",
            _ => "process 0: cpu 0; process 1: cpu 1; process 2: cpu 2; process 3: cpu 3\n",
        };
        assert_eq!(got.replace(line, ""), want, "{np} x {d}: {err}");
        assert!(got.contains(line), "{got}");
        assert!(got.ends_with("True\n"), "{got}");
    }
}

#[test]
fn a_data_parallel_training_step_under_sharded_jit() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(dir.path(), "train.arr", TRAINING);
    same_as_in_process(&bin, &f, 2, 2);
    let out = same_as_in_process(&bin, &f, 4, 1);
    assert!(out.contains("step 4: loss"), "{out}");
}

#[test]
fn process_local_data_devices_and_printing() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(
        dir.path(),
        "local.arr",
        r#"
print([d.process_index for d in devices()], [d.id for d in local_devices()])
m = mesh((4,), ("batch",))
local = arange(8.0).reshape(4, 2) + 10.0 * process_index()
g = make_array_from_process_local_data(NamedSharding(m, P("batch")), local)
print(g.shape, g.sharding)
print(sum(g))
print("from", process_index(), all_processes=True)
"#,
    );
    let job = under_mpirun(&bin, 2, 2, &f, &[]);
    let (out, err) = text(&job);
    assert!(job.status.success(), "{err}");
    // mpirun forwards each process's output on its own pipe, so a line of
    // process 1 may land anywhere among process 0's: compare process 0's
    // lines in order, and the other's only by presence.
    let own: String = out
        .lines()
        .filter(|l| !l.starts_with("[process "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        own.starts_with(
            "[0, 0, 1, 1] [0, 1]\n(8, 2) NamedSharding(mesh=Mesh('batch': 4, axis_types=(Auto,)), \
             spec=P('batch', None), memory_kind=device)\n"
        ),
        "{out}"
    );
    // 0..7 and 10..17 summed.
    assert!(out.contains("\n136.0\n"), "{out}");
    assert!(out.contains("[process 1] from 1\n"), "{out}");
    assert!(out.contains("from 0\n"), "{out}");
    let all = under_mpirun(&bin, 2, 2, &f, &[("ARR_PRINT_ALL", "1")]);
    let out = text(&all).0;
    assert!(out.contains("[process 1] (8, 2)"), "{out}");
}

#[test]
fn a_checkpoint_written_by_4_processes_loads_on_2_and_in_one() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let common = r#"
k1, k2 = random.split(random.key(7))
params = {"w": random.normal(k1, (6, 8)), "b": arange(8).astype("bfloat16") * 0.1,
          "layers": [random.normal(k2, (5,)), 3], "step": 12}
"#;
    let save = script(
        dir.path(),
        "save.arr",
        &format!(
            "{common}\nm = mesh((2, 2), ('data', 'model'))\nsharded = {{'w': shard(params['w'], m, P('data', 'model')), \
             'b': shard(params['b'], m, P('model')), 'layers': params['layers'], 'step': 12}}\n\
             save_checkpoint({ck:?}, sharded)\nprint('saved')\n"
        ),
    );
    let job = under_mpirun(&bin, 4, 1, &save, &[]);
    assert!(job.status.success(), "{}", text(&job).1);
    // Each of the 4 processes wrote its own block of w (no replicas to
    // share): 4 files for w, 2 for b (its blocks are replicated over 'data').
    let files: Vec<String> = std::fs::read_dir(&ck)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files.iter().filter(|f| f.starts_with("1.")).count(),
        2,
        "{files:?}"
    );
    let load = script(
        dir.path(),
        "load.arr",
        &format!(
            "{common}\nm2 = mesh((2,), ('model',))\n\
             back = load_checkpoint({ck:?}, mesh=m2)\n\
             print(back['w'].sharding, back['b'].sharding)\n\
             print(all(back['w'] == params['w']), all(back['b'] == params['b']), \
             all(back['layers'][0] == params['layers'][0]), back['layers'][1], back['step'])\n\
             host = load_checkpoint({ck:?})\n\
             print(host['w'].sharding, host['b'].dtype, all(host['w'] == params['w']))\n"
        ),
    );
    // 'data' is not an axis of the 2-device mesh: the saved spec names it.
    let two = under_mpirun(&bin, 2, 1, &load, &[]);
    let (out, err) = text(&two);
    assert!(!two.status.success(), "{out}");
    assert!(err.contains("no axis 'data'"), "{err}");
    let fixed = std::fs::read_to_string(&load)
        .unwrap()
        .replace("mesh((2,), ('model',))", "mesh((1, 2), ('data', 'model'))");
    std::fs::write(&load, fixed).unwrap();
    let two = under_mpirun(&bin, 2, 1, &load, &[]);
    let (out, err) = text(&two);
    assert!(two.status.success(), "{err}");
    let want = "NamedSharding(mesh=Mesh('data': 1, 'model': 2, axis_types=(Auto, Auto)), \
                spec=P('data', 'model'), memory_kind=device) \
                NamedSharding(mesh=Mesh('data': 1, 'model': 2, axis_types=(Auto, Auto)), \
                spec=P('model',), memory_kind=device)\n\
                True True True 3 12\nSingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device) bfloat16 True\n";
    assert_eq!(out, want);
    // One process with 2 devices reads the same.
    let one = in_process(&bin, 2, &load);
    assert_eq!(text(&one).0, want, "{}", text(&one).1);
}

/// Runs a job that must fail, returning its stderr and how long it took.
fn failing_job(bin: &Path, file: &Path, env: &[(&str, &str)]) -> (String, Duration) {
    let start = Instant::now();
    let job = under_mpirun(bin, 2, 2, file, env);
    let took = start.elapsed();
    let (out, err) = text(&job);
    assert!(!job.status.success(), "the job succeeded:\n{out}\n{err}");
    (err, took)
}

const TRAIN_LOOP: &str = r#"
x = arange(32.0).reshape(4, 8)
step = pmap(lambda v: psum(v, "batch") * 0.01, axis_name="batch")
for i in range(1000000):
    x = step(x)
"#;

/// The process id of rank `rank` of the job whose processes carry
/// `ARR_TEST_JOB=tag` in their environment.
fn rank_pid(tag: &str, rank: usize) -> Option<u32> {
    let want_tag = format!("ARR_TEST_JOB={tag}");
    let want_rank = format!("OMPI_COMM_WORLD_RANK={rank}");
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
        let has = |v: &str| vars.contains(&v.as_bytes());
        (has(&want_tag) && has(&want_rank)).then_some(pid)
    })
}

#[test]
fn a_killed_process_ends_the_job() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(
        dir.path(),
        "kill.arr",
        &format!("{TRAIN_LOOP}    if i == 20:\n        print('running', flush=True)\n"),
    );
    let tag = format!("{}-{:?}", std::process::id(), Instant::now());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "-np",
        "2",
        "--timeout",
        "120",
        "-x",
        "ARR_TEST_JOB",
        "-x",
    ])
    .arg("ARR_COLLECTIVE_TIMEOUT=5")
    .arg(&bin)
    .args(["--devices", "2", "run"])
    .arg(&f)
    .env("ARR_TEST_JOB", &tag)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut job = cmd.spawn().expect("mpirun starts");
    // Wait until the training loop runs, then kill process 1 outright.
    let mut out = std::io::BufReader::new(job.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line, "running\n");
    let pid = rank_pid(&tag, 1).expect("process 1 of the job is running");
    let killed = Instant::now();
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let done = job.wait_with_output().unwrap();
    let took = killed.elapsed();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success(), "{err}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // mpirun names the process that died.
    assert!(err.contains("rank 1"), "{err}");
}

#[test]
fn a_process_that_panics_ends_the_job() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(dir.path(), "panic.arr", TRAIN_LOOP);
    let (err, took) = failing_job(
        &bin,
        &f,
        &[
            ("ARR_COLLECTIVE_TIMEOUT", "5"),
            ("ARR_TEST_FAULT", "panic:1"),
        ],
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(err.contains("arr: process 1 of 2"), "{err}");
    assert!(err.contains("panicked"), "{err}");
}

#[test]
fn a_process_that_skips_a_collective_ends_the_job_naming_it() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(
        dir.path(),
        "skip.arr",
        r#"x = arange(8.0).reshape(4, 2)
total = pmap(lambda v: psum(v, "batch"), axis_name="batch")
print(total(x))
if process_index() == 0:
    y = total(x)
print("not reached")
"#,
    );
    let (err, took) = failing_job(&bin, &f, &[("ARR_COLLECTIVE_TIMEOUT", "3")]);
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert!(err.contains("arr: process 0 of 2"), "{err}");
    assert!(err.contains("psum over mesh axis 'batch'"), "{err}");
    assert!(err.contains(":2"), "the line of the psum: {err}");
    assert!(
        err.contains("process 1"),
        "the process that never came: {err}"
    );
    assert!(err.contains("within 3s"), "the timeout: {err}");
}

#[test]
fn a_process_that_raises_ends_the_job_with_its_error() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(
        dir.path(),
        "raise.arr",
        r#"x = arange(8.0).reshape(4, 2)
total = pmap(lambda v: psum(v, "batch"), axis_name="batch")
if process_index() == 1:
    y = x @ ones((3, 3))
print(total(x))
"#,
    );
    let (err, took) = failing_job(&bin, &f, &[("ARR_COLLECTIVE_TIMEOUT", "30")]);
    // Not the timeout: the failing process ends the job at once.
    assert!(took < Duration::from_secs(25), "took {took:?}");
    assert!(err.contains("[process 1]"), "{err}");
    assert!(err.contains("raise.arr:4:9"), "{err}");
}

#[test]
fn plans_mark_collectives_that_cross_processes_and_the_mesh_report_gathers_every_process() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let f = script(
        dir.path(),
        "plan.arr",
        r#"m = mesh((2, 2), ("data", "model"))
s = lambda *spec: NamedSharding(m, P(*spec))
def f(x, w):
    return sum(tanh(x @ w)) + sum(x @ w * 0.0)
g = jit(f, in_shardings=(s("data", "model"), s("model", None)), out_shardings=s())
x, w = ones((8, 4)), ones((4, 6))
print(g.plan(x, w))
print(g(x, w))
print(mesh_report())
distributed.initialize(num_processes=3)
"#,
    );
    let job = under_mpirun(&bin, 2, 2, &f, &[]);
    let (out, err) = text(&job);
    // 'model' lies within each process (devices 0,1 and 2,3), 'data' across.
    assert!(
        out.contains(
            "over 'model' (2 devices) of f32[4,6]: 96 B sent per device, within each process"
        ),
        "{out}"
    );
    assert!(out.contains(", across processes"), "{out}");
    assert!(out.contains("4 devices (cpu) on 2 processes"), "{out}");
    for d in 0..4 {
        let row = out
            .lines()
            .find(|l| l.contains(&format!("cpu:{d} ")))
            .unwrap_or_default();
        assert!(
            row.trim_end_matches('│')
                .trim_end()
                .ends_with(&(d / 2).to_string()),
            "{row}"
        );
        assert!(!row.contains(" 0 ┆ "), "device {d} ran a step: {row}");
    }
    assert!(
        err.contains("num_processes=3, but mpirun started 2 processes"),
        "{err}"
    );
    assert!(!job.status.success());
}

/// NCCL's set-up across processes as far as a machine without a GPU goes:
/// process 0's unique id reaches every process (compared by digest), and
/// the communicator is refused with each process's reason, not a hang.
#[test]
fn the_nccl_unique_id_reaches_every_process() {
    let Some((bin, _one_job)) = mpi_arr() else {
        return;
    };
    let job = mpirun(&bin, 2, &[], &["gpu-info"]);
    let (out, err) = text(&job);
    assert!(job.status.success(), "{err}");
    if !out.contains("NCCL: 2.") {
        assert!(
            std::env::var("ARR_REQUIRE_NCCL").is_err(),
            "the test command installs NCCL: {out}"
        );
        assert!(out.contains("NCCL id exchange: not done"), "{out}");
        return;
    }
    assert!(
        out.contains("NCCL id exchange: process 0's unique id reached all 2 process(es)"),
        "{out}"
    );
    if !out.contains("CUDA driver: not found") {
        return; // A machine with GPUs: the communicator lines say how it went.
    }
    assert!(
        out.contains("NCCL communicator: not made: every process needs a CUDA device\n  process 0: no cuda device")
            && out.contains("\n  process 1: no cuda device"),
        "{out}"
    );
}
