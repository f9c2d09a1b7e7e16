//! Every collective (and lax's pshuffle and pbroadcast over them) against a single-device reference written with plain
//! array operations, on 1, 2, 3, 4, 5 and 8 devices and random values:
//! forward through `pmap` on device workers and through `vmap(axis_name=)`,
//! under `grad` of a pmapped function (the batching rules), and `grad`
//! inside `pmap` on the devices (the transpose rules run between workers).

use arr_runtime::Session;

const CHECKS: &str = r#"
def close(a, b, what):
    assert a.shape == b.shape, what + ": shapes " + str(a.shape) + " and " + str(b.shape)
    err = max(abs(a - b)) if a.size > 0 else 0.0
    assert err <= 1e-4 * (1.0 + max(abs(b))), what + ": off by " + str(err)

def ring(n):
    return [(j, (j + 1) % n) for j in range(n)]

def rolled(x):
    # device d receives from d - 1
    return concatenate([x[-1:], x[:-1]], axis=0)

def check(n, seed):
    k = random.key(seed)
    x = random.normal(random.fold_in(k, 0), (n, 3, 2))
    w = random.normal(random.fold_in(k, 1), (n, 3, 2))
    sq = random.normal(random.fold_in(k, 2), (n, n, 3))
    wsq = random.normal(random.fold_in(k, 3), (n, n, 3))
    wg = random.normal(random.fold_in(k, 4), (n, n, 3, 2))
    pm = lambda f: pmap(f, axis_name="i")
    vm = lambda f: vmap(f, axis_name="i")
    # (name, collective on one device's value, reference on the stacked values, input)
    cases = [
        ("psum", lambda a: psum(a, "i"), lambda x: broadcast_to(sum(x, axis=0), x.shape), x),
        ("pmean", lambda a: pmean(a, "i"), lambda x: broadcast_to(mean(x, axis=0), x.shape), x),
        ("pmax", lambda a: pmax(a, "i"), lambda x: broadcast_to(max(x, axis=0), x.shape), x),
        ("pmin", lambda a: pmin(a, "i"), lambda x: broadcast_to(min(x, axis=0), x.shape), x),
        ("all_gather", lambda a: all_gather(a, "i"), lambda x: broadcast_to(x[None], (n,) + x.shape), x),
        ("all_gather tiled", lambda a: all_gather(a, "i", axis=1, tiled=True),
            lambda x: broadcast_to(transpose(x, (1, 0, 2)).reshape(3, n * 2)[None], (n, 3, n * 2)), x),
        ("ppermute", lambda a: ppermute(a, "i", ring(n)), rolled, x),
        ("pshuffle", lambda a: pshuffle(a, "i", list(range(n))[::-1]), lambda x: x[::-1], x),
        ("pbroadcast", lambda a: pbroadcast(a, "i", n - 1), lambda x: broadcast_to(x[n - 1], x.shape), x),
        ("psum_scatter", lambda a: psum_scatter(a, "i"), lambda x: sum(x, axis=0), sq),
        ("all_to_all", lambda a: all_to_all(a, "i", 0, 0), lambda x: transpose(x, (1, 0, 2)), sq),
    ]
    for name, f, ref, v in cases:
        want = ref(v)
        what = name + " on " + str(n) + " devices"
        close(pm(f)(v), want, what + " (pmap)")
        close(vm(f)(v), want, what + " (vmap)")
        close(jit(pm(f))(v), want, what + " (jit of pmap)")
        wt = random.normal(random.fold_in(k, 9), want.shape)
        g = grad(lambda v: sum(pm(f)(v) * wt))(v)
        close(g, grad(lambda v: sum(ref(v) * wt))(v), what + " (grad of pmap)")
    close(pm(lambda a: a * 0 + axis_index("i"))(x), broadcast_to(arange(n)[:, None, None] * 1.0, x.shape), "axis_index")
    # Reverse mode on the devices: each collective's transpose.
    inside = [
        ("psum", lambda a, wl: psum(a, "i") * wl, x, w, broadcast_to(sum(w, axis=0), w.shape)),
        ("pmax", lambda a, wl: pmax(a, "i") * wl, x, w,
            where(x == max(x, axis=0), broadcast_to(sum(w, axis=0), x.shape), 0.0)),
        ("ppermute", lambda a, wl: ppermute(a, "i", ring(n)) * wl, x, w,
            concatenate([w[1:], w[:1]], axis=0)),
        ("all_gather", lambda a, wl: all_gather(a, "i") * wl, x, wg, transpose(sum(wg, axis=0), (0, 1, 2))),
        ("psum_scatter", lambda a, wl: psum_scatter(a, "i") * wl, sq, wsq[:, 0], broadcast_to(wsq[:, 0][None], (n, n, 3))),
        ("all_to_all", lambda a, wl: all_to_all(a, "i", 0, 0) * wl, sq, wsq, transpose(wsq, (1, 0, 2))),
    ]
    for name, f, a, wl, want in inside:
        step = lambda a, wl: grad(lambda a: sum(f(a, wl)))(a)
        what = "grad of " + name + " inside, " + str(n) + " devices"
        close(pm(step)(a, wl), want, what + " (pmap)")
        close(vm(step)(a, wl), want, what + " (vmap)")

