"""Per-run reset of the ``/proc/PID`` settings a run can change on long-lived processes.

A run has the uid of the zygote, the fork server and the judge server, so it
can write their ``oom_score_adj``, ``coredump_filter`` and their session's
``autogroup`` nice, and the value would persist into every later run. The
zygote reads its own values once at start (:func:`read_proc_state`) and writes
them back on each long-lived process after every run (:func:`reset_proc_state`).

Example (this very process, read and written back unchanged):
    >>> state = read_proc_state("self")
    >>> set(state) <= set(FIELDS)
    True
    >>> reset_proc_state(state, ["self"])
"""

from __future__ import annotations

import os

# The files a run can write on a process of its own uid that outlive the run.
FIELDS = ("oom_score_adj", "coredump_filter", "autogroup")


def read_proc_state(pid: str) -> dict[str, bytes]:
    """The per-process settings a run could change on a long-lived process, as written back."""
    out = {}
    for name in FIELDS:
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                text = f.read(256).split()
        except OSError:
            continue
        if text:  # autogroup reads "/autogroup-N nice K": its last word is the nice value
            # coredump_filter reads as hex digits, written back with 0x (else octal)
            out[name] = b"0x" + text[-1] if name == "coredump_filter" else text[-1]
    return out


def reset_proc_state(state: dict[str, bytes], pids: list) -> None:
    """Write ``state`` back to ``/proc/PID/<name>`` of each of ``pids`` (None: skipped).

    ``autogroup`` is one per session: only ``"self"`` (the zygote's, which the
    others share) is written. Never raises: a process that is gone is skipped.
    """
    for pid in pids:
        if pid is None:
            continue
        for name, value in state.items():
            if name == "autogroup" and pid != "self":
                continue  # one per session: the zygote's is the one they share
            try:
                fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
            except OSError:
                continue
            try:
                os.write(fd, value)
            except OSError:
                pass
            finally:
                os.close(fd)
