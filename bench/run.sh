#!/usr/bin/env bash
# Build in release mode and run the benchmark with NumPy/CPython anchors
# measured in the same run. Uses the test script's local venv for NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -x .venv/bin/python ] && .venv/bin/python -c "import numpy" 2>/dev/null; }; then
    python3 -m venv .venv && .venv/bin/python -m pip install --quiet numpy
fi
cargo build --release -p arr-bench -p arr-repl
exec target/release/arr-bench --python "$PWD/.venv/bin/python" "$@"