for n in [1, 2, 3, 4, 5, 8]:
    for seed in range(2):
        check(n, 10 * n + seed)

# Compiled programs are keyed by static and keyword arguments too.
f = pmap(lambda a, s=1.0: a * s, axis_name="i")
assert f(ones(2))[1] == 1.0 and f(ones(2), s=3.0)[1] == 3.0 and f(ones(2), s=5.0)[0] == 5.0
g = pmap(lambda a, k: a * k, axis_name="i", static_broadcasted_argnums=1)
assert g(ones(2), 2)[0] == 2.0 and g(ones(2), 4)[0] == 4.0
# in_axes/out_axes: a shared argument, and results stacked along axis 1.
h = pmap(lambda a, b: a + b, axis_name="i", in_axes=(1, None), out_axes=1)
r = h(arange(6.0).reshape(2, 3), 10.0)
assert r.shape == (2, 3) and r[1, 2] == 15.0
"#;

/// shard_map on 2-D meshes: collectives over one axis act within the
/// groups of devices that share the other coordinate.
const SHARD_MAP: &str = r#"
def close(a, b, what):
    assert a.shape == b.shape, what + ": shapes " + str(a.shape) + " and " + str(b.shape)
    assert max(abs(a - b)) <= 1e-4 * (1.0 + max(abs(b))), what

for shape in [(2, 4), (4, 2), (1, 8), (8, 1), (2, 2)]:
    m = mesh(shape, ("r", "c"))
    R, C = shape
    x = random.normal(random.key(R * 10 + C), (R * 3, C * 2))
    rows = lambda a: shard_map(lambda b: psum(b, "c"), m, P("r", "c"), P("r", None))(a)
    want = sum(x.reshape(R * 3, C, 2), axis=1)
    close(rows(x), want, "psum over c on " + str(shape))
    cols = shard_map(lambda b: psum(b, "r"), m, P("r", "c"), P(None, "c"))(x)
    close(cols, sum(x.reshape(R, 3, C * 2), axis=0), "psum over r on " + str(shape))
    both = shard_map(lambda b: psum(b, ("r", "c")), m, P("r", "c"), P(None, None))(x)
    close(both, sum(sum(x.reshape(R, 3, C, 2), axis=2), axis=0), "psum over both on " + str(shape))
    g = shard_map(lambda b: all_gather(b, "c", axis=1, tiled=True), m, P("r", "c"), P("r", None))(x)
    close(g, x, "all_gather over c on " + str(shape))
    idx = shard_map(lambda b: b * 0 + axis_index("r") * 10 + axis_index("c"), m, P("r", "c"), P("r", "c"))(zeros((R, C)))
    close(idx, arange(R)[:, None] * 10.0 + arange(C)[None, :], "axis_index on " + str(shape))
    w1 = random.normal(random.key(1), (6, C * 4))
    w2 = random.normal(random.key(2), (C * 4, 5))
    xs = random.normal(random.key(3), (R * 2, 6))
    tp = shard_map(lambda a, u, v: psum(tanh(a @ u) @ v, "c"), m,
                   (P("r", None), P(None, "c"), P("c", None)), P("r", None))
    close(tp(xs, w1, w2), tanh(xs @ w1) @ w2, "tensor-parallel layer on " + str(shape))
    # Under transformations shard_map runs as nested named vmaps.
    close(jit(tp)(xs, w1, w2), tanh(xs @ w1) @ w2, "jit of shard_map on " + str(shape))
    g = grad(lambda u: sum(tp(xs, u, w2) ** 2))(w1)
    close(g, grad(lambda u: sum((tanh(xs @ u) @ w2) ** 2))(w1), "grad of shard_map on " + str(shape))
    close(jit(rows)(x), want, "jit of psum over c on " + str(shape))
    close(vmap(lambda a: shard_map(lambda b: psum(b, ("r", "c")), m, P("r", "c"), P(None, None))(a))(x[None]), both[None], "vmap of shard_map on " + str(shape))
