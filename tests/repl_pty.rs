//! End-to-end tests of the interactive `arr` REPL, driven through a pseudo-terminal
//! (rexpect): multi-line entries, tab completion, errors, Ctrl-C, Ctrl-D, help and history.
#![cfg(unix)]

use rexpect::process::WaitStatus;
use rexpect::session::{spawn_with_options, Options, PtySession};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Every wait for output gives up after this long (the test machines are slow and shared).
const TIMEOUT_MS: u64 = 10_000;
const PROMPT: &str = "arr> ";
const CONTINUATION: &str = "...> ";

struct Repl {
    session: PtySession,
    /// Holds the history file, unless the test gave its own.
    _dir: Option<tempfile::TempDir>,
}

impl Repl {
    /// The REPL without colours, with a fresh history file; escape codes are
    /// stripped from what it prints.
    fn start() -> Repl {
        Repl::start_with(false, None)
    }

    /// With `color`, the escape codes are kept in what the tests read.
    fn start_with(color: bool, history: Option<PathBuf>) -> Repl {
        let (dir, history) = match history {
            Some(h) => (None, h),
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let h = dir.path().join("history");
                (Some(dir), h)
            }
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arr"));
        cmd.env("ARR_HISTORY", &history).env("TERM", "xterm");
        if color {
            cmd.env_remove("NO_COLOR");
        } else {
            cmd.env("NO_COLOR", "1");
        }
        let options = Options::new()
            .timeout_ms(Some(TIMEOUT_MS))
            .strip_ansi_escape_codes(!color);
        let session = spawn_with_options(cmd, options).expect("spawn arr in a pty");
        let mut repl = Repl { session, _dir: dir };
        let banner = repl.expect(PROMPT);
        assert!(
            banner.contains(&format!("arr {}", env!("CARGO_PKG_VERSION"))),
            "no banner: {banner:?}"
        );
        repl
    }

    /// Wait for `needle`; returns what came before it.
    fn expect(&mut self, needle: &str) -> String {
        match self.session.exp_string(needle) {
            Ok(before) => before,
            Err(e) => panic!("waiting for {needle:?}: {e}"),
        }
    }

    /// Type `text` without pressing Enter.
    fn type_text(&mut self, text: &str) {
        self.session.send(text).expect("write to the pty");
        self.session.flush().expect("flush the pty");
    }

    fn control(&mut self, c: char) {
        self.session.send_control(c).expect("write to the pty");
    }

    /// Type `line` and Enter at the main prompt; returns what the entry printed
    /// (without the echo of the line itself) up to the next main prompt.
    fn enter(&mut self, line: &str) -> String {
        self.type_text(&format!("{line}\r"));
        printed(&self.expect(PROMPT))
    }

    /// Type `line` and Enter where a continuation prompt must follow.
    fn enter_more(&mut self, line: &str) {
        self.type_text(&format!("{line}\r"));
        let before = self.expect(CONTINUATION);
        assert!(
            !before.contains(PROMPT),
            "the entry ended early: {before:?}"
        );
    }

    /// Ctrl-D at an empty prompt; the REPL must exit with status 0.
    fn exit_with_ctrl_d(mut self) {
        self.control('d');
        self.session.exp_eof().expect("arr closes the terminal");
        match self.session.process().wait() {
            Ok(WaitStatus::Exited(_, code)) => assert_eq!(code, 0, "exit status after Ctrl-D"),
            other => panic!("arr did not exit normally: {other:?}"),
        }
    }
}

/// What an entry printed: drop the echoed input line, and turn the terminal's
/// "\r\n" line ends into "\n".
fn printed(raw: &str) -> String {
    let after_echo = raw.split_once('\n').map_or("", |(_, rest)| rest);
    after_echo.replace('\r', "")
}

