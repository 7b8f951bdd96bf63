"""Time of ``import flexmg`` in a fresh interpreter (target < 0.5 s), and that it imports no torch.

Run: python benchmarks/bench_import.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys


def main(repeats: int = 7) -> None:
    code = (
        "import time, sys; t = time.perf_counter(); import flexmg; "
        "print(time.perf_counter() - t, 'torch' in sys.modules)"
    )
    times = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        seconds, torch_loaded = out.stdout.split()
        times.append(float(seconds))
    median = statistics.median(times)
    print(
        f"import flexmg: median {median * 1000:.0f} ms over {repeats} fresh interpreters "
        f"(min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms); torch imported: {torch_loaded}"
    )
    print(f"target < 500 ms: {'MET' if median < 0.5 else 'NOT MET'}")


if __name__ == "__main__":
    main()