"#;

/// A pmap of a pmap runs on a 2-D grid of devices (both axes' collectives
/// between real workers, the result laid out over the grid) and equals the
/// nested named vmaps, forward, under jit and under grad, with in_axes None
/// and out_axes moved on the inner level; a grid larger than the devices
/// falls back to vmap inside each outer device.
const NESTED_PMAP: &str = r#"

def g(v):
    return v * 2.0 + psum(v, "j") - pmean(v, "i") + pmax(v, ("i", "j")) + axis_index("i") * 10.0 + axis_index("j")
for (I, J) in [(2, 4), (4, 2), (1, 8), (2, 3), (8, 1)]:
    x = random.normal(random.key(I * 10 + J), (I, J, 3))
    f = pmap(pmap(g, axis_name="j"), axis_name="i")
    ref = vmap(vmap(g, axis_name="j"), axis_name="i")(x)
    y = f(x)
    assert str(type(y)) == "f32[" + str(I) + "@i," + str(J) + "@j,3]", str(type(y))
    close(y, ref, "nested pmap " + str((I, J)))
    close(jit(f)(x), ref, "jit of nested pmap " + str((I, J)))
    close(f(y), vmap(vmap(g, axis_name="j"), axis_name="i")(ref), "nested pmap of its own output " + str((I, J)))
    close(grad(lambda x: sum(f(x) ** 2))(x), grad(lambda x: sum(vmap(vmap(g, axis_name="j"), axis_name="i")(x) ** 2))(x), "grad of nested pmap " + str((I, J)))
    inner = lambda a, b: a * b + psum(a, "j") + pmean(a, "i")
    h = pmap(pmap(inner, axis_name="j", in_axes=(0, None), out_axes=1), axis_name="i")
    hv = vmap(vmap(inner, axis_name="j", in_axes=(0, None), out_axes=1), axis_name="i")
    b = random.normal(random.key(5), (I, 3))
    close(h(x, b), hv(x, b), "in_axes None, out_axes 1 " + str((I, J)))
big = random.normal(random.key(9), (4, 4, 2))
close(pmap(pmap(g, axis_name="j"), axis_name="i")(big), vmap(vmap(g, axis_name="j"), axis_name="i")(big), "a 4x4 grid on 8 devices")
"#;

#[test]
fn nested_pmap_runs_on_a_grid_of_devices() {
    // `close` comes from the collectives' checks.
    run(&format!(
        "{}{NESTED_PMAP}",
        &CHECKS[..CHECKS.find("def ring").expect("close, then ring")]
    ))
    .unwrap_or_else(|e| panic!("{e}"));
}

fn run(src: &str) -> Result<(), String> {
    let mut s: Session = arr_stdlib::session();
    s.run_script("<collectives>", src)
        .map(|_| ())
        .map_err(|e| e.render())
}

