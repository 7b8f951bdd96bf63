"""Start a sandbox process as its worker's own host uid (run as a script, by root).

Usage (the local backend runs it; stdlib only, ``python -I -S dropuid.py``)::

    python -I -S dropuid.py '{"uid": U, "cgroup_procs": [...], "reveal": [...]}' CMD ARGS...

As root it: writes its own pid into each ``cgroup_procs`` file (the worker's
cgroups; root may, the worker's uid may not on cgroup v2); makes the paths in
``reveal`` reachable for any uid in a mount namespace of its own (each blocking
directory, e.g. ``/root`` at mode 0700, is covered by a 0755 tmpfs in which
only those paths are bound back, so bubblewrap, which resolves its sources as
the uid it runs as, can bind them; nothing changes on the host); drops every
group and switches real, effective, saved and filesystem uid and gid to ``U``;
then execs ``CMD``. Any failure exits 97 with one line on stderr.
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import sys

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_NOSUID = 2
MS_NODEV = 4


def _fail(msg: str) -> None:
    sys.stderr.write(f"flexmg sandbox uid helper: {msg}\n")
    os._exit(97)


def blocking_dir(path: str) -> str | None:
    """The topmost ancestor of ``path`` that other uids cannot search, or None."""
    parts = path.strip("/").split("/")[:-1]
    cur = ""
    for part in parts:
        cur += "/" + part
        if not os.stat(cur).st_mode & stat.S_IXOTH:
            return cur
    return None


def _mount(
    libc: ctypes.CDLL, src: str | None, dst: str, fs: str | None, flags: int, data: str | None
) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    if libc.mount(enc(src), enc(dst), enc(fs), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        _fail(f"mount {src} on {dst}: {os.strerror(err)}")


def reveal(paths: list[str]) -> None:
    """Make ``paths`` reachable by any uid, in a new private mount namespace."""
    blocked: dict[str, list[str]] = {}
    for p in paths:
        b = blocking_dir(p)
        if b is not None:
            blocked.setdefault(b, []).append(p)
    if not blocked:
        return
    tops = sorted(blocked)
    tops = [b for b in tops if not any(b != t and b.startswith(t + "/") for t in tops)]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        _fail(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    for top in tops:
        under = sorted(p for p in paths if p.startswith(top + "/"))
        fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in under}
        _mount(libc, "tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for p, fd in fds.items():
            os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.makedirs(p, mode=0o755, exist_ok=True)
            else:
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o444))
            _mount(libc, f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC, None)
            os.close(fd)


def main(argv: list[str]) -> None:
    """Join the cgroups, reveal the paths, drop to the uid, exec the command."""
    if len(argv) < 3:
        _fail("usage: dropuid.py CONFIG CMD [ARGS...]")
    try:
        cfg = json.loads(argv[1])
        uid = int(cfg["uid"])
        for procs in cfg.get("cgroup_procs", []):
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        reveal([str(p) for p in cfg.get("reveal", [])])
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        os.execv(argv[2], argv[2:])
    except (OSError, ValueError, KeyError, TypeError) as e:
        _fail(str(e))


if __name__ == "__main__":
    main(sys.argv)
