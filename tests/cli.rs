//! End-to-end tests of the `arr` command line without a terminal: `--version`,
//! `--help`, `-e CODE`, `arr run FILE ARGS`, and statements piped on stdin.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn arr() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arr"));
    cmd.env("NO_COLOR", "1")
        .env_remove("ARR_HISTORY")
        .stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the arr binary starts")
}

/// Run `arr` with `input` piped on stdin.
fn run_with_stdin(cmd: &mut Command, input: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arr binary starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("arr finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No Rust panic message and no "internal error" report leaked to the user.
fn assert_no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "panic on stderr:\n{err}");
    assert!(
        !err.contains("internal error"),
        "internal error on stderr:\n{err}"
    );
    assert!(!err.contains("RUST_BACKTRACE"), "panic on stderr:\n{err}");
}

fn write_script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write script");
    path.to_str().expect("utf-8 temp path").to_string()
}

#[test]
fn version_prints_the_package_version() {
    let o = run(arr().arg("--version"));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        stdout(&o).trim(),
        format!("arr {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_mentions_run_and_e() {
    let o = run(arr().arg("--help"));
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(out.contains("Usage:"), "{out}");
    assert!(out.contains("run"), "no `run` subcommand in --help:\n{out}");
    assert!(out.contains("-e"), "no `-e` option in --help:\n{out}");
}

#[test]
fn e_prints_the_value_of_the_expression() {
    let o = run(arr().args(["-e", "6 * 7"]));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "42\n");
    assert_eq!(stderr(&o), "");
}

#[test]
fn e_runs_statements_and_prints_arrays() {
    let o = run(arr().args(["-e", "x = arange(3)\nprint(x.sum())\nx * 2"]));
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("3"), "{out}");
    assert!(
        lines.next().is_some_and(|l| l.starts_with("i32[3]")),
        "no type line:\n{out}"
    );
    assert_eq!(lines.next(), Some("[0 2 4]"), "{out}");
}

#[test]
fn e_runtime_error_exits_nonzero_naming_line_and_column() {
    let o = run(arr().args(["-e", "x = 1\ny = x + undefined_name"]));
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("NameError"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");
    assert!(err.contains(":2:9"), "no line:col 2:9 in:\n{err}");
}

#[test]
fn e_syntax_error_exits_nonzero_with_a_caret() {
    let o = run(arr().args(["-e", "print('not run')\ny = = 2"]));
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "", "nothing runs when the code does not parse");
    let err = stderr(&o);
    assert!(err.contains("SyntaxError"), "{err}");
    assert!(err.contains(":2:5"), "no line:col 2:5 in:\n{err}");
    assert!(err.contains("y = = 2"), "no source line in:\n{err}");
    // The caret stands under column 5 of the excerpt's source line.
    let lines: Vec<&str> = err.lines().collect();
    let src = lines
        .iter()
        .position(|l| l.ends_with("y = = 2"))
        .expect("source line");
    let caret_line = lines.get(src + 1).expect("a caret line under the source");
    let col_of = |l: &str, pat: &str| l.find(pat).expect("found");
    assert_eq!(
        col_of(caret_line, "^"),
        col_of(lines[src], "y = = 2") + 4,
        "caret not under column 5:\n{err}"
    );
}

#[test]
fn shape_error_names_both_shapes() {
    let o = run(arr().args(["-e", "zeros(3) + ones(4)"]));
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    let err = stderr(&o);
    assert!(err.contains("ShapeError"), "{err}");
    assert!(err.contains("f32[3]") && err.contains("f32[4]"), "{err}");
}

#[test]
fn run_passes_arguments_in_argv() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "args.arr", "print(argv)\nprint(len(argv))\n");
    let o = run(arr().args(["run", &script, "a", "b"]));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), format!("['{script}', 'a', 'b']\n3\n"));
}

#[test]
fn run_passes_hyphen_arguments_to_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "args.arr", "print(argv[1:])\n");
    let o = run(arr().args(["run", &script, "-e", "--help", "x"]));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "['-e', '--help', 'x']\n");
}

