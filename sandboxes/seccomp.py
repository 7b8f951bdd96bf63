"""A seccomp filter for the local backend: system calls untrusted code never needs.

The filter is a classic BPF program handed to bubblewrap (``--seccomp FD``),
which installs it before it starts the zygote, so every process of the sandbox
runs under it. Denied calls fail with ``EPERM``; everything else is allowed.
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
  ``ioprio_set``;
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

__all__ = ["DENIED", "build_filter", "filter_fd", "seccomp_enabled", "supported_machine"]

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
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    "iopl": (172, None),
    "ioperm": (173, None),
}
DENIED: tuple[str, ...] = tuple(_NUMBERS)

_ARCHES = {  # machine -> (AUDIT_ARCH_*, column in _NUMBERS)
    "x86_64": (0xC000003E, 0),
    "aarch64": (0xC00000B7, 1),
}
_X32_SYSCALL_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_EPERM = 1
_OFFSET_NR, _OFFSET_ARCH = 0, 4  # struct seccomp_data


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
    numbers = sorted({n[column] for n in _NUMBERS.values() if n[column] is not None})
    checks: list[tuple[int, int]] = []  # (opcode, k) of each jump to the deny return
    if machine == "x86_64":
        checks.append((_JGE_K, _X32_SYSCALL_BIT))
    checks += [(_JEQ_K, nr) for nr in numbers]
    prog = [
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_JEQ_K, 1, 0, audit_arch),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFFSET_NR),
    ]
    for i, (op, k) in enumerate(checks):
        to_deny = len(checks) - i  # skip the remaining checks and the allow return
        prog.append(_insn(op, to_deny, 0, k))
    prog.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | _EPERM))
    if len(checks) > 255:  # jump offsets are one byte
        raise AssertionError("seccomp filter too long for one-byte jumps")
    return b"".join(prog)


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
