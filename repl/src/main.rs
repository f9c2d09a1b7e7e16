//! The `arr` binary: command line, then the REPL, a script, `-e` code,
//! statements piped on stdin, or the Jupyter kernel.

mod editor;
mod golden;
mod kernel;
mod live;
mod progress;
mod repl;
mod runner;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// arr: a NumPy-flavoured array language with grad, vmap, jit and pmap.
#[derive(Parser, Debug)]
#[command(name = "arr", version, about, long_about = None)]
struct Cli {
    /// Run CODE (the value of a trailing expression is printed) and exit.
    #[arg(short = 'e', value_name = "CODE")]
    eval: Option<String>,

    /// Never compile hot functions and loops by themselves (results are the
    /// same either way; this only changes speed).
    #[arg(long = "no-auto-jit", global = true)]
    no_auto_jit: bool,

    /// How many virtual devices pmap and meshes have (default: ARR_DEVICES, else 8).
    #[arg(long = "devices", value_name = "N", global = true)]
    devices: Option<usize>,

    /// Where operations run: cpu (the default), cuda, opencl, or one device such as cuda:1.
    #[arg(long = "device", value_name = "DEVICE", global = true)]
    device: Option<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a script; it sees its path and ARGS in `argv`.
    Run {
        file: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a file of JAX-computed cases (tests/golden.json) on the chosen device and
    /// compare every result (cases listed in unsupported.txt beside it are skipped).
    Conformance {
        file: std::path::PathBuf,
        /// Each case's function under jit.
        #[arg(long)]
        jit: bool,
        /// Each case's inputs laid out over a 2x2 mesh.
        #[arg(long, conflicts_with = "jit")]
        sharded: bool,
    },
    /// The GPU libraries this arr finds (CUDA driver, NVRTC, cuBLAS, NCCL) and
    /// the devices it sees; under mpirun, also NCCL's set-up across the
    /// processes (the unique id exchange and a communicator of one GPU each).
    GpuInfo,
    /// Serve as a Jupyter kernel (`arr kernel install` registers it with Jupyter).
    Kernel {
        /// The connection file Jupyter wrote (ports and signing key).
        #[arg(long = "connection-file", short = 'f', value_name = "FILE")]
        connection_file: Option<String>,
        #[command(subcommand)]
        action: Option<KernelAction>,
    },
}

#[derive(Subcommand, Debug)]
enum KernelAction {
    /// Write the kernelspec (kernels/arr/kernel.json and logos) into a Jupyter
    /// data directory: by default the user's (JUPYTER_DATA_DIR if set).
    Install {
        /// The user's data directory, JUPYTER_DATA_DIR or ~/.local/share/jupyter (the default).
        #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
        user: bool,
        /// sys.prefix/share/jupyter of python3 (e.g. the active virtual environment).
        #[arg(long = "sys-prefix", conflicts_with = "prefix")]
        sys_prefix: bool,
        /// DIR/share/jupyter.
        #[arg(long, value_name = "DIR")]
        prefix: Option<std::path::PathBuf>,
    },
}

/// The evaluator recurses on the Rust stack (one frame chain per arr call),
/// so it runs on a thread with room for deep arr recursion.
const EVAL_STACK_BYTES: usize = 512 << 20;

/// Counts live heap bytes, so that memory spent by many small values is a
/// MemoryError at the interpreter's next safe point (`arr_kernels::memory`).
#[global_allocator]
static ALLOCATOR: arr_kernels::memory::Counting = arr_kernels::memory::Counting;

fn main() -> ExitCode {
    // Before any thread starts: the environment is then safe to change.
    arr_kernels::prepare_process();
    let cli = Cli::parse();
    let worker = std::thread::Builder::new()
        .stack_size(EVAL_STACK_BYTES)
        .spawn(move || run(cli));
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("arr: internal error: the evaluator thread failed");
            ExitCode::from(70)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    // Started by mpirun: join the job's other processes first, so devices,
    // meshes and output know their place in it.
    if arr_kernels::process::launched_by_mpi() {
        if let Err(e) = arr_kernels::process::init() {
            eprintln!("arr: {e}");
            return ExitCode::from(2);
        }
    }
    let code = run_command(cli);
    // A process that stopped with an error would leave the others waiting
    // at their next collective: it ends the whole job (its error is printed).
    if code != ExitCode::SUCCESS && arr_kernels::process::is_multi() {
        arr_kernels::process::abort("the program stopped with an error; ending the job");
    }
    arr_kernels::process::finalize();
    code
}

/// `arr gpu-info`: what a user checks first on a new machine or job.
fn gpu_info() -> ExitCode {
    use arr_kernels::{gpu, process};
    let mut lines: Vec<String> = gpu::cuda::libraries()
        .into_iter()
        .map(|(name, found)| match found {
            Ok(v) => format!("{name}: {v}"),
            Err(e) => format!("{name}: not found ({e})"),
        })
        .collect();
    for d in gpu::devices() {
        lines.push(format!("device {}: {}", d.label(), d.driver.describe()));
    }
    for (kind, why) in &gpu::probe().missing {
        lines.push(format!("no {kind} device: {why}"));
    }
    if process::is_multi() {
        lines.extend(gpu::cuda::nccl::check_job());
    }
    if process::index() == 0 {
        println!("{}", lines.join("\n"));
    }
    ExitCode::SUCCESS
}

fn run_command(cli: Cli) -> ExitCode {
    // A setting that is not understood is said, not silently replaced.
    for check in [
        arr_kernels::devices::env_count().map(|_| ()),
        arr_kernels::limits::env_limit().map(|_| ()),
    ] {
        if let Err(e) = check {
            eprintln!("arr: {e}");
            return ExitCode::from(2);
        }
    }
    if cli.no_auto_jit {
        runner::AUTO_JIT.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    if let Some(n) = cli.devices {
        if let Err(e) = arr_kernels::devices::set_count(n) {
            eprintln!("arr: --devices: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(name) = &cli.device {
        match arr_stdlib::device::parse_device(name) {
            Ok(d) => arr_kernels::gpu::set_process_default(d),
            Err(e) => {
                eprintln!("arr: --device {name}: {}", e.message);
                return ExitCode::from(2);
            }
        }
    }
    match (cli.command, cli.eval) {
        (Some(_), Some(_)) => {
            eprintln!("arr: -e CODE cannot be used with a subcommand");
            ExitCode::from(2)
        }
        (Some(Command::Run { file, args }), None) => runner::run_file(&file, &args),
        (Some(Command::GpuInfo), None) => gpu_info(),
        (Some(Command::Conformance { file, jit, sharded }), None) => {
            conformance(&file, jit, sharded)
        }
        (
            Some(Command::Kernel {
                action,
                connection_file,
            }),
            None,
        ) => match (action, connection_file) {
            (
                Some(KernelAction::Install {
                    sys_prefix, prefix, ..
                }),
                None,
            ) => {
                let target = match (sys_prefix, prefix) {
                    (true, _) => kernel::install::Target::SysPrefix,
                    (_, Some(dir)) => kernel::install::Target::Prefix(dir),
                    _ => kernel::install::Target::User,
                };
                kernel::install::install(target)
            }
            (None, Some(file)) => kernel::run(&file),
            (Some(_), Some(_)) => {
                eprintln!("arr kernel install takes no --connection-file");
                ExitCode::from(2)
            }
            (None, None) => {
                eprintln!(
                    "arr kernel needs --connection-file FILE (Jupyter passes it), or `install`"
                );
                ExitCode::from(2)
            }
        },
        (None, Some(code)) => runner::run_code(&code),
        (None, None) if std::io::stdin().is_terminal() => repl::run(),
        (None, None) => runner::run_stdin(),
    }
}

/// `arr conformance FILE [--jit | --sharded]`: every case on the default device.
fn conformance(file: &std::path::Path, jit: bool, sharded: bool) -> ExitCode {
    let golden: serde_json::Value = match std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("arr conformance: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let unsupported =
        std::fs::read_to_string(file.with_file_name("unsupported.txt")).unwrap_or_default();
    let device = arr_kernels::gpu::default_device();
    let mode = match (jit, sharded) {
        (true, _) => golden::Mode::Jit,
        (_, true) => golden::Mode::Sharded,
        _ => golden::Mode::Plain,
    };
    let (passed, failures) = golden::run_file(&golden, &unsupported, mode, device);
    for f in &failures {
        println!("FAILED {f}");
    }
    let where_ = device.map_or("cpu".to_string(), |d| d.label());
    println!(
        "conformance on {where_}{}: {passed}/{} cases pass",
        match mode {
            golden::Mode::Jit => " under jit",
            golden::Mode::Sharded => " with sharded inputs",
            golden::Mode::Plain => "",
        },
        passed + failures.len()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