#[test]
fn multi_line_def_then_call() {
    let mut r = Repl::start();
    r.enter_more("def f(x):");
    // The continuation line starts auto-indented: the body is typed without indentation.
    r.enter_more("y = x * 2");
    r.enter_more("return y + 1");
    // An empty line (only the auto-indent) ends the block; defining prints nothing.
    assert_eq!(r.enter(""), "");
    assert_eq!(r.enter("f(20)"), "41\n");
    assert_eq!(r.enter("f(arange(3.0))"), "f32[3]\n[1. 3. 5.]\n");
    r.exit_with_ctrl_d();
}

#[test]
fn nested_blocks_and_brackets_continue() {
    let mut r = Repl::start();
    r.enter_more("for i in range(3):");
    r.enter_more("if i > 0:");
    // Inside the `if`, the auto-indent is two levels; an empty line at that
    // depth still ends the whole entry.
    r.enter_more("print(i * 10)");
    assert_eq!(r.enter(""), "10\n20\n");
    r.enter_more("xs = [1,");
    assert_eq!(r.enter("2, 3]"), "");
    assert_eq!(r.enter("len(xs)"), "3\n");
    r.exit_with_ctrl_d();
}

#[test]
fn tab_completes_global_names_and_attributes() {
    let mut r = Repl::start();
    r.type_text("lins\t");
    r.expect("linspace");
    // The completion is in the line itself, not only on the screen.
    assert_eq!(r.enter("(0, 1, 5)"), "f32[5]\n[0.   0.25 0.5  0.75 1.  ]\n");

    assert_eq!(r.enter("x = arange(6)"), "");
    r.type_text("x.res\t");
    r.expect("x.reshape");
    assert_eq!(r.enter("(2, 3)"), "i32[2,3]\n[[0 1 2]\n [3 4 5]]\n");

    r.type_text("random.nor\t");
    r.expect("random.normal");
    assert_eq!(r.enter("(random.key(0), (2, 5)).shape"), "(2, 5)\n");
    r.exit_with_ctrl_d();
}

#[test]
fn an_error_does_not_end_the_session() {
    let mut r = Repl::start();
    assert_eq!(r.enter("a = ones(2) * 3"), "");
    let err = r.enter("zeros(3) + ones(4)");
    assert!(err.starts_with("ShapeError"), "{err}");
    assert!(err.contains("f32[3]") && err.contains("f32[4]"), "{err}");
    assert!(
        err.contains("zeros(3) + ones(4)"),
        "no source line in the report: {err}"
    );
    let err = r.enter("undefined_name + 1");
    assert!(err.starts_with("NameError"), "{err}");
    let err = r.enter("b = = 1");
    assert!(err.contains("SyntaxError"), "{err}");
    // Later entries still run, and earlier variables survive.
    assert_eq!(r.enter("6 * 7"), "42\n");
    assert_eq!(r.enter("a"), "f32[2]\n[3. 3.]\n");
    r.exit_with_ctrl_d();
}

