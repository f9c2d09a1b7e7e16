#!/usr/bin/env bash
# Runs every test of the workspace. The NumPy interoperability tests need the
# real numpy package, the optax and flax differential tests the real optax and
# flax (with the jax they run on), and the Jupyter kernel tests the real Jupyter clients
# (jupyter_client, jupyter_kernel_test, nbconvert, nbclient, papermill): they
# are installed into a local virtual environment (.venv, ignored by git)
# whose interpreter the tests find through ARR_PYTHON. The GPU suites need
# NVRTC 13.0 (from PyPI, into the same environment: it compiles every rendered
# CUDA kernel, no GPU needed), NCCL 2.30 (from PyPI too: its version, unique
# ids and their exchange across processes run without a GPU) and an OpenCL
# device (PoCL, a CPU OpenCL runtime from Debian, which executes the rendered
# OpenCL kernels).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(numpy jupyter_client jupyter-kernel-test nbformat nbconvert nbclient papermill
    "jax[cpu]==0.10.2" "optax==0.2.8" "flax==0.12.8"
    "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-nccl-cu13==2.30.*")
IMPORTS="import numpy, jupyter_client, jupyter_kernel_test, nbformat, nbconvert, nbclient, papermill, jax, optax, flax, nvidia.cu13, nvidia.nccl"

python_with_numpy() {
    if [ -x .venv/bin/python ] && .venv/bin/python -c "$IMPORTS" 2>/dev/null; then
        echo "$PWD/.venv/bin/python"
        return
    fi
    if { [ -x .venv/bin/python ] || python3 -m venv .venv 2>/dev/null; } &&
        .venv/bin/python -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2; then
        echo "$PWD/.venv/bin/python"
        return
    fi
    # Without the venv module (Debian's python3 lacks it until python3-venv is
    # installed), install numpy into a private folder and point PYTHONPATH at it.
    rm -rf .venv
    python3 -m pip install --quiet --disable-pip-version-check --target .venv/site "${PACKAGES[@]}" >&2
    export PYTHONPATH="$PWD/.venv/site"
    echo "python3"
}

# The system OpenBLAS, which arr loads at run time for large matrix products:
# with it the tests exercise both product paths (BLAS and matrixmultiply).
# Installed when this runs as root with apt; the tests pass without it.
if ! ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get install -y -q libopenblas0-pthread || { apt-get update -q && apt-get install -y -q libopenblas0-pthread; }; } >/dev/null 2>&1 \
        || echo "OpenBLAS could not be installed: matrix products use matrixmultiply" >&2
fi

# PoCL for the OpenCL suites (as root with apt); without it they say SKIPPED.
if ! ldconfig -p 2>/dev/null | grep -q libOpenCL.so.1 || [ ! -d /etc/OpenCL/vendors ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get install -y -q pocl-opencl-icd ocl-icd-libopencl1 || { apt-get update -q && apt-get install -y -q pocl-opencl-icd ocl-icd-libopencl1; }; } >/dev/null 2>&1 \
            || echo "PoCL could not be installed: the OpenCL suites are skipped" >&2
    fi
fi
if ldconfig -p 2>/dev/null | grep -q libOpenCL.so.1 && ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
    export ARR_REQUIRE_OPENCL=1
fi

# Open MPI for the tests of meshes across processes (as root with apt): arr
# built with the `mpi` feature (bindgen needs libclang) into its own target
# folder, so the workspace's default build stays MPI-free.
if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get install -y -q libopenmpi-dev openmpi-bin libclang-dev || { apt-get update -q && apt-get install -y -q libopenmpi-dev openmpi-bin libclang-dev; }; } >/dev/null 2>&1 \
            || echo "Open MPI could not be installed: the tests across processes are skipped" >&2
    fi
fi
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
    cargo build -p arr-repl --features mpi --target-dir target/mpi
    export ARR_MPI_BIN="$PWD/target/mpi/debug/arr"
    export ARR_REQUIRE_MPI=1
fi

ARR_PYTHON="$(python_with_numpy)"
export ARR_PYTHON
export PYTHONPATH="${PYTHONPATH:-}${PYTHONPATH:+:}$PWD/.venv/site"
echo "numpy for the interop tests: $("$ARR_PYTHON" -c 'import numpy; print(numpy.__version__)')"
echo "jupyter_client for the kernel tests: $("$ARR_PYTHON" -c 'import jupyter_client; print(jupyter_client.__version__)')"
# NVRTC opens from the library path, which must be set before the process starts.
nvrtc_dir="$(dirname "$(find "$PWD/.venv" -name 'libnvrtc.so.13' -print -quit 2>/dev/null)")"
if [ -f "$nvrtc_dir/libnvrtc.so.13" ]; then
    export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:}${LD_LIBRARY_PATH:-}"
    export ARR_REQUIRE_NVRTC=1
    echo "NVRTC for the CUDA compile tests: $nvrtc_dir"
fi
nccl_dir="$(dirname "$(find "$PWD/.venv" -name 'libnccl.so.2' -print -quit 2>/dev/null)")"
if [ -f "$nccl_dir/libnccl.so.2" ]; then
    export LD_LIBRARY_PATH="$nccl_dir${LD_LIBRARY_PATH:+:}${LD_LIBRARY_PATH:-}"
    export ARR_REQUIRE_NCCL=1
    echo "NCCL for the communicator set-up tests: $nccl_dir"
fi
# Compiled GPU kernels are cached per run, not in the user's cache directory.
ARR_CACHE_DIR="$(mktemp -d)"
export ARR_CACHE_DIR
# Keep cargo's own output, and close with one line that totals every test
# binary (cargo prints a result line per binary, the last often a doc-test one).
log="$(mktemp)"
trap 'rm -rf "$log" "$ARR_CACHE_DIR"' EXIT
set +e
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
