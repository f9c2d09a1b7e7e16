//! Evaluator fuzzing without a fuzzing engine: seeded random programs (from
//! `arr_testkit::programs`) piped into `arr` child processes, with a time
//! and a memory budget; any panic (arr's "internal error"), abort, signal
//! or hang fails the test, naming the program that causes it.
//!
//! The default is a short deterministic run. `ARR_EVAL_FUZZ_SECS=600` (and
//! optionally `ARR_EVAL_FUZZ_SEED`) runs for that long instead; build with
//! `--release` for more programs per second.

use arr_testkit::programs::{program, Rng};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one batch of programs did to the process, if anything went wrong.
fn run_batch(programs: &[String], limit: Duration) -> Option<String> {
    let mut input = String::new();
    for p in programs {
        input.push_str(p);
        // A blank line closes any open block: each program is its own entries.
        input.push('\n');
    }
    // The memory budget: 4 GiB of address space, so an allocation the limits
    // let through but the system cannot give is an abort we see.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 4194304 2>/dev/null; exec \"$0\"",
            env!("CARGO_BIN_EXE_arr"),
        ])
        .env("ARR_DEVICES", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arr");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for arr") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let err = reader.join().unwrap_or_default();
    let excerpt = |at: usize| err[at..].chars().take(600).collect::<String>();
    match status {
        None => Some(format!("no result within {limit:?} (a hang)")),
        Some(s) if s.code().is_none() => Some(format!(
            "killed by a signal ({s:?}): {}",
            excerpt(err.len().saturating_sub(600))
        )),
        Some(s) if s.code() != Some(0) && s.code() != Some(1) => Some(format!(
            "exit status {s:?}: {}",
            excerpt(err.len().saturating_sub(600))
        )),
        _ => err
            .find("internal error")
            .map(|at| format!("panic: {}", excerpt(at))),
    }
}

/// Known failure classes being fixed elsewhere: a finding matching one is
/// reported but does not fail the run.
const KNOWN: &[&str] = &[];

fn fuzz(seed: u64, budget: Duration, max_programs: usize) {
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let (mut ran, mut findings, mut known) = (0, Vec::new(), 0);
    while ran < max_programs && start.elapsed() < budget {
        let batch: Vec<String> = (0..50).map(|_| program(&rng.bytes(96))).collect();
        ran += batch.len();
        if run_batch(&batch, Duration::from_secs(120)).is_none() {
            continue;
        }
        // Something went wrong: find the programs that do it on their own.
        for p in &batch {
            if let Some(what) = run_batch(std::slice::from_ref(p), Duration::from_secs(30)) {
                if KNOWN.iter().any(|k| what.contains(k)) {
                    known += 1;
                } else {
                    findings.push(format!("{what}\n--- program:\n{p}"));
                }
            }
        }
    }
    println!(
        "{ran} programs in {:.0?} (seed {seed}), {} findings, {known} of known classes",
        start.elapsed(),
        findings.len()
    );
    assert!(findings.is_empty(), "{}", findings.join("\n\n"));
}

#[test]
fn random_programs_never_panic_abort_or_hang() {
    let seed = std::env::var("ARR_EVAL_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_240_617);
    match std::env::var("ARR_EVAL_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(secs) => fuzz(seed, Duration::from_secs(secs), usize::MAX),
        None => fuzz(seed, Duration::from_secs(60), 1000),
    }
}
