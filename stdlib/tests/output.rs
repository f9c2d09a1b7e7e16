//! Output builtins seen from a front end: `progress` loops (their values and
//! the notebook's updating display) and tables (text and HTML).

use arr_runtime::{RichOutput, Session, Value};
use expect_test::expect;
use std::cell::RefCell;
use std::rc::Rc;

/// What a notebook would receive: (display_id, update, text/plain, text/html).
type Sent = Rc<RefCell<Vec<(Option<String>, bool, String, String)>>>;

use arr_testkit::run;

fn notebook_session() -> (Session, Sent) {
    let mut s = arr_stdlib::session();
    let sent: Sent = Rc::default();
    let log = sent.clone();
    s.set_rich_output(Box::new(move |o| {
        if let RichOutput::Mime {
            data,
            display_id,
            update,
        } = o
        {
            let get = |m: &str| {
                data.iter()
                    .find(|(k, _)| *k == m)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_default()
            };
            log.borrow_mut()
                .push((display_id, update, get("text/plain"), get("text/html")));
        }
    }));
    (s, sent)
}

fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        other => panic!("not an int: {other:?}"),
    }
}

#[test]
fn a_loop_over_progress_yields_the_same_items() {
    let mut s = arr_stdlib::session();
    run(
        &mut s,
        "t = 0\nfor i in progress(range(5)):\n    t = t + i\n",
    );
    assert_eq!(int(run(&mut s, "t")), 10);
    // Lists, break, continue, comprehensions, and a loop in a hot function.
    run(
        &mut s,
        "u = 0\nfor x in progress([1, 2, 3, 4], desc='xs'):\n    if x == 2:\n        continue\n    if x == 4:\n        break\n    u = u + x\n",
    );
    assert_eq!(int(run(&mut s, "u")), 4);
    assert_eq!(
        int(run(&mut s, "sum([i * i for i in progress(range(4))])")),
        14
    );
    run(
        &mut s,
        "def f(n):\n    a = 0\n    for i in progress(range(n)):\n        a = a + i\n    return a\n",
    );
    for _ in 0..8 {
        assert_eq!(int(run(&mut s, "f(10)")), 45);
    }
    // A progress value passed into a hot function: every call still reports.
    let (mut nb, sent) = notebook_session();
    run(
        &mut nb,
        "def g(p):\n    a = 0.0\n    for i in p:\n        a = a + i\n    return a\n",
    );
    for _ in 0..8 {
        assert_eq!(
            run(&mut nb, "g(progress([1.0, 2.0]))").truthy().ok(),
            Some(true)
        );
    }
    let finals = sent
        .borrow()
        .iter()
        .filter(|m| m.2.starts_with("2/2"))
        .count();
    assert_eq!(finals, 8);
    // Arrays iterate by rows.
    assert_eq!(
        int(run(
            &mut s,
            "n = 0\nfor r in progress(ones((3, 2))):\n    n = n + 1\nn"
        )),
        3
    );
    let err = s.run_entry("progress(3)").expect_err("an error");
    assert!(err.render().contains("not iterable"), "{}", err.render());
}

#[test]
fn a_notebook_gets_one_display_then_updates_ending_at_the_total() {
    let (mut s, sent) = notebook_session();
    run(
        &mut s,
        "t = 0\nfor i in progress(range(5), desc='sum'):\n    t = t + i\n",
    );
    assert_eq!(int(run(&mut s, "t")), 10);
    let sent = sent.borrow();
    assert!(sent.len() >= 2, "{sent:?}");
    let id = sent[0].0.clone().expect("a display id");
    assert!(!sent[0].1, "the first is a display");
    assert_eq!(sent[0].2, "sum: 0/5 [....................]");
    assert!(sent[1..].iter().all(|m| m.1 && m.0.as_ref() == Some(&id)));
    let last = sent.last().expect("a message");
    assert!(
        last.2.starts_with("sum: 5/5 [####################]"),
        "{}",
        last.2
    );
    assert!(
        last.3.contains("<progress value=\"5\" max=\"5\""),
        "{}",
        last.3
    );
}

#[test]
fn a_slow_loop_in_a_notebook_is_updated_at_most_every_100_ms() {
    let (mut s, sent) = notebook_session();
    run(
        &mut s,
        "def wait(s):\n    t0 = perf_counter()\n    while perf_counter() - t0 < s:\n        pass\nfor i in progress(range(6)):\n    wait(0.05)\n",
    );
    let sent = sent.borrow();
    // 300 ms of work: the display, two or three throttled updates, the final one.
    assert!((3..=6).contains(&sent.len()), "{sent:?}");
    assert!(sent.last().expect("a message").2.starts_with("6/6"));
}