#[test]
fn ctrl_c_interrupts_a_computation_and_keeps_the_variables() {
    let mut r = Repl::start();
    assert_eq!(r.enter("i = 0"), "");
    assert_eq!(r.enter("keep = arange(4)"), "");
    r.enter_more("while True:");
    r.enter_more("i = i + 1");
    // The empty line starts the loop; give the editor time to leave raw mode,
    // so that 0x03 becomes SIGINT instead of a key press.
    r.type_text("\r");
    r.expect("\n");
    std::thread::sleep(Duration::from_millis(1000));
    r.control('c');
    let report = r.expect(PROMPT).replace('\r', "");
    assert!(
        report.trim_start().starts_with("KeyboardInterrupt"),
        "{report}"
    );
    assert!(
        report.contains("while True:"),
        "no source line in the report: {report}"
    );
    assert_eq!(r.enter("i > 0"), "True\n");
    assert_eq!(r.enter("len(keep)"), "4\n");
    // The interrupt flag was reset: the next computation runs to its end.
    r.enter_more("for k in range(1000):");
    r.enter_more("i = i + 1");
    assert_eq!(r.enter(""), "");
    assert_eq!(r.enter("1 + 1"), "2\n");
    r.exit_with_ctrl_d();
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_line() {
    let mut r = Repl::start();
    r.type_text("zzz_undefined");
    r.control('c');
    r.expect(PROMPT);
    // Had the half-typed text stayed, this would be a NameError.
    assert_eq!(r.enter("6 * 7"), "42\n");
    // In a continuation, Ctrl-C drops the whole entry and goes back to the main prompt.
    r.enter_more("def g():");
    r.type_text("return 1");
    r.control('c');
    r.expect(PROMPT);
    let err = r.enter("g()");
    assert!(err.starts_with("NameError"), "{err}");
    r.exit_with_ctrl_d();
}

#[test]
fn ctrl_d_exits_with_status_zero() {
    let r = Repl::start();
    r.exit_with_ctrl_d();
}

#[test]
fn quit_command_exits_with_status_zero() {
    let mut r = Repl::start();
    r.type_text(":quit\r");
    r.session.exp_eof().expect("arr closes the terminal");
    match r.session.process().wait() {
        Ok(WaitStatus::Exited(_, code)) => assert_eq!(code, 0),
        other => panic!("arr did not exit normally: {other:?}"),
    }
}

#[test]
fn help_and_time_commands() {
    let mut r = Repl::start();
    let doc = r.enter("?linspace");
    assert!(doc.starts_with("linspace(start, stop"), "{doc}");
    let doc = r.enter("help(zeros)");
    assert!(doc.starts_with("zeros(shape"), "{doc}");
    assert!(doc.contains("zeros"), "{doc}");
    let timed = r.enter(":time 6 * 7");
    let mut lines = timed.lines();
    assert_eq!(lines.next(), Some("42"), "{timed}");
    assert!(
        lines.next().is_some_and(|l| l.starts_with("time: ")),
        "{timed}"
    );
    let help = r.enter(":help");
    assert!(help.contains(":time") && help.contains("Ctrl-C"), "{help}");
    r.exit_with_ctrl_d();
}

#[test]
fn ir_command_prints_the_traced_graph() {
    let mut r = Repl::start();
    r.enter("f = lambda x: sin(x) * 2.0");
    let ir = r.enter(":ir grad(f)(1.0)");
    assert!(ir.starts_with("{ lambda ; a:f32[]. let"), "{ir}");
    assert!(ir.contains("cos a") && ir.contains("mul"), "{ir}");
    let bad = r.enter(":ir 3");
    assert!(bad.contains(":ir needs a call"), "{bad}");
    let err = r.enter(":ir f(undefined_name)");
    assert!(err.contains("NameError"), "{err}");
    r.exit_with_ctrl_d();
}

#[test]
fn why_and_ir_pass_commands_explain_jit() {
    let mut r = Repl::start();
    r.enter("f = jit(lambda x: x * 1.0 + x * 1.0)");
    r.enter("a = f(ones(3))");
    r.enter("b = f(ones(4))");
    let why = r.enter(":why f");
    assert!(why.contains("compile 1: first call"), "{why}");
    assert!(
        why.contains("compile 2: array argument 0 changed type: f32[3] -> f32[4]"),
        "{why}"
    );
    let traced = r.enter(":ir --pass traced f(ones(2))");
    assert_eq!(traced.matches(" = mul ").count(), 2, "{traced}");
    let simplified = r.enter(":ir --pass cse f(ones(2))");
    assert!(!simplified.contains("mul"), "{simplified}");
    let bad = r.enter(":ir --pass nosuch f(ones(2))");
    assert!(bad.contains("no pass named 'nosuch'"), "{bad}");
    let not_jitted = r.enter(":why print");
    assert!(not_jitted.contains("not a jitted function"), "{not_jitted}");
    r.exit_with_ctrl_d();
}

#[test]
fn jit_command_shows_what_automatic_jit_compiled() {
    let mut r = Repl::start();
    r.enter("inc = lambda x: x * 2.0 + 1.0");
    r.enter("ys = [inc(ones(3)) for i in range(10)]");
    r.enter("shout = lambda x: print(x)");
    r.enter("zs = [shout(ones(2)) for i in range(6)]");
    let report = r.enter(":jit");
    assert!(report.contains("automatic JIT is on"), "{report}");
    assert!(
        report
            .contains("compiled     function <lambda> (<entry 1>:1:7) after 5 calls for (f32[3])"),
        "{report}"
    );
    assert!(
        report.contains("interpreted  function <lambda> (<entry 3>:1:9) after 5 calls for (f32[2]): line 1: calls print, which has an effect"),
        "{report}"
    );
    r.exit_with_ctrl_d();
}

#[test]
fn entries_are_saved_to_the_history_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let history = dir.path().join("history");
    let mut r = Repl::start_with(false, Some(history.clone()));
    assert_eq!(r.enter("hist_probe = 41"), "");
    assert_eq!(r.enter("hist_probe + 1"), "42\n");
    r.exit_with_ctrl_d();
    let text = std::fs::read_to_string(&history).expect("history file written");
    assert!(
        text.contains("hist_probe = 41") && text.contains("hist_probe + 1"),
        "{text}"
    );

    // A new session recalls the previous one's entries with the Up arrow.
    let mut r = Repl::start_with(false, Some(history));
    r.type_text("\x1b[A\x1b[A");
    r.expect("hist_probe = 41");
    assert_eq!(r.enter(""), "");
    assert_eq!(r.enter("hist_probe + 1"), "42\n");
    r.exit_with_ctrl_d();
}

