"""The program that runs *inside* a sandbox: a small package, standard library only.

Its modules are shipped as text: the host starts
``python -I -S -c BOOT SOURCES ROLE CONFIG`` where ``SOURCES`` holds every
module's source (:func:`sources`) and the boot code (:data:`procs.BOOT`) loads
them as the package ``inside``; so they import nothing outside the standard
library and each other. The host also imports them (as
``flexmg.sandboxes.inside``) to reuse the codec and framing.

* :mod:`.codec`: plain data <-> a JSON-able tagged form; bounded ``repr``.
* :mod:`.frames`: length-prefixed JSON frames.
* :mod:`.procs`: process helpers (names, sessions, rlimits, signals, exec, seccomp).
* :mod:`.procstate`: the ``/proc/PID`` settings a run can change, reset after each run.
* :mod:`.runner`: runs the untrusted code, or loads it and serves calls.
* :mod:`.judge`: runs the tests against a runner on plain data only.
* :mod:`.cleanup`: the between-run cleanup (a run's processes, files, IPC objects).
* :mod:`.forkserver`: a pristine interpreter forking runners and judges, and the
  zygote's link to it (requests, records, the pidfds of the children it keeps).
* :mod:`.spares`: the next run's idle runner and judge (and the judge server):
  requested while a run goes on, checked intact before use.
* :mod:`.watch`: following one run to its reply (deadline, output cap, stdin).
* :mod:`.zygote`: the per-sandbox supervisor (pid 1): its serve loop and job hand-off.
* :mod:`.main`: the entry point the boot code calls.

Processes inside one sandbox (one "worker"):

* **zygote** (pid 1 of the sandbox's pid namespace, or a subreaper without one):
  reads jobs from the host on fd 0, answers on fd 1, enforces the wall-clock
  deadline and output caps. Right after each reply (before it reads the next
  job) it kills every other process of the run, waiting for them on pidfds,
  and empties the scratch directory and System V / POSIX IPC.
* **fork server**: a pristine interpreter that never sees job data; it forks
  fresh runners and judges on request, which makes a run cost a fork instead of
  an interpreter start. The next run's idle runner and judge are requested as
  soon as a run has its job, so their start overlaps the run; they are checked
  (alive, not stopped, children of the fork server) before they are used.
* **runner**: runs the untrusted code. ``exec`` mode runs a program; ``serve``
  mode loads the solution then answers calls ``fn(*args)`` with plain data.
* **judge**: runs the tests with every solution function replaced by a proxy that
  calls into the runner. The judge only ever sees plain data (numbers, str, bool,
  None, bytes and list/tuple/dict/set of those), so ``__eq__`` spoofing, printed
  fake results, ``os._exit(0)`` and friends cannot make a test pass. The runner
  holds no channel to the zygote, and the judge, zygote and fork server are
  non-dumpable (no ptrace, no /proc/PID/mem from the runner).

Example (the codec, on the host):
    >>> from flexmg.sandboxes.inside.codec import decode, encode
    >>> decode(encode({"a": (1, 2.5, None), "b": {3, 4}})) == {"a": (1, 2.5, None), "b": {3, 4}}
    True
"""

from __future__ import annotations

import json
from pathlib import Path

from .procs import BOOT, MODULES

__all__ = ["BOOT", "MODULES", "sources"]


def sources() -> str:
    """Every module's source, in load order, as the boot code reads it (a JSON list).

    >>> [name for name, _ in json.loads(sources())][:2]
    ['codec', 'frames']
    """
    here = Path(__file__).resolve().parent
    return json.dumps(
        [[name, (here / f"{name}.py").read_text(encoding="utf-8")] for name in MODULES]
    )
