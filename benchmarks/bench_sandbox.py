"""Benchmark: HumanEval's 164 canonical solutions through every available sandbox backend.

Prints, per backend, the pass count (must be 164/164), p50/p95 latency of one
``run_tests`` call and the total wall time, next to an unisolated reference
harness (one ``multiprocessing.Process`` per task running ``exec``, 2 workers,
like the original HumanEval harness) measured in the same run. The reference
runs twice: forked from a lean process that imported only the standard library
("lean parent", the ratio column uses it), and from this benchmark's process
once flexmg is imported ("flexmg parent"), as a harness inside an RL codebase
would fork; a bigger parent makes every fork dearer. The sandboxes grade with
``trusted_tests=True`` (the task's own tests), as the code envs do.

Run: ``python benchmarks/bench_sandbox.py [--backends local,docker,unsafe] [--repeat 3]``
(``--task-code`` also passes each prompt as ``task_code``, as the code envs do).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# FLEXMG_HUMANEVAL overrides where the data is (e.g. a checkout outside the usual layout).
DATA = Path(
    os.environ.get("FLEXMG_HUMANEVAL")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "HumanEval.jsonl.gz"
)


def load_humaneval(path: Path = DATA) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _reference_child(program: str, ok: mp.Value) -> None:  # type: ignore[type-arg]
    try:
        exec(program, {"__name__": "__main__"})  # noqa: S102 - unisolated reference
        ok.value = 1
    except BaseException:
        ok.value = 0


def _reference_one(task: dict, timeout: float) -> tuple[bool, float]:
    program = (
        task["prompt"]
        + task["canonical_solution"]
        + "\n"
        + task["test"]
        + f"\ncheck({task['entry_point']})\n"
    )
    t0 = time.perf_counter()
    ok = mp.Value("i", 0)
    p = mp.Process(target=_reference_child, args=(program, ok))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
    return bool(ok.value), time.perf_counter() - t0


def run_reference_lean(workers: int, timeout: float, limit: int) -> dict:
    """The reference in a fresh interpreter that imports nothing from flexmg."""
    cmd = [sys.executable, __file__, "--reference-only", "--workers", str(workers)]
    cmd += ["--timeout", str(timeout), "--limit", str(limit)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["name"] = "reference, lean parent"
    return res


def run_reference(tasks: list[dict], workers: int, timeout: float) -> dict:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        out = list(pool.map(lambda t: _reference_one(t, timeout), tasks))
    wall = time.perf_counter() - t0
    return _summary("reference, flexmg parent", [o[0] for o in out], [o[1] for o in out], wall)


def _summary(name: str, passed: list[bool], lat: list[float], wall: float) -> dict:
    lat_sorted = sorted(lat)
    p95 = lat_sorted[min(len(lat_sorted) - 1, int(0.95 * len(lat_sorted)))]
    return {
        "name": name,
        "passed": sum(passed),
        "total": len(passed),
        "p50_ms": statistics.median(lat) * 1000,
        "p95_ms": p95 * 1000,
        "wall_s": wall,
    }


def run_backend(
    backend: str,
    tasks: list[dict],
    workers: int,
    timeout: float,
    trusted_tests: bool = True,
    task_code: bool = False,
) -> dict:
    from flexmg.sandboxes import make_sandbox

    with make_sandbox(backend, workers=workers, timeout=timeout, memory_mb=1024) as sb:
        # Warm the workers (their start-up is a one-off cost, reported separately).
        t0 = time.perf_counter()
        sb.map_tests([("def f(): return 1", ["assert f() == 1"])] * workers)
        warm = time.perf_counter() - t0
        lat: dict[int, float] = {}
        ok: dict[int, bool] = {}
        failures: list[str] = []

        def one(i: int) -> None:
            t = tasks[i]
            s = time.perf_counter()
            rep = sb.run_tests(
                t["prompt"] + t["canonical_solution"],
                t["test"],
                t["entry_point"],
                trusted_tests=trusted_tests,  # HumanEval's own tests, as the code envs grade
                **({"task_code": t["prompt"]} if task_code else {}),  # as the code envs pass it
            )
            lat[i] = time.perf_counter() - s
            ok[i] = rep.all_passed
            if not rep.all_passed:
                bad = [r for r in rep.results if not r.passed][:1]
                failures.append(f"{t['task_id']}: {rep.status} {rep.error} {bad}")

        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, range(len(tasks))))
        wall = time.perf_counter() - t0
    res = _summary(
        backend, [ok[i] for i in range(len(tasks))], [lat[i] for i in range(len(tasks))], wall
    )
    res["warmup_s"] = warm
    res["failures"] = failures
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="local,docker,unsafe")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    ap.add_argument(
        "--fresh-judge",
        action="store_true",
        help="grade as agent-written tests (a fresh judge per run, no judge server)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds (medians)")
    ap.add_argument(
        "--task-code",
        action="store_true",
        help="pass each task's prompt as task_code, as the code envs do (its helpers judge)",
    )
    ap.add_argument("--reference-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(
            f"bench_sandbox: error: HumanEval data not found at {DATA}: no figure without it; "
            "set FLEXMG_HUMANEVAL to the HumanEval.jsonl.gz file",
            file=sys.stderr,
        )
        return 2
    tasks = load_humaneval()
    if args.limit:
        tasks = tasks[: args.limit]
    if args.reference_only:  # the lean parent: print one JSON line and stop
        print(json.dumps(run_reference(tasks, args.workers, args.timeout)))
        return 0
    from flexmg.sandboxes import backend_status

    status = backend_status()
    backends = []
    for b in [x.strip() for x in args.backends.split(",") if x.strip()]:
        if status.get(b):
            print(f"[skip] {b}: {status[b]}")
        else:
            backends.append(b)
    rounds: list[list[dict]] = []
    for _ in range(args.repeat):  # interleaved, so slow phases of a noisy machine hit all rows
        rows = [run_reference_lean(args.workers, args.timeout, args.limit)]
        rows.append(run_reference(tasks, args.workers, args.timeout))
        for b in backends:
            rows.append(
                run_backend(
                    b, tasks, args.workers, args.timeout, not args.fresh_judge, args.task_code
                )
            )
        rounds.append(rows)
    judge = "a fresh judge per run" if args.fresh_judge else "the judge server (trusted tests)"
    print(f"HumanEval canonical solutions, {len(tasks)} tasks, {args.workers} workers, {judge}")
    if args.repeat > 1:
        print(
            f"medians over {args.repeat} interleaved rounds; the ratio is the median per-round ratio"
        )
    print(f"{'backend':40} {'passed':>9} {'p50 ms':>8} {'p95 ms':>8} {'wall s':>7} {'vs ref':>7}")
    bad = False
    for k, first in enumerate(rounds[0]):
        same = [rows[k] for rows in rounds]
        med = {
            key: statistics.median(r[key] for r in same) for key in ("p50_ms", "p95_ms", "wall_s")
        }
        ratio = statistics.median(rows[k]["wall_s"] / rows[0]["wall_s"] for rows in rounds)
        passed = min(r["passed"] for r in same)
        bad = bad or any(r["passed"] != r["total"] for r in same)
        print(
            f"{first['name']:40} {passed:>4}/{first['total']:<4} {med['p50_ms']:8.1f} "
            f"{med['p95_ms']:8.1f} {med['wall_s']:7.2f} {ratio:6.2f}x"
            + (f"  (warm-up {first['warmup_s']:.2f} s)" if "warmup_s" in first else "")
        )
        for r in same:
            for f in r.get("failures", [])[:10]:
                print("   FAIL", f[:300])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