#[test]
fn run_missing_file_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.arr");
    let o = run(arr().arg("run").arg(&missing));
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("missing.arr"), "{err}");
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn run_error_in_a_function_prints_a_traceback_with_both_frames() {
    let dir = tempfile::tempdir().unwrap();
    let text = "def f(x):\n    return x + nope\n\nprint('before')\ny = f(1)\nprint('after')\n";
    let script = write_script(dir.path(), "boom.arr", text);
    let o = run(arr().args(["run", &script]));
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "before\n");
    let err = stderr(&o);
    assert!(err.contains("Traceback"), "{err}");
    let outer = err
        .find(&format!("{script}:5:5"))
        .unwrap_or_else(|| panic!("no caller frame {script}:5:5 in:\n{err}"));
    let inner = err
        .find(&format!("{script}:2:16"))
        .unwrap_or_else(|| panic!("no callee frame {script}:2:16 in:\n{err}"));
    assert!(outer < inner, "frames not outermost first:\n{err}");
    assert!(err.contains("NameError"), "{err}");
    assert!(err.contains("return x + nope"), "no source line in:\n{err}");
}

#[test]
fn piped_statements_echo_values_and_go_on_after_an_error() {
    let o = run_with_stdin(&mut arr(), "x = 2\nx * 3\nundefined_name\nprint(x)\n");
    assert!(
        !o.status.success(),
        "an error happened, so the exit status is non-zero: {o:?}"
    );
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "6\n2\n");
    let err = stderr(&o);
    assert!(err.contains("NameError"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");
}

#[test]
fn piped_statements_go_on_after_a_syntax_error() {
    // An invalid line is one failing entry, not the start of one that swallows the rest.
    let input = "print(1)\nprint(1 +)\nprint(-9223372036854775808)\nprint(2)\n";
    let o = run_with_stdin(&mut arr(), input);
    assert!(!o.status.success(), "{o:?}");
    assert_no_panic(&o);
    assert_eq!(stdout(&o), "1\n2\n");
    assert_eq!(
        stderr(&o).matches("SyntaxError").count(),
        2,
        "{}",
        stderr(&o)
    );
}

#[test]
fn piped_statements_without_errors_exit_zero() {
    let o = run_with_stdin(&mut arr(), "x = 2\nx * 3\n");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "6\n");
    assert_eq!(stderr(&o), "");
}

#[test]
fn piped_def_then_call_needs_no_blank_line() {
    let input = "def f(x):\n    y = x * 2\n    return y + 1\nf(20)\nprint(f(1))\n";
    let o = run_with_stdin(&mut arr(), input);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "41\n3\n");
    assert_eq!(stderr(&o), "");
}

#[test]
fn piped_if_else_stays_one_statement() {
    let input = "x = 5\nif x > 3:\n    print('big')\nelse:\n    print('small')\nx + 1\n";
    let o = run_with_stdin(&mut arr(), input);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "big\n6\n");
}

#[test]
fn piped_block_at_end_of_input_runs() {
    let o = run_with_stdin(&mut arr(), "for i in range(3):\n    print(i)");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "0\n1\n2\n");
}

/// The width and height in a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn plots_are_saved_and_shown_as_files_in_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("p.png");
    let svg = dir.path().join("p.svg");
    let code = format!(
        "figure(size=(4, 3))\nplot(arange(10.0), arange(10.0) ** 2, label='sq')\n\
         scatter([1, 2], [3, 4])\ntitle('t')\nlegend()\nsavefig({png:?})\nsavefig({svg:?})\nshow()"
    );
    let o = run(arr().arg("-e").arg(&code));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(png_size(&std::fs::read(&png).unwrap()), (400, 300));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // show() in a terminal writes the image to a file and prints its path.
    let out = stdout(&o);
    let shown = out
        .trim()
        .strip_prefix("image written to ")
        .unwrap_or_else(|| panic!("{out}"));
    let bytes = std::fs::read(shown).unwrap();
    assert_eq!(png_size(&bytes), (400, 300));
    let _ = std::fs::remove_file(shown);
    let o = run(arr().args(["-e", "imshow(ones(3))"]));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("imshow needs a 2-D array"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn matplotlib_pyplot_draws_with_arrs_figures() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("m.png");
    let code = format!(
        "import matplotlib.pyplot as plt\nimport jax.numpy as jnp\nt = jnp.linspace(0, 1, 20)\n\
         fig, ax = plt.subplots(1, 2, figsize=(5, 2))\nax[0].plot(t, t ** 2, 'r-', label='sq', lw=2)\n\
         ax[0].legend(loc='best')\nax[1].imshow(jnp.ones((3, 3)))\nax[1].set_title('ones')\n\
         print(fig, repr(plt.plot(t)[0]).split(' at ')[0])\nplt.savefig({png:?})"
    );
    let o = run(arr().arg("-e").arg(&code));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "Figure(500x200) <matplotlib.lines.Line2D"
    );
    assert_eq!(png_size(&std::fs::read(&png).unwrap()), (500, 200));
}

