"""The local backend's seccomp filter: the BPF program's verdicts, and the real sandbox under it."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from flexmg.sandboxes import seccomp

ALLOW, KILL, EPERM = 0x7FFF0000, 0x80000000, 0x00050001
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Evaluate a classic BPF seccomp program on (nr, arch, args): the opcodes it uses."""
    insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr, 4: arch}
    for i, value in enumerate((*args, 0, 0, 0, 0, 0, 0)[:6]):  # little-endian u64 words
        data[16 + 8 * i], data[20 + 8 * i] = value & 0xFFFFFFFF, value >> 32
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld [k]
            acc, pc = data[k], pc + 1
        elif code in (0x15, 0x35, 0x45):  # jeq / jge / jset #k
            hit = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_filter_verdicts(machine: str) -> None:
    program = seccomp.build_filter(machine)
    column = 0 if machine == "x86_64" else 1
    denied = {n[column] for n in seccomp._NUMBERS.values() if n[column] is not None}
    for nr in denied:
        assert run_bpf(program, nr, ARCH[machine]) == EPERM, nr
    socket_calls = {nrs[column] for nrs in seccomp._SOCKET_CALLS.values()}
    clone, clone3 = seccomp._CLONE[column], seccomp._CLONE3[column]
    for nr in set(range(0, 460)) - denied - socket_calls - {clone3}:  # read, clone, getpid, ...
        assert run_bpf(program, nr, ARCH[machine]) == ALLOW, nr  # all arguments 0
    arch = ARCH[machine]
    for nr in socket_calls:
        for family in (1, 2, 10):  # AF_UNIX, AF_INET, AF_INET6
            assert run_bpf(program, nr, arch, (family, 1, 0)) == ALLOW, (nr, family)
        for family in (0, 16, 17, 38, 40, 42, 1 << 32 | 40):  # netlink, packet, alg, vsock, ...
            assert run_bpf(program, nr, arch, (family, 1, 0)) == 0x00050000 | 97, (nr, family)
    assert run_bpf(program, clone, arch, (0x01200011,)) == ALLOW  # fork()'s flags
    assert run_bpf(program, clone, arch, (0x00008000 | 17,)) == EPERM  # CLONE_PARENT
    assert run_bpf(program, clone3, arch, (0x7FFF_0000_1000, 88)) == 0x00050000 | 38
    self_only = {name: nrs[column] for name, (nrs, _) in seccomp._SELF_ONLY.items()}
    prlimit, affinity = self_only["prlimit64"], self_only["sched_setaffinity"]
    other_pid, limit_ptr = 4242, 0x7FFF_0000_1000
    assert run_bpf(program, prlimit, arch, (0, 7, limit_ptr, 0)) == ALLOW  # setrlimit on me
    assert run_bpf(program, prlimit, arch, (other_pid, 7, 0, limit_ptr)) == ALLOW  # a read
    assert run_bpf(program, prlimit, arch, (other_pid, 7, limit_ptr, 0)) == EPERM
    assert run_bpf(program, prlimit, arch, (other_pid, 7, 1 << 32, 0)) == EPERM  # high half
    assert run_bpf(program, prlimit, arch, (1 << 32, 7, limit_ptr, 0)) == ALLOW  # pid_t 0
    assert run_bpf(program, affinity, arch, (0, 8, limit_ptr)) == ALLOW
    assert run_bpf(program, affinity, arch, (other_pid, 8, limit_ptr)) == EPERM
    other = ARCH["aarch64" if machine == "x86_64" else "x86_64"]
    assert run_bpf(program, 0, other) == KILL  # another ABI's numbers mean other calls
    assert run_bpf(program, 0, 0x40000003) == KILL  # i386
    if machine == "x86_64":
        assert run_bpf(program, 0x40000000 + 1, ARCH[machine]) == EPERM  # x32 ABI


def test_unknown_machine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="FLEXMG_SANDBOX_SECCOMP=0"):
        seccomp.build_filter("riscv64")
    assert not seccomp.supported_machine("riscv64")
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv64")
    with pytest.warns(RuntimeWarning, match="without its seccomp filter"):
        assert not seccomp.seccomp_enabled()
    monkeypatch.setenv("FLEXMG_SANDBOX_SECCOMP", "0")
    assert not seccomp.seccomp_enabled()


PROBE = """
import ctypes, os, threading, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
def denied(nr, *args):
    ctypes.set_errno(0)
    return libc.syscall(nr, *args) == -1 and ctypes.get_errno() == 1
# keyctl, bpf, io_uring_setup, unshare (unshare(0) succeeds where allowed)
nrs = {"x86_64": (250, 321, 425, 272), "aarch64": (219, 280, 425, 97)}[os.uname().machine]
print("denied", all(denied(nr, 0, 0, 0, 0) for nr in nrs))
try:
    os.setpriority(os.PRIO_USER, os.getuid(), 19)
    print("renice allowed")
except PermissionError:
    print("renice denied")
t = threading.Thread(target=print, args=("thread ok",)); t.start(); t.join()
print(subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
"""


def _probe(sandbox: Any) -> list[str]:
    result = sandbox.run(PROBE)
    assert result.status == "ok", (result.status, result.stderr[-800:])
    return result.stdout.split("\n")


def test_local_sandbox_runs_under_the_filter(sandbox: Any) -> None:
    if sandbox.backend != "local" or not seccomp.seccomp_enabled():
        pytest.skip("the filter belongs to the local backend on x86_64/aarch64")
    lines = _probe(sandbox)
    assert lines[:4] == ["denied True", "renice denied", "thread ok", "42"], lines
    ptrace = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    ptrace += "print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())"  # PTRACE_TRACEME
    assert sandbox.run(ptrace).stdout == "-1 1\n"


def test_filter_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from flexmg.sandboxes import make_sandbox

    monkeypatch.setenv("FLEXMG_SANDBOX_SECCOMP", "0")
    try:
        sb = make_sandbox("local", timeout=5.0, workers=1)
    except Exception as e:
        pytest.skip(f"the local sandbox cannot run here: {e}")
    with sb:
        lines = _probe(sb)
    assert lines[0] == "denied False" and lines[2:4] == ["thread ok", "42"], lines
