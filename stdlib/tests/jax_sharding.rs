//! JAX's explicit-sharding API, each case checked against what the
//! reference JAX (0.10, 8 CPU devices) prints for the same program: meshes
//! and axis types, the context mesh and bare `P`, shardings in the types
//! (`typeof`) through operations, jit and products, `out_sharding=`,
//! `reshard`, pytrees of shardings, `addressable_shards`, `shard_map`'s
//! context mesh, pytree specs and replication check, and the errors.

use arr_testkit::check_output as check;
use expect_test::expect;

#[test]
fn meshes_and_axis_types() {
    check(
        r#"
print(len(devices()), device_count())
mesh = make_mesh((2, 4), ("x", "y"))
print(mesh.shape["x"], mesh.shape["y"], mesh.axis_names, mesh.size)
print(dict(mesh.shape), mesh.devices.shape, mesh.axis_types == (AxisType.Explicit, AxisType.Explicit))
print([d.id for d in mesh.devices.flat])
auto = make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto, AxisType.Auto))
print(auto.axis_types == (AxisType.Auto,) * 2, auto.shape["a"] * auto.shape["b"])
mixed = make_mesh((2, 2, 2), ("p", "q", "r"), axis_types=(AxisType.Explicit, AxisType.Auto, AxisType.Explicit))
print(mixed.size, mixed.axis_names, [str(t) for t in mixed.axis_types])
manual = Mesh(array(devices()).reshape(4, 2), ("rows", "cols"))
print(manual.shape["rows"], manual.devices.shape)
"#,
        expect![[r#"
            8 8
            2 4 ('x', 'y') 8
            {'x': 2, 'y': 4} (2, 4) True
            [0, 1, 2, 3, 4, 5, 6, 7]
            True 8
            8 ('p', 'q', 'r') ['AxisType.Explicit', 'AxisType.Auto', 'AxisType.Explicit']
            4 (4, 2)
        "#]],
    );
}

