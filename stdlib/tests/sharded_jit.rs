//! Sharded jit: the partitioned program equals the unsharded one for
//! programs of every kind of operation (layouts propagated, collectives
//! inserted, other operations replicated) on several meshes; its plan lists
//! exactly the expected collectives (snapshots); random numbers produced
//! sharded equal the unsharded ones.

use arr_runtime::{Session, Value};
use expect_test::{expect, Expect};

fn session() -> Session {
    arr_testkit::session_with(PRELUDE)
}

const PRELUDE: &str = r#"
def close(a, b, what):
    assert a.shape == b.shape, what + ": shapes " + str(a.shape) + " and " + str(b.shape)
    err = max(abs(a - b)) if a.size > 0 else 0.0
    assert err <= 1e-4 * (1.0 + max(abs(b))), what + ": off by " + str(err)

m = mesh((2, 4), ("data", "model"))
s = lambda *spec: NamedSharding(m, P(*spec))
k = random.split(random.key(0), 4)
x = random.normal(k[0], (16, 64))
w1 = random.normal(k[1], (64, 128)) / 8.0
w2 = random.normal(k[2], (128, 8)) / 11.3
y = random.randint(k[3], (16,), 0, 8)

def mlp(x, w1, w2):
    return tanh(x @ w1) @ w2

def loss(p, x, y):
    logits = tanh(x @ p[0]) @ p[1]
    return -mean(take_along_axis(log_softmax(logits, axis=-1), y[:, None], axis=1))

emb = random.normal(k[0], (32, 16))
tok = random.randint(k[1], (16, 8), 0, 32)
def eloss(e, t):
    return sum(tanh(e[t]) ** 2)
def set_rows(e, t):
    e[t[:, 0]] = 1.0
    return e
"#;

/// Runs `src` (asserting with `close`) in a fresh session.
fn run_checks(src: &str) {
    if let Err(e) = session().run_script("<checks>", src) {
        panic!("{}", e.render());
    }
}

fn check_plan(src: &str, expect: Expect) {
    let mut s = session();
    match s.run_entry(src) {
        Ok(Some(Value::Str(text))) => expect.assert_eq(&text),
        other => panic!("{src}: {other:?}"),
    }
}

#[test]
fn tensor_parallel_plan_has_one_psum() {
    check_plan(
        "jit(mlp, in_shardings=(s('data', None), s(None, 'model'), s('model', None)), out_shardings=s('data', None)).plan(x, w1, w2)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. psum over 'model' (4 devices) of f32[8,8]: 384 B sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:16
            collectives send 384 B per device; inputs take 11.0 KiB, peak memory 12.0 KiB per device
        "#]],
    );
}

#[test]
fn column_parallel_then_gathered_output() {
    // No contraction over a split dimension: the only collective gathers the
    // output, which out_shardings asks for whole.
    check_plan(
        "jit(lambda x, w: tanh(x @ w), in_shardings=(s(), s(None, 'model')), out_shardings=s()).plan(x, w1)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. all_gather over 'model' (4 devices) of f32[16,32]: 6.0 KiB sent per device  (out_shardings)
            collectives send 6.0 KiB per device; inputs take 12.0 KiB, peak memory 14.0 KiB per device
        "#]],
    );
}

#[test]
fn data_parallel_gradients_are_summed_over_the_batch_axis() {
    check_plan(
        "jit(grad(loss), in_shardings=(s(), s('data', None), s('data'))).plan((w1, w2), x, y)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. psum over 'data' (2 devices) of 2 arrays (f32[8,128], f32[128,64]): 36.0 KiB sent per device  (2 bucketed: dot: partial sums over the contracting dimension split by 'data') at <setup>:19
            collectives send 36.0 KiB per device; inputs take 38.0 KiB, peak memory 72.1 KiB per device
        "#]],
    );
}

