//! The `arr` binary: command line, then the REPL, a script, `-e` code, or statements piped on stdin.

mod editor;
mod repl;
mod runner;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// arr: a NumPy-flavoured array language with grad, vmap, jit and pmap.
#[derive(Parser, Debug)]
#[command(name = "arr", version, about, long_about = None, args_conflicts_with_subcommands = true)]
struct Cli {
    /// Run CODE (the value of a trailing expression is printed) and exit.
    #[arg(short = 'e', value_name = "CODE")]
    eval: Option<String>,

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
    match (cli.command, cli.eval) {
        (Some(Command::Run { file, args }), _) => runner::run_file(&file, &args),
        (None, Some(code)) => runner::run_code(&code),
        (None, None) if std::io::stdin().is_terminal() => repl::run(),
        (None, None) => runner::run_stdin(),
    }
}
