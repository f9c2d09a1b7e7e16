//! `check_complete` (the REPL's "need more lines?"), `highlight`, and node spans.

use arr_lang::ast::{ExprKind, StmtKind};
use arr_lang::{check_complete, highlight, parse, Completeness, SourceFile, TokenClass};

fn incomplete(indent: &str) -> Completeness {
    Completeness::Incomplete {
        indent: indent.to_string(),
    }
}

fn is_invalid(text: &str) -> bool {
    matches!(check_complete(text), Completeness::Invalid(_))
}

#[test]
fn complete_entries() {
    assert_eq!(check_complete(""), Completeness::Complete);
    assert_eq!(check_complete("   \n  "), Completeness::Complete);
    assert_eq!(check_complete("x = 1"), Completeness::Complete);
    assert_eq!(check_complete("x = 1\ny = 2"), Completeness::Complete);
    assert_eq!(check_complete("# just a comment"), Completeness::Complete);
    assert_eq!(check_complete("if x: y = 1"), Completeness::Complete);
    assert_eq!(check_complete("x = (1,\n     2)"), Completeness::Complete);
    assert_eq!(check_complete("s = '''a\nb'''"), Completeness::Complete);
}

#[test]
fn block_headers_wait_for_a_body() {
    assert_eq!(check_complete("def f(x):"), incomplete("    "));
    assert_eq!(
        check_complete("def f(x):\n    return x"),
        incomplete("    ")
    );
    assert_eq!(
        check_complete("def f(x):\n    return x\n"),
        Completeness::Complete
    );
    assert_eq!(
        check_complete("def f(x):\n    return x\n   "),
        Completeness::Complete
    );
    assert_eq!(
        check_complete("def f(x):\n    if x:"),
        incomplete("        ")
    );
    assert_eq!(
        check_complete("def f(x):\n    if x:\n        y\n    # note"),
        incomplete("        ")
    );
    assert_eq!(check_complete("if x:\n    pass\nelse:"), incomplete("    "));
    assert_eq!(check_complete("for i in xs:  # loop"), incomplete("    "));
    assert_eq!(check_complete("@jit"), incomplete(""));
}

#[test]
fn open_constructs_wait() {
    assert_eq!(check_complete("foo(1,"), incomplete(""));
    assert_eq!(check_complete("x = [1,\n  2,"), incomplete(""));
    assert_eq!(check_complete("def f():\n    x = {"), incomplete("    "));
    assert_eq!(check_complete("x = 1 + \\"), incomplete(""));
    assert_eq!(check_complete("'''abc"), incomplete(""));
    assert_eq!(check_complete("def f():\n    \"\"\"doc"), incomplete(""));
}

#[test]
fn hopeless_entries_are_invalid() {
    assert!(is_invalid("x = )"));
    assert!(is_invalid("x +"));
    assert!(is_invalid("'abc"));
    assert!(is_invalid("foo(1 2,"));
    assert!(is_invalid("  x = 1"));
    assert!(is_invalid("def f(x):\nreturn x"));
    assert!(is_invalid("x = $"));
    match check_complete("x = )") {
        Completeness::Invalid(diagnostics) => assert_eq!(diagnostics[0].message, "unmatched ')'"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn slice(text: &str, span: arr_lang::Span) -> &str {
    &text[span.start as usize..span.end as usize]
}

#[test]
fn spans_cover_source_text() {
    let text = "x = 1\nif a:\n    y = f(b, c=2) + z[1:2]\n    # c\n\ndef g(p, q=1):\n    return (p,\n            q)\n";
    let file = SourceFile::new("spans.arr", text);
    let module = parse(&file).expect("parses");
    let [assign, if_stmt, def] = &module.body[..] else {
        panic!("three statements")
    };
    assert_eq!(slice(text, assign.span), "x = 1");
    assert_eq!(file.line_col(if_stmt.span.start).to_string(), "2:1");
    assert_eq!(
        slice(text, if_stmt.span),
        "if a:\n    y = f(b, c=2) + z[1:2]"
    );
    let StmtKind::If { body, .. } = &if_stmt.kind else {
        panic!("if")
    };
    let StmtKind::Assign { value, .. } = &body[0].kind else {
        panic!("assign")
    };
    assert_eq!(slice(text, value.span), "f(b, c=2) + z[1:2]");
    assert_eq!(file.line_col(value.span.start).to_string(), "3:9");
    let ExprKind::Binary { left, right, .. } = &value.kind else {
        panic!("binary")
    };
    assert_eq!(slice(text, left.span), "f(b, c=2)");
    let ExprKind::Subscript { index, .. } = &right.kind else {
        panic!("subscript")
    };
    assert_eq!(slice(text, index.span), "1:2");
    assert_eq!(file.line_col(index.span.start).to_string(), "3:23");
    assert_eq!(file.line_col(def.span.start).to_string(), "6:1");
    assert_eq!(file.line_col(def.span.end).to_string(), "8:15");
    let StmtKind::FunctionDef(function) = &def.kind else {
        panic!("def")
    };
    assert_eq!(slice(text, function.params[1].name.span), "q");
    let StmtKind::Return(Some(tuple)) = &function.body[0].kind else {
        panic!("return")
    };
    assert_eq!(slice(text, tuple.span), "(p,\n            q)");
}

#[test]
fn fstring_hole_spans_point_into_the_source() {
    let text = "s = f'ab {x + 1:>4} {y!r}'\n";
    let module = parse(&SourceFile::new("f.arr", text)).expect("parses");
    let StmtKind::Assign { value, .. } = &module.body[0].kind else {
        panic!("assign")
    };
    let ExprKind::FString(parts) = &value.kind else {
        panic!("fstring")
    };
    let holes: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            arr_lang::ast::FStringPart::Hole { expr, .. } => Some(slice(text, expr.span)),
            arr_lang::ast::FStringPart::Literal(_) => None,
        })
        .collect();
    assert_eq!(holes, ["x + 1", "y"]);
}

#[test]
fn highlight_classifies_every_token() {
    let text = "def f(x):  # doc\n    return x ** 2 + 'a' $";
    let classes: Vec<(&str, TokenClass)> = highlight(text)
        .into_iter()
        .map(|(span, class)| (slice(text, span), class))
        .collect();
    assert_eq!(
        classes,
        [
            ("def", TokenClass::Keyword),
            ("f", TokenClass::Name),
            ("(", TokenClass::Punctuation),
            ("x", TokenClass::Name),
            (")", TokenClass::Punctuation),
            (":", TokenClass::Punctuation),
            ("# doc", TokenClass::Comment),
            ("return", TokenClass::Keyword),
            ("x", TokenClass::Name),
            ("**", TokenClass::Operator),
            ("2", TokenClass::Number),
            ("+", TokenClass::Operator),
            ("'a'", TokenClass::String),
            ("$", TokenClass::Unknown),
        ]
    );
}

#[test]
fn highlight_unterminated_string_runs_to_the_end() {
    let text = "x = '''abc\ndef";
    let last = highlight(text).pop().expect("tokens");
    assert_eq!(last.1, TokenClass::String);
    assert_eq!(slice(text, last.0), "'''abc\ndef");
}