#[test]
fn batch_split_embedding_lookup_stays_local() {
    // Each device looks up its own tokens in the whole table: no collective.
    check_plan(
        "jit(lambda e, t: e[t], in_shardings=(s(), s('data', None)), out_shardings=s('data', None, None)).plan(emb, tok)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
            no collectives
            collectives send 0 B per device; inputs take 2.2 KiB, peak memory 6.2 KiB per device
        "#]],
    );
    // Its transpose adds each device's updates into zeros and sums the
    // partial tables over 'data' once (the all-reduce the gradient needs),
    // as that sends fewer bytes than gathering the updates would.
    check_plan(
        "jit(grad(eloss), in_shardings=(s(), s('data', None))).plan(emb, tok)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. psum over 'data' (2 devices) of f32[32,16]: 2.0 KiB sent per device  (scatter_add of updates split by 'data') at <setup>:25
            collectives send 2.0 KiB per device; inputs take 2.2 KiB, peak memory 20.3 KiB per device
        "#]],
    );
    run_checks(
        r#"
for ins in [(s(), s('data', None)), (s(), s(None, 'model')), (s(None, 'model'), s('data', None)),
            (s('model', None), s('data', None)), (s(), s(('data', 'model'), None))]:
    what = str([i for i in ins])
    close(jit(lambda e, t: e[t], in_shardings=ins)(emb, tok), emb[tok], "lookup " + what)
    close(jit(grad(eloss), in_shardings=ins)(emb, tok), grad(eloss)(emb, tok), "grad " + what)
    close(jit(set_rows, in_shardings=ins)(emb, tok), set_rows(emb, tok), "set " + what)
"#,
    );
}

#[test]
fn slices_and_pads_keep_the_split_of_dimensions_they_leave_alone() {
    // Columns cut from a batch-split array stay split by rows; the pad of
    // the gradient too. Cutting the split dimension gathers only it.
    check_plan(
        "jit(grad(lambda a: sum(a[:, 1:5] ** 2)), in_shardings=s('data', 'model')).plan(x)",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. ppermute over 'model' (4 devices) of f32[8,1]: 32 B sent per device  (slice of a split dimension) at <entry 1>:1
              2. ppermute over 'model' (4 devices) of f32[8,1]: 32 B sent per device  (slice of a split dimension) at <entry 1>:1
              3. ppermute over 'model' (4 devices) of f32[8,1]: 32 B sent per device  (slice of a split dimension) at <entry 1>:1
              4. all_gather over 'model' (4 devices) of f32[8,1]: 96 B sent per device  (pad of a split dimension) at <entry 1>:1
            collectives send 192 B per device; inputs take 512 B, peak memory 2.6 KiB per device
        "#]],
    );
    run_checks(
        r#"
g = lambda a: (a[:, 1:5] * 2.0, split(a, 2, axis=1)[1], a[::2, 3:], split(a, 4, axis=0)[3])
h = lambda a: sum(a[1:7, ::3] ** 2) + sum(split(a, 2, axis=1)[0])
for ins in [s('data', None), s(None, 'model'), s('data', 'model'), s(('data', 'model'), None)]:
    got, want = jit(g, in_shardings=ins)(x), g(x)
    for i in range(4):
        close(got[i], want[i], "slice " + str(i) + " " + str(ins))
    close(jit(grad(h), in_shardings=ins)(x), grad(h)(x), "pad " + str(ins))
"#,
    );
}

#[test]
fn windows_of_split_dimensions_stay_split() {
    // q, k and v sliced out of a column-split product (blocks of 24 columns,
    // windows of 32): each device gets its 8 columns of each from the
    // devices holding them (ppermutes), so the heads stay split; the
    // cotangents padded back are laid out as the weight again.
    check_plan(
        "jit(lambda a, w: split(a @ w, 3, axis=1)[1], in_shardings=(s(), s(None, 'model'))).plan(x, random.normal(k[1], (64, 96)))",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. ppermute over 'model' (4 devices) of f32[16,8]: 512 B sent per device  (slice of a split dimension) at <entry 1>:1
            collectives send 512 B per device; inputs take 10.0 KiB, peak memory 11.5 KiB per device
        "#]],
    );
    run_checks(
        r#"
w = random.normal(k[1], (64, 96)) / 8.0
def attn(a, w):
    q, kk, v = split(a @ w, 3, axis=1)
    qh, kh, vh = [t.reshape(16, 4, 8).transpose(1, 0, 2) for t in (q, kk, v)]
    p = softmax(qh @ kh.transpose(0, 2, 1), axis=-1)
    return sum((p @ vh) ** 2)
for ins in [(s(), s(None, 'model')), (s('data', None), s(None, 'model')), (s(), s(None, ('data', 'model')))]:
    close(jit(attn, in_shardings=ins)(x, w), attn(x, w), "attn " + str(ins))
    got, want = jit(grad(attn, argnums=(0, 1)), in_shardings=ins)(x, w), grad(attn, argnums=(0, 1))(x, w)
    close(got[0], want[0], "dx " + str(ins))
    close(got[1], want[1], "dw " + str(ins))
# Windows that straddle blocks at any offset, and pads with a value.
b = random.normal(k[2], (8, 24))
for lo, hi in [(0, 8), (3, 11), (4, 12), (10, 22), (16, 24)]:
    f = lambda a: a[:, lo:hi] * 3.0
    close(jit(f, in_shardings=s(None, 'model'))(b), f(b), "window " + str(lo))
    padf = lambda a: pad(a, ((0, 0), (lo, hi)), constant_values=2.5)
    close(jit(padf, in_shardings=s(None, 'model'))(b), padf(b), "pad " + str(lo))
    gf = lambda a: sum(sin(a[:, lo:hi]) * a[:, lo:hi])
    close(jit(grad(gf), in_shardings=s(None, 'model'))(b), grad(gf)(b), "grad window " + str(lo))
"#,
    );
}

