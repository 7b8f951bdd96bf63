"""Grading deadlines count the worker's CPU time: load slows grading, it does not fail it.

A stopped worker (SIGSTOP) is the extreme of a starved one: wall-clock time
passes, its CPU time does not. These tests stop the worker mid-comparison.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pytest

from flexmg.envs.math import _pool

pytestmark = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="needs /proc (Linux)"
)

SLOW_BUT_FINE = ("\\frac{1}{2}", "0.5")


def _busy_worker_pid(pool: _pool.GraderPool) -> int:
    """The pid of the pool's only worker (taken while idle, before a call)."""
    assert pool.workers == 1
    return pool._idle.queue[0].pid


def _stall(pid: int, seconds: float) -> threading.Thread:
    """Stop ``pid`` right away and let it go on after ``seconds`` (a starved worker)."""

    def run() -> None:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        with contextlib.suppress(ProcessLookupError):  # killed by the pool meanwhile
            os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.fixture()
def pool() -> _pool.GraderPool:
    pool = _pool.GraderPool(workers=1)
    pool.start()
    yield pool
    pool.close()


def test_cpu_seconds_reads_a_process() -> None:
    before = _pool._cpu_seconds(os.getpid())
    sum(i * i for i in range(300_000))
    after = _pool._cpu_seconds(os.getpid())
    assert before is not None and after is not None and after >= before
    assert _pool._cpu_seconds(2**22 + 12345) is None  # no such process


def test_a_starved_worker_still_gives_the_right_verdict(pool: _pool.GraderPool) -> None:
    # Stopped for 1.5 s against a 0.5 s budget: a wall-clock deadline would
    # have scored this a timeout; the CPU deadline waits (up to WALL_FACTOR x).
    stall = _stall(_busy_worker_pid(pool), 1.5)
    start = time.monotonic()
    verdict = pool.grade(*SLOW_BUT_FINE, timeout=0.5)
    elapsed = time.monotonic() - start
    stall.join()
    assert verdict[:2] == (1.0, "correct")
    assert elapsed >= 1.4  # premise: the call really was held up past its budget
    assert pool.restarts == 0


def test_wall_clock_bound_ends_a_starved_call(pool: _pool.GraderPool) -> None:
    stall = _stall(_busy_worker_pid(pool), 3.0)
    start = time.monotonic()
    verdict = pool.grade(*SLOW_BUT_FINE, timeout=0.25)  # bound: 4 x 0.25 = 1 s
    elapsed = time.monotonic() - start
    stall.join()
    assert verdict[1] == "timeout" and "overloaded" in verdict[2]
    assert elapsed < 0.25 * _pool.WALL_FACTOR + 0.5
    assert pool.grade(*SLOW_BUT_FINE, timeout=5.0)[:2] == (1.0, "correct")  # replaced


def test_pathological_answer_ends_near_its_cpu_budget(pool: _pool.GraderPool) -> None:
    start = time.monotonic()
    verdict = pool.grade("9^{9^{9^9}}", "5", timeout=1.0)
    elapsed = time.monotonic() - start
    assert verdict[1] == "timeout"
    assert elapsed < 1.0 * _pool.WALL_FACTOR + 0.5  # the bound, even on a loaded machine


def test_worker_stuck_past_its_cpu_budget_is_killed(
    pool: _pool.GraderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's own CPU timer fires far too late: only the pool's CPU watch
    # can end the call, well before the wall-clock bound.
    monkeypatch.setattr(_pool, "_SOFT_FRACTION", 50.0)
    monkeypatch.setattr(_pool, "WALL_FACTOR", 100.0)
    start = time.monotonic()
    verdict = pool.grade("9^{9^{9^9}}", "5", timeout=0.5)
    elapsed = time.monotonic() - start
    assert verdict[1] == "timeout" and "CPU time" in verdict[2] and "killed" in verdict[2]
    assert elapsed < 10.0  # far below the 50 s wall-clock bound
    assert pool.restarts == 1


def test_wall_deadline_argument_caps_the_call(pool: _pool.GraderPool) -> None:
    stall = _stall(_busy_worker_pid(pool), 2.0)
    verdict = pool.grade(*SLOW_BUT_FINE, timeout=5.0, wall_deadline=time.monotonic() + 0.5)
    stall.join()
    assert verdict[1] == "timeout"


def test_slowest_legitimate_case_fits_the_default_budget_in_a_fresh_worker(
    pool: _pool.GraderPool,
) -> None:
    # Issue 15: a sum of products of Fibonacci terms took 0.5-0.8 s against a
    # 0.8 s alarm. The zygote now warms sympy's summation machinery before
    # forking, and the budget is the whole second of CPU time.
    gold = "F_n = \\sum_{k=0}^{n-1} F_k F_{n-k-1}"
    answer = "F_n = \\sum_{k=0}^{n-1} F_{n-k-1} F_k"
    assert pool.grade(answer, gold, timeout=1.0)[:2] == (1.0, "correct")