#[test]
fn colours_on_still_show_the_text() {
    let mut r = Repl::start_with(true, None);
    r.type_text("6 * 7\r");
    let raw = r.expect("\n42\r\n");
    // The echoed input is coloured (numbers in cyan), the value is plain text.
    assert!(
        raw.contains("\x1b[36m6\x1b[0m"),
        "no highlighting in {raw:?}"
    );
    r.expect(PROMPT);
    r.type_text("zeros(3) + ones(4)\r");
    r.expect("ShapeError: cannot broadcast f32[3] with f32[4]");
    r.expect(PROMPT);
    r.exit_with_ctrl_d();
}

#[test]
fn a_plot_is_written_to_a_file_whose_path_is_printed() {
    let mut r = Repl::start();
    let shown = r.enter("plot(arange(5.0) ** 2)");
    let path = shown
        .trim()
        .strip_prefix("image written to ")
        .unwrap_or_else(|| panic!("{shown:?}"));
    let bytes = std::fs::read(path).expect("the plot file exists");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let _ = std::fs::remove_file(path);
    // Nothing new was drawn: the next entry shows no plot.
    assert_eq!(r.enter("1 + 1"), "2\n");
    r.exit_with_ctrl_d();
}

/// A pmap loop that runs for a few seconds shows one line per device,
/// updated in place, and the lines are gone when the prompt comes back;
/// what the loop prints appears whole in between.
#[test]
fn live_device_view_during_a_long_pmap_loop() {
    let mut repl = Repl::start();
    repl.enter("f = pmap(lambda a: psum(a @ a, 'i'), axis_name='i')");
    repl.enter("x = ones((4, 192, 192))");
    repl.enter("t0 = perf_counter()");
    repl.type_text(
        "ys = [print('thirty') if i == 30 else f(x) for i in range(200000) if perf_counter() - t0 < 3.0]\r",
    );
    let _ = repl.expect("thirty");
    let shown = repl.expect("steps");
    let _ = shown;
    let view = repl.expect("sent");
    assert!(
        view.contains("compute") && view.contains("collectives"),
        "{view:?}"
    );
    let rest = repl.expect(PROMPT);
    // After the prompt, a new entry prints normally (the view is gone).
    let out = repl.enter("print('after', ys[-1][0, 0, 0])");
    assert!(out.contains("after 768.0"), "{rest:?} / {out:?}");
    repl.exit_with_ctrl_d();
}