#[test]
fn partitioned_programs_equal_unsharded_ones() {
    run_checks(
        r#"
layouts = [
    (s('data', None), s(None, 'model'), s('model', None)),
    (s('data', None), s(), s()),
    (s(None, 'model'), s('model', None), s()),
    (s(), s(None, ('data', 'model')), s(('data', 'model'), None)),
    (s('model', 'data'), s('data', None), s(None, None)),
]
for ins in layouts:
    what = str([i for i in ins])
    close(jit(mlp, in_shardings=ins)(x, w1, w2), mlp(x, w1, w2), "mlp " + what)
    g = jit(grad(loss), in_shardings=((ins[1], ins[2]), ins[0], s()))((w1, w2), x, y)
    want = grad(loss)((w1, w2), x, y)
    close(g[0], want[0], "grad w1 " + what)
    close(g[1], want[1], "grad w2 " + what)
# Reductions, broadcasts, transposes, maxima and replicated fallbacks.
f = lambda a, b: (softmax(a, axis=-1) * 2.0 + b[None, :], sum(a, axis=0), max(a.T, axis=1), cumsum(a, axis=1), sort(a, axis=0))
a = random.normal(random.key(5), (16, 8))
b = random.normal(random.key(6), (8,))
for ins in [(s('data', None), s()), (s(None, 'model'), s('model')), (s('data', 'model'), s('model'))]:
    got = jit(f, in_shardings=ins)(a, b)
    want = f(a, b)
    for i in range(5):
        close(got[i], want[i], "ops output " + str(i) + " " + str([j for j in ins]))
# Outputs come back laid out as asked.
out = jit(lambda a: a * 2.0, in_shardings=s('data', None), out_shardings=s(None, 'model'))(a)
assert str(out.sharding) == "NamedSharding(mesh=Mesh('data': 2, 'model': 4, axis_types=(Auto, Auto)), spec=P(None, 'model'), memory_kind=device)", str(out.sharding)
close(out, a * 2.0, "resharded output")
# Random numbers produced sharded are those produced whole.
r = jit(lambda key: random.normal(key, (16, 8)), in_shardings=s(), out_shardings=s('data', 'model'))(random.key(3))
close(r, random.normal(random.key(3), (16, 8)), "sharded random")
assert type(r) == "f32[16@data,8@model]", type(r)
# Reshapes keep a split dimension that stays major in its group.
c3 = random.normal(random.key(9), (8, 4, 6))
for ins, f in [
    (s('data', None, None), lambda t: t.reshape(8, 24) * 2.0),
    (s('model', None, None), lambda t: t.reshape(32, 6) + 1.0),
    (s(None, 'model', None), lambda t: t.reshape(8, 24) - 1.0),
    (s(None, None, 'data'), lambda t: t.reshape(32, 6)),
    (s('data', None, None), lambda t: t.reshape(2, 4, 24)),
]:
    close(jit(f, in_shardings=ins)(c3), f(c3), "reshape " + str(ins))
plan = jit(lambda t: sum(t.reshape(8, 24), axis=1), in_shardings=s('data', None, None)).plan(c3)
assert "no collectives" in plan, plan
# Batched products: split batch dimensions stay split (no collective),
# a replicated rhs follows the lhs's batch layout, split contractions psum.
ba = random.normal(random.key(11), (4, 8, 8))
bb = random.normal(random.key(12), (4, 8, 4))
bmm = lambda p, q: p @ q
for ins in [(s('data', None, None), s('data', None, None)), (s('data', None, None), s()),
            (s(None, None, 'model'), s(None, 'model', None)), (s('data', 'model', None), s('data', None, None)),
            (s('model', None, 'data'), s(None, 'data', None)), (s(), s(None, None, 'model'))]:
    close(jit(bmm, in_shardings=ins)(ba, bb), bmm(ba, bb), "batched dot " + str([i for i in ins]))
    close(jit(grad(lambda p, q: sum(bmm(p, q) ** 2)), in_shardings=ins)(ba, bb), grad(lambda p, q: sum(bmm(p, q) ** 2))(ba, bb), "grad of batched dot " + str([i for i in ins]))
plan = jit(bmm, in_shardings=(s('data', None, None), s('data', None, None))).plan(ba, bb)
assert "no collectives" in plan, plan
assert type(jit(bmm, in_shardings=(s('data', None, None), s()))(ba, bb)) == "f32[4@data,8,4]"
plan = jit(bmm, in_shardings=(s(None, None, 'model'), s(None, 'model', None))).plan(ba, bb)
assert len(plan.split("psum over 'model'")) == 2 and "all_gather" not in plan, plan
# with_sharding_constraint: inside, the partitioner makes that layout.
h = lambda a: with_sharding_constraint(a * 2.0, s(None, 'model')) + 1.0
hs = jit(h, in_shardings=s('data', None))
close(hs(a), a * 2.0 + 1.0, "constrained")
assert str(hs(a).sharding) == "NamedSharding(mesh=Mesh('data': 2, 'model': 4, axis_types=(Auto, Auto)), spec=P(None, 'model'), memory_kind=device)", str(hs(a).sharding)
assert "with_sharding_constraint" in hs.plan(a), hs.plan(a)
# ...under grad too, and eagerly it lays the array out.
close(grad(lambda a: sum(h(a) ** 2))(a), grad(lambda a: sum((a * 2.0 + 1.0) ** 2))(a), "grad through a constraint")
assert type(with_sharding_constraint(a, s('data', None))) == "f32[16@data,8]"
# Keyword arguments key the compiled program.
kj = jit(lambda a, scale=1.0: a * scale, in_shardings=s('data', None))
close(kj(a), a, "kwargs default")
close(kj(a, scale=3.0), a * 3.0, "kwargs given")
# Already sharded arguments keep their layout when in_shardings says None.
xs = shard(x, m, P('data', None))
close(jit(mlp, in_shardings=(None, s(None, 'model'), s('model', None)))(xs, w1, w2), mlp(x, w1, w2), "committed input")
"#,
    );
}

