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
    # arr's global names of numpy.fft's functions.
    **{k: getattr(np.fft, k) for k in dir(np.fft) if not k.startswith("_")},
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

# Printing: arr's print(x) must be NumPy's str(x), character for character
# (line wrapping, padding, nan/inf alignment, shortest digits).
printed = [
    "arange(40.0)", "arange(100)", "arange(60.0).reshape(3, 20)", "arange(48.0).reshape(2, 2, 12) / 7",
    "arange(30) * 1000", "array([1.5, 2.25] * 12)", "arange(25.0)", "arange(26.0)", "arange(27.0)",
    "array([2.25, 4.0, 0.0, nan, inf])", "array([[1.5, nan], [-inf, 100.25]])", "array([1e-9, nan, 1.0])",
    "array([0.1, 0.2, 0.3], dtype=float16) * 3", "array([1.5, 2.25, 0.1, 1000.5], dtype=float16)",
    "array([65504, 70000, 1e-8, 6e-8], dtype=float16)", "arange(12.0).reshape(3, 4) / 3",
    # 0-d arrays print as NumPy's scalars: positional only where the digits are the value's.
    "array(12345678.0)", "array(134217728.0)", "array(999999.0)", "array(0.0001)", "array(0.00011)",
    "array(-2.5e6)", "array(0.5)", "array(10000.0, dtype=float16)", "array(999.0, dtype=float16)",
    # Complex arrays: each part formatted as a float array, the imaginary one signed.
    "array([1+2j, -3.5+0.25j, 2j])", "array([[1+1j, 0.5-2j], [3j, -1.0]])", "arange(3.0) * (1 - 2j)",
    "array([1e-9+1j, 2.0])", "array(3-4j)", "array(2j)", "array(-1.5+0j)",
]
out = subprocess.run([sys.argv[1], "-e", "\n".join(f"print({e})" for e in printed)], capture_output=True, text=True)
want = "".join(str(_jax_dtypes(eval(e, ns))) + "\n" for e in printed)
if out.returncode != 0 or out.stdout != want:
    bad += 1
    import difflib
    print("PRINTING differs from NumPy's str():")
    print("".join(difflib.unified_diff(want.splitlines(True), out.stdout.splitlines(True), "numpy", "arr")), out.stderr)
print(f"{len(printed)} printed arrays compared with NumPy's text")
sys.exit(1 if bad else 0)
