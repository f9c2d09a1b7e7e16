//! A deleted array — donated to a compiled function, or freed with
//! `delete()` — is JAX's `RuntimeError: Array has been deleted ...` on every
//! path that reads its elements (operations, conversions, containers of it,
//! files, transformations, devices), `<deleted: ...>` where it is only
//! printed, and never a panic: the session goes on with everything else.

use arr_runtime::{Session, Value};
use arr_testkit::{attempt, run, session};
use std::cell::RefCell;
use std::rc::Rc;

/// `x`, `s` (a scalar), `si` (an int scalar) and `k` (a key) deleted by
/// donation or `delete()`, `xs` a sharded array donated to a sharded jit,
/// `ps` a pmap output donated to a pmap; `keep` must outlive every error.
const SETUP: &str = "\
m = mesh((2,), ('d',))
x = arange(6.0).reshape(2, 3)
s = array(2.0)
si = array(2)
k = random.key(0)
xs = shard(arange(8.0).reshape(2, 4), m, P('d'))
ps = pmap(lambda a: a * 2.0)(ones((2, 3)))
keep = 41
f = jit(lambda a, b, c: (a * 2.0, b * 2.0, c * 2), donate_argnums=(0, 1, 2))
_out = f(x, s, si)
g = jit(lambda a: a * 2.0, in_shardings=NamedSharding(m, P('d')), donate_argnums=0)
_o2 = g(xs)
_o3 = pmap(lambda a: a * 2.0, donate_argnums=0)(ps)
k.delete()
";

/// Each reads a deleted array's elements.
const READS: &[&str] = &[
    // Arithmetic, comparisons, indexing, shapes.
    "x + 1",
    "-x",
    "x * s",
    "2 ** s",
    "x @ ones((3, 2))",
    "x == x",
    "x[0]",
    "x[0, 1]",
    "x[:, 1]",
    "ones(3)[si]",
    "x.T",
    "x.reshape(3, 2)",
    "x.astype(int32)",
    "where(x > 0, x, 0.0)",
    "clip(x, 0.0, 1.0)",
    // Reductions and sorting.
    "sum(x)",
    "mean(x)",
    "max(x)",
    "x.sum()",
    "argmax(x)",
    "cumsum(x)",
    "sort(x)",
    // Creation from it.
    "array([x])",
    "array([s, s])",
    "array(x)",
    "full((3,), s)",
    "full_like(x, s)",
    "x.copy()",
    "concatenate([x, x])",
    "stack([x, x])",
    "tile(x, 2)",
    "repeat(x, 2)",
    "broadcast_to(x, (4, 2, 3))",
    "linspace(0.0, s, 4)",
    // Python values from it.
    "float(s)",
    "int(si)",
    "bool(s)",
    "s.item()",
    "x.tolist()",
    "list(x)",
    "[v for v in x]",
    "f'{s:.2f}'",
    "format(s, '.3f')",
    "'{:.2f}'.format(s)",
    "range(si)",
    "[1, 2, 3][si]",
    "'abc'[si]",
    "[1, 2, 3][si:]",
    "ones(si)",
    "zeros((si, 2))",
    "arange(si)",
    "eye(si)",
    "sum(ones((2, 2)), axis=si)",
    // Containers, tables, files, trees.
    "table({'x': x})",
    "save(PATH, x)",
    "savez(PATH, a=x)",
    "tree_map(lambda a: a + 1.0, {'a': [x]})",
    "x.block_until_ready()",
    "block_until_ready({'a': x})",
    "x.unsafe_buffer_pointer()",
    // Transformations and compiled code.
    "jit(lambda a: a * 2.0)(x)",
    "jit(lambda a: a * s)(ones(3))",
    "f(x, s, si)",
    "grad(lambda a: sum(a * a))(x)",
    "value_and_grad(lambda a: sum(a))(x)",
    "jvp(lambda a: a * 2.0, (x,), (ones((2, 3)),))",
    "vjp(lambda a: a * 2.0, x)",
    "jacfwd(lambda a: a * 2.0)(x)",
    "vmap(lambda a: a * 2.0)(x)",
    "scan(lambda c, a: (c + a, a), zeros(3), x)",
    "cond(s > 0, lambda: x, lambda: x)",
    "fori_loop(0, 2, lambda i, c: c + x, x)",
    "while_loop(lambda c: c < s, lambda c: c + 1.0, 0.0)",
    // Randomness with a deleted key.
    "random.normal(k, (2,))",
    "random.split(k)",
    // Devices: pmap, layouts, shard_map, sharded jit; sharded deleted arrays.
    "pmap(lambda a: a * 2.0)(x)",
    "device_put(x, NamedSharding(m, P('d')))",
    "shard(x, m, P('d'))",
    "shard_map(lambda a: a * 2.0, m, P('d'), P('d'))(x)",
    "jit(lambda a: a * 2.0, in_shardings=NamedSharding(m, P('d')))(x)",
    "visualize_sharding(x)",
    "xs + 1",
    "xs[0]",
    "float(xs[0, 0])",
    "table({'xs': xs})",
    "xs.tolist()",
    "device_put(xs, NamedSharding(m, P(None)))",
    "g(xs)",
    "pmap(lambda a: a * 2.0)(xs)",
    "ps + 1",
    "pmap(lambda a: a + 1.0)(ps)",
];

