//! The interactive `arr>` prompt: multi-line entries decided by the parser,
//! history, completion, `?name`, `:time`, Ctrl-C and Ctrl-D.

use crate::editor::ArrHelper;
use crate::runner::{guarded, new_session};
use arr_lang::Completeness;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Config, Editor};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

const PROMPT: &str = "arr> ";
const CONTINUATION: &str = "...> ";

fn history_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ARR_HISTORY") {
        return Some(p.into());
    }
    std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".arr_history"))
}

pub fn run() -> std::process::ExitCode {
    let session = Rc::new(RefCell::new(new_session()));
    let config = Config::builder()
        .auto_add_history(false)
        .max_history_size(10_000)
        .map(|b| b.build())
        .unwrap_or_default();
    let mut editor: Editor<ArrHelper, DefaultHistory> = match Editor::with_config(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("arr: cannot start the line editor: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let color = std::env::var_os("NO_COLOR").is_none();
    editor.set_helper(Some(ArrHelper {
        session: session.clone(),
        color,
    }));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    println!(
        "arr {} — type help(name) or ?name for documentation, :quit or Ctrl-D to leave",
        env!("CARGO_PKG_VERSION")
    );
    while let Some(entry) = read_entry(&mut editor) {
        if entry.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(entry.trim_end());
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
        if !handle(&session, entry.trim_end()) {
            break;
        }
    }
    std::process::ExitCode::SUCCESS
}

/// Read one entry, asking for more lines while the parser says it is incomplete.
/// None means Ctrl-D (end of input).
fn read_entry(editor: &mut Editor<ArrHelper, DefaultHistory>) -> Option<String> {
    let mut entry = String::new();
    let mut indent = String::new();
    loop {
        let prompt = if entry.is_empty() {
            PROMPT
        } else {
            CONTINUATION
        };
        match editor.readline_with_initial(prompt, (&indent, "")) {
            Ok(line) => {
                // Lines are joined without a trailing newline: to the parser a
                // final "\n" is an empty last line, which closes an indented
                // block, and only an empty (or indent-only) line should do that.
                if !entry.is_empty() {
                    entry.push('\n');
                }
                entry.push_str(&line);
                if entry.starts_with(':') || entry.starts_with('?') {
                    return Some(entry);
                }
                match arr_lang::check_complete(&entry) {
                    Completeness::Incomplete { indent: next } => indent = next,
                    _ => return Some(entry),
                }
            }
            Err(ReadlineError::Interrupted) => {
                // Ctrl-C at the prompt discards the entry being typed.
                entry.clear();
                indent.clear();
            }
            Err(ReadlineError::Eof) => {
                if entry.is_empty() {
                    return None;
                }
                return Some(entry);
            }
            Err(e) => {
                eprintln!("arr: {e}");
                return None;
            }
        }
    }
}

/// Run one entry; returns false to leave the REPL.
fn handle(session: &Rc<RefCell<arr_runtime::Session>>, entry: &str) -> bool {
    let mut s = session.borrow_mut();
    s.interrupt_handle().store(false, Ordering::Relaxed);
    if let Some(name) = entry.strip_prefix('?') {
        match guarded(|| s.help_text(name)) {
            Ok(text) => println!("{text}"),
            Err(msg) => eprintln!("{msg}"),
        }
        return true;
    }
    if let Some(command) = entry.strip_prefix(':') {
        match run_command(&mut s, command) {
            CommandOutput::Quit => return false,
            CommandOutput::Text(text) => print!("{text}"),
            CommandOutput::Value(v) => println!("{}", s.repr(&v)),
            CommandOutput::Error(msg) => eprintln!("{msg}"),
        }
        return true;
    }
    let result = guarded(|| s.run_entry(entry));
    crate::live::stop();
    match result {
        Ok(Some(v)) => println!(
            "{}",
            s.echo(&v, std::io::IsTerminal::is_terminal(&std::io::stdout()))
        ),
        Ok(None) => {}
        Err(msg) => eprintln!("{msg}"),
    }
    // A figure drawn by the entry is written to a file whose path is printed.
    if let Err(msg) = guarded(|| arr_stdlib::plot::show_pending(&mut s.interp)) {
        eprintln!("{msg}");
    }
    true
}

/// What a `:command` produced.
pub enum CommandOutput {
    Quit,
    /// Text to show (ends with a newline unless empty).
    Text(String),
    /// A value to show as the entry's result (a table: HTML in a notebook).
    Value(arr_runtime::Value),
    Error(String),
}

/// Run a `:command` (without its colon) — shared by the REPL and the Jupyter kernel.
pub fn run_command(s: &mut arr_runtime::Session, command: &str) -> CommandOutput {
    let (word, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let line = |r: Result<String, String>| match r {
        Ok(text) => CommandOutput::Text(format!("{text}\n")),
        Err(msg) => CommandOutput::Error(msg),
    };
    match word {
        "q" | "quit" | "exit" => CommandOutput::Quit,
        "time" => {
            let start = Instant::now();
            let result = guarded(|| s.run_entry(rest));
            let elapsed = start.elapsed();
            let time = format!("time: {}\n", format_duration(elapsed.as_secs_f64()));
            match result {
                Ok(Some(v)) => CommandOutput::Text(format!("{}\n{time}", s.repr(&v))),
                Ok(None) => CommandOutput::Text(time),
                Err(msg) => CommandOutput::Error(msg),
            }
        }
        "kernels" => line(
            guarded(|| s.kernels_of_call(rest.trim()))
                .map(|k| format!("{k}\n{}", arr_stdlib::device::kernel_stats_line())),
        ),
        // `:cuda f(x)` is `cuda_source(f, x)`: the kernels jit(f) launches, as CUDA C.
        "cuda" | "opencl" => match rest.trim().split_once('(') {
            Some((f, call)) if !f.trim().is_empty() => {
                let sep = if call.trim() == ")" { "" } else { ", " };
                match guarded(|| s.run_entry(&format!("{word}_source({}{sep}{call}", f.trim()))) {
                    Ok(Some(arr_runtime::Value::Str(text))) => {
                        CommandOutput::Text(format!("{text}\n"))
                    }
                    Ok(_) => CommandOutput::Error(format!(":{word} f(args) needs a function call")),
                    Err(msg) => CommandOutput::Error(msg),
                }
            }
            _ => CommandOutput::Error(format!("usage: :{word} f(args)")),
        },
        "why" => line(guarded(|| s.why(rest))),
        "ir" => line(guarded(|| match rest.trim().strip_prefix("--pass") {
            Some(r) => {
                let r = r.trim_start();
                let (pass, call) = r.split_once(char::is_whitespace).unwrap_or((r, ""));
                s.ir_of_call_after(call.trim(), Some(pass))
            }
            None => s.ir_of_call(rest.trim()),
        })),
        "jit" => CommandOutput::Text(s.auto_jit_report()),
        "mesh" => CommandOutput::Value(arr_stdlib::mesh_table().into_value()),
        // `:plan f(x, y)` is `f.plan(x, y)`: a sharded jit's collectives, before running.
        "plan" => match rest.trim().split_once('(') {
            Some((f, call)) if !f.trim().is_empty() => {
                match guarded(|| s.run_entry(&format!("{}.plan({call}", f.trim()))) {
                    Ok(Some(arr_runtime::Value::Str(text))) => {
                        CommandOutput::Text(text.to_string())
                    }
                    Ok(_) => CommandOutput::Error(
                        ":plan f(args) needs a function made by jit(..., in_shardings=...)".into(),
                    ),
                    Err(msg) => CommandOutput::Error(msg),
                }
            }
            _ => CommandOutput::Error("usage: :plan f(args)".into()),
        },
        "help" | "h" => CommandOutput::Text(format!("{}\n", help_text())),
        other => CommandOutput::Error(format!("unknown command :{other} (try :help)")),
    }
}

fn format_duration(secs: f64) -> String {
    if secs < 1e-3 {
        format!("{:.1} µs", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{secs:.3} s")
    }
}

/// `:help`: the commands, with jit's passes (for `:ir --pass`) listed from
/// the pipeline itself, so the list cannot fall behind it.
fn help_text() -> String {
    use arr_runtime::jit::passes::{PIPELINE, TRACED};
    let mut passes = String::new();
    for p in std::iter::once(&TRACED).chain(PIPELINE) {
        passes.push_str(&format!("    {:<21} {}\n", p.name, p.description));
    }
    format!("{HELP_BEFORE_PASSES}{passes}{HELP_AFTER_PASSES}")
}

const HELP_BEFORE_PASSES: &str = "\
help(name), ?name    documentation of a function or module
:time EXPR           run EXPR and show how long it took
:ir f(args)          the IR that f traces to for these arguments
:ir --pass NAME f(x) the IR of jit(f) after a compiler pass (a sharded jit's
                     'partition' stage comes after 'traced'); the passes, in order:
";

const HELP_AFTER_PASSES: &str = "\
:kernels f(args)     the fused kernels (kernel IR) that jit(f) runs for this call, and GPU compile counts
:cuda f(args)        the CUDA C of every kernel jit(f) launches for this call (no GPU needed)
:opencl f(args)      the same kernels as OpenCL C
:why f               every compile of the jitted function f, and why it happened
:jit                 what automatic JIT compiled (hot functions and loops), or left interpreted and why
:plan f(args)        the collectives a sharded jit will run for these arguments, with source lines, bytes and peak memory
:mesh                the devices (memory, steps, compute and collective time, bytes sent) and the sharded arrays on them
:quit, :q, Ctrl-D    leave
Ctrl-C               interrupt a running computation (variables are kept), or clear the line
Tab                  complete names, and attributes after '.'";

#[cfg(test)]
mod tests {
    use super::*;
    use arr_runtime::jit::passes::PIPELINE;

    /// `:help` lists every pass of jit's pipeline, in order, each with its
    /// description, and `traced` before them.
    #[test]
    fn help_lists_the_pipelines_passes_in_order() {
        let CommandOutput::Text(help) = run_command(&mut arr_stdlib::session(), "help") else {
            panic!(":help shows text");
        };
        let mut at = help.find("    traced ").expect("traced is listed");
        for p in PIPELINE {
            let line = format!("    {:<21} {}\n", p.name, p.description);
            let i = help[at..]
                .find(&line)
                .unwrap_or_else(|| panic!("{} is not listed (in order) in\n{help}", p.name));
            at += i + line.len();
        }
        assert!(help.contains("fold_epilogues"), "{help}");
    }
}
