"""A seccomp filter for every backend: system calls untrusted code never needs.

The filter is a classic BPF program. The local backend hands it to bubblewrap
(``--seccomp FD``), which installs it before it starts the zygote; the docker
and unsafe backends pass it to the zygote (:func:`zygote_filter`), which
installs it before it starts anything. Every process of a worker runs under it.
Denied calls fail with ``EPERM``; everything else is allowed, except sockets of
families other than unix and IP (``EAFNOSUPPORT``), ``clone`` with
``CLONE_PARENT`` (``EPERM``) and ``clone3`` (``ENOSYS``: the C library falls back
to ``clone``, whose flags the filter can read).
Calls of another architecture's ABI (e.g. 32-bit ``int 0x80`` calls on x86-64)
and x32 calls kill the process, since the numbers below would not apply to them.

What is denied, and why (see :data:`DENIED`):

* debugging and reading other processes: ``ptrace``, ``process_vm_readv/writev``,
  ``kcmp``, ``perf_event_open``;
* large kernel attack surface that Python code has no use for: ``bpf``,
  ``userfaultfd``, ``io_uring_*``, ``keyctl`` / ``add_key`` / ``request_key``
  (kernel keyrings would also outlive a run), ``personality``;
* namespaces and mounts: ``unshare``, ``setns``, ``mount`` and the new mount API,
  ``pivot_root``, ``chroot``;
* scheduling of other processes of the sandbox uid (a run could otherwise slow
  later runs down): ``setpriority``, ``sched_setscheduler``, ``sched_setattr``,
  ``sched_setparam``, ``ioprio_set``; ``prlimit64`` and ``sched_setaffinity``
  are allowed only on the caller itself (pid 0) or, for ``prlimit64``, as a
  read (see :data:`SELF_ONLY`): a run cannot lower the limits of, or pin, the
  worker's long-lived processes;
* reaching into other processes' files and memory: ``pidfd_getfd``,
  ``process_madvise``;
* per-user kernel quotas shared with the host's processes of the same uid (and
  other sandboxes): ``inotify_init``/``inotify_init1``/``inotify_add_watch`` (128
  instances per uid by default: a run holding them all made ``inotify_init1``
  fail for every other process of its uid);
* administration calls that need capabilities the sandbox does not have anyway
  (modules, kexec, reboot, swap, accounting, quotas, handles, fanotify, syslog).

Set ``FLEXMG_SANDBOX_SECCOMP=0`` to run without the filter (e.g. on a kernel
without seccomp).

Example:
    >>> from flexmg.sandboxes.seccomp import build_filter
    >>> program = build_filter("x86_64")
    >>> len(program) % 8, len(program) // 8 > len(DENIED)
    (0, True)
"""

from __future__ import annotations

import functools
import os
import platform
import struct
import warnings

__all__ = [
    "DENIED",
    "SELF_ONLY",
    "build_filter",
    "filter_fd",
    "seccomp_enabled",
    "supported_machine",
    "zygote_filter",
]