#[test]
fn the_number_of_devices_comes_from_the_flag_the_environment_or_set_devices() {
    let o = run(arr().args(["--devices", "3", "-e", "device_count()"]));
    assert_eq!(stdout(&o).trim(), "3", "{o:?}");
    let o = run(arr().env("ARR_DEVICES", "5").args(["-e", "device_count()"]));
    assert_eq!(stdout(&o).trim(), "5", "{o:?}");
    // At run time, without a restart; pmap then has that many devices.
    let o = run(arr().args([
        "-e",
        "set_devices(16)\npmap(lambda a: psum(a, 'i'), axis_name='i')(ones(16))[0]",
    ]));
    assert_eq!(stdout(&o).trim(), "f32[] 16.0", "{o:?}");
    let o = run(arr().args(["--devices", "0", "-e", "1"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("between 1 and 1024"), "{o:?}");
    assert_no_panic(&o);
}

#[test]
fn many_small_values_spend_the_memory_limit_and_the_session_goes_on() {
    // No one allocation is large: the live bytes as a whole pass the limit.
    let input = "keep = 41\n\
                 a = [[i] for i in range(10**8)]\n\
                 b = []\n\
                 while True:\n    b.append({'k': [1, 2]})\n\n\
                 b = None\n\
                 print(keep + 1)\n";
    let o = run_with_stdin(arr().env("ARR_MEMORY_LIMIT", "200M"), input);
    assert_no_panic(&o);
    let err = stderr(&o);
    assert_eq!(
        err.matches("MemoryError: out of memory").count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("over the memory limit of 209715200 bytes"),
        "{err}"
    );
    assert!(err.contains("at <entry 2>:1:5"), "{err}");
    assert_eq!(stdout(&o), "42\n");
}

#[test]
fn script_text_is_read_as_python_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    // A byte-order mark is dropped; null bytes and bad UTF-8 are SyntaxErrors.
    let bom = write_script(dir.path(), "bom.arr", "\u{feff}print(1)\n");
    let o = run(arr().args(["run", &bom]));
    assert_eq!((stdout(&o).as_str(), o.status.code()), ("1\n", Some(0)));
    std::fs::write(dir.path().join("nul.arr"), b"x = 1\ny = \0\n").unwrap();
    let o = run(arr().args(["run", dir.path().join("nul.arr").to_str().unwrap()]));
    assert!(stderr(&o).contains("SyntaxError: source code cannot contain null bytes at"));
    assert!(stderr(&o).contains("nul.arr:2"), "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(1));
    std::fs::write(dir.path().join("latin1.arr"), b"s = '\xe9'\n").unwrap();
    let o = run(arr().args(["run", dir.path().join("latin1.arr").to_str().unwrap()]));
    assert!(stderr(&o).contains("SyntaxError: Non-UTF-8 code starting with '\\xe9'"));
    // An endless file is refused at its first null byte, not read forever.
    let o = run(arr().args(["run", "/dev/zero"]));
    assert!(stderr(&o).contains("null bytes"), "{}", stderr(&o));
    // Tabs whose meaning depends on the tab width.
    let tabs = write_script(dir.path(), "tabs.arr", "if True:\n\tx = 1\n        y = 2\n");
    let o = run(arr().args(["run", &tabs]));
    assert!(stderr(&o).contains("TabError: inconsistent use of tabs and spaces in indentation at"));
    assert_no_panic(&o);
}
