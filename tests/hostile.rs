//! The hostile-input suite: every row of `tests/hostile.txt` through the
//! front ends that do not need Jupyter — each case as its own script, all
//! of them in one REPL session in a pseudo-terminal (a variable defined
//! first must survive them all), and the allocation cases again as scripts
//! under `ulimit -v`. Each must give its Python error with a `file:line:col`
//! and exit status 1 (never a signal or a panic), or print its value. The
//! Jupyter kernel runs the same table in tests/jupyter.rs.

use arr_testkit::hostile::{self, Case, Expect};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A case that runs longer than this has failed (and is stopped). The
/// slowest cases build a container up to the memory limit (a dict of ~15
/// million items: 9-12 s alone on a 2-core machine, three times that while
/// the other suites of this file run beside it), so the bound leaves room
/// for a slow machine under load; a case that hangs still fails.
const CASE_TIMEOUT: Duration = Duration::from_secs(90);
/// The sessions' bound on one allocation (`ARR_MEMORY_LIMIT`), so that a
/// request the machine could just about satisfy still fails fast.
const MEMORY_LIMIT: &str = "1G";
/// The address-space bound of the memory-limited run (`ulimit -v`, KiB):
/// arr starts and runs small programs well under it.
const ULIMIT_KIB: u64 = 2_000_000;
/// The most an error report may print: a 1 MB line is not echoed whole.
const MAX_OUTPUT: usize = 100 * 1024;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cases() -> Vec<Case> {
    let text =
        std::fs::read_to_string(root().join("tests/hostile.txt")).expect("tests/hostile.txt");
    hostile::parse(&text)
}

/// A fresh folder with the fixture files the load cases read.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, bytes) in hostile::fixtures() {
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    dir
}

/// What a finished (or stopped) process gave.
struct Ran {
    /// The exit code; None if a signal ended it (or the timeout did).
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn describe(&self) -> String {
        let clip = |s: &str| -> String {
            if s.len() > 2000 {
                let mut end = 2000;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}… ({} bytes)", &s[..end], s.len())
            } else {
                s.to_string()
            }
        };
        format!(
            "exit code {:?}, signal {:?}{}\n  stdout: {:?}\n  stderr: {:?}",
            self.code,
            self.signal,
            if self.timed_out { ", timed out" } else { "" },
            clip(&self.stdout),
            clip(&self.stderr)
        )
    }
}

fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arr starts");
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for arr") {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for arr");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    use std::os::unix::process::ExitStatusExt;
    Ran {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Why a script's result is not what the case expects, if it is not.
fn check_script(case: &Case, file: &str, r: &Ran) -> Result<(), String> {
    if r.timed_out {
        return Err("did not finish".into());
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        return Err("panicked".into());
    }
    if r.stderr.len() + r.stdout.len() > MAX_OUTPUT {
        return Err("printed more than 100 KiB".into());
    }
    match &case.expect {
        Expect::Printed(want) => {
            if r.code != Some(0) || &r.stdout != want {
                return Err(format!("expected exit 0 printing {want:?}"));
            }
        }
        Expect::Error { kinds, contains } => {
            if r.code != Some(1) {
                return Err(format!("expected {} with exit status 1", kinds.join("/")));
            }
            if !hostile::names_error(&r.stderr, kinds) {
                return Err(format!("expected {}", kinds.join("/")));
            }
            if !r.stderr.to_lowercase().contains(contains.as_str()) {
                return Err(format!("expected a message containing {contains:?}"));
            }
            if !hostile::has_place(&r.stderr, file) {
                return Err(format!("no {file}:LINE:COL in the report"));
            }
        }
    }
    Ok(())
}

/// Run `cases` as scripts on two threads (the test machines have few cores); `command` makes the command
/// that runs one script file (named relative to `dir`, the working folder).
fn run_scripts(
    front_end: &str,
    dir: &Path,
    cases: &[&Case],
    command: &(dyn Fn(&str) -> Command + Sync),
) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let file = format!("case{}.arr", case.line);
                std::fs::write(dir.join(&file), format!("{}\n", case.code)).unwrap();
                let r = run_with_timeout(command(&file).current_dir(dir), CASE_TIMEOUT);
                if let Err(why) = check_script(case, &file, &r) {
                    failures.lock().unwrap().push((
                        case.line,
                        format!(
                            "[{front_end}] {}\n  {why}; got {}",
                            case.label(),
                            r.describe()
                        ),
                    ));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    failures.into_iter().map(|(_, f)| f).collect()
}

fn report(front_end: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {total} hostile cases failed ({front_end}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn hostile_inputs_as_scripts() {
    let all = cases();
    assert!(all.len() >= 170, "only {} cases", all.len());
    let cases: Vec<&Case> = all.iter().filter(|c| !c.mem_only).collect();
    let dir = workdir("scripts");
    let failures = run_scripts("script", &dir, &cases, &|file| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arr"));
        cmd.args(["run", file])
            .env("NO_COLOR", "1")
            .env("ARR_MEMORY_LIMIT", MEMORY_LIMIT);
        cmd
    });
    report("script", cases.len(), &failures);
}

#[test]
fn hostile_allocation_cases_under_ulimit_raise_memory_error() {
    let all = cases();
    let cases: Vec<&Case> = all.iter().filter(|c| c.mem).collect();
    assert!(cases.len() >= 40, "only {} allocation cases", cases.len());
    let dir = workdir("ulimit");
    let failures = run_scripts("ulimit -v", &dir, &cases, &|file| {
        let mut cmd = Command::new("bash");
        cmd.args([
            "-c",
            &format!("ulimit -v {ULIMIT_KIB} && exec \"$0\" run \"$1\""),
            env!("CARGO_BIN_EXE_arr"),
            file,
        ])
        .env("NO_COLOR", "1")
        .env_remove("ARR_MEMORY_LIMIT");
        cmd
    });
    report("ulimit -v", cases.len(), &failures);
}

#[test]
fn hostile_script_that_never_ends_is_refused() {
    let r = run_with_timeout(
        Command::new(env!("CARGO_BIN_EXE_arr")).args(["run", "/dev/zero"]),
        Duration::from_secs(10),
    );
    assert!(
        !r.timed_out && r.code == Some(1) && !r.stderr.contains("panicked"),
        "arr run /dev/zero: {}",
        r.describe()
    );
}

#[cfg(unix)]
mod repl {
    use super::*;
    use rexpect::session::{spawn_with_options, Options, PtySession};

    const PROMPT: &str = "arr> ";

    struct Repl {
        session: PtySession,
        _dir: tempfile::TempDir,
    }

    impl Repl {
        fn start(dir: &Path) -> Repl {
            let home = tempfile::tempdir().unwrap();
            // A wide terminal, so that no entry's echo wraps (a wrapped line
            // is redrawn with its prompt, which would end the wait early).
            let mut cmd = Command::new("bash");
            cmd.args([
                "-c",
                "stty cols 4000 rows 50 && exec \"$0\"",
                env!("CARGO_BIN_EXE_arr"),
            ]);
            cmd.env("ARR_HISTORY", home.path().join("history"))
                .env("TERM", "xterm")
                .env("NO_COLOR", "1")
                .env("ARR_MEMORY_LIMIT", MEMORY_LIMIT)
                .current_dir(dir);
            let options = Options::new()
                .timeout_ms(Some(CASE_TIMEOUT.as_millis() as u64))
                .strip_ansi_escape_codes(true);
            let session = spawn_with_options(cmd, options).expect("spawn arr in a pty");
            let mut r = Repl {
                session,
                _dir: home,
            };
            r.session
                .exp_string(PROMPT)
                .expect("the REPL's first prompt");
            let out = r.entry("keep = 41").expect("keep = 41");
            assert!(!out.contains("Error"), "keep = 41: {out}");
            r
        }

        fn send(&mut self, text: &str) {
            self.session.send(text).expect("write to the pty");
            self.session.flush().expect("flush the pty");
        }

        /// Type one line and Enter; what came back up to the next prompt
        /// (the echo of the line dropped), or why nothing did.
        fn entry(&mut self, line: &str) -> Result<String, String> {
            self.send(&format!("{line}\r"));
            self.wait_for(PROMPT).map(|raw| {
                let raw = raw.replace('\r', "");
                raw.split_once('\n')
                    .map_or(String::new(), |(_, r)| r.to_string())
            })
        }

        /// Paste several lines (a bracketed paste, as a terminal sends
        /// them) and end any open block; what they printed, up to a marker.
        fn paste(&mut self, code: &str) -> Result<String, String> {
            let lines: Vec<&str> = code.lines().collect();
            self.send(&format!("\x1b[200~{}\x1b[201~\r\r", lines.join("\r")));
            // The echo of the marker's line is not the marker.
            self.send("print('<<' + 'pasted>>')\r");
            let out = self.wait_for("<<pasted>>")?;
            self.wait_for(PROMPT)?;
            // Up to the marker's echo, without the prompts of the empty lines.
            let out = out.replace('\r', "");
            let out = out
                .rsplit_once("print('<<'")
                .map_or(out.as_str(), |(o, _)| o);
            let mut lines: Vec<&str> = out.lines().collect();
            while lines
                .last()
                .is_some_and(|l| l.trim().is_empty() || l.trim() == "arr>")
            {
                lines.pop();
            }
            Ok(lines.iter().map(|l| format!("{l}\n")).collect())
        }

        fn wait_for(&mut self, needle: &str) -> Result<String, String> {
            self.session.exp_string(needle).map_err(|e| e.to_string())
        }

        /// After a timeout: Ctrl-C, and whether the prompt came back.
        fn interrupt(&mut self) -> bool {
            self.session.send_control('c').is_ok() && self.wait_for(PROMPT).is_ok()
        }

        fn keep_survives(&mut self) -> Result<(), String> {
            match self.entry("print(keep)") {
                Ok(out) if out.ends_with("41\n") => Ok(()),
                Ok(out) => Err(format!("print(keep) printed {out:?}")),
                Err(e) => Err(format!("print(keep): {e}")),
            }
        }
    }

    fn check(case: &Case, out: &str) -> Result<(), String> {
        if out.contains("panicked") || out.contains("RUST_BACKTRACE") {
            return Err("panicked".into());
        }
        if out.len() > MAX_OUTPUT {
            return Err("printed more than 100 KiB".into());
        }
        match &case.expect {
            Expect::Printed(want) => {
                if !out.ends_with(want.as_str()) || out.contains("Error:") {
                    return Err(format!("expected it to print {want:?}"));
                }
            }
            Expect::Error { kinds, contains } => {
                if !hostile::names_error(out, kinds) {
                    return Err(format!("expected {}", kinds.join("/")));
                }
                if !out.to_lowercase().contains(contains.as_str()) {
                    return Err(format!("expected a message containing {contains:?}"));
                }
                if !hostile::has_line_col(out) {
                    return Err("no LINE:COL in the report".into());
                }
            }
        }
        Ok(())
    }

    #[test]
    fn hostile_inputs_in_one_repl_session() {
        let all = cases();
        let cases: Vec<&Case> = all.iter().filter(|c| !c.mem_only && !c.no_repl).collect();
        let dir = workdir("repl");
        let mut r = Repl::start(&dir);
        let mut failures = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            let result = if case.code.contains('\n') {
                r.paste(&case.code)
            } else {
                r.entry(&case.code)
            };
            match result {
                Ok(out) => {
                    if let Err(why) = check(case, &out) {
                        failures.push(format!("[repl] {}\n  {why}; got {out:?}", case.label()));
                    }
                }
                Err(e) => {
                    let alive = r.interrupt();
                    failures.push(format!(
                        "[repl] {}\n  no prompt came back ({e}); {}",
                        case.label(),
                        if alive {
                            "Ctrl-C brought it back"
                        } else {
                            "the session is gone: restarted"
                        }
                    ));
                    if !alive {
                        r = Repl::start(&dir);
                        continue;
                    }
                }
            }
            if i % 20 == 19 || i + 1 == cases.len() {
                if let Err(e) = r.keep_survives() {
                    failures.push(format!(
                        "[repl] after {}\n  keep did not survive: {e}; restarted",
                        case.label()
                    ));
                    r = Repl::start(&dir);
                }
            }
        }
        report("repl", cases.len(), &failures);
    }
}
