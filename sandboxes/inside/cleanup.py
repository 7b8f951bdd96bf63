"""Between runs: find and wait for a run's processes, empty its scratch directory."""

from __future__ import annotations

import os
import select
import time


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid`` (readable once it has exited), or None (gone / unsupported)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _entries(dir_fd: int) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry of the open directory ``dir_fd``."""
    try:
        with os.scandir(dir_fd) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return []


def _unlock(dir_fd: int, name: str) -> None:
    """Give back the owner's rights on directory ``name`` (a run may have chmod-ed it to 0)."""
    try:
        os.chmod(name, 0o700, dir_fd=dir_fd)
    except OSError:
        pass


def _open_dir(name: str, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None


def empty_directory(root: str, max_steps: int = 10_000_000) -> None:
    """Remove everything under ``root``; never raises, never recurses.

    A depth-first walk that holds one descriptor at a time: it goes down into a
    subdirectory by name and back up through ``..``, so a 3,000-level chain
    costs no recursion, no long paths and no descriptor per level (a run's
    processes are all gone by then, so nothing moves under it). Modes a run set
    (``chmod 0``) are undone; a directory that still cannot be emptied or
    removed is left in place and skipped.
    """
    cur = _open_dir(root)
    if cur is None:
        return
    path: list[str] = []  # names from root down to ``cur``
    stuck: set[tuple[int, int]] = set()  # (device, inode) of directories left in place
    try:
        for _ in range(max_steps):
            down = None
            for name, is_dir in _entries(cur):
                if not is_dir:
                    try:
                        os.unlink(name, dir_fd=cur)
                    except OSError:
                        pass
                    continue
                try:
                    st = os.stat(name, dir_fd=cur, follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in stuck:
                    down = name
                    break
            if down is not None:
                _unlock(cur, down)
                child = _open_dir(down, cur)
                if child is None:
                    st = os.stat(down, dir_fd=cur, follow_symlinks=False)
                    stuck.add((st.st_dev, st.st_ino))
                    continue
                os.close(cur)
                cur = child
                path.append(down)
                continue
            if not path:  # back at the root, and nothing left to go into
                return
            parent = _open_dir("..", cur)
            if parent is None:
                return
            os.close(cur)
            cur = parent
            name = path.pop()
            try:
                os.rmdir(name, dir_fd=cur)
            except OSError:
                try:
                    st = os.stat(name, dir_fd=cur, follow_symlinks=False)
                    stuck.add((st.st_dev, st.st_ino))
                except OSError:
                    pass
    except BaseException:
        return
    finally:
        os.close(cur)


def _has_live_thread(pid: int) -> bool:
    """True when a zombie-looking ``pid`` still has a running thread.

    A process whose main thread ended with a raw ``exit`` syscall while another
    thread runs shows state ``Z`` in ``/proc/PID/stat``, yet it lives on: a
    cleanup that skipped zombies would leave it in the worker.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X"):
                return True
        except (OSError, ValueError):
            continue
    return False


def _wait_exits(handles: list[int | None], timeout: float = 2.0) -> None:
    """Block until every pidfd in ``handles`` is readable (its process has exited).

    Sleeping on the pidfds instead of polling ``/proc`` keeps the zygote off the
    CPU while the kernel tears the killed processes down. Without pidfds (old
    kernels) it sleeps briefly; the caller rescans ``/proc`` either way.
    """
    fds = [fd for fd in handles if fd is not None]
    if len(fds) < len(handles):
        time.sleep(0.0005)
    deadline = time.monotonic() + timeout
    try:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        pending = len(fds)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for fd, _ in poller.poll(left * 1000):
                poller.unregister(fd)
                pending -= 1
    except (OSError, ValueError):
        return
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
