"""Differential test against the real flax package: every program of
flax_programs/ (Flax NNX and optax programs, written as a Flax user writes
them) runs under arr (the binary given as argv[1]) and under this Python with
jax, flax and optax; their outputs must agree number by number, with the
JAX programs' rules (jax_programs/check.py: integers exactly, other numbers
within 1e-5 + 1e-4 * |expected|, booleans exactly). Prints one line per
program and exits non-zero if any disagrees."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "jax_programs"))
import check  # noqa: E402  (the JAX programs' comparison, shared)

PROGRAMS = os.path.join(HERE, "flax_programs")
ENV = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONWARNINGS="ignore")


def run(cmd):
    out = subprocess.run(cmd, cwd=PROGRAMS, env=ENV, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {out.returncode}: {out.stderr.strip()[-600:]}")
    return out.stdout


def main():
    arr = os.path.abspath(sys.argv[1])
    names = sorted(n for n in os.listdir(PROGRAMS) if n.endswith(".py"))
    failed = 0
    for name in names:
        try:
            expected = run([sys.executable, name])
            actual = run([arr, "run", name])
            diff = check.compare(expected, actual)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            diff = str(e)
        print(f"{'PASS' if diff is None else 'FAIL'} {name}" + ("" if diff is None else f": {diff}"))
        failed += diff is not None
    print(f"flax_programs: {len(names) - failed} passed, {failed} failed")
    sys.exit(1 if failed or not names else 0)


if __name__ == "__main__":
    main()
