//! Non-interactive ways in: a script file, `-e CODE`, and statements piped on stdin.

use arr_runtime::{Session, Value};
use std::io::BufRead;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether new sessions compile hot code by themselves (`--no-auto-jit` clears it).
pub static AUTO_JIT: AtomicBool = AtomicBool::new(true);

/// A session whose Ctrl-C interrupts the running code instead of killing the process.
pub fn new_session() -> Session {
    let mut session = arr_stdlib::session();
    session.set_auto_jit(AUTO_JIT.load(Ordering::Relaxed));
    // In a job of several processes every process runs the same program:
    // process 0 speaks for all of them.
    session.interp.quiet = arr_kernels::process::index() > 0
        && std::env::var("ARR_PRINT_ALL").map_or(true, |v| v.trim() != "1");
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        crate::live::start();
        session.interp.out = Box::new(crate::live::print);
        session.interp.progress_bars = crate::progress::factory();
    }
    // Lines from the other processes (ARR_PRINT_ALL, print(all_processes=True))
    // say which process wrote them.
    let p = arr_kernels::process::place();
    if p.index > 0 {
        let prefix = format!("[process {}] ", p.index);
        let mut inner = std::mem::replace(&mut session.interp.out, Box::new(|_| {}));
        let mut at_line_start = true;
        session.interp.out = Box::new(move |s: &str| {
            let mut text = String::with_capacity(s.len() + prefix.len());
            for piece in s.split_inclusive('\n') {
                if at_line_start {
                    text.push_str(&prefix);
                }
                text.push_str(piece);
                at_line_start = piece.ends_with('\n');
            }
            inner(&text)
        });
    }
    let flag = session.interrupt_handle();
    // Errors here mean a handler is already installed (tests); the flag still works.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed));
    session
}

/// Print an error on stderr; in a job of several processes, with the index
/// of the process it happened on (every process reports its own).
pub fn report_error(msg: &str) {
    let p = arr_kernels::process::place();
    let text = if p.count > 1 {
        format!("[process {}] {msg}\n", p.index)
    } else {
        format!("{msg}\n")
    };
    // One write, so the lines of two processes' errors do not interleave.
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

/// Run `f` on the session, turning a panic in a builtin into an error message.
pub fn guarded<T>(f: impl FnOnce() -> arr_runtime::Result<T>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.render()),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!(
                "internal error (a bug in arr, please report it): {}",
                msg.unwrap_or_default()
            ))
        }
    }
}

/// Sources past this size are refused rather than read (and `arr run /dev/zero` ends).
const MAX_SOURCE_BYTES: u64 = 1 << 30;

enum SourceError {
    Io(std::io::Error),
    /// Rendered as the runtime renders a SyntaxError.
    Syntax(String),
}

/// A script's text, read in pieces so that an endless or binary file is
/// refused early: null bytes and bad UTF-8 are SyntaxErrors, as in Python,
/// and a UTF-8 byte-order mark is dropped.
fn read_source(path: &str) -> Result<String, SourceError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(SourceError::Io)?;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let mut reader = file.take(MAX_SOURCE_BYTES + 1);
    let line_of = |bytes: &[u8], at: usize| 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SourceError::Io(e)),
        };
        if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
            let line = line_of(&bytes, bytes.len()) + line_of(&chunk[..i], i) - 1;
            return Err(SourceError::Syntax(format!(
                "SyntaxError: source code cannot contain null bytes at {path}:{line}"
            )));
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > MAX_SOURCE_BYTES {
            return Err(SourceError::Io(std::io::Error::other(format!(
                "larger than {} bytes",
                MAX_SOURCE_BYTES
            ))));
        }
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            Err(SourceError::Syntax(format!(
                "SyntaxError: Non-UTF-8 code starting with '\\x{:02x}' at {path}:{}",
                body[at],
                line_of(body, at)
            )))
        }
    }
}

pub fn run_file(path: &str, args: &[String]) -> ExitCode {
    let text = match read_source(path) {
        Ok(t) => t,
        Err(SourceError::Io(e)) => {
            eprintln!("arr: cannot read '{path}': {e}");
            return ExitCode::from(2);
        }
        Err(SourceError::Syntax(msg)) => {
            report_error(&msg);
            return ExitCode::FAILURE;
        }
    };
    let mut session = new_session();
    let argv = std::iter::once(path.to_string())
        .chain(args.iter().cloned())
        .map(|a| Value::str(&a))
        .collect();
    // A builtin, not a global: `import sys` reads `sys.argv` from the builtins.
    session.interp.set_builtin("argv", Value::list(argv));
    let result = guarded(|| session.run_script(path, &text));
    crate::live::stop();
    end_of_process(session);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            report_error(&msg);
            ExitCode::FAILURE
        }
    }
}

pub fn run_code(code: &str) -> ExitCode {
    let mut session = new_session();
    let code = match guarded(|| session.run_entry_named("<-e>", code)) {
        Ok(Some(v)) => {
            if !session.interp.quiet {
                println!("{}", session.echo(&v, false));
            }
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(msg) => {
            report_error(&msg);
            ExitCode::FAILURE
        }
    };
    end_of_process(session);
    code
}

/// The session of a script or `-e` that ends the process: its memory goes
/// back with the process, not value by value (freeing the library's tens of
/// thousands of values was a twentieth of a short run). Nothing of it is
/// left to write: files write through at once, and no value has a finaliser.
fn end_of_process(session: Session) {
    std::mem::forget(session);
}

/// Statements from a pipe, run entry by entry as the REPL would: values of
/// expressions are echoed, and an error is reported before going on.
pub fn run_stdin() -> ExitCode {
    let mut session = new_session();
    let mut failed = false;
    let mut entry = String::new();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        let line = match lines.next() {
            Some(Ok(l)) => Some(l),
            Some(Err(e)) => {
                eprintln!("arr: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
            None => None,
        };
        let at_end = line.is_none();
        if let Some(l) = &line {
            // A new unindented statement ends a pending block, as a blank line would.
            let starts_statement =
                !l.starts_with([' ', '\t']) && !l.trim().is_empty() && !is_continuation_keyword(l);
            if starts_statement && ends_in_block(&entry) {
                failed |= !run_one(&mut session, &entry);
                entry.clear();
            }
            entry.push_str(l);
            entry.push('\n');
        }
        // An invalid entry is ready too (no line can fix it): run it to
        // report its error, rather than gluing every later line onto it.
        let complete = !matches!(
            arr_lang::check_complete(&entry),
            arr_lang::Completeness::Incomplete { .. }
        );
        if (at_end || (complete && !ends_in_block(&entry))) && !entry.trim().is_empty() {
            failed |= !run_one(&mut session, &entry);
            entry.clear();
        }
        if at_end {
            break;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn is_continuation_keyword(line: &str) -> bool {
    ["else", "elif", "except", "finally"].iter().any(|k| {
        line.starts_with(k)
            && !line[k.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
    })
}

/// Whether the entry ends inside an indented block (more lines may follow).
fn ends_in_block(entry: &str) -> bool {
    if entry.ends_with("\n\n") {
        return false;
    }
    entry
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with([' ', '\t']) || l.trim_end().ends_with(':'))
}

fn run_one(session: &mut Session, entry: &str) -> bool {
    session
        .interrupt_handle()
        .store(false, std::sync::atomic::Ordering::Relaxed);
    match guarded(|| session.run_entry(entry)) {
        Ok(Some(v)) => {
            if !session.interp.quiet {
                println!("{}", session.echo(&v, false));
            }
            true
        }
        Ok(None) => true,
        Err(msg) => {
            report_error(&msg);
            false
        }
    }
}
