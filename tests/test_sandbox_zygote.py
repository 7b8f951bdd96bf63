"""The zygote's hand-off of a test job, on real pipes, without a sandbox around it.

A run's code starts the moment its runner reads the job, so it can kill its judge
before the judge's own job arrives (seen on a loaded CI host). That must end the run
without a verdict (the run's failure), never as "could not start the run" (a
sandbox error), and whatever could fail before untrusted code runs must fail first.
"""

from __future__ import annotations

import os
import signal

from flexmg.sandboxes.inside.frames import read_frame
from flexmg.sandboxes.inside.procs import PF_EXITING, _dying
from flexmg.sandboxes.inside.zygote import Spare, Zygote


def _spare_with_dead_judge() -> tuple[Spare, dict[str, int]]:
    """A spare whose fresh judge is gone (its job pipe has no reader); the peer ends."""
    ends: dict[str, int] = {}
    for pipe in ("out", "err", "ci", "co", "si", "jo", "ji"):
        ends[f"{pipe}_r"], ends[f"{pipe}_w"] = os.pipe()
    os.close(ends.pop("ji_r"))  # the judge was killed: nobody will read its job
    sp = Spare(["runner", "judge"], **{name: ends.pop(name) for name in Spare.FDS})
    sp.runner, sp.judge = 101, 102
    return sp, ends  # what is left: the runner's ends (ci_r, co_w, si_r)


def _bare_zygote() -> Zygote:
    zygote = Zygote.__new__(Zygote)  # no sandbox: only the dispatch state
    zygote.server = None
    zygote.last_untrusted = False
    return zygote


def test_a_judge_killed_by_the_run_ends_the_run_not_the_sandbox() -> None:
    sp, peers = _spare_with_dead_judge()
    runner_job = {"mode": "serve", "code": "def f():\n    return 1\n"}
    job = {"trusted_tests": False, "runner_job": runner_job}
    try:
        judge = _bare_zygote()._dispatch_tests(sp, job)  # raised BrokenPipeError before
        assert judge == 102
        assert read_frame(peers["ci_r"]) == runner_job  # the runner got its job
        # the zygote let go of every end the judge would have held
        assert (sp.out_w, sp.err_w, sp.ci_w, sp.co_r, sp.jo_w, sp.ji_w) == (None,) * 6
        assert os.read(sp.jo_r, 1) == b""  # no verdict will come: the run ends as an error
    finally:
        sp.close(*Spare.FDS)
        for fd in peers.values():
            os.close(fd)


def test_dying_reads_a_pending_sigkill_and_the_exiting_flag() -> None:
    quiet = b"SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
    kill_bit = f"{1 << (signal.SIGKILL - 1):016x}".encode()
    assert not _dying(0, quiet)
    assert _dying(0, quiet.replace(b"ShdPnd:\t0000000000000000", b"ShdPnd:\t" + kill_bit))
    assert _dying(0, quiet.replace(b"SigPnd:\t0000000000000000", b"SigPnd:\t" + kill_bit))
    assert _dying(PF_EXITING, quiet)
    assert not _dying(0, quiet.replace(b"0000000000000000\n", b"0000000000004000\n"))  # SIGTERM
    assert _dying(0, b"ShdPnd:\tnot hex\n")  # unreadable is not trusted
    with open("/proc/self/status", "rb") as f:
        assert not _dying(0, f.read())  # this very process is alive and well