#[test]
fn a_loop_that_fails_still_finishes_its_display() {
    let (mut s, sent) = notebook_session();
    assert!(s
        .run_entry("for i in progress(range(5)):\n    if i == 3:\n        1 // 0\n")
        .is_err());
    let sent = sent.borrow();
    assert!(
        sent.last().expect("a message").2.starts_with("3/5"),
        "{sent:?}"
    );
}

fn text(s: &mut Session, src: &str) -> String {
    let v = run(s, src);
    s.repr(&v)
}

#[test]
fn a_dict_of_arrays_as_a_table() {
    let mut s = arr_stdlib::session();
    let t = text(
        &mut s,
        "table({'w': arange(6.0).reshape((2, 3)), 'b': array([1, -2, 4]), 'lr': 0.01, 'name': 'mlp'})",
    );
    expect![[r#"
        ┌──────┬─────────┬────────┬──────┬──────┬──────┐
        │ key  ┆ dtype   ┆ shape  ┆  min ┆  max ┆ mean │
        ╞══════╪═════════╪════════╪══════╪══════╪══════╡
        │ w    ┆ float32 ┆ (2, 3) ┆    0 ┆    5 ┆  2.5 │
        │ b    ┆ int32   ┆ (3,)   ┆   -2 ┆    4 ┆    1 │
        │ lr   ┆ float   ┆ ()     ┆ 0.01 ┆ 0.01 ┆ 0.01 │
        │ name ┆ str     ┆        ┆      ┆      ┆      │
        └──────┴─────────┴────────┴──────┴──────┴──────┘"#]]
    .assert_eq(&t);
}

#[test]
fn a_list_of_dicts_as_a_table() {
    let mut s = arr_stdlib::session();
    let t = text(
        &mut s,
        "table([{'function': 'f', 'ms': 1.25, 'eqns': 12}, {'function': 'loss', 'ms': 30.0, 'eqns': 7, 'note': 'x'}])",
    );
    expect![[r#"
        ┌──────────┬──────┬──────┬──────┐
        │ function ┆   ms ┆ eqns ┆ note │
        ╞══════════╪══════╪══════╪══════╡
        │ f        ┆ 1.25 ┆   12 ┆      │
        │ loss     ┆   30 ┆    7 ┆ x    │
        └──────────┴──────┴──────┴──────┘"#]]
    .assert_eq(&t);
    // jit_stats() has one row per compile, with its reason.
    run(
        &mut s,
        "g = jit(lambda x: x * 2.0 + 1.0)
g(ones(3))
g(ones(4))",
    );
    let t = text(&mut s, "table(jit_stats())");
    let first = t.lines().nth(1).expect("a header");
    assert!(
        first.contains("function") && first.contains("reason"),
        "{t}"
    );
    assert_eq!(t.matches("<lambda>").count(), 2, "{t}");
    let err = s.run_entry("table(3)").expect_err("an error");
    assert!(err.render().contains("table: expected"), "{}", err.render());
}

#[test]
fn the_mesh_report_is_a_table() {
    let mut s = arr_stdlib::session();
    run(&mut s, "set_devices(2)");
    let t = text(&mut s, "mesh_report()");
    expect![[r#"
        2 devices (cpu)
        ┌────────┬──────────┬───────┬────────────┬───────────────┬──────┐
        │ device ┆ resident ┆ steps ┆ compute ms ┆ collective ms ┆ sent │
        ╞════════╪══════════╪═══════╪════════════╪═══════════════╪══════╡
        │ cpu:0  ┆      0 B ┆     0 ┆        0.0 ┆           0.0 ┆  0 B │
        │ cpu:1  ┆      0 B ┆     0 ┆        0.0 ┆           0.0 ┆  0 B │
        └────────┴──────────┴───────┴────────────┴───────────────┴──────┘
        no sharded arrays"#]]
    .assert_eq(&t);
    // A notebook gets the same table as HTML.
    let v = run(&mut s, "mesh_report()");
    let Value::Object(o) = v else {
        panic!("not a table")
    };
    let html = o.html().expect("HTML");
    assert!(
        html.contains("<th>collective ms</th>") && html.contains(">cpu:1</td>"),
        "{html}"
    );
}
