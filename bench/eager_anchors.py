"""NumPy and CPython side of arr's eager benchmark (issue #2 workloads).

Prints one JSON object: workload id -> median milliseconds. Run by
`arr-bench`, in the same run as arr's own workloads, so ratios compare
measurements taken on the same machine at the same time.
"""
import json
import statistics
import subprocess
import sys
import time

import numpy as np


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    x = np.random.default_rng(0).standard_normal(10_000_000, dtype=np.float32)
    out = {}
    out["w1"] = median_ms(lambda: np.sin(x) * 2.0 + x * x - 1.0, repeat)
    out["w1b"] = median_ms(lambda: x * 2.0 + x * x - 1.0, repeat)
    out["w2"] = median_ms(lambda: np.sum(x * x), repeat)

    def loop():
        s = 0.0
        for i in range(1_000_000):
            s = s + i * 0.5
        return s

    out["w8"] = median_ms(loop, repeat)

    b = np.ones(100, dtype=np.float32)

    def dispatch():
        y = np.zeros(100, dtype=np.float32)
        for _ in range(100_000):
            y = y * np.float32(0.99) + b
        return y

    out["w9"] = median_ms(dispatch, repeat)
    cmd = [sys.executable, "-c", "import numpy; numpy.ones(3).sum()"]
    out["w7"] = median_ms(lambda: subprocess.run(cmd, check=True), repeat)
    out["numpy"] = np.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