/// Each only shows a deleted array: its text says so.
const SHOWS: &[&str] = &[
    "repr(x)",
    "str(x)",
    "f'{x}'",
    "'{}'.format(x)",
    "repr([x, s])",
];

fn deleted_session() -> (Session, Rc<RefCell<String>>) {
    let mut s = session();
    let out = Rc::new(RefCell::new(String::new()));
    let sink = out.clone();
    s.set_output(Box::new(move |t| sink.borrow_mut().push_str(t)));
    run(&mut s, SETUP);
    let path = std::env::temp_dir().join("arr-deleted-never-written.npy");
    s.set("PATH", Value::str(&path.to_string_lossy()));
    (s, out)
}

#[test]
fn every_read_of_a_deleted_array_is_a_runtime_error_with_its_line() {
    let (mut s, _) = deleted_session();
    assert!(READS.len() >= 30);
    for src in READS {
        let e = match attempt_t(&mut s, src) {
            Err(e) => e,
            Ok(v) => panic!("{src}: succeeded with {v:?}"),
        };
        assert_eq!(e.kind.name(), "RuntimeError", "{src}: {}", e.render());
        assert!(
            e.message.starts_with("Array has been deleted with shape="),
            "{src}: {}",
            e.message
        );
        assert!(
            e.message.contains("donated to") || e.message.contains("delete()"),
            "{src}: the message says where the buffer went: {}",
            e.message
        );
        assert!(
            e.render().contains("t.arr:1:"),
            "{src}: the error carries its line: {}",
            e.render()
        );
    }
    // Nothing else was lost.
    assert!(matches!(run(&mut s, "keep"), Value::Int(41)));
    assert!(run(
        &mut s,
        "x.is_deleted() and xs.is_deleted() and k.is_deleted()"
    )
    .truthy()
    .unwrap());
    assert!(run(
        &mut s,
        "bool(all(_out[0] == arange(6.0).reshape(2, 3) * 2.0))"
    )
    .truthy()
    .unwrap());
}

#[test]
fn a_deleted_array_prints_as_deleted() {
    let (mut s, out) = deleted_session();
    for src in SHOWS {
        match attempt_t(&mut s, src) {
            Ok(Some(Value::Str(text))) => assert!(
                text.contains("<deleted: it was donated to jit(<lambda>)>"),
                "{src}: {text}"
            ),
            other => panic!("{src}: {other:?}"),
        }
    }
    attempt_t(&mut s, "print(x, s)").unwrap();
    expect_test::expect![[r#"
        <deleted: it was donated to jit(<lambda>)> <deleted: it was donated to jit(<lambda>)>
    "#]]
    .assert_eq(&out.borrow());
    // A sharded one keeps its type, and the prompt's echo draws no device
    // grid: it has no blocks left.
    let xs = s.get("xs").unwrap();
    let want = "f32[2@d,4]\n<deleted: it was donated to jit(<lambda>)>";
    assert_eq!(s.repr(&xs), want);
    assert_eq!(s.echo(&xs, false), want);
    // What needs only the type still has it.
    assert!(run(
        &mut s,
        "x.shape == (2, 3) and x.dtype == float32 and len(x) == 2"
    )
    .truthy()
    .unwrap());
}

/// `src` as a one-line script named t.arr.
fn attempt_t(s: &mut Session, src: &str) -> arr_runtime::Result<Option<Value>> {
    attempt(s, "t.arr", src)
}
