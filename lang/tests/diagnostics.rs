//! Snapshot tests of rendered syntax errors: message, `file:line:col` and caret excerpt.

use arr_lang::{parse, SourceFile};
use expect_test::{expect, Expect};

fn check_error(src: &str, expected: Expect) {
    let file = SourceFile::new("test.arr", src);
    let actual = match parse(&file) {
        Ok(_) => "parsed without errors".to_string(),
        Err(diagnostics) => {
            let rendered: Vec<String> = diagnostics.iter().map(|d| d.render(&file)).collect();
            rendered.join("\n")
        }
    };
    expected.assert_eq(&actual);
}

#[test]
fn unclosed_paren_in_call() {
    check_error(
        "foo(1 2)\n",
        expect![[r#"
            SyntaxError: expected ')' to close the '(' opened at 1:4 at test.arr:1:7
              |
            1 | foo(1 2)
              |       ^"#]],
    );
}

#[test]
fn mismatched_bracket() {
    check_error(
        "x = [1,\n     2)\n",
        expect![[r#"
            SyntaxError: expected ']' to close the '[' opened at 1:5 at test.arr:2:7
              |
            2 |      2)
              |       ^"#]],
    );
}

#[test]
fn never_closed() {
    check_error(
        "y = 1\nfoo(bar[1,\n",
        expect![[r#"
            SyntaxError: '[' was never closed at test.arr:2:8
              |
            2 | foo(bar[1,
              |        ^"#]],
    );
}

#[test]
fn unmatched_closer() {
    check_error(
        "x = )\n",
        expect![[r#"
            SyntaxError: unmatched ')' at test.arr:1:5
              |
            1 | x = )
              |     ^"#]],
    );
}

#[test]
fn unexpected_indent() {
    check_error(
        "x = 1\n    y = 2\n",
        expect![[r#"
            IndentationError: unexpected indent at test.arr:2:1
              |
            2 |     y = 2
              | ^^^^"#]],
    );
}

#[test]
fn inconsistent_dedent() {
    check_error(
        "if x:\n        a = 1\n    b = 2\n",
        expect![[r#"
            IndentationError: unindent does not match any outer indentation level at test.arr:3:1
              |
            3 |     b = 2
              | ^^^^"#]],
    );
}

#[test]
fn missing_indented_block() {
    check_error(
        "def f(x):\nreturn x\n",
        expect![[r#"
            IndentationError: expected an indented block after function definition on line 1 at test.arr:2:1
              |
            2 | return x
              | ^^^^^^"#]],
    );
}

#[test]
fn unexpected_colon() {
    check_error(
        "x = 1:\n",
        expect![[r#"
            SyntaxError: invalid syntax: unexpected ':' at test.arr:1:6
              |
            1 | x = 1:
              |      ^"#]],
    );
}

#[test]
fn unterminated_string() {
    check_error(
        "s = 'abc\nt = 1\n",
        expect![[r#"
            SyntaxError: unterminated string literal at test.arr:1:5
              |
            1 | s = 'abc
              |     ^^^^"#]],
    );
}

#[test]
fn unterminated_triple_quoted_string() {
    check_error(
        "s = 1\nt = \"\"\"abc\n\n",
        expect![[r#"
            SyntaxError: unterminated triple-quoted string literal at test.arr:2:5
              |
            2 | t = """abc
              |     ^^^^^^"#]],
    );
}

#[test]
fn invalid_assignment_targets() {
    check_error(
        "f() = 1\n",
        expect![[r#"
            SyntaxError: cannot assign to function call at test.arr:1:1
              |
            1 | f() = 1
              | ^^^"#]],
    );
    check_error(
        "1 = x\n",
        expect![[r#"
            SyntaxError: cannot assign to literal at test.arr:1:1
              |
            1 | 1 = x
              | ^"#]],
    );
    check_error(
        "a + b += 1\n",
        expect![[r#"
            SyntaxError: cannot assign to expression at test.arr:1:1
              |
            1 | a + b += 1
              | ^^^^^"#]],
    );
    check_error(
        "a, f() = 1, 2\n",
        expect![[r#"
            SyntaxError: cannot assign to function call at test.arr:1:4
              |
            1 | a, f() = 1, 2
              |    ^^^"#]],
    );
    check_error(
        "for f() in xs: pass\n",
        expect![[r#"
            SyntaxError: cannot assign to function call at test.arr:1:5
              |
            1 | for f() in xs: pass
              |     ^^^"#]],
    );
}

#[test]
fn def_without_name() {
    check_error(
        "def (x):\n    pass\n",
        expect![[r#"
            SyntaxError: expected a function name after 'def', found '(' at test.arr:1:5
              |
            1 | def (x):
              |     ^"#]],
    );
}

#[test]
fn integer_too_large() {
    check_error(
        "x = 99999999999999999999\n",
        expect![[r#"
            SyntaxError: integer literal is too large at test.arr:1:5
              |
            1 | x = 99999999999999999999
              |     ^^^^^^^^^^^^^^^^^^^^"#]],
    );
}

#[test]
fn bad_number_literals() {
    check_error(
        "a = 1__0\nb = 0x\nc = 012\nd = 1abc\n",
        expect![[r#"
            SyntaxError: invalid decimal literal at test.arr:1:5
              |
            1 | a = 1__0
              |     ^^^^
            SyntaxError: invalid hexadecimal literal at test.arr:2:5
              |
            2 | b = 0x
              |     ^^
            SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers at test.arr:3:5
              |
            3 | c = 012
              |     ^^^
            SyntaxError: invalid decimal literal at test.arr:4:5
              |
            4 | d = 1abc
              |     ^^^^"#]],
    );
}

#[test]
fn invalid_character() {
    check_error(
        "x = 1 $ 2\n",
        expect![[r#"
            SyntaxError: invalid character '$' (U+0024) at test.arr:1:7
              |
            1 | x = 1 $ 2
              |       ^"#]],
    );
}

#[test]
fn non_ascii_columns() {
    // Columns count characters, so the caret lines up after the accented name.
    check_error(
        "é = (1,\n",
        expect![[r#"
            SyntaxError: '(' was never closed at test.arr:1:5
              |
            1 | é = (1,
              |     ^"#]],
    );
    check_error(
        "s = 'é' +\n",
        expect![[r#"
            SyntaxError: invalid syntax: unexpected end of line at test.arr:1:10
              |
            1 | s = 'é' +
              |          ^"#]],
    );
}

#[test]
fn fstring_errors() {
    check_error(
        "f'{}'\n",
        expect![[r#"
            SyntaxError: f-string: empty expression not allowed at test.arr:1:3
              |
            1 | f'{}'
              |   ^^"#]],
    );
    check_error(
        "f'{x!z}'\n",
        expect![[r#"
            SyntaxError: f-string: invalid conversion character: expected 's', 'r', or 'a' at test.arr:1:6
              |
            1 | f'{x!z}'
              |      ^"#]],
    );
    check_error(
        "f'a } b'\n",
        expect![[r#"
            SyntaxError: f-string: single '}' is not allowed at test.arr:1:5
              |
            1 | f'a } b'
              |     ^"#]],
    );
    check_error(
        "f'{x:{w}}'\n",
        expect![[r#"
            SyntaxError: f-string: nested replacement fields in a format spec are not supported at test.arr:1:6
              |
            1 | f'{x:{w}}'
              |      ^"#]],
    );
    check_error(
        "x = f'{1 +}'\n",
        expect![[r#"
            SyntaxError: f-string: expecting an expression before '}' at test.arr:1:11
              |
            1 | x = f'{1 +}'
              |           ^"#]],
    );
}

#[test]
fn parameter_errors() {
    check_error(
        "def f(a=1, b):\n    pass\n",
        expect![[r#"
            SyntaxError: parameter without a default follows parameter with a default at test.arr:1:12
              |
            1 | def f(a=1, b):
              |            ^"#]],
    );
    check_error(
        "def f(*, **kw):\n    pass\n",
        expect![[r#"
            SyntaxError: named arguments must follow bare * at test.arr:1:7
              |
            1 | def f(*, **kw):
              |       ^"#]],
    );
    check_error(
        "def f(a, a):\n    pass\n",
        expect![[r#"
            SyntaxError: duplicate argument 'a' in function definition at test.arr:1:10
              |
            1 | def f(a, a):
              |          ^"#]],
    );
}

#[test]
fn misc_syntax_errors() {
    check_error(
        "else:\n    pass\n",
        expect![[r#"
            SyntaxError: invalid syntax: unexpected 'else' at test.arr:1:1
              |
            1 | else:
              | ^^^^"#]],
    );
    check_error(
        "x = 1 if y\n",
        expect![[r#"
            SyntaxError: expected 'else' after 'if' expression, found end of line at test.arr:1:11
              |
            1 | x = 1 if y
              |           ^"#]],
    );
    check_error(
        "f(x for x in xs, 1)\n",
        expect![[r#"
            SyntaxError: generator expression must be parenthesized at test.arr:1:3
              |
            1 | f(x for x in xs, 1)
              |   ^^^^^^^^^^^^^"#]],
    );
    check_error(
        "f(a=1, 2)\n",
        expect![[r#"
            SyntaxError: positional argument follows keyword argument at test.arr:1:8
              |
            1 | f(a=1, 2)
              |        ^"#]],
    );
    check_error(
        "x = {1: 2, 3}\n",
        expect![[r#"
            SyntaxError: expected ':' after the dict key, found '}' at test.arr:1:13
              |
            1 | x = {1: 2, 3}
              |             ^"#]],
    );
    check_error(
        "*a\n",
        expect![[r#"
            SyntaxError: cannot use starred expression here at test.arr:1:1
              |
            1 | *a
              | ^^"#]],
    );
}

#[test]
fn too_deeply_nested() {
    let src = format!("x = {}1{}\n", "(".repeat(500), ")".repeat(500));
    let file = SourceFile::new("deep.arr", src.as_str());
    let diagnostics = parse(&file).expect_err("nesting should be refused");
    assert_eq!(diagnostics[0].message, "too deeply nested");
    let src = format!("x = {}1\n", "-".repeat(100_000));
    let diagnostics = parse(&SourceFile::new("deep.arr", src.as_str())).expect_err("refused");
    assert_eq!(diagnostics[0].message, "too deeply nested");
}

#[test]
fn tabs_and_spaces_that_depend_on_the_tab_width() {
    // A tab then eight spaces: the same column with 8-wide tabs, not with 1-wide ones.
    check_error(
        "if x:\n\ta = 1\n        b = 2\n",
        expect![[r#"
            TabError: inconsistent use of tabs and spaces in indentation at test.arr:3:1
              |
            3 |         b = 2
              | ^^^^^^^^"#]],
    );
}

#[test]
fn unknown_unicode_name() {
    check_error(
        "s = \"\\N{foo}\"\n",
        expect![[r#"
            SyntaxError: unknown Unicode character name in \N{foo} at test.arr:1:6
              |
            1 | s = "\N{foo}"
              |      ^^^^^^^"#]],
    );
}

#[test]
fn a_long_line_shows_a_window_around_the_caret() {
    let src = format!("x = [{}]]\n", "1, ".repeat(100_000));
    let file = SourceFile::new("test.arr", &src);
    let diags = parse(&file).unwrap_err();
    let shown = diags[0].render(&file);
    assert!(shown.len() < 600, "{} bytes shown", shown.len());
    // The caret is under the offending bracket, which the window shows.
    let lines: Vec<&str> = shown.lines().collect();
    let (code, caret) = (lines[2], lines[3]);
    let at = caret.find('^').unwrap();
    assert_eq!(&code[at..at + 1], "]", "{shown}");
    assert!(code.starts_with("1 | ..."), "{shown}");
}
