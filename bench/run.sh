#!/usr/bin/env bash
# Build in release mode and run the benchmark with NumPy/CPython anchors
# measured in the same run. Uses the test script's local venv for NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -x .venv/bin/python ] && .venv/bin/python -c "import numpy" 2>/dev/null; }; then
    python3 -m venv .venv && .venv/bin/python -m pip install --quiet numpy
fi
# JAX (CPU) for the jit anchors; without it those rows print n/a.
.venv/bin/python -c "import jax" 2>/dev/null || .venv/bin/python -m pip install --quiet jax \
    || echo "JAX could not be installed: the jit anchors are skipped" >&2
# The system OpenBLAS, which arr loads at run time for large matrix products
# (NumPy ships its own); without it they use matrixmultiply.
if ! ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get install -y -q libopenblas0-pthread || { apt-get update -q && apt-get install -y -q libopenblas0-pthread; }; } >/dev/null 2>&1 \
        || echo "OpenBLAS could not be installed: matrix products use matrixmultiply" >&2
fi
cargo build --release -p arr-bench -p arr-repl
exec target/release/arr-bench --python "$PWD/.venv/bin/python" "$@"
