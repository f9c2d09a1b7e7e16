//! Snapshot tests of the AST text of every construct the parser accepts.
//!
//! Update with `UPDATE_EXPECT=1 cargo test -p arr-lang`, then read the diff.

use arr_lang::{parse, pretty, SourceFile};
use expect_test::{expect, Expect};

fn check(src: &str, expected: Expect) {
    let file = SourceFile::new("test.arr", src);
    let actual = match parse(&file) {
        Ok(module) => pretty::module_to_string(&module),
        Err(diagnostics) => {
            let rendered: Vec<String> = diagnostics.iter().map(|d| d.render(&file)).collect();
            panic!("unexpected syntax error:\n{}", rendered.join("\n"))
        }
    };
    expected.assert_eq(&actual);
}

#[test]
fn names_and_literals() {
    check(
        "x\n10_000\n0x1F\n0o17\n0b101\n1.\n.5\n1e-3\n1_000.5e2\nTrue\nFalse\nNone\n...\n",
        expect![[r#"
            (expr (name x))
            (expr (int 10000))
            (expr (int 31))
            (expr (int 15))
            (expr (int 5))
            (expr (float 1.0))
            (expr (float 0.5))
            (expr (float 0.001))
            (expr (float 100050.0))
            (expr (true))
            (expr (false))
            (expr (none))
            (expr (ellipsis))
        "#]],
    );
}

#[test]
fn strings() {
    check(
        r#"'a'
"b\n\t\r\0\\\'\"\x41\u00e9\q"
'''tri
ple'''
r"raw\n"
'con' "cat" '''enated'''
"#,
        expect![[r#"
            (expr (str "a"))
            (expr (str "b\n\t\r\0\\'\"Aé\\q"))
            (expr (str "tri\nple"))
            (expr (str "raw\\n"))
            (expr (str "concatenated"))
        "#]],
    );
}

#[test]
fn fstrings() {
    check(
        r#"f"a {x} b {y!r:>8.3f} {{c}} {f(1, k=2)}"
f'{a}' 'plain' f"{b:08d}"
f"{x + 1!s}"
"#,
        expect![[r#"
            (expr (fstring (lit "a ") (hole (name x)) (lit " b ") (hole (name y) (conv r) (spec ">8.3f")) (lit " {c} ") (hole (call (name f) (int 1) (kw k (int 2))))))
            (expr (fstring (hole (name a)) (lit "plain") (hole (name b) (spec "08d"))))
            (expr (fstring (hole (binop + (name x) (int 1)) (conv s))))
        "#]],
    );
}

#[test]
fn precedence() {
    check(
        "a or b and not c\nx if c else y\na | b ^ c & d << e + f * g\n-x ** 2\n2 ** -1\n2 ** 3 ** 2\n~a @ b // c % d / e\n",
        expect![[r#"
            (expr (or (name a) (and (name b) (unary not (name c)))))
            (expr (ifexp (name c) (name x) (name y)))
            (expr (binop | (name a) (binop ^ (name b) (binop & (name c) (binop << (name d) (binop + (name e) (binop * (name f) (name g))))))))
            (expr (unary - (binop ** (name x) (int 2))))
            (expr (binop ** (int 2) (unary - (int 1))))
            (expr (binop ** (int 2) (binop ** (int 3) (int 2))))
            (expr (binop / (binop % (binop // (binop @ (unary ~ (name a)) (name b)) (name c)) (name d)) (name e)))
        "#]],
    );
}

#[test]
fn comparisons() {
    check(
        "a < b <= c == d != e > f >= g\na in b\na not in b\na is b\na is not b\nnot a in b\n",
        expect![[r#"
        (expr (compare (name a) < (name b) <= (name c) == (name d) != (name e) > (name f) >= (name g)))
        (expr (compare (name a) in (name b)))
        (expr (compare (name a) not in (name b)))
        (expr (compare (name a) is (name b)))
        (expr (compare (name a) is not (name b)))
        (expr (unary not (compare (name a) in (name b))))
    "#]],
    );
}

#[test]
fn lambdas() {
    check(
        "lambda: 0\nlambda a, b=2: a + b\nlambda *args, k, **kw: k\nf(lambda x: x if x else -x)\n",
        expect![[r#"
        (expr (lambda (params) (return (int 0))))
        (expr (lambda (params (param a) (param b (default (int 2)))) (return (binop + (name a) (name b)))))
        (expr (lambda (params (param args varargs) (param k kwonly) (param kw varkwargs)) (return (name k))))
        (expr (call (name f) (lambda (params (param x)) (return (ifexp (name x) (name x) (unary - (name x)))))))
    "#]],
    );
}

#[test]
fn calls_attributes_subscripts() {
    check(
        "f(a, b=1, *args, **kw)\nx.sum(axis=0).T\nf(1,)\nsum(x * x for x in xs)\nx[1, ::2]\nx[None, ..., 0]\nx[1:]\nx[:2]\nx[::]\nx[a:b:c]\nx[:, 1:-1]\nx[i,]\n",
        expect![[r#"
            (expr (call (name f) (name a) (kw b (int 1)) (star (name args)) (dstar (name kw))))
            (expr (attr (call (attr (name x) sum) (kw axis (int 0))) T))
            (expr (call (name f) (int 1)))
            (expr (call (name sum) (genexp (binop * (name x) (name x)) (comp (name x) (name xs)))))
            (expr (subscript (name x) (tuple (int 1) (slice _ _ (int 2)))))
            (expr (subscript (name x) (tuple (none) (ellipsis) (int 0))))
            (expr (subscript (name x) (slice (int 1) _ _)))
            (expr (subscript (name x) (slice _ (int 2) _)))
            (expr (subscript (name x) (slice _ _ _)))
            (expr (subscript (name x) (slice (name a) (name b) (name c))))
            (expr (subscript (name x) (tuple (slice _ _ _) (slice (int 1) (unary - (int 1)) _))))
            (expr (subscript (name x) (tuple (name i))))
        "#]],
    );
}

#[test]
fn displays() {
    check(
        "()\n(1,)\n(1, 2, *rest)\n(a)\n[]\n[1, 2,]\n[*a, b]\n{}\n{'k': v, 1: 2,}\n",
        expect![[r#"
            (expr (tuple))
            (expr (tuple (int 1)))
            (expr (tuple (int 1) (int 2) (starred (name rest))))
            (expr (name a))
            (expr (list))
            (expr (list (int 1) (int 2)))
            (expr (list (starred (name a)) (name b)))
            (expr (dict))
            (expr (dict ((str "k") (name v)) ((int 1) (int 2))))
        "#]],
    );
}

#[test]
fn comprehensions() {
    check(
        "[e for a, b in xs if c]\n[x for row in m for x in row if x if x > 0]\n{k: v for k, v in items}\n(x for x in xs)\n",
        expect![[r#"
            (expr (listcomp (name e) (comp (tuple (name a) (name b)) (name xs) (if (name c)))))
            (expr (listcomp (name x) (comp (name row) (name m)) (comp (name x) (name row) (if (name x)) (if (compare (name x) > (int 0))))))
            (expr (dictcomp (name k) (name v) (comp (tuple (name k) (name v)) (name items))))
            (expr (genexp (name x) (comp (name x) (name xs))))
        "#]],
    );
}

#[test]
fn assignments() {
    check(
        "x = 1\na = b = value\na, b = b, a\n[a, *rest] = xs\n*init, last = xs\nx[i] = v\nobj.attr = v\nx = 1, 2\nt = ()\n",
        expect![[r#"
            (assign (name x) (int 1))
            (assign (name a) (name b) (name value))
            (assign (tuple (name a) (name b)) (tuple (name b) (name a)))
            (assign (list (name a) (starred (name rest))) (name xs))
            (assign (tuple (starred (name init)) (name last)) (name xs))
            (assign (subscript (name x) (name i)) (name v))
            (assign (attr (name obj) attr) (name v))
            (assign (name x) (tuple (int 1) (int 2)))
            (assign (name t) (tuple))
        "#]],
    );
}

#[test]
fn augmented_assignments() {
    check(
        "x += 1\nx -= 1\nx *= 1\nx /= 1\nx //= 1\nx %= 1\nx **= 1\nx @= m\nx &= 1\nx |= 1\nx ^= 1\nx <<= 1\nx >>= 1\nx[0] += 1\n",
        expect![[r#"
            (augassign += (name x) (int 1))
            (augassign -= (name x) (int 1))
            (augassign *= (name x) (int 1))
            (augassign /= (name x) (int 1))
            (augassign //= (name x) (int 1))
            (augassign %= (name x) (int 1))
            (augassign **= (name x) (int 1))
            (augassign @= (name x) (name m))
            (augassign &= (name x) (int 1))
            (augassign |= (name x) (int 1))
            (augassign ^= (name x) (int 1))
            (augassign <<= (name x) (int 1))
            (augassign >>= (name x) (int 1))
            (augassign += (subscript (name x) (int 0)) (int 1))
        "#]],
    );
}

#[test]
fn function_definitions() {
    check(
        r#"def f(x, y=2, *args, k, m=3, **kw):
    """Doc string."""
    return x

def g(a, *, b):
    pass

@jit
@partial(static=1)
def h():
    return 1, 2

def empty(): return
"#,
        expect![[r#"
            (def f (params (param x) (param y (default (int 2))) (param args varargs) (param k kwonly) (param m kwonly (default (int 3))) (param kw varkwargs))
              (docstring "Doc string.")
              (expr (str "Doc string."))
              (return (name x)))
            (def g (params (param a) (param b kwonly))
              (pass))
            (def h (params)
              (decorators (name jit) (call (name partial) (kw static (int 1))))
              (return (tuple (int 1) (int 2))))
            (def empty (params)
              (return))
        "#]],
    );
}

#[test]
fn control_flow() {
    check(
        r#"if a:
    x = 1
elif b:
    x = 2
elif c:
    pass
else:
    x = 3
for i, x in enumerate(xs):
    if x: continue
    break
while n > 0:
    n -= 1
else:
    done()
for x in xs:
    break
else:
    pass
if x: return 1
"#,
        expect![[r#"
            (if (name a)
              (assign (name x) (int 1))
              (else
                (if (name b)
                  (assign (name x) (int 2))
                  (else
                    (if (name c)
                      (pass)
                      (else
                        (assign (name x) (int 3))))))))
            (for (tuple (name i) (name x)) (call (name enumerate) (name xs))
              (if (name x)
                (continue))
              (break))
            (while (compare (name n) > (int 0))
              (augassign -= (name n) (int 1))
              (else
                (expr (call (name done)))))
            (for (name x) (name xs)
              (break)
              (else
                (pass)))
            (if (name x)
              (return (int 1)))
        "#]],
    );
}

#[test]
fn simple_statements() {
    check(
        "def f():\n    global a, b\n    nonlocal c\n    assert x, 'msg'\n    assert y\n    raise\n    raise ValueError('bad')\n    return\na = 1; b = 2;\n",
        expect![[r#"
            (def f (params)
              (global a b)
              (nonlocal c)
              (assert (name x) (str "msg"))
              (assert (name y))
              (raise)
              (raise (call (name ValueError) (str "bad")))
              (return))
            (assign (name a) (int 1))
            (assign (name b) (int 2))
        "#]],
    );
}

#[test]
fn layout() {
    check(
        "x = (1 +\n     2)\ny = [\n  1,\n  2,\n]\nz = 1 + \\\n    2\n\n# comment\n   # indented comment\ndef f():\n\n    # inside\n    return 1  # trailing\n",
        expect![[r#"
            (assign (name x) (binop + (int 1) (int 2)))
            (assign (name y) (list (int 1) (int 2)))
            (assign (name z) (binop + (int 1) (int 2)))
            (def f (params)
              (return (int 1)))
        "#]],
    );
}

#[test]
fn design_example() {
    check(
        r#"x = arange(12.0).reshape(3, 4)
y = x @ x.T + 1
print(y.sum(axis=0), y[1:, ::2], y.shape)

def loss(params, x, y):
    """Mean squared error of a one-hidden-layer net."""
    h = tanh(x @ params["w1"] + params["b1"])
    return mean((h @ params["w2"] - y) ** 2)

@jit
def step(p, x, y):
    return tree_map(lambda a, d: a - 0.1 * d, p, g(p, x, y))

k1, k2 = random.split(random.key(0))
total = pmap(lambda x: psum(sum(x), "i"), axis_name="i")(xs)
w = shard(random.normal(k2, (512, 512)), m, P(None, "model"))
"#,
        expect![[r#"
            (assign (name x) (call (attr (call (name arange) (float 12.0)) reshape) (int 3) (int 4)))
            (assign (name y) (binop + (binop @ (name x) (attr (name x) T)) (int 1)))
            (expr (call (name print) (call (attr (name y) sum) (kw axis (int 0))) (subscript (name y) (tuple (slice (int 1) _ _) (slice _ _ (int 2)))) (attr (name y) shape)))
            (def loss (params (param params) (param x) (param y))
              (docstring "Mean squared error of a one-hidden-layer net.")
              (expr (str "Mean squared error of a one-hidden-layer net."))
              (assign (name h) (call (name tanh) (binop + (binop @ (name x) (subscript (name params) (str "w1"))) (subscript (name params) (str "b1")))))
              (return (call (name mean) (binop ** (binop - (binop @ (name h) (subscript (name params) (str "w2"))) (name y)) (int 2)))))
            (def step (params (param p) (param x) (param y))
              (decorators (name jit))
              (return (call (name tree_map) (lambda (params (param a) (param d)) (return (binop - (name a) (binop * (float 0.1) (name d))))) (name p) (call (name g) (name p) (name x) (name y)))))
            (assign (tuple (name k1) (name k2)) (call (attr (name random) split) (call (attr (name random) key) (int 0))))
            (assign (name total) (call (call (name pmap) (lambda (params (param x)) (return (call (name psum) (call (name sum) (name x)) (str "i")))) (kw axis_name (str "i"))) (name xs)))
            (assign (name w) (call (name shard) (call (attr (name random) normal) (name k2) (tuple (int 512) (int 512))) (name m) (call (name P) (none) (str "model"))))
        "#]],
    );
}

#[test]
fn trailing_commas_and_bare_tuples() {
    check(
        "a, b\na, b,\nx = 1,\ndef f(a, b=1,):\n    return a,\nlambda a, *r,: a\nf(*a, **k,)\nfor i, in xs: pass\n",
        expect![[r#"
            (expr (tuple (name a) (name b)))
            (expr (tuple (name a) (name b)))
            (assign (name x) (tuple (int 1)))
            (def f (params (param a) (param b (default (int 1))))
              (return (tuple (name a))))
            (expr (lambda (params (param a) (param r varargs)) (return (name a))))
            (expr (call (name f) (star (name a)) (dstar (name k))))
            (for (tuple (name i)) (name xs)
              (pass))
        "#]],
    );
}

#[test]
fn fstring_corners() {
    check(
        "f\"{d['k']}\"\nf'''{\n  x\n}'''\nrf'\\d{n}'\nf'{a, b}'\nf'{x:8.3}'\nf'{a != b}'\n",
        expect![[r#"
            (expr (fstring (hole (subscript (name d) (str "k")))))
            (expr (fstring (hole (name x))))
            (expr (fstring (lit "\\d") (hole (name n))))
            (expr (fstring (hole (tuple (name a) (name b)))))
            (expr (fstring (hole (name x) (spec "8.3"))))
            (expr (fstring (hole (compare (name a) != (name b)))))
        "#]],
    );
}

#[test]
fn windows_line_endings_and_tabs() {
    check(
        "if x:\r\n\ty = 1\r\n\tz = 2\r\nw = 3\r\n",
        expect![[r#"
        (if (name x)
          (assign (name y) (int 1))
          (assign (name z) (int 2)))
        (assign (name w) (int 3))
    "#]],
    );
}

#[test]
fn with_spans_helper() {
    let file = SourceFile::new("test.arr", "x = f(1)\n");
    let module = parse(&file).expect("parses");
    expect![[r#"
        (assign (name x)@0..1 (call (name f)@4..5 (int 1)@6..7)@4..8)@0..8
    "#]]
    .assert_eq(&pretty::module_to_string_with_spans(&module));
}
