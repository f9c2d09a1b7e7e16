//! The `arr` binary: command line, then the REPL, a script, `-e` code, or statements piped on stdin.

mod editor;
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
}

/// The evaluator recurses on the Rust stack (one frame chain per arr call),
/// so it runs on a thread with room for deep arr recursion.
const EVAL_STACK_BYTES: usize = 512 << 20;

fn main() -> ExitCode {
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
    if cli.no_auto_jit {
        runner::AUTO_JIT.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    match (cli.command, cli.eval) {
        (Some(Command::Run { .. }), Some(_)) => {
            eprintln!("arr: -e CODE and `run FILE` cannot be used together");
            ExitCode::from(2)
        }
        (Some(Command::Run { file, args }), None) => runner::run_file(&file, &args),
        (None, Some(code)) => runner::run_code(&code),
        (None, None) if std::io::stdin().is_terminal() => repl::run(),
        (None, None) => runner::run_stdin(),
    }
}