#[test]
fn types_show_explicit_shardings_and_follow_operations() {
    check(
        r#"
mesh = make_mesh((4, 2), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
a = device_put(arange(32.0).reshape(8, 4), NamedSharding(mesh, P("X", "Y")))
b = device_put(ones((8, 4)), NamedSharding(mesh, P("X", None)))
c = device_put(ones(4), NamedSharding(mesh, P("Y")))
print(typeof(a), typeof(b), typeof(c))
print(typeof(a.T), typeof(a * 2), typeof(sin(a)))
print(typeof(a + b), typeof(a + c), typeof(b + 1.0))
print(typeof(a.sum(axis=0)), typeof(a.sum(axis=1)), typeof(a.sum()))
print(a.sum(axis=0), a.sum())
print(a)

@jit
def combine(u, v):
    print("inside:", typeof(u), typeof(v))
    w = u * v
    print("product:", typeof(w), typeof(w.T))
    return w.max(axis=1)

out = combine(a, b)
print(typeof(out), out)
print(typeof(zeros((8, 4))), typeof(a.reshape(32)), typeof(concatenate([a, a])))
"#,
        expect![[r#"
            float32[8@X,4@Y] float32[8@X,4] float32[4@Y]
            float32[4@Y,8@X] float32[8@X,4@Y] float32[8@X,4@Y]
            float32[8@X,4@Y] float32[8@X,4@Y] float32[8@X,4]
            float32[4@Y] float32[8@X] float32[]
            [112. 120. 128. 136.] 496.0
            [[ 0.  1.  2.  3.]
             [ 4.  5.  6.  7.]
             [ 8.  9. 10. 11.]
             [12. 13. 14. 15.]
             [16. 17. 18. 19.]
             [20. 21. 22. 23.]
             [24. 25. 26. 27.]
             [28. 29. 30. 31.]]
            inside: float32[8@X,4@Y] float32[8@X,4]
            product: float32[8@X,4@Y] float32[4@Y,8@X]
            float32[8@X] [ 3.  7. 11. 15. 19. 23. 27. 31.]
            float32[8,4] float32[32@(X,Y)] float32[16@X,4@Y]
        "#]],
    );
}

#[test]
fn broadcasting_reductions_and_conflicts() {
    check(
        r#"
mesh = make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
put = lambda arr, *spec: device_put(arr, NamedSharding(mesh, P(*spec)))
m = put(arange(24.0).reshape(2, 4, 3), "X", "Y", None)
col = put(arange(3.0), None)
row = put(ones((4, 1)), "Y", None)
print(typeof(m), typeof(m + col), typeof(m * row))
print(typeof(m.sum(axis=(0, 1))), m.sum(axis=(0, 1)))
print(typeof(m.max(axis=2)), m.max(axis=2))
print(typeof(mean(m, axis=1, keepdims=True)), mean(m))
t = transpose(m, (2, 0, 1))
print(typeof(t), typeof(swapaxes(m, 0, 1)))
v = put(arange(8.0), "X")
w = put(arange(8.0), "Y")
print(typeof(v + reshard(w, NamedSharding(mesh, P("X")))), typeof(exp(v) > 2))
print(typeof(expand_dims(v, 1) * put(ones((1, 4)), None, "Y")))
print(typeof(v + w))
"#,
        expect![[r#"
            float32[2@X,4@Y,3] float32[2@X,4@Y,3] float32[2@X,4@Y,3]
            float32[3] [ 84.  92. 100.]
            float32[2@X,4@Y] [[ 2.  5.  8. 11.]
             [14. 17. 20. 23.]]
            float32[2@X,1,3] 11.5
            float32[3,2@X,4@Y] float32[4@Y,2@X,3]
            float32[8@X] bool[8@X]
            float32[8@X,4@Y]
            ShardingTypeError: add of float32[8@X] and float32[8@Y]: dimension 0 is split by 'X' in one operand and by 'Y' in another; reshard one of them at test.arr:17:14
               |
            17 | print(typeof(v + w))
               |              ^^^^^
        "#]],
    );
}

#[test]
fn a_context_mesh_makes_bare_specs_shardings() {
    check(
        r#"
mesh = make_mesh((2, 4), ("data", "model"))
ctx = set_mesh(mesh)
x = device_put(arange(16.0).reshape(4, 4), P("data", "model"))
y = device_put(ones((4, 4)), P(None, "model"))
print(typeof(x), typeof(y))
print(x.sharding == NamedSharding(mesh, P("data", "model")), x.sharding.spec == P("data", "model"))
noise = random.normal(random.key(0), (8, 4), out_sharding=P("data", None))
print(typeof(noise), noise.shape, noise.sum(axis=1))
z = zeros((8, 8), out_sharding=P(None, "model"))
print(typeof(z), typeof(ones(8, out_sharding=P("data"))))
r = arange(8.0, out_sharding=P("model"))
print(typeof(r), r, typeof(r * 2 + 1))
s = x + y
print(typeof(s), s)
f = jit(lambda u: (u * 2).sum(axis=1))
print(typeof(f(x)), f(x))
ctx.__exit__(None, None, None)
print(typeof(x), get_abstract_mesh().empty)
"#,
        expect![[r#"
            float32[4@data,4@model] float32[4,4@model]
            True True
            float32[8@data,4] (8, 4) [ 3.135695   -0.7969185  -0.06143403  3.3039155  -0.32151246  0.73011327
              2.3480492  -2.7778642 ]
            float32[8,8@model] float32[8@data]
            float32[8@model] [0. 1. 2. 3. 4. 5. 6. 7.] float32[8@model]
            float32[4@data,4@model] [[ 1.  2.  3.  4.]
             [ 5.  6.  7.  8.]
             [ 9. 10. 11. 12.]
             [13. 14. 15. 16.]]
            float32[4@data] [ 12.  44.  76. 108.]
            float32[4@data,4@model] True
        "#]],
    );
}

#[test]
fn products_with_out_sharding() {
    check(
        r#"
mesh = make_mesh((4, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
ctx = set_mesh(mesh)
a = device_put(arange(32.0).reshape(8, 4) / 10, P("X", "Y"))
b = device_put(ones((4, 6)), P("Y", None))
c = dot(a, b, out_sharding=P("X", None))
print(typeof(c), c.sum(axis=1))
d = dot(a, b, out_sharding=P("X", "Y"))
print(typeof(d), bool(allclose(reshard(d, P()), reshard(c, P()))))
rows = device_put(ones((8, 4)), P("X", None))
cols = device_put(ones((4, 6)), P(None, "Y"))
e = rows @ cols
print(typeof(e), float(e.sum()))
f = einsum("ij,jk->ik", a, b, out_sharding=P(None, None))
print(typeof(f), f.sum())
g = jit(lambda u, v: matmul(u, v, out_sharding=P("X", None)))(a, b)
print(typeof(g), bool(allclose(reshard(g, P()), reshard(f, P()))))
a @ b
"#,
        expect![[r#"
            float32[8@X,6] [ 3.6      13.2      22.8      32.4      42.000004 51.6      61.2
             70.799995]
            float32[8@X,6@Y] True
            float32[8@X,6@Y] 192.0
            float32[8,6] 297.6
            float32[8@X,6] True
            ShardingTypeError: Contracting dimensions are sharded and it is ambiguous how the output should be sharded. Please specify the output sharding via the `out_sharding` parameter. Got lhs_contracting_spec=('Y',) and rhs_contracting_spec=('Y',) at test.arr:18:1
               |
            18 | a @ b
               | ^^^^^
        "#]],
    );
}

#[test]
fn shard_map_context_mesh_decorator_and_replication_check() {
    check(
        r#"
mesh = make_mesh((8,), ("x",))
def gm(block):
    return psum(sum(block), "x") / psum(block.size, "x")
global_mean = shard_map(gm, mesh=mesh, in_specs=P("x"), out_specs=P())
def sh(block, amount):
    return block + amount * axis_index("x")
shift = shard_map(mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"))(sh)
v = device_put(arange(16.0), NamedSharding(mesh, P("x")))
print(global_mean(v))
out = shift(v, 100.0)
print(out)
print(typeof(v), typeof(out), out.shape)
print(jit(global_mean)(v * 2))
print(shard_map(lambda b: psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())(v).shape)
ctx = set_mesh(mesh)
out = shard_map(lambda b: b[::-1], in_specs=P("x"), out_specs=P("x"))(v)
print(out)
unchecked = shard_map(lambda b: b * 0 + 1, in_specs=P("x"), out_specs=P(), check_vma=False)(v)
print(unchecked)
ctx.__exit__(None, None, None)
"#,
        expect![[r#"
            7.5
            [  0.   1. 102. 103. 204. 205. 306. 307. 408. 409. 510. 511. 612. 613.
             714. 715.]
            float32[16@x] float32[16@x] (16,)
            15.0
            (2,)
            [ 1.  0.  3.  2.  5.  4.  7.  6.  9.  8. 11. 10. 13. 12. 15. 14.]
            [1. 1.]
        "#]],
    );
}

#[test]
fn addressable_shards_and_devices() {
    check(
        r#"
mesh = make_mesh((2, 2), ("r", "c"), devices=devices()[:4])
x = device_put(arange(16).reshape(4, 4), NamedSharding(mesh, P("r", "c")))
for shard in x.addressable_shards:
    print(shard.device.id, shard.index, shard.data.shape)
    print(shard.data)
row_only = device_put(arange(6.0), NamedSharding(mesh, P("r")))
for shard in row_only.addressable_shards:
    print(shard.device.id, shard.index, shard.data, shard.replica_id)
print(len(x.addressable_shards), x.sharding.num_devices, x.is_fully_addressable)
print(x.addressable_data(2), x.sharding.is_fully_replicated)
print(x.devices(), devices()[3])
"#,
        expect![[r#"
            0 (slice(0, 2, None), slice(0, 2, None)) (2, 2)
            [[0 1]
             [4 5]]
            1 (slice(0, 2, None), slice(2, 4, None)) (2, 2)
            [[2 3]
             [6 7]]
            2 (slice(2, 4, None), slice(0, 2, None)) (2, 2)
            [[ 8  9]
             [12 13]]
            3 (slice(2, 4, None), slice(2, 4, None)) (2, 2)
            [[10 11]
             [14 15]]
            0 (slice(0, 3, None),) [0. 1. 2.] 0
            1 (slice(0, 3, None),) [0. 1. 2.] 1
            2 (slice(3, 6, None),) [3. 4. 5.] 0
            3 (slice(3, 6, None),) [3. 4. 5.] 1
            4 4 True
            [[ 8  9]
             [12 13]] False
            {CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2), CpuDevice(id=3)} cpu:3
        "#]],
    );
}

#[test]
fn device_put_of_pytrees() {
    check(
        r#"
mesh = make_mesh((4, 2), ("dp", "tp"))
params = {"w1": ones((8, 4)), "b1": zeros(4), "w2": ones((4, 2)), "steps": int32(0)}
specs = {"w1": P(None, "tp"), "b1": P("tp"), "w2": P("tp", None), "steps": P()}
shardings = tree_map(lambda s: NamedSharding(mesh, s), specs)
placed = device_put(params, shardings)
for name in placed:
    print(name, typeof(placed[name]))
print(placed["w1"].sharding == shardings["w1"], placed["w1"].sharding == placed["w2"].sharding)
print(placed["w1"].sharding == NamedSharding(mesh, P(None, "tp")))
same_everywhere = device_put(params, NamedSharding(mesh, P()))
print([str(typeof(v)) for v in tree_leaves(same_everywhere)])
batch = device_put((ones((8, 8)), arange(8)), (NamedSharding(mesh, P("dp")), NamedSharding(mesh, P("dp"))))
print(typeof(batch[0]), typeof(batch[1]))
out = jit(lambda p, x: x @ p["w1"] + p["b1"])(placed, batch[0])
print(typeof(out), out.sum())
print(tree_map(lambda v: v.sharding.spec == P(), same_everywhere))
"#,
        expect![[r#"
            b1 float32[4@tp]
            steps int32[]
            w1 float32[8,4@tp]
            w2 float32[4@tp,2]
            True False
            True
            ['float32[4]', 'int32[]', 'float32[8,4]', 'float32[4,2]']
            float32[8@dp,8] int32[8@dp]
            float32[8@dp,4@tp] 256.0
            {'b1': True, 'steps': True, 'w1': True, 'w2': True}
        "#]],
    );
}

#[test]
fn jit_with_shardings_and_of_sharded_arrays() {
    check(
        r#"
mesh = Mesh(array(devices()).reshape(4, 2), ("rows", "cols"))
row_s = NamedSharding(mesh, P("rows"))
col_s = NamedSharding(mesh, P(None, "cols"))
rep = NamedSharding(mesh, P())
def normalize(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)
f = jit(normalize, in_shardings=row_s, out_shardings=col_s)
x = arange(16.0).reshape(8, 2) ** 2
y = f(x)
print(y.sharding == col_s, y.sharding.spec, y.shape)
print(round(y[:, 1], 5))
g = jit(lambda a, b: (a @ b, a.sum()), out_shardings=(row_s, rep))
m, s = g(x, ones((2, 3)))
print(m.sharding == row_s, s.sharding.is_fully_replicated, s, m[-1])
h = jit(lambda a: a * 2)
placed = device_put(x, row_s)
print(h(placed).sharding.spec == P("rows"), typeof(h(placed)))
print(len([sh.device.id for sh in placed.addressable_shards]), placed.sharding.shard_shape(x.shape))
"#,
        expect![[r#"
            True P(None, 'cols') (8, 2)
            [-1.11144    -1.00559    -0.79388    -0.47632998 -0.05293     0.47632998
              1.11144     1.8524    ]
            True True 1240.0 [421. 421. 421.]
            True float32[8,2]
            8 (2, 2)
        "#]],
    );
}

#[test]
fn reshard_and_sharding_constraints() {
    check(
        r#"
mesh = make_mesh((4, 2), ("X", "Y"))
ctx = set_mesh(mesh)
x = device_put(arange(32.0).reshape(8, 4), P("X", None))
y = reshard(x, P(None, "Y"))
print(typeof(x), typeof(y), bool(allclose(y, reshard(x, P(None, "Y")))))
z = reshard(y, P())
print(typeof(z), z[0])
print(typeof(jit(lambda v: reshard(v * 2, P("Y", "X")))(x)))
ctx.__exit__(None, None, None)
auto = make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto, AxisType.Auto))
@jit
def pipeline(v):
    h = with_sharding_constraint(v * 3, NamedSharding(auto, P("a", "b")))
    return tanh(h) + 1
v = device_put(linspace(-1.0, 1.0, 16).reshape(8, 2), NamedSharding(auto, P("a")))
out = pipeline(v)
print(out.sharding.spec == P("a", "b"), out.shape, typeof(out))
print(round(out[:, 1], 5))
print(v.sharding.spec == P("a"), v.sharding.shard_shape(v.shape), out.sharding.shard_shape(out.shape))
"#,
        expect![[r#"
            float32[8@X,4] float32[8,4@Y] True
            float32[8,4] [0. 1. 2. 3.]
            float32[8@Y,4@X]
            True (8, 2) float32[8,2]
            [0.01097 0.05319 0.23841 0.80262 1.53705 1.88535 1.97574 1.99505]
            True (2, 2) (2, 1)
        "#]],
    );
}

#[test]
fn shard_map_pytree_specs_and_collectives() {
    check(
        r#"
mesh = make_mesh((4, 2), ("batch", "feat"))
ctx = set_mesh(mesh)
xs = device_put(arange(16.0).reshape(8, 2), P("batch", "feat"))
ys = device_put(ones((8, 2)), P("batch", "feat"))
scale = float32(0.5)
def fused0(pair, s):
    a, b = pair
    local = (a - b) * s
    return local, psum(sum(local ** 2), ("batch", "feat"))
fused = shard_map(in_specs=((P("batch", "feat"), P("batch", "feat")), P()), out_specs=(P("batch", "feat"), P()))(fused0)
diff, sq = fused((xs, ys), scale)
print(typeof(diff), diff.sum(), sq)
per_row = shard_map(lambda a: psum(a.sum(axis=1), "feat"), in_specs=P("batch", "feat"), out_specs=P("batch"))(xs)
print(typeof(per_row), per_row)
inferred = shard_map(lambda a: a * axis_index("batch"), out_specs=P("batch", "feat"))(xs)
print(inferred.sum(axis=1))
d = shard_map(lambda t: {"lo": t.min(keepdims=True), "hi": t.max(keepdims=True)}, in_specs=P("batch", "feat"), out_specs={"lo": P("batch", "feat"), "hi": P("batch", "feat")})(xs)
print(d["lo"].shape, d["hi"].sum())
ctx.__exit__(None, None, None)
mesh = make_mesh((4, 2), ("rows", "cols"))
x = device_put(arange(16.0).reshape(4, 4), NamedSharding(mesh, P("rows", "cols")))
def rs(block):
    total = psum(block.sum(axis=1, keepdims=True), "cols")
    mean_ = pmean(block.mean(axis=1, keepdims=True), "cols")
    peak = pmax(block.max(axis=1, keepdims=True), "cols")
    return concatenate([total, mean_, peak], axis=1)
row_stats = shard_map(rs, mesh=mesh, in_specs=P("rows", "cols"), out_specs=P("rows", None))
print(row_stats(x))
def co(block):
    r, c = axis_index("rows"), axis_index("cols")
    return zeros_like(block) + 10 * r + c + axis_size("rows") * 100
coords = shard_map(co, mesh=mesh, in_specs=P("rows", "cols"), out_specs=P("rows", "cols"))
print(coords(x))
print(mesh.shape["rows"], typeof(x), typeof(row_stats(x)))
"#,
        expect![[r#"
            float32[8@batch,2@feat] 52.0 254.0
            float32[8@batch] [ 1.  5.  9. 13. 17. 21. 25. 29.]
            [ 0.  0.  9. 13. 34. 42. 75. 87.]
            (4, 2) 68.0
            [[ 6.   1.5  3. ]
             [22.   5.5  7. ]
             [38.   9.5 11. ]
             [54.  13.5 15. ]]
            [[400. 400. 401. 401.]
             [410. 410. 411. 411.]
             [420. 420. 421. 421.]
             [430. 430. 431. 431.]]
            4 float32[4@rows,4@cols] float32[4@rows,3]
        "#]],
    );
}

#[test]
fn tensor_parallel_mlp_and_its_gradient() {
    check(
        r#"
mesh = make_mesh((2, 4), ("data", "model"))
k1, k2, k3 = random.split(random.key(4), 3)
x = random.normal(k1, (8, 6))
w1 = random.normal(k2, (6, 16)) / sqrt(6.0)
w2 = random.normal(k3, (16, 3)) / 4.0
put = lambda a, spec: device_put(a, NamedSharding(mesh, spec))
xs, w1s, w2s = put(x, P("data", None)), put(w1, P(None, "model")), put(w2, P("model", None))
def tp(xb, w1b, w2b):
    hidden = relu(xb @ w1b)
    return psum(hidden @ w2b, "model")
tp_mlp = shard_map(tp, mesh=mesh, in_specs=(P("data", None), P(None, "model"), P("model", None)), out_specs=P("data", None))
out = tp_mlp(xs, w1s, w2s)
ref = relu(x @ w1) @ w2
print(typeof(out), w1s.sharding.shard_shape(w1.shape), w2s.sharding.shard_shape(w2.shape))
print(bool(allclose(out, ref, atol=1e-5)), round(ref[0], 5))
loss = lambda a, b: mean(tp_mlp(xs, a, b) ** 2)
g1, g2 = jit(grad(loss, argnums=(0, 1)))(w1s, w2s)
r1, r2 = grad(lambda a, b: mean((relu(x @ a) @ b) ** 2), argnums=(0, 1))(w1, w2)
print(typeof(g1), typeof(g2), bool(allclose(g1, r1, atol=1e-5)), bool(allclose(g2, r2, atol=1e-5)))
print(f"{float(loss(w1s, w2s)):.5f}", f"{float(norm(r1)):.5f}")
"#,
        expect![[r#"
            float32[8@data,3] (6, 4) (4, 3)
            True [ 0.60943997  0.38       -0.20582   ]
            float32[6,16@model] float32[16@model,3] True True
            0.51307 0.86611
        "#]],
    );
}

#[test]
fn data_parallel_training_under_a_context_mesh() {
    check(
        r#"
mesh = make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
true_w, true_b = array([2.0, -1.0, 0.5]), 0.3
def batch(key, i, size=32):
    x = random.normal(random.fold_in(key, i), (size, 3), out_sharding=P("data", None))
    return x, x @ true_w + true_b + 0.01 * sin(7.0 * x[:, 0])
@jit
def train_step(p, x, y):
    loss_fn = lambda p: mean((x @ p["w"] + p["b"] - y) ** 2)
    loss, g = value_and_grad(loss_fn)(p)
    return tree_map(lambda a, b: a - 0.2 * b, p, g), loss
ctx = set_mesh(mesh)
params = {"w": zeros(3), "b": zeros(())}
for step in range(40):
    x, y = batch(random.key(1), step)
    if step == 0:
        print(typeof(x), typeof(y), typeof(params["w"]))
    params, loss = train_step(params, x, y)
    if step % 10 == 0:
        print(step, f"{float(loss):.6f}")
print(typeof(params["w"]), typeof(params["b"]), round(params["w"], 5), round(params["b"], 5))
"#,
        expect![[r#"
            float32[32@data,3] float32[32@data] float32[3]
            0 4.665534
            10 0.000249
            20 0.000052
            30 0.000051
            float32[3] float32[] [ 2.00038    -0.99868995  0.49916   ] 0.29997998
        "#]],
    );
}

/// Each mistake is a Python exception of JAX's class naming the shardings
/// or the devices, with the line; none returns a wrong value.
#[test]
fn errors() {
    let setup = "mesh = make_mesh((8,), ('x',))\n\
                 v = device_put(arange(16.0), NamedSharding(mesh, P('x')))\n";
    let cases = [
        "shard_map(lambda b: b * 2, mesh=mesh, in_specs=P('x'), out_specs=P())(v)",
        "shard_map(lambda b: b, in_specs=P('x'), out_specs=P('x'))(v)",
        "shard_map(lambda b: b, mesh=mesh, in_specs=P('x', None), out_specs=P('x'))(v)",
        "device_put(ones(6), NamedSharding(mesh, P('x')))",
        "shard_map(lambda b: b, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(ones(8))",
        "v[3]",
        "m2 = make_mesh((2, 4), ('a', 'b'))\n\
         device_put(arange(8.0), NamedSharding(m2, P('a'))) + device_put(arange(8.0), NamedSharding(m2, P('b')))",
        "low = make_mesh((4,), ('a',), devices=devices()[:4])\n\
         high = make_mesh((4,), ('a',), devices=devices()[4:])\n\
         device_put(ones(8), NamedSharding(low, P('a'))) + device_put(ones(8), NamedSharding(high, P('a')))",
        "device_put(ones(8), P('x'))",
    ];
    let text: Vec<String> = cases
        .iter()
        .map(|c| arr_testkit::script_output(&format!("{setup}{c}\n")))
        .collect();
    expect![[r#"
        ValueError: shard_map was given out_specs which require replication the values do not have:

        The mesh given has shape (8,) with corresponding axis names ('x',).

        out_specs is P(None) which implies that the corresponding output value is replicated across mesh axis 'x', but its blocks differ across that axis.

        Check if these output values are meant to be replicated over those mesh axes. If not, consider revising the corresponding out_specs entries (or reduce them with psum). If so, consider disabling the check by passing the check_vma=False argument to `jax.shard_map`. at test.arr:3:1
          |
        3 | shard_map(lambda b: b * 2, mesh=mesh, in_specs=P('x'), out_specs=P())(v)
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: shard_map: no mesh: pass mesh= or call it under set_mesh(mesh) at test.arr:3:1
          |
        3 | shard_map(lambda b: b, in_specs=P('x'), out_specs=P('x'))(v)
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: P('x', None): the partition spec has 2 entries, more than the array's rank 1 at test.arr:3:1
          |
        3 | shard_map(lambda b: b, mesh=mesh, in_specs=P('x', None), out_specs=P('x'))(v)
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: device_put: dimension 0 of f32[6] is not divisible by the 8 devices that P('x') splits it over at test.arr:3:1
          |
        3 | device_put(ones(6), NamedSharding(mesh, P('x')))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: in_specs passed to shard_map: P('x') does not match the specs of the input: P(None) for arg: float32[8]. `in_specs` is an optional argument so you can omit specifying it and shard_map will infer the in_specs from the arguments. If you want to reshard your inputs, you can use `jax.reshard` on the arguments and then pass those args to shard_map. at test.arr:3:1
          |
        3 | shard_map(lambda b: b, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(ones(8))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ShardingTypeError: indexing dimension 0 of float32[16@x] with an integer: that dimension is split over Explicit mesh axes; reshard it to P() (or index inside shard_map) at test.arr:3:1
          |
        3 | v[3]
          | ^^^^
        ShardingTypeError: add of float32[8@a] and float32[8@b]: dimension 0 is split by 'a' in one operand and by 'b' in another; reshard one of them at test.arr:4:1
          |
        4 | device_put(arange(8.0), NamedSharding(m2, P('a'))) + device_put(arange(8.0), NamedSharding(m2, P('b')))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: add: the operands are on disjoint sets of devices: Mesh('a': 4) on devices [0, 1, 2, 3] and Mesh('a': 4) on devices [4, 5, 6, 7]; move one with device_put first at test.arr:5:1
          |
        5 | device_put(ones(8), NamedSharding(low, P('a'))) + device_put(ones(8), NamedSharding(high, P('a')))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        ValueError: device_put: P('x') names no mesh and none is set: use NamedSharding(mesh, P('x')) or set_mesh(mesh) first at test.arr:3:1
          |
        3 | device_put(ones(8), P('x'))
          | ^^^^^^^^^^^^^^^^^^^^^^^^^^^
    "#]].assert_eq(&text.join(""));
}
