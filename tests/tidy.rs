//! Tidiness checks of the source tree that no compiler makes: ARCHITECTURE.md
//! stays a map (short, its code map naming every source file, each
//! invariant naming a test that exists), and every module says what it owns.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under the crates' `src/` folders, relative to the root.
fn source_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable source folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = root();
    let mut files = Vec::new();
    for krate in [
        "lang", "runtime", "kernels", "stdlib", "repl", "bench", "testkit",
    ] {
        walk(&root.join(krate).join("src"), &mut files);
    }
    let mut names: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    names.sort();
    names
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// The code map's rows: the text of each table row after the `## Code map` heading.
fn code_map_rows(text: &str) -> Vec<String> {
    let start = text.find("## Code map").expect("a '## Code map' section");
    let rest = &text[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| path"))
        .map(str::to_string)
        .collect()
}

/// The top-level folders a full path starts with.
const ROOTS: [&str; 9] = [
    "lang/",
    "runtime/",
    "kernels/",
    "stdlib/",
    "repl/",
    "bench/",
    "testkit/",
    "tests/",
    "examples/",
];

/// The paths a row names in backticks: a full path (`runtime/src/prim/mod.rs`)
/// or a folder (`runtime/src/spmd/`) followed by the file names in it.
fn named_paths(row: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut folder = String::new();
    for (i, part) in row.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let part = part.trim();
        if part.ends_with('/') {
            folder = part.to_string();
        } else if part.contains('/') {
            // A full path, or one relative to the row's folder (`display/sharding.rs`).
            let full = if ROOTS.iter().any(|r| part.starts_with(r)) {
                part.to_string()
            } else {
                format!("{folder}{part}")
            };
            if let Some(cut) = full.rfind('/') {
                if ROOTS.iter().any(|r| part.starts_with(r)) {
                    folder = full[..=cut].to_string();
                }
            }
            out.insert(full);
        } else if part.ends_with(".rs") {
            out.insert(format!("{folder}{part}"));
        }
    }
    out
}

#[test]
fn architecture_is_a_short_map() {
    let text = architecture();
    let lines = text.lines().count();
    assert!(
        lines <= 150,
        "ARCHITECTURE.md has {lines} lines; it is a map: at most 150"
    );
}

#[test]
fn code_map_names_every_source_file() {
    let text = architecture();
    let named: BTreeSet<String> = code_map_rows(&text)
        .iter()
        .flat_map(|r| named_paths(r))
        .collect();
    let files = source_files();
    let missing: Vec<&String> = files.iter().filter(|f| !named.contains(*f)).collect();
    assert!(
        missing.is_empty(),
        "source files missing from ARCHITECTURE.md's code map: {missing:#?}"
    );
    let stale: Vec<&String> = named
        .iter()
        .filter(|n| n.ends_with(".rs") && !files.contains(n))
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md's code map names files that do not exist: {stale:#?}"
    );
}

#[test]
fn every_invariant_names_a_test_that_exists() {
    let text = architecture();
    let start = text
        .find("## Invariants")
        .expect("an '## Invariants' section");
    let rest = &text[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    // Every function of the workspace's test files, by name.
    let mut tests = BTreeSet::new();
    let mut stack = vec![root()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable folder").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                // In test folders every function counts (so the bodies of
                // `proptest!` blocks are found); elsewhere, `#[test]` ones.
                let in_tests = path.components().any(|c| c.as_os_str() == "tests");
                let src = std::fs::read_to_string(&path).unwrap_or_default();
                let mut after_test_attr = false;
                for line in src.lines() {
                    let line = line.trim_start();
                    if line.starts_with("#[test]") {
                        after_test_attr = true;
                    }
                    if let Some(rest) = line.strip_prefix("fn ") {
                        if in_tests || after_test_attr {
                            tests.insert(rest.split(['(', '<']).next().unwrap_or("").to_string());
                        }
                        after_test_attr = false;
                    }
                }
            }
        }
    }
    let mut count = 0;
    for item in rest[..end].split("\n* ").skip(1) {
        let checked_by = item
            .split("(test: ")
            .nth(1)
            .and_then(|t| t.split(')').next())
            .unwrap_or_else(|| panic!("invariant without '(test: NAME)': {item}"));
        for name in checked_by.split(',') {
            let name = name.trim().trim_matches('`');
            assert!(
                tests.contains(name),
                "the invariant '{}' names test `{name}`, which does not exist",
                item.lines().next().unwrap_or("")
            );
        }
        count += 1;
    }
    assert!(count > 0, "no invariants found");
}

#[test]
fn every_module_says_what_it_owns() {
    for file in source_files() {
        let src = std::fs::read_to_string(root().join(&file)).expect("readable");
        assert!(
            src.starts_with("//!"),
            "{file} does not begin with a `//!` line saying what it owns"
        );
    }
}

#[test]
fn only_kernels_name_the_cpu_backend() {
    // Everything else reaches kernels through `arr_kernels::backend::of`, so
    // a GPU backend is one more implementation of the trait.
    for file in source_files() {
        if file.starts_with("kernels/") {
            continue;
        }
        let src = std::fs::read_to_string(root().join(&file)).expect("readable");
        for (i, line) in src.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("cpu::"),
                "{file}:{}: names `cpu::` outside kernels/: {line}",
                i + 1
            );
        }
    }
}

#[test]
fn unsafe_lives_in_kernels_with_a_safety_comment() {
    for file in source_files() {
        let src = std::fs::read_to_string(root().join(&file)).expect("readable");
        let lines: Vec<&str> = src.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let is_unsafe = code.contains("unsafe {") || code.contains("unsafe impl");
            if !is_unsafe {
                continue;
            }
            assert!(
                file.starts_with("kernels/"),
                "{file}:{}: `unsafe` outside kernels/",
                i + 1
            );
            let above = &lines[i.saturating_sub(8)..=i];
            assert!(
                above.iter().any(|l| l.contains("SAFETY:")),
                "{file}:{}: `unsafe` without a `// SAFETY:` comment just above",
                i + 1
            );
        }
    }
}

#[test]
fn kernels_depend_on_no_language_crate() {
    let manifest =
        std::fs::read_to_string(root().join("kernels/Cargo.toml")).expect("kernels/Cargo.toml");
    for dep in ["arr-lang", "arr-runtime", "arr-stdlib"] {
        assert!(
            !manifest.contains(dep),
            "kernels/ depends on {dep}: it must never see values or primitives"
        );
    }
}
