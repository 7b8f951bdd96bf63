"""Host uids of the sandbox workers (local and docker): one per worker, that nothing else uses.

The kernel keeps some quotas per user: POSIX message queue bytes
(RLIMIT_MSGQUEUE), pending signals, inotify instances and watches, pipe buffer
pages, keys. A sandbox's uid counts against the quotas of the host uid that
owns its user namespace, so when every worker ran as the caller (host root), a
run holding a quota made the same call fail for the host and every other
sandbox. When the host process is root, each worker's bubblewrap runs as a uid
of its own, taken from a range (default ``2000000000`` to ``2000065535``; set
``FLEXMG_SANDBOX_UIDS=FIRST:COUNT``, or ``off`` to keep the caller's uid), with
no supplementary groups. A uid is taken with an exclusive ``flock`` on
``<state dir>/uid-<N>.lock`` (``/run/flexmg-sandbox``, else under the temp dir; owned by
root, mode 0700), held until the worker is closed, so workers of all
processes on the host never share one; a uid with a ``/etc/passwd`` entry is skipped.
The docker backend runs each container as such a uid (``--user UID:UID``; see
:func:`flexmg.sandboxes.docker_backend.container_uid_range`).

Example:
    >>> uid_range()  # doctest: +SKIP
    (2000000000, 65536)
"""

from __future__ import annotations

import fcntl
import os
import pwd
import stat
import tempfile
from dataclasses import dataclass

DEFAULT_RANGE = (2_000_000_000, 65536)


def uid_range() -> tuple[int, int] | None:
    """``(first, count)`` from ``FLEXMG_SANDBOX_UIDS``; None when switched off or not root.

    >>> os.environ["FLEXMG_SANDBOX_UIDS"] = "off"; print(uid_range())
    None
    >>> del os.environ["FLEXMG_SANDBOX_UIDS"]
    """
    text = os.environ.get("FLEXMG_SANDBOX_UIDS", "").strip().lower()
    if text in ("off", "0", "no", "false") or os.geteuid() != 0:
        return None
    if not text:
        return DEFAULT_RANGE
    try:
        first, count = (int(x) for x in text.split(":"))
    except ValueError:
        raise ValueError(
            f"FLEXMG_SANDBOX_UIDS={text!r}: expected FIRST:COUNT (e.g. 2000000000:65536) or off"
        ) from None
    if not (1000 <= first and 1 <= count and first + count <= 2**31 - 1):
        raise ValueError(f"FLEXMG_SANDBOX_UIDS={text!r}: uids must lie in 1000..2147483646")
    return first, count


def state_dir() -> str:
    """The root-only directory holding the uid locks (created on first use)."""
    for base in ("/run", tempfile.gettempdir()):
        if not os.path.isdir(base):
            continue
        d = os.path.join(base, "flexmg-sandbox")
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        st = os.lstat(d)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o077:
            return d
    raise OSError("no root-owned, root-only directory for the sandbox uid locks (/run, tmp)")


@dataclass
class WorkerUid:
    """One host uid held for one worker (release it when the worker is gone)."""

    uid: int
    _fd: int = -1

    @classmethod
    def acquire(cls, first: int, count: int) -> WorkerUid:
        """Take the lowest free uid of ``first .. first+count-1``; OSError when none is free."""
        d = state_dir()
        for uid in range(first, first + count):
            fd = os.open(
                os.path.join(d, f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                pwd.getpwuid(uid)
            except KeyError:
                return cls(uid, fd)
            os.close(fd)  # an account of this machine: never ours
        raise OSError(f"all {count} sandbox uids from {first} are in use")

    def release(self) -> None:
        """Give the uid back (call only once every process of the worker is gone)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
