"""NumPy and CPython side of arr's eager benchmark (issue #2 workloads).

Prints one JSON object: workload id -> median milliseconds. Run by
`arr-bench`, in the same run as arr's own workloads, so ratios compare
measurements taken on the same machine at the same time.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

# Eight virtual CPU devices for pmap (w5), as the shared anchors.py sets them;
# it must be set before JAX is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

# ARR_BENCH_ONLY="w3_1024,w4_jit" measures only those anchors (arr-bench --only).
ONLY = set(filter(None, __import__("os").environ.get("ARR_BENCH_ONLY", "").split(",")))


def want(*keys):
    return not ONLY or any(k in ONLY for k in keys)


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def jax_anchors(x, repeat):
    """JAX jit on the CPU, when JAX is installed (the same workloads as
    the benchmark's anchor list)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    out = {}
    xj = jnp.asarray(x)
    if not want("w1_jit", "w1b_jit", "w2_jit", "w4_jit", "w6", "w5", "w5_first"):
        return {}
    for key, f in [
        ("w1_jit", jax.jit(lambda x: jnp.sin(x) * 2.0 + x * x - 1.0)),
        ("w1b_jit", jax.jit(lambda x: x * 2.0 + x * x - 1.0)),
        ("w2_jit", jax.jit(lambda x: jnp.sum(x * x))),
    ]:
        if not want(key):
            continue
        f(xj).block_until_ready()
        out[key] = median_ms(lambda: f(xj).block_until_ready(), repeat)
    B, D, H, C = 256, 784, 512, 10
    rng = np.random.default_rng(3)
    params = {"w1": jnp.asarray(rng.standard_normal((D, H)).astype(np.float32) * 0.05),
              "b1": jnp.zeros(H),
              "w2": jnp.asarray(rng.standard_normal((H, C)).astype(np.float32) * 0.05),
              "b2": jnp.zeros(C)}
    xb = jnp.asarray(rng.standard_normal((B, D)).astype(np.float32))
    yb = jnp.asarray(rng.integers(0, C, B))

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        logp = jax.nn.log_softmax(h @ p["w2"] + p["b2"], axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

    if want("w5", "w5_first"):
        nd = jax.local_device_count()

        def pstep_fn(p, x, y):
            g = jax.lax.pmean(jax.grad(loss)(p, x, y), "d")
            return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

        prep = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (nd,) + a.shape), params)
        xs, ys = xb.reshape(nd, B // nd, D), yb.reshape(nd, B // nd)
        t = time.perf_counter()
        pstep = jax.pmap(pstep_fn, axis_name="d")
        jax.block_until_ready(pstep(prep, xs, ys))
        out["w5_first"] = (time.perf_counter() - t) * 1e3
        out["w5"] = median_ms(lambda: jax.block_until_ready(pstep(prep, xs, ys)), max(repeat, 20))
    if not want("w4_jit", "w6"):
        return out
    t = time.perf_counter()
    jstep = jax.jit(step)
    jax.block_until_ready(jstep(params, xb, yb))
    out["w6"] = (time.perf_counter() - t) * 1e3
    out["w4_jit"] = median_ms(lambda: jax.block_until_ready(jstep(params, xb, yb)), max(repeat, 20))
    return out


# The transformer's sizes, as the shared anchors.py reads them:
# TSIZES=B,T,D,H,L,V (batch, sequence, width, heads, layers, vocabulary).
TB, TT, TD, TH, TL, TV = [int(v) for v in os.environ.get("TSIZES", "8,64,128,4,2,256").split(",")]

# A collective in compiled HLO: its result type, its op, and its replica groups
# (explicit `{{0,1},{2,3}}` or iota `[2,4]<=[8]`).
HLO_COLLECTIVE = re.compile(
    r"= (\(.*?\)|\S+) (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\((.*)$")
HLO_SHAPE = re.compile(r"(pred|[suf]\d+|bf16)\[([\d,]*)\]")
DTYPE_BYTES = {"pred": 1, "bf16": 2}


def group_size(rest):
    """Devices per replica group of an HLO collective: explicit groups
    `{{0,1},{2,3}}`, iota groups `[2,4]<=[8]`, or mesh groups
    `mesh['axis_0'=2,'axis_1'=4] {'axis_0'}` (the product of the named
    axes' sizes; XLA writes these for collectives over one mesh axis)."""
    g = re.search(r"replica_groups=\[(\d+),(\d+)\]", rest)
    if g:
        return int(g.group(2))
    g = re.search(r"replica_groups=\{\{([\d,]*)\}", rest)
    if g:
        return len(g.group(1).split(","))
    g = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", rest)
    if g:
        sizes = dict(re.findall(r"'([^']+)'=(\d+)", g.group(1)))
        n = 1
        for axis in re.findall(r"'([^']+)'", g.group(2)):
            n *= int(sizes[axis])
        return n
    return 1


def hlo_collectives(hlo):
    """(count, bytes sent per device) of the collectives of compiled HLO,
    counted as arr's plan counts them: an all-reduce of B bytes over n
    devices sends 2B(n-1)/n, an all-gather of a B-byte block B(n-1), the
    others their operand's bytes."""
    count, sent = 0, 0
    for line in hlo.splitlines():
        m = HLO_COLLECTIVE.search(line)
        if not m:
            continue
        result, op, rest = m.groups()
        nbytes = 0
        for dt, dims in HLO_SHAPE.findall(result):
            size = DTYPE_BYTES.get(dt) or int(dt[1:]) // 8
            for d in filter(None, dims.split(",")):
                size *= int(d)
            nbytes += size
        n = group_size(rest)
        count += 1
        if op == "all-reduce":
            sent += 2 * nbytes * (n - 1) // max(n, 1)
        elif op == "all-gather":
            sent += nbytes * (n - 1) // max(n, 1)
        else:
            sent += nbytes
    return count, sent


def transformer_anchors(repeat):
    """w10 (a GPT training step under jit), w12 (its first call) and w11 (w10
    sharded over a (2, 4) mesh): the transformer of the benchmark's anchor
    list, with the same names as arr's version of it (arr-bench's
    WORKLOADS) and the same code as the shared anchors.py."""
    if not want("w10", "w12", "w11"):
        return {}
    try:
        import jax
        import jax.numpy as jnp
        from jax import random
    except ImportError:
        return {}
    ks = random.split(random.key(0), 2 + 4 * TL)
    p = {"emb": random.normal(ks[0], (TV, TD)) * 0.02, "layers": []}
    for i in range(TL):
        k = ks[2 + 4 * i: 6 + 4 * i]
        p["layers"].append({"wqkv": random.normal(k[0], (TD, 3 * TD)) * 0.02,
                            "wo": random.normal(k[1], (TD, TD)) * 0.02,
                            "w1": random.normal(k[2], (TD, 4 * TD)) * 0.02,
                            "w2": random.normal(k[3], (4 * TD, TD)) * 0.02,
                            "g1": jnp.ones(TD), "g2": jnp.ones(TD)})

    def layernorm(x, g):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5) * g

    def heads(t):
        return t.reshape(TB, TT, TH, TD // TH).transpose(0, 2, 1, 3)

    def attn(x, lp):
        q, k, v = jnp.split(x @ lp["wqkv"], 3, axis=-1)
        q, k, v = heads(q), heads(k), heads(v)
        s = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(float(TD // TH))
        s = jnp.where(jnp.tril(jnp.ones((TT, TT))) > 0, s, -1e9)
        a = jax.nn.softmax(s, axis=-1) @ v
        return a.transpose(0, 2, 1, 3).reshape(TB, TT, TD) @ lp["wo"]

    def forward(p, tok):
        x = p["emb"][tok]
        for lp in p["layers"]:
            x = x + attn(layernorm(x, lp["g1"]), lp)
            x = x + jax.nn.gelu(layernorm(x, lp["g2"]) @ lp["w1"]) @ lp["w2"]
        return x @ p["emb"].T

    def loss(p, tok, tgt):
        logp = jax.nn.log_softmax(forward(p, tok), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, tgt[..., None], axis=-1))

    def step(p, tok, tgt):
        l, g = jax.value_and_grad(loss)(p, tok, tgt)
        return l, jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

    tok = random.randint(random.key(1), (TB, TT), 0, TV)
    tgt = random.randint(random.key(2), (TB, TT), 0, TV)
    out = {}
    if want("w10", "w12"):
        t = time.perf_counter()
        jstep = jax.jit(step)
        jax.block_until_ready(jstep(p, tok, tgt))
        out["w12"] = (time.perf_counter() - t) * 1e3
        out["w10"] = median_ms(lambda: jax.block_until_ready(jstep(p, tok, tgt)), max(repeat, 10))
        # What XLA's compiled step allocates besides its arguments: the
        # anchor of arr's peak-memory row for w10.
        mem = jstep.lower(p, tok, tgt).compile().memory_analysis()
        if mem is not None:
            out["w10_jax_mb"] = (mem.temp_size_in_bytes + mem.output_size_in_bytes) / 1e6
    if want("w11") and len(jax.devices()) >= 8:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        m = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
        s = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
        layer = {"wqkv": s(None, "model"), "wo": s("model", None), "w1": s(None, "model"),
                 "w2": s("model", None), "g1": s(None), "g2": s(None)}
        lay = {"emb": s(None, None), "layers": [layer] * TL}
        f = jax.jit(step, in_shardings=(lay, s("data", None), s("data", None)),
                    out_shardings=(s(), lay))
        out["w11_collectives"], out["w11_bytes"] = hlo_collectives(
            f.lower(p, tok, tgt).compile().as_text())
        out["w11"] = median_ms(lambda: jax.block_until_ready(f(p, tok, tgt)), max(repeat, 10))
    return out


def flax_gpt_anchor(repeat):
    """w13: the GPT of w10 with a head-major QKV projection, written as a Flax
    NNX module whose parameters carry logical axis names, laid out by
    tensor + data parallel rules on a (2, 4) mesh and trained by optax's SGD
    under nnx.jit (arr's version is in arr-bench's WORKLOADS)."""
    if not want("w13"):
        return {}
    try:
        import jax
        import jax.numpy as jnp
        import optax
        from flax import nnx
        from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    except ImportError:
        return {}
    if len(jax.devices()) < 8:
        return {}
    hd = TD // TH
    normal = nnx.initializers.normal(0.02)

    def param(rngs, shape, names, init=normal):
        return nnx.Param(nnx.with_partitioning(init, names)(rngs.params(), shape))

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.wqkv = param(rngs, (TD, 3, TH, hd), ("embed", None, "heads", "head_dim"))
            self.wo = param(rngs, (TH, hd, TD), ("heads", "head_dim", "embed"))
            self.w1 = param(rngs, (TD, 4 * TD), ("embed", "mlp"))
            self.w2 = param(rngs, (4 * TD, TD), ("mlp", "embed"))
            self.g1 = param(rngs, (TD,), ("embed",), nnx.initializers.ones)
            self.g2 = param(rngs, (TD,), ("embed",), nnx.initializers.ones)

        def __call__(self, x):
            def layernorm(x, g):
                m = jnp.mean(x, axis=-1, keepdims=True)
                v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
                return (x - m) / jnp.sqrt(v + 1e-5) * g
            h = layernorm(x, self.g1[...])
            qkv = jnp.einsum("btd,dkhe->kbhte", h, self.wqkv[...])
            s = jnp.einsum("bhqe,bhke->bhqk", qkv[0], qkv[1]) / jnp.sqrt(float(hd))
            s = jnp.where(jnp.tril(jnp.ones((TT, TT))) > 0, s, -1e9)
            a = jnp.einsum("bhqk,bhke->bhqe", jax.nn.softmax(s, axis=-1), qkv[2])
            x = x + jnp.einsum("bhqe,hed->bqd", a, self.wo[...])
            return x + jax.nn.gelu(layernorm(x, self.g2[...]) @ self.w1[...]) @ self.w2[...]

    class GPT(nnx.Module):
        def __init__(self, rngs):
            self.emb = param(rngs, (TV, TD), ("vocab", "embed"))
            self.blocks = nnx.List([Block(rngs) for _ in range(TL)])

        def __call__(self, tok):
            x = self.emb[...][tok]
            for b in self.blocks:
                x = b(x)
            return x @ self.emb[...].T

    rules = [("batch", "data"), ("heads", "model"), ("mlp", "model"), ("vocab", None),
             ("embed", None), ("head_dim", None)]
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    with jax.set_mesh(mesh), nnx.logical_axis_rules(rules):
        model = GPT(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)

        @nnx.jit
        def train_step(model, optimizer, tok, tgt):
            def loss_fn(model):
                logp = jax.nn.log_softmax(model(tok), axis=-1)
                return -jnp.mean(jnp.take_along_axis(logp, tgt[..., None], axis=-1))
            loss, grads = nnx.value_and_grad(loss_fn)(model)
            optimizer.update(model, grads)
            return loss

        batch = NamedSharding(mesh, P("data", None))
        tok = jax.device_put(jax.random.randint(jax.random.key(1), (TB, TT), 0, TV), batch)
        tgt = jax.device_put(jax.random.randint(jax.random.key(2), (TB, TT), 0, TV), batch)
        jax.block_until_ready(train_step(model, optimizer, tok, tgt))
        return {"w13": median_ms(
            lambda: jax.block_until_ready(train_step(model, optimizer, tok, tgt)), max(repeat, 10))}


def main():
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    x = np.random.default_rng(0).standard_normal(10_000_000, dtype=np.float32)
    out = {}
    if want("w1"):
        out["w1"] = median_ms(lambda: np.sin(x) * 2.0 + x * x - 1.0, repeat)
    if want("w1b"):
        out["w1b"] = median_ms(lambda: x * 2.0 + x * x - 1.0, repeat)
    if want("w2"):
        out["w2"] = median_ms(lambda: np.sum(x * x), repeat)

    def loop():
        s = 0.0
        for i in range(1_000_000):
            s = s + i * 0.5
        return s

    if want("w8"):
        out["w8"] = median_ms(loop, repeat)

    b = np.ones(100, dtype=np.float32)

    def dispatch():
        y = np.zeros(100, dtype=np.float32)
        for _ in range(100_000):
            y = y * np.float32(0.99) + b
        return y

    if want("w9"):
        out["w9"] = median_ms(dispatch, repeat)
    if want("copy"):
        out["copy"] = median_ms(lambda: np.copy(x), repeat)
    a3 = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    b3 = np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32)
    if want("w3_1024"):
        out["w3_1024"] = median_ms(lambda: a3 @ b3, repeat)
    a4 = np.random.default_rng(4).standard_normal((2048, 2048)).astype(np.float32)
    b4 = np.random.default_rng(5).standard_normal((2048, 2048)).astype(np.float32)
    if want("w3_2048"):
        out["w3_2048"] = median_ms(lambda: a4 @ b4, repeat)
    out.update(jax_anchors(x, repeat))
    out.update(transformer_anchors(repeat))
    out.update(flax_gpt_anchor(repeat))
    cmd = [sys.executable, "-c", "import numpy; numpy.ones(3).sum()"]
    if want("w7"):
        out["w7"] = median_ms(lambda: subprocess.run(cmd, check=True), repeat)
    out["numpy"] = np.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