#[test]
fn errors_name_the_problem() {
    let cases = [
        (
            "jit(mlp, in_shardings=(s('model', None), s(), s()))(ones((6, 64)), w1, w2)",
            "dimension 0 of f32[6,64] is not divisible by its 4 devices",
        ),
        (
            "jit(mlp, in_shardings=3)(x, w1, w2)",
            "shardings must be NamedSharding or None",
        ),
    ];
    for (src, want) in cases {
        let mut s = session();
        let err = s.run_entry(src).expect_err(src).render();
        assert!(err.contains(want), "{src}: {err}");
    }
}

/// The addresses of each device's shard of a global array.
fn shard_addresses(s: &mut Session, expr: &str) -> Vec<usize> {
    match run_ok(s, expr) {
        Value::Array(arr_runtime::Tensor::Concrete(a)) => a
            .shards()
            .expect("kept as shards")
            .iter()
            .map(|b| b.buffer_address().unwrap())
            .collect(),
        other => panic!("{expr}: {other:?}"),
    }
}

fn run_ok(s: &mut Session, src: &str) -> Value {
    s.run_entry(src)
        .unwrap_or_else(|e| panic!("{src}\n{}", e.render()))
        .unwrap_or(Value::None)
}

#[test]
fn donated_parameters_keep_their_device_buffers_step_after_step() {
    let mut s = session();
    run_ok(
        &mut s,
        "def sgd(p, x, y):\n    \
             g = grad(loss)(p, x, y)\n    \
             return [a - 0.1 * b for a, b in zip(p, g)]\n\
         shp = [s(None, 'model'), s('model', None)]\n\
         step = jit(sgd, in_shardings=(shp, s('data'), s('data')), \
         out_shardings=shp, donate_argnums=0)\n\
         plain = jit(sgd)\n\
         p0 = [device_put(w1, shp[0]), device_put(w2, shp[1])]\n\
         want = plain(plain([w1, w2], x, y), x, y)\n\
         p1 = step(p0, x, y)\n",
    );
    let first = (
        shard_addresses(&mut s, "p1[0]"),
        shard_addresses(&mut s, "p1[1]"),
    );
    run_ok(&mut s, "p2 = step(p1, x, y)\n");
    assert!(matches!(
        run_ok(
            &mut s,
            "p0[0].is_deleted() and p0[1].is_deleted() and p1[0].is_deleted() \
             and not p2[0].is_deleted() and not x.is_deleted()"
        ),
        Value::Bool(true)
    ));
    // Each device wrote the new block over its old one.
    assert_eq!(shard_addresses(&mut s, "p2[0]"), first.0);
    assert_eq!(shard_addresses(&mut s, "p2[1]"), first.1);
    run_ok(
        &mut s,
        "close(p2[0], want[0], 'w1')\nclose(p2[1], want[1], 'w2')\n",
    );
    let err = s.run_entry("step(p1, x, y)").unwrap_err();
    assert!(
        err.message.contains("Array has been deleted"),
        "{}",
        err.message
    );
}