# Syscall numbers: x86-64 (asm/unistd_64.h) and aarch64 (asm-generic/unistd.h).
_NUMBERS: dict[str, tuple[int | None, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "personality": (135, 92),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "setpriority": (141, 140),
    "sched_setscheduler": (144, 119),
    "sched_setattr": (314, 274),
    "ioprio_set": (251, 30),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "fanotify_init": (300, 262),
    "syslog": (103, 116),
    "lookup_dcookie": (212, 18),
    "sched_setparam": (142, 118),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    "inotify_init": (253, None),
    "inotify_init1": (294, 26),
    "inotify_add_watch": (254, 27),
    "iopl": (172, None),
    "ioperm": (173, None),
}
DENIED: tuple[str, ...] = tuple(_NUMBERS)

# Calls allowed only on the caller itself: (x86-64, aarch64) numbers and the
# arguments that must be 0 (a pid of 0 means "me"; for prlimit64 a NULL new
# limit makes it a read). They could otherwise change the worker's long-lived
# processes (fork server, judge server, the next run's runner) of the same uid:
# lower their limits, pin them to one CPU.
_SELF_ONLY: dict[str, tuple[tuple[int | None, int | None], tuple[int, ...]]] = {
    "prlimit64": ((302, 261), (0, 2)),  # allowed when pid == 0 or new_limit == NULL
    "sched_setaffinity": ((203, 122), (0,)),  # allowed when pid == 0
}
SELF_ONLY: tuple[str, ...] = tuple(_SELF_ONLY)

# Socket families a run may create (socket and socketpair): unix sockets (pipes
# between its own processes) and IP (the sandbox has no network: a loopback of its
# own at most). The others reach state outside the sandbox's network namespace:
# AF_VSOCK shares the host's port space, netlink families (audit, uevents) and
# AF_PACKET, AF_ALG, AF_KEY, ... are kernel surface a solution never needs.
SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
_SOCKET_CALLS = {"socket": (41, 198), "socketpair": (53, 199)}
_EAFNOSUPPORT = 97
# clone() with CLONE_PARENT would make a run's child a child of the run's parent
# (the fork server), passing it off as one of the sandbox's own: refused.
# clone3() takes its flags in memory, out of the filter's reach: ENOSYS, so the C
# library falls back to clone() (as it does on kernels older than 5.3).
CLONE_PARENT = 0x00008000
_CLONE = (56, 220)
_CLONE3 = (435, 435)
_ENOSYS = 38

_ARCHES = {  # machine -> (AUDIT_ARCH_*, column in _NUMBERS)
    "x86_64": (0xC000003E, 0),
    "aarch64": (0xC00000B7, 1),
}
_X32_SYSCALL_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_EPERM = 1
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARGS = 0, 4, 16  # struct seccomp_data (little-endian args)


def supported_machine(machine: str | None = None) -> bool:
    """True when a filter can be built for ``machine`` (default: this one).

    >>> supported_machine("x86_64"), supported_machine("riscv64")
    (True, False)
    """
    return (machine or platform.machine()) in _ARCHES


def seccomp_enabled() -> bool:
    """Whether the local backend installs the filter (``FLEXMG_SANDBOX_SECCOMP=0`` turns it off).

    On a machine with no syscall table here the filter is off, with a warning (once).
    """
    if os.environ.get("FLEXMG_SANDBOX_SECCOMP", "1") == "0":
        return False
    if not supported_machine():
        _warn_unsupported(platform.machine())
        return False
    return True


@functools.cache
def _warn_unsupported(machine: str) -> None:
    warnings.warn(
        f"no seccomp syscall table for {machine!r} (known: {sorted(_ARCHES)}): the local "
        "sandbox runs without its seccomp filter",
        RuntimeWarning,
        stacklevel=3,
    )


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _arg_word(index: int, high: bool = False) -> int:
    """Offset of argument ``index``'s low (or high) 32 bits in ``struct seccomp_data``."""
    return _OFFSET_ARGS + 8 * index + (4 if high else 0)


def _self_only_block(args: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """Instructions allowing the call when any argument in ``args`` is 0, else EPERM.

    A pid (argument 0 here) is a C ``int``: the kernel reads its low 32 bits. Other
    arguments are pointers, 64 bits: both halves must be 0. Jumps only go forward,
    so the block ends in its own two returns.
    """
    groups = [[_arg_word(i)] + ([_arg_word(i, high=True)] if i != 0 else []) for i in args]
    starts, pos = [], 0
    for words in groups:
        starts.append(pos)
        pos += 2 * len(words)
    allow_at, deny_at = pos, pos + 1
    out: list[tuple[int, int, int, int]] = []
    for g, words in enumerate(groups):
        miss_to = starts[g + 1] if g + 1 < len(groups) else deny_at  # the next argument
        for w, word in enumerate(words):
            here = len(out) + 1  # where the jump below sits
            hit_to = here + 1 if w + 1 < len(words) else allow_at  # the next word, or allow
            out.append((_LD_W_ABS, 0, 0, word))
            out.append((_JEQ_K, hit_to - here - 1, miss_to - here - 1, 0))
    out.append((_RET_K, 0, 0, _RET_ALLOW))
    out.append((_RET_K, 0, 0, _RET_ERRNO | _EPERM))
    return out


def _family_block() -> list[tuple[int, int, int, int]]:
    """Allow the call when argument 0 (an ``int`` family) is in :data:`SOCKET_FAMILIES`."""
    n = len(SOCKET_FAMILIES)
    out = [(_LD_W_ABS, 0, 0, _arg_word(0))]
    for i, family in enumerate(SOCKET_FAMILIES):
        out.append((_JEQ_K, n - i, 0, family))  # past the deny return, to the allow one
    out.append((_RET_K, 0, 0, _RET_ERRNO | _EAFNOSUPPORT))
    out.append((_RET_K, 0, 0, _RET_ALLOW))
    return out


def _clone_block() -> list[tuple[int, int, int, int]]:
    """Deny ``clone`` when argument 0 (its flags) has CLONE_PARENT set."""
    return [
        (_LD_W_ABS, 0, 0, _arg_word(0)),
        (_JSET_K, 1, 0, CLONE_PARENT),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_ERRNO | _EPERM),
    ]


def build_filter(machine: str | None = None) -> bytes:
    """The BPF program (``struct sock_filter[]`` bytes) for ``machine`` (default: this one).

    Raises:
        ValueError: no syscall table for ``machine`` (x86_64 and aarch64 are known).
    """
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise ValueError(
            f"no seccomp syscall table for {machine!r} (known: {sorted(_ARCHES)}); "
            "set FLEXMG_SANDBOX_SECCOMP=0 to run the local sandbox without the filter"
        )
    audit_arch, column = _ARCHES[machine]
    numbers = sorted({c for n in _NUMBERS.values() if (c := n[column]) is not None})
    checks: list[tuple[int, int]] = []  # (opcode, k) of each jump to the deny return
    if machine == "x86_64":
        checks.append((_JGE_K, _X32_SYSCALL_BIT))
    checks += [(_JEQ_K, nr) for nr in numbers]
    blocks = [
        (c, _self_only_block(args))
        for nrs, args in _SELF_ONLY.values()
        if (c := nrs[column]) is not None
    ]
    blocks += [(nrs[column], _family_block()) for nrs in _SOCKET_CALLS.values()]
    blocks.append((_CLONE[column], _clone_block()))
    blocks.append((_CLONE3[column], [(_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)]))
    prog = [
        (_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFFSET_NR),
    ]
    n_jumps = len(checks) + len(blocks)
    for i, (op, k) in enumerate(checks):
        to_deny = n_jumps - i  # skip the remaining jumps and the allow return
        prog.append((op, to_deny, 0, k))
    block_at = n_jumps + 2 - len(checks)  # from the first block jump: past the two returns
    for i, (nr, block) in enumerate(blocks):
        prog.append((_JEQ_K, block_at - i - 1, 0, nr))
        block_at += len(block)
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    prog.append((_RET_K, 0, 0, _RET_ERRNO | _EPERM))
    for _, block in blocks:
        prog.extend(block)
    if any(jt > 255 or jf > 255 for _, jt, jf, _ in prog):  # jump offsets are one byte
        raise AssertionError("seccomp filter too long for one-byte jumps")
    return b"".join(_insn(*insn) for insn in prog)


def filter_fd() -> int:
    """A file descriptor (inheritable, at offset 0) holding this machine's filter.

    The caller passes it to ``bwrap --seccomp FD`` (``pass_fds``) and closes it.
    """
    program = build_filter()
    fd = os.memfd_create("flexmg-seccomp", 0)  # no MFD_CLOEXEC: the child inherits it
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def zygote_filter() -> str | None:
    """The filter as hex text for a zygote to install itself (None: the filter is off).

    >>> zygote_filter() is None or len(zygote_filter()) % 16 == 0
    True
    """
    return build_filter().hex() if seccomp_enabled() else None
