#!/usr/bin/env bash
# Runs every test of the workspace. The NumPy interoperability tests need the
# real numpy package: it is installed into a local virtual environment
# (.venv, ignored by git) whose interpreter the tests find through ARR_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."

python_with_numpy() {
    if [ -x .venv/bin/python ] && .venv/bin/python -c "import numpy" 2>/dev/null; then
        echo "$PWD/.venv/bin/python"
        return
    fi
    if python3 -m venv .venv 2>/dev/null && .venv/bin/python -m pip install --quiet --disable-pip-version-check numpy >&2; then
        echo "$PWD/.venv/bin/python"
        return
    fi
    # Without the venv module (Debian's python3 lacks it until python3-venv is
    # installed), install numpy into a private folder and point PYTHONPATH at it.
    rm -rf .venv
    python3 -m pip install --quiet --disable-pip-version-check --target .venv/site numpy >&2
    export PYTHONPATH="$PWD/.venv/site"
    echo "python3"
}

ARR_PYTHON="$(python_with_numpy)"
export ARR_PYTHON
export PYTHONPATH="${PYTHONPATH:-}${PYTHONPATH:+:}$PWD/.venv/site"
echo "numpy for the interop tests: $("$ARR_PYTHON" -c 'import numpy; print(numpy.__version__)')"
cargo test --workspace "$@"