#[test]
fn collectives_match_single_device_references() {
    run(CHECKS).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn shard_map_on_two_dimensional_meshes() {
    run(SHARD_MAP).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn pmap_errors_name_the_problem() {
    let cases = [
        (
            "pmap(lambda a: a, axis_name='i')(ones((16, 3)))",
            "the mapped axis has size 16, but there are only 8 devices",
        ),
        (
            "set_devices(0)",
            "the number of devices must be between 1 and 1024, not 0",
        ),
        (
            "pmap(lambda a: psum(a, 'j'), axis_name='i')(ones((2, 3)))",
            "unbound axis name 'j' (the names bound here are i)",
        ),
        (
            "psum(ones(3), 'i')",
            "unbound axis name 'i' (no axis name is bound here)",
        ),
        (
            "pmap(lambda a: psum_scatter(a, 'i'), axis_name='i')(ones((2, 3)))",
            "psum_scatter: axis 0 of f32[3] must have the axis size 2 of 'i'",
        ),
        (
            "pmap(lambda a: ppermute(a, 'i', [(0, 1), (1, 1)]), axis_name='i')(ones((2, 3)))",
            "perm is not a permutation",
        ),
        (
            "pmap(lambda a: pshuffle(a, 'i', [0, 0]), axis_name='i')(ones((2, 3)))",
            "pshuffle: perm [0, 0] is not a permutation of range(2), the devices of 'i'",
        ),
        (
            "pmap(lambda a: pbroadcast(a, 'i', 2), axis_name='i')(ones((2, 3)))",
            "pbroadcast: source 2 is not a device of 'i' (size 2)",
        ),
        (
            "shard_map(lambda a: a, mesh(4, 'x'), P('x'), P('x'))(ones(6))",
            "dimension 0 of f32[6] is not divisible by the 4 devices of P('x')",
        ),
        (
            "jit(shard_map(lambda a: a, mesh(4, 'x'), P('x'), P('x')))(ones(6))",
            "dimension 0 of f32[6] is not divisible by the 4 devices of P('x')",
        ),
    ];
    for (src, want) in cases {
        let err = run(src).expect_err(src);
        assert!(err.contains(want), "{src}\n gave:\n{err}\n wanted: {want}");
    }
    // The device count is process-wide (tests here run in parallel), so
    // changing it is tested through `arr --devices` in the CLI tests.
    run("assert device_count() == 8\nassert len(devices()) == 8").unwrap();
}

/// The addresses of each device's shard of the array `expr` evaluates to.
fn shard_addresses(s: &mut Session, expr: &str) -> Vec<usize> {
    match s.run_entry(expr) {
        Ok(Some(arr_runtime::Value::Array(arr_runtime::Tensor::Concrete(a)))) => a
            .shards()
            .expect("kept on the devices")
            .iter()
            .map(|b| b.buffer_address().unwrap())
            .collect(),
        other => panic!("{expr}: {:?}", other.map_err(|e| e.render())),
    }
}

#[test]
fn pmap_donation_keeps_each_devices_buffers_step_after_step() {
    let mut s = arr_stdlib::session();
    let ok = |s: &mut Session, src: &str| {
        s.run_entry(src)
            .unwrap_or_else(|e| panic!("{src}\n{}", e.render()));
    };
    ok(
        &mut s,
        "def step(p, x):\n    return p - 0.1 * pmean(x * p, 'd')\n\
         ps = pmap(step, axis_name='d', donate_argnums=0)\n\
         plain = pmap(step, axis_name='d')\n\
         x = ones((4, 5000))\np0 = ones((4, 5000))\n\
         want = plain(plain(plain(p0, x), x), x)\np1 = ps(p0, x)\n",
    );
    let first = shard_addresses(&mut s, "p1");
    ok(&mut s, "p2 = ps(p1, x)\np3 = ps(p2, x)\n");
    assert_eq!(shard_addresses(&mut s, "p3"), first);
    let check = s
        .run_entry(
            "p0.is_deleted() and p1.is_deleted() and p2.is_deleted() \
             and not x.is_deleted() and bool(all(p3 == want))",
        )
        .unwrap();
    assert!(
        matches!(check, Some(arr_runtime::Value::Bool(true))),
        "{check:?}"
    );
    let err = s.run_entry("ps(p3, p3)").unwrap_err();
    assert!(err.message.contains("passed twice"), "{}", err.message);
    assert!(matches!(
        s.run_entry("p3.is_deleted()").unwrap(),
        Some(arr_runtime::Value::Bool(false))
    ));
}
