#!/usr/bin/env bash
# The GPU check: one command for a machine with an NVIDIA GPU, no Rust
# toolchain and no network. It runs prebuilt release binaries (build them
# elsewhere with `cargo build --release`, then bring the repository with
# target/release/arr and target/release/arr-bench) and prints, last, a short
# table: g1–g4 of the benchmark's GPU workloads against PyTorch and JAX on
# the same machine (each skipped with a note when its package is missing).
#
#   scripts/gpu-check.sh            # ARR_BIN=dir overrides target/release
#
# Steps: the CUDA libraries found (driver, NVRTC, cuBLAS, NCCL) and the
# devices arr sees; every conformance case on `cuda`, plain and under jit
# (the CPU passes all of them: the same expected values); g1 (w1b at 2^28
# f32 elements over the device-to-device copy rate), g2 (8192² f32 matmul
# over torch.matmul), g3 (the w4 MLP step under jit over JAX on the GPU), g4
# (NVRTC compiles in a second run of the same program: must be 0).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${ARR_BIN:-target/release}"
ARR="$BIN/arr"
PY="${PYTHON:-python3}"
[ -x "$ARR" ] || { echo "no $ARR: build with cargo build --release and bring target/release" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export ARR_CACHE_DIR="$work/cache"
# NVRTC from a wheel when the system has none (cudarc opens it at run time).
if ! ldconfig -p 2>/dev/null | grep -q libnvrtc.so; then
    nvrtc="$(find / -name 'libnvrtc.so*' -not -path '*/proc/*' 2>/dev/null | head -1)"
    [ -n "$nvrtc" ] && export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:}${LD_LIBRARY_PATH:-}"
fi
# NCCL likewise (PyPI's wheel ships only libnccl.so.2, which arr opens by name).
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so; then
    nccl="$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)"
    [ -n "$nccl" ] && export LD_LIBRARY_PATH="$(dirname "$nccl")${LD_LIBRARY_PATH:+:}${LD_LIBRARY_PATH:-}"
fi

echo "== CUDA libraries"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for lib in libcuda.so libnvrtc.so libcublas.so libcublasLt.so libnccl.so; do
    found="$(ldconfig -p 2>/dev/null | grep -m1 -o "/[^ ]*$lib[^ ]*")"
    [ -z "$found" ] && found="$(find / -name "$lib*" -not -path '*/proc/*' 2>/dev/null | head -1)"
    echo "$lib: ${found:-not found}"
done
"$ARR" gpu-info
"$ARR" -e 'print("devices:", devices("cuda"))' || { echo "arr sees no CUDA device: stopping" >&2; exit 1; }

echo "== conformance on cuda"
"$ARR" --device cuda conformance tests/golden.json | tee "$work/plain.txt"
"$ARR" --device cuda conformance --jit tests/golden.json | tee "$work/jit.txt"

echo "== g1–g4"
cat > "$work/g.arr" <<'EOF'
x = random.normal(random.key(0), (2**28,))
f1b = jit(lambda x: x * 2.0 + x * x - 1.0)
t1 = timeit(lambda: block_until_ready(f1b(x)), repeat=5)
a = random.normal(random.key(1), (8192, 8192))
b = random.normal(random.key(2), (8192, 8192))
mm = jit(lambda a, b: a @ b)
t2 = timeit(lambda: block_until_ready(mm(a, b)), repeat=5)
B, D, H, C = 256, 784, 512, 10
k4 = random.split(random.key(3), 4)
params = {"w1": random.normal(k4[0], (D, H)) * 0.05, "b1": zeros(H),
          "w2": random.normal(k4[1], (H, C)) * 0.05, "b2": zeros(C)}
xb = random.normal(k4[2], (B, D))
yb = random.randint(k4[3], (B,), 0, C)
def loss(p, x, y):
    h = tanh(x @ p["w1"] + p["b1"])
    logp = log_softmax(h @ p["w2"] + p["b2"], axis=-1)
    return -mean(take_along_axis(logp, y[:, None], axis=1))
step = jit(lambda p, x, y: tree_map(lambda a, g: a - 0.1 * g, p, grad(loss)(p, x, y)))
t3 = timeit(lambda: block_until_ready(step(params, xb, yb)), repeat=7)
print("arr", t1 * 1e3, t2 * 1e3, t3 * 1e3, kernel_stats()["compiles"])
EOF
"$ARR" --device cuda run "$work/g.arr" | tee "$work/arr1.txt"
"$ARR" --device cuda run "$work/g.arr" | tee "$work/arr2.txt"

