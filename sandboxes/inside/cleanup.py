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


def empty_directory(root: str, budget: float = 2.0) -> bool:
    """Remove everything under ``root``; True when done, False past ``budget`` seconds.

    Never raises, never recurses, and costs time linear in the tree: each
    directory is listed once (its files removed then, its subdirectories kept
    in a list), so a run that leaves 20,000 empty siblings costs 20,000
    removals, not a re-listing of the parent after each. The walk holds one
    descriptor at a time: down into a subdirectory by name and back up through
    ``..``, so a 3,000-level chain costs no recursion, no long paths and no
    descriptor per level (a run's processes are all gone by then, so nothing
    moves under it). Modes a run set (``chmod 0``) are undone; a directory that
    still cannot be emptied or removed is left in place. Past ``budget`` the
    walk stops: the caller retires the worker instead of making the next run wait.
    """
    deadline = time.monotonic() + budget
    cur = _open_dir(root)
    if cur is None:
        return True
    # One entry per level from root down to ``cur``: (name of ``cur`` in its parent,
    # the subdirectories of ``cur`` still to visit).
    try:
        top = _list_and_unlink(cur, deadline)
    except TimeoutError:
        os.close(cur)
        return False
    stack: list[tuple[str, list[str]]] = [("", top)]
    steps = 0
    try:
        while True:
            steps += 1
            if steps & 255 == 0 and time.monotonic() > deadline:
                return False
            _, todo = stack[-1]
            if todo:
                down = todo.pop()
                _unlock(cur, down)
                child = _open_dir(down, cur)
                if child is None:
                    continue  # left in place
                os.close(cur)
                cur = child
                stack.append((down, _list_and_unlink(cur, deadline)))
                continue
            if len(stack) == 1:  # back at the root, and nothing left to go into
                return time.monotonic() <= deadline
            parent = _open_dir("..", cur)
            if parent is None:
                return False
            os.close(cur)
            cur = parent
            name, _ = stack.pop()
            try:
                os.rmdir(name, dir_fd=cur)
            except OSError:
                pass
    except BaseException:
        return False
    finally:
        os.close(cur)


def _list_and_unlink(dir_fd: int, deadline: float) -> list[str]:
    """Remove the non-directories of the open directory ``dir_fd``; its subdirectories.

    Stops unlinking past ``deadline`` (a directory of a million files is bounded too).
    """
    subdirs = []
    for i, (name, is_dir) in enumerate(_entries(dir_fd)):
        if is_dir:
            subdirs.append(name)
            continue
        if i & 255 == 255 and time.monotonic() > deadline:
            raise TimeoutError
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
    return subdirs


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