/// `progress(...)` in a slow loop draws a bar (position/total, rate) on the
/// terminal's stderr, cleared when the loop ends; the loop's result is right.
#[test]
fn progress_bar_during_a_slow_loop() {
    let mut repl = Repl::start();
    repl.enter_more("for i in progress(range(20), desc='work'):");
    // A busy wait (there is no sleep); continuation lines are auto-indented.
    repl.enter_more("t0 = perf_counter()");
    repl.enter_more("while perf_counter() - t0 < 0.05:");
    repl.enter_more("pass");
    repl.type_text("\r");
    let bar = repl.expect("/20");
    assert!(bar.contains("work: "), "{bar:?}");
    let rest = repl.expect(PROMPT);
    assert!(rest.contains("/s"), "the rate: {rest:?}");
    assert_eq!(repl.enter("i"), "19\n");
    repl.exit_with_ctrl_d();
}

/// Start `long` (a statement that would run for minutes), interrupt it with
/// Ctrl-C once it runs, and check that KeyboardInterrupt is reported within
/// 2 s, that `long` assigned nothing, and that the session goes on: `after`
/// prints `want`. Returns the time from Ctrl-C to the report.
fn interrupt_long_statement(r: &mut Repl, long: &str, after: &str, want: &str) -> Duration {
    r.type_text(&format!("{long}\r"));
    r.expect("\n");
    // Into the computation (its trace and compile included), and out of
    // the editor's raw mode, so that 0x03 becomes SIGINT.
    std::thread::sleep(Duration::from_millis(2500));
    let start = std::time::Instant::now();
    r.control('c');
    let before = r.expect("KeyboardInterrupt");
    let took = start.elapsed();
    let report = r.expect(PROMPT).replace('\r', "");
    let after_echo = before.rsplit(long).next().unwrap_or_default();
    assert!(
        !after_echo.contains(PROMPT),
        "{long}: the statement ended before the interrupt: {before:?}"
    );
    // The statement's line is in the traceback (printed before the
    // exception's name when the interrupt lands in a function it calls,
    // a traced one included) or in the message itself.
    let shown = format!("{before}{report}").replace('\r', "");
    let traceback = format!("in <module>\n    {}", long.trim());
    assert!(
        report.contains(long.trim()) || shown.contains(&traceback),
        "{long}: no source line in the report: {shown}"
    );
    assert!(
        took < Duration::from_secs(2),
        "{long}: stopped {took:?} after Ctrl-C"
    );
    eprintln!("{long}: stopped {took:?} after Ctrl-C");
    let err = r.enter("y");
    assert!(
        err.starts_with("NameError"),
        "{long}: y was assigned: {err}"
    );
    assert_eq!(r.enter("keep"), "41\n", "{long}");
    assert_eq!(r.enter(after), want, "{long}: then {after}");
    took
}

/// Enter a line that defines something (it may wrap on the terminal, so its
/// echo is not one line): it must print no error.
fn define(r: &mut Repl, line: &str) {
    r.type_text(&format!("{line}\r"));
    let out = r.expect(PROMPT);
    assert!(!out.contains("Error"), "{line}: {out}");
}