/// The partitioner is a stage of the compiler, between `traced` and jit's
/// passes: `:ir --pass partition f(args)` shows one device's graph as the
/// partitioner made it — the blocks' types, and the psum that the
/// row-parallel product needs — and `:ir --pass traced` the global graph.
#[test]
fn ir_after_the_partition_stage_is_one_devices_graph() {
    let mut s = session();
    run_ok(
        &mut s,
        "f = jit(mlp, in_shardings=(s('data', None), s(None, 'model'), s('model', None)), \
         out_shardings=s('data', None))\n",
    );
    let ir = |s: &mut Session, pass: &str| {
        s.ir_of_call_after("f(x, w1, w2)", Some(pass))
            .unwrap_or_else(|e| panic!("{pass}: {}", e.render()))
    };
    expect![[r#"
        { lambda ; a:f32[8,64] b:f32[64,32] c:f32[32,8]. let
            d:f32[8,32] = dot_general[contract=((1,),(0,)) batch=((),())] a b
            e:f32[8,32] = tanh d
            f:f32[8,8] = dot_general[contract=((1,),(0,)) batch=((),())] e c
            g:f32[8,8] = psum[axis_name=model size=4] f
          in (g,) }"#]]
    .assert_eq(&ir(&mut s, "partition"));
    expect![[r#"
        { lambda ; a:f32[16,64] b:f32[64,128] c:f32[128,8]. let
            d:f32[16,128] = dot_general[contract=((1,),(0,)) batch=((),())] a b
            e:f32[16,128] = tanh d
            f:f32[16,8] = dot_general[contract=((1,),(0,)) batch=((),())] e c
          in (f,) }"#]]
    .assert_eq(&ir(&mut s, "traced"));
    expect![[r#"
        { lambda ; a:f32[8,64] b:f32[64,32] c:f32[32,8]. let
            d:f32[8,32] = fused_matmul[ops=2 inputs=2 outputs=1] a b
            e:f32[8,8] = dot_general[contract=((1,),(0,)) batch=((),())] d c
            f:f32[8,8] = psum[axis_name=model size=4] e
          in (f,) }"#]]
    .assert_eq(&ir(&mut s, "fold_epilogues"));
    let err = s
        .ir_of_call_after("f(x, w1, w2)", Some("nosuch"))
        .unwrap_err();
    expect!["no pass named 'nosuch'; the stages of a sharded jit are: traced, partition, fold, simplify, cse, dot_transpose, dot_operands, combine_collectives, dce, fuse, remat, fold_epilogues"].assert_eq(&err.message);
    // An unsharded function has no partition stage.
    let err = s
        .ir_of_call_after("mlp(x, w1, w2)", Some("partition"))
        .unwrap_err();
    expect!["the 'partition' stage is a sharded jit's: mlp has no in_shardings or out_shardings"]
        .assert_eq(&err.message);
}
