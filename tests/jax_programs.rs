//! JAX programs run unmodified: every `tests/jax_programs/NAME.py` and
//! `tests/jax_more_programs/NAME.py` (a JAX
//! program, imports and all, with JAX's own output in `NAME.expected`) runs
//! with `arr run` and is compared with JAX's numbers by the suite's own
//! `check.py`. The programs arr cannot run yet are listed in
//! `tests/jax_programs_failing.txt`; that list only shrinks: a program not on
//! it must pass, and one on it that passes must leave it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Each program's verdict from `check.py`, of the copied suite and of this
/// project's own (`tests/jax_more_programs`): name -> None (passed) or the
/// reason it failed.
fn verdicts() -> BTreeMap<String, Option<String>> {
    let mut all = verdicts_in("jax_programs", 100);
    all.extend(verdicts_in("jax_more_programs", 15));
    all
}

fn verdicts_in(folder: &str, at_least: usize) -> BTreeMap<String, Option<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests")
        .join(folder);
    let python = std::env::var("ARR_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .arg(dir.join("check.py"))
        .arg(env!("CARGO_BIN_EXE_arr"))
        .args(["-j", "2"])
        .output()
        .expect("python3 runs check.py (it needs only the standard library)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut verdicts = BTreeMap::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("PASS ") {
            verdicts.insert(name.to_string(), None);
        } else if let Some(rest) = line.strip_prefix("FAIL ") {
            let (name, why) = rest.split_once(": ").unwrap_or((rest, ""));
            verdicts.insert(name.to_string(), Some(why.to_string()));
        }
    }
    assert!(
        verdicts.len() >= at_least,
        "check.py reported {} programs:\n{text}\n{}",
        verdicts.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    verdicts
}

#[test]
fn jax_programs_print_jaxs_numbers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/jax_programs_failing.txt");
    let listed = std::fs::read_to_string(&path).unwrap_or_default();
    let listed: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let verdicts = verdicts();
    let regressions: Vec<String> = verdicts
        .iter()
        .filter(|(name, why)| why.is_some() && !listed.contains(&name.as_str()))
        .map(|(name, why)| format!("{name}: {}", why.as_deref().unwrap_or_default()))
        .collect();
    let fixed: Vec<&String> = verdicts
        .iter()
        .filter(|(name, why)| why.is_none() && listed.contains(&name.as_str()))
        .map(|(name, _)| name)
        .collect();
    let passed = verdicts.values().filter(|w| w.is_none()).count();
    eprintln!(
        "jax programs: {passed} of {} print JAX's numbers",
        verdicts.len()
    );
    assert!(
        regressions.is_empty() && fixed.is_empty(),
        "tests/jax_programs_failing.txt is out of date.\nFailing, not listed:\n  {}\nPassing now, remove from the list: {fixed:?}",
        regressions.join("\n  ")
    );
}

/// Programs whose output must equal JAX's character for character, not
/// only in its numbers: what the checker ignores (`weak_type=True` in
/// reprs, dtypes, tracer types) is what they are about.
const EXACT: &[&str] = &[
    "weak_types",
    "sharp_bits",
    "api_modes",
    "collections_builtins",
    "enum_generics",
    "generators",
    "init_subclass_abc",
    "re_module",
    "edge_values",
    "x64_truncation",
    "numpy_defaults",
];

#[test]
fn exact_programs_print_what_jax_prints() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/jax_more_programs");
    for name in EXACT {
        let out = Command::new(env!("CARGO_BIN_EXE_arr"))
            .arg("run")
            .arg(dir.join(format!("{name}.py")))
            .output()
            .expect("arr runs");
        let expected = std::fs::read_to_string(dir.join(format!("{name}.expected")))
            .expect("the program's expected output");
        let got = String::from_utf8_lossy(&out.stdout);
        let diff: Vec<String> = expected
            .lines()
            .zip(got.lines().chain(std::iter::repeat("<missing>")))
            .enumerate()
            .filter(|(_, (e, g))| e != g)
            .map(|(i, (e, g))| format!("line {}:\n  JAX: {e}\n  arr: {g}", i + 1))
            .collect();
        assert!(
            diff.is_empty() && got.lines().count() == expected.lines().count(),
            "{name}: arr's output differs from JAX's:\n{}\nstderr:\n{}",
            diff.join("\n"),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