cat > "$work/anchors.py" <<'EOF'
import time
def best(f, n=5):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts) * 1e3
try:
    import torch
    x = torch.randn(2**28, device="cuda"); y = torch.empty_like(x)
    def cp(): y.copy_(x); torch.cuda.synchronize()
    a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
    def mm(): torch.matmul(a, b); torch.cuda.synchronize()
    print("torch", best(cp), best(mm))
except Exception as e:
    print("torch n/a n/a  #", type(e).__name__, e)
try:
    import jax, jax.numpy as jnp
    assert jax.devices()[0].platform == "gpu"
    k = jax.random.split(jax.random.key(3), 4)
    B, D, H, C = 256, 784, 512, 10
    p = {"w1": jax.random.normal(k[0], (D, H)) * 0.05, "b1": jnp.zeros(H),
         "w2": jax.random.normal(k[1], (H, C)) * 0.05, "b2": jnp.zeros(C)}
    xb = jax.random.normal(k[2], (B, D)); yb = jax.random.randint(k[3], (B,), 0, C)
    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        logp = jax.nn.log_softmax(h @ p["w2"] + p["b2"], axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
    step = jax.jit(lambda p, x, y: jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, jax.grad(loss)(p, x, y)))
    print("jax", best(lambda: jax.block_until_ready(step(p, xb, yb)), 7))
except Exception as e:
    print("jax n/a  #", type(e).__name__, e)
EOF
"$PY" "$work/anchors.py" | tee "$work/anchors.txt"

echo
echo "== GPU check"
"$PY" - "$work" <<'EOF' 2>/dev/null || awk '{print}' "$work"/arr1.txt "$work"/arr2.txt "$work"/anchors.txt
import sys, os
w = sys.argv[1]
def words(name, key):
    for line in open(os.path.join(w, name)):
        if line.startswith(key):
            return line.split()[1:]
    return []
a1, a2 = words("arr1.txt", "arr"), words("arr2.txt", "arr")
t, j = words("anchors.txt", "torch"), words("anchors.txt", "jax")
num = lambda v: float(v) if v and v[0].isdigit() else None
g1_ms, g2_ms, g3_ms = (num(a2[i]) if len(a2) > i else None for i in range(3))
copy_ms, mm_ms = (num(t[i]) if len(t) > i else None for i in range(2))
jax_ms = num(j[0]) if j else None
gib = 2**30
rows = []
if g1_ms and copy_ms:
    rows.append(("g1", f"w1b 2^28 f32: {2*gib/g1_ms/1e6:.0f} GB/s vs copy {2*gib/copy_ms/1e6:.0f} GB/s", f"{copy_ms/g1_ms:.0%}", "≥ 85%", copy_ms / g1_ms >= 0.85))
if g2_ms and mm_ms:
    rows.append(("g2", f"8192² f32 matmul: {g2_ms:.2f} ms vs torch {mm_ms:.2f} ms", f"{mm_ms/g2_ms:.0%}", "≥ 90%", mm_ms / g2_ms >= 0.90))
rows.append(("g2", "8192² bf16 matmul", "n/a", "≥ 90%", None))
if g3_ms and jax_ms:
    rows.append(("g3", f"w4 step jit: {g3_ms:.3f} ms vs JAX {jax_ms:.3f} ms", f"{g3_ms/jax_ms:.2f}x", "≤ 1.0x", g3_ms / jax_ms <= 1.0))
comp = a2[3] if len(a2) > 3 else "?"
rows.append(("g4", f"compiles in the second run (first: {a1[3] if len(a1) > 3 else '?'})", comp, "= 0", comp == "0"))
for name in ("plain", "jit"):
    try:
        last = open(os.path.join(w, f"{name}.txt")).read().strip().splitlines()[-1]
    except (OSError, IndexError):
        last = "did not run"
    rows.append(("conf", f"conformance on cuda, {name}", last, "all pass", None))
print("| id | measured | value | target | met |")
print("|---|---|---|---|---|")
for r in rows:
    met = "" if r[4] is None else ("yes" if r[4] else "NO")
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {met} |")
EOF
