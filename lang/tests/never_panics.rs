//! Property tests: `parse`, `check_complete` and `highlight` never panic, and
//! every span they report lies within the text, on character boundaries.

use arr_lang::{check_complete, highlight, parse, Completeness, SourceFile, Span};
use proptest::prelude::*;

/// Pieces of arr source that, strung together at random, reach the corners
/// of the lexer and parser (layout, brackets, strings, f-strings, keywords).
const FRAGMENTS: &[&str] = &[
    "def",
    "f",
    "(",
    ")",
    ":",
    "\n",
    "    ",
    "  ",
    "\t",
    "lambda",
    "[",
    "]",
    "{",
    "}",
    "**",
    "*",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    "f\"{",
    "f'",
    "r'",
    "}",
    "{{",
    "!r",
    ":>8",
    "x",
    "1",
    "0x",
    "1e",
    ".5",
    "_",
    "=",
    "+=",
    ",",
    ";",
    ".",
    "...",
    "@",
    "if",
    "else",
    "elif",
    "for",
    "in",
    "not",
    "is",
    "and",
    "or",
    "while",
    "return",
    "pass",
    "break",
    "global",
    "assert",
    "raise",
    "None",
    "True",
    "#",
    "\\",
    "\\\n",
    "-",
    "~",
    "//",
    "é",
    "\r\n",
    "$",
    "1_000",
    "99999999999999999999",
    "a.b",
    "x[1:2, ::3]",
    "\\x4",
    "\\u12",
];

fn fragments() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|parts| parts.join(""))
}

fn check_span(text: &str, span: Span) {
    let (start, end) = (span.start as usize, span.end as usize);
    assert!(
        start <= end && end <= text.len(),
        "span {span:?} outside text of {} bytes",
        text.len()
    );
    assert!(
        text.is_char_boundary(start) && text.is_char_boundary(end),
        "span {span:?} splits a character"
    );
}

fn check_all(text: &str) {
    let file = SourceFile::new("prop.arr", text);
    match parse(&file) {
        Ok(module) => {
            let _ = arr_lang::pretty::module_to_string(&module);
            for stmt in &module.body {
                check_span(text, stmt.span);
            }
        }
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty());
            for diagnostic in &diagnostics {
                check_span(text, diagnostic.span);
                let _ = diagnostic.render(&file);
            }
        }
    }
    if let Completeness::Invalid(diagnostics) = check_complete(text) {
        for diagnostic in &diagnostics {
            check_span(text, diagnostic.span);
        }
    }
    let mut previous_end = 0;
    for (span, _) in highlight(text) {
        check_span(text, span);
        assert!(
            span.start >= previous_end,
            "highlight spans overlap at {span:?}"
        );
        previous_end = span.end;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        check_all(&text);
    }

    #[test]
    fn fragment_sequences(text in fragments()) {
        check_all(&text);
    }

    #[test]
    fn printable_ascii(text in "[ -~\n]{0,60}") {
        check_all(&text);
    }
}

#[test]
fn deep_nesting_of_every_kind() {
    let deep = [
        "(".repeat(10_000),
        "[".repeat(10_000),
        "{".repeat(10_000),
        "-".repeat(10_000) + "x",
        "not ".repeat(10_000) + "x",
        "x".to_string() + &"**x".repeat(10_000),
        "lambda: ".repeat(10_000) + "x",
        "x if y else ".repeat(10_000) + "x",
        "f(".repeat(10_000),
        "x".to_string() + &"[0".repeat(10_000),
        "f'{".repeat(2_000),
        (0..300)
            .map(|i| format!("{}if x:\n", " ".repeat(i)))
            .collect::<String>(),
    ];
    for text in &deep {
        check_all(text);
    }
}

#[test]
fn nesting_limit_fits_a_small_stack() {
    // Just under and over the limit, on a 512 KiB stack: the limit, not the
    // stack, is what stops deep input.
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            for depth in [95, 99, 100, 101, 150] {
                let text = format!(
                    "x = {}f(a)[1]{}",
                    "(-".repeat(depth / 2),
                    ")".repeat(depth / 2)
                );
                check_all(&text);
                let text = format!("x = f'{{{}1{}}}'", "[".repeat(depth), "]".repeat(depth));
                check_all(&text);
            }
        })
        .expect("spawn");
    handle.join().expect("no stack overflow");
}
