"""Differential test against real NumPy: every expression of
numpy_differential.txt is evaluated by arr (the binary given as argv[1]) and
by NumPy, and the results must agree. Prints one line per mismatch and exits
non-zero if there is any."""
import os
import subprocess
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
lines = [l.strip() for l in open(os.path.join(here, "numpy_differential.txt")) if l.strip() and not l.startswith("#")]


# NumPy spellings of the few arr names NumPy lacks, and JAX's defaults
# (float32 / int32) where NumPy would pick 64-bit types.
def _jax_dtypes(a):
    a = np.asarray(a)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype == np.int64:
        return a.astype(np.int32)
    return a


ns = {k: getattr(np, k) for k in dir(np) if not k.startswith("_")}
ns.update(
    array=lambda x, dtype=None: _jax_dtypes(np.array(x, dtype=dtype)),
    arange=lambda *a, **k: _jax_dtypes(np.arange(*a, **k)),
    ones=lambda s: np.ones(s, np.float32),
    log_softmax=lambda x, axis=-1: x - x.max(axis, keepdims=True) - np.log(np.sum(np.exp(x - x.max(axis, keepdims=True)), axis, keepdims=True)),
    logsumexp=lambda x, axis=None: (np.log(np.sum(np.exp(x - x.max(axis, keepdims=True)), axis, keepdims=True)) + x.max(axis, keepdims=True)).squeeze(axis),
)

program = "def tolist_(v):\n    return v.tolist() if isinstance(v, array) else v\n" + "\n".join(f"print(tolist_({l}))" for l in lines)
out = subprocess.run([sys.argv[1], "-e", program], capture_output=True, text=True)
if out.returncode != 0:
    print("arr failed:", out.stderr)
    sys.exit(1)
got_lines = out.stdout.strip().split("\n")
if len(got_lines) != len(lines):
    print(f"arr printed {len(got_lines)} lines for {len(lines)} expressions")
    sys.exit(1)
bad = 0
for expr, got in zip(lines, got_lines):
    want = eval(expr, ns)
    want = want.tolist() if hasattr(want, "tolist") else want
    g = eval(got, {"nan": float("nan"), "inf": float("inf"), "True": True, "False": False})
    same = np.shape(g) == np.shape(want) and np.allclose(np.array(g, dtype=float), np.array(want, dtype=float), equal_nan=True, rtol=1e-5)
    if not same:
        bad += 1
        print(f"MISMATCH {expr}\n   arr:   {got}\n   numpy: {want}")
print(f"{len(lines)} expressions, {bad} mismatches")
sys.exit(1 if bad else 0)