#[test]
fn ctrl_c_stops_every_kind_of_program_within_2_s() {
    let mut r = Repl::start();
    define(&mut r, "keep = 41");
    // Eager: one statement of 8000 big matrix products.
    define(&mut r, "x = ones((1500, 1500)) / 1500.0");
    interrupt_long_statement(
        &mut r,
        "y = [(x @ x @ x @ x @ x @ x @ x @ x).sum() for _ in range(1000)]",
        "(x @ x).shape",
        "(1500, 1500)\n",
    );
    // Compiled: a jit'd fori_loop of products.
    define(&mut r, "a = ones((300, 300)) / 300.0");
    let looped = "lambda n: jit(lambda a: fori_loop(0, n, lambda i, c: tanh(c @ a), a))";
    define(&mut r, &format!("f = {looped}"));
    interrupt_long_statement(&mut r, "y = f(1000000)(a)", "f(3)(a).shape", "(300, 300)\n");
    // pmap: a fori_loop with a psum every iteration on every device; the
    // devices run the next pmap as usual.
    define(&mut r, "xs = ones((8, 200, 200)) / 200.0");
    let body = "lambda i, c: psum(tanh(c @ a), 'i') / 8.0";
    let pm = format!("lambda n: pmap(lambda a: fori_loop(0, n, {body}, a), axis_name='i')");
    define(&mut r, &format!("g = {pm}"));
    interrupt_long_statement(
        &mut r,
        "y = g(1000000)(xs)",
        "g(3)(xs).shape",
        "(8, 200, 200)\n",
    );
    // shard_map on a mesh, a psum over it every iteration.
    define(&mut r, "m = mesh((8,), ('d',))");
    let body = "lambda i, c: psum(tanh(c @ c.T @ c), 'd') / 8.0";
    let sm =
        format!("lambda n: shard_map(lambda b: fori_loop(0, n, {body}, b), m, P('d'), P('d'))");
    define(&mut r, &format!("h = {sm}"));
    define(&mut r, "b = ones((64, 200)) / 200.0");
    interrupt_long_statement(&mut r, "y = h(1000000)(b)", "h(3)(b).shape", "(64, 200)\n");
    // Sharded jit: the partitioner inserts the collectives of `mean`.
    define(&mut r, "s = NamedSharding(m, P('d'))");
    let body = "lambda i, c: tanh(c @ c.T @ c) * 0.5 + mean(c)";
    let sj = format!(
        "lambda n: jit(lambda a: fori_loop(0, n, {body}, a), in_shardings=s, out_shardings=s)"
    );
    define(&mut r, &format!("k = {sj}"));
    interrupt_long_statement(&mut r, "y = k(1000000)(b)", "k(3)(b).shape", "(64, 200)\n");
    // A long trace: a Python loop of a million steps inside a jit'd function.
    r.enter_more("def long(a, n):");
    r.enter_more("for i in range(n):");
    r.enter_more("a = a * 1.0001 + 0.5");
    r.type_text("\x08\x08\x08\x08");
    r.enter_more("return a");
    define(&mut r, "");
    interrupt_long_statement(
        &mut r,
        "y = jit(long, static_argnums=1)(ones(3), 1000000)",
        "jit(long, static_argnums=1)(zeros(2), 2).shape",
        "(2,)\n",
    );
    r.exit_with_ctrl_d();
}

#[test]
fn keys_typed_while_a_line_runs_are_kept() {
    let mut r = Repl::start();
    assert_eq!(r.enter("x = ones((1500, 1500)) / 1500.0"), "");
    // Long enough (about 1 s here) that the keys below arrive while it
    // runs, short enough to finish inside the timeout on a loaded machine.
    r.type_text("t = [(x @ x @ x).sum() for _ in range(6)]\r");
    r.expect("\n");
    std::thread::sleep(Duration::from_millis(300));
    // Typed (or pasted without brackets) while the line runs.
    r.type_text("b1 = 1\rb2 = 2\rb1 + b2 + 100\r");
    let before = r.expect("103");
    assert!(!before.contains("Error"), "{before}");
    r.expect(PROMPT);
    assert_eq!(r.enter("len(t)"), "6\n");
    // A bracketed paste of several lines runs as the lines pasted.
    r.type_text("\x1b[200~p1 = 1\rp2 = 2\rp1 + p2 + 200\r\x1b[201~\r");
    let before = r.expect("203");
    assert!(!before.contains("Error"), "{before}");
    r.expect(PROMPT);
    assert_eq!(r.enter("p1 + p2"), "3\n");
    r.exit_with_ctrl_d();
}
