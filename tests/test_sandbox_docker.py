"""Docker backend specifics: container hardening flags, auto selection, the offline image.

Skipped with a reason when no daemon answers or the image is missing, unless
``FLEXMG_REQUIRE_DOCKER=1`` (as in CI), which turns that into a failure.
"""

from __future__ import annotations

import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flexmg.sandboxes import make_sandbox
from flexmg.sandboxes.docker_backend import (
    SHARED_UID,
    DockerSandbox,
    DockerWorker,
    container_uid_range,
)
from flexmg.sandboxes.image import image_name, write_rootfs
from flexmg.sandboxes.testing import docker_required, require_backend

pytestmark = pytest.mark.docker


def _expected_uid(worker: Any) -> int:
    """The host uid ``worker``'s container runs as: its own where it holds one."""
    assert isinstance(worker, DockerWorker)
    if container_uid_range() is None:
        assert worker.host_uid is None
        return SHARED_UID
    assert worker.host_uid is not None
    return worker.host_uid.uid


@pytest.fixture(scope="module")
def box() -> Iterator[DockerSandbox]:
    require_backend("docker")
    sb = make_sandbox("docker", workers=1, timeout=3.0, memory_mb=256, max_procs=48, tmp_mb=32)
    assert isinstance(sb, DockerSandbox)
    yield sb
    sb.close()


def test_container_is_hardened(box: DockerSandbox) -> None:
    assert box.run("print('warm')").stdout == "warm\n"
    (worker,) = box._all
    info = box._client().api.inspect_container(worker.container_id)  # type: ignore[attr-defined]
    hc, cfg = info["HostConfig"], info["Config"]
    assert hc["NetworkMode"] == "none" and cfg.get("NetworkDisabled") is True
    assert hc["ReadonlyRootfs"] is True
    assert hc["CapDrop"] == ["ALL"] and "no-new-privileges" in hc["SecurityOpt"]
    uid = _expected_uid(worker)
    assert cfg["User"] == f"{uid}:{uid}"
    assert hc["PidsLimit"] == 48
    assert hc["Memory"] == hc["MemorySwap"] > 0
    assert hc["LogConfig"] == {"Type": "json-file", "Config": {"max-file": "1", "max-size": "1m"}}
    assert "size=32m" in hc["Tmpfs"]["/tmp"]
    assert hc["IpcMode"] == "none"
    assert info["Config"]["Image"] == image_name()


def test_inside_view(box: DockerSandbox) -> None:
    code = (
        "import os\n"
        "print(os.getuid(), os.getgid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
        "print(sorted(os.listdir('/opt/python/lib/python3.' + str(__import__('sys').version_info[1]))).count('site-packages'))\n"
    )
    r = box.run(code)
    uid = _expected_uid(box._all[0])
    assert r.stdout.splitlines() == [f"{uid} {uid} 0000000000000000", "0"], r


def test_container_removed_on_close() -> None:
    require_backend("docker")
    sb = make_sandbox("docker", workers=1)
    sb.run("pass")
    (worker,) = sb._all
    cid = worker.container_id  # type: ignore[attr-defined]
    client = sb._client()  # type: ignore[attr-defined]
    sb.close()
    import docker

    with pytest.raises(docker.errors.NotFound):
        client.api.inspect_container(cid)


def test_auto_prefers_docker() -> None:
    require_backend("docker")
    with make_sandbox("auto") as sb:
        assert sb.backend == "docker"


def test_require_docker_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEXMG_REQUIRE_DOCKER", "1")
    assert docker_required()
    monkeypatch.setenv("FLEXMG_REQUIRE_DOCKER", "0")
    assert not docker_required()


@pytest.mark.slow
def test_rootfs_tarball(tmp_path: Path) -> None:
    out = tmp_path / "rootfs.tar"
    size = write_rootfs(out)
    assert size > 1_000_000
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
    assert any(n.startswith("opt/python/bin/python3") for n in names)
    assert not any("site-packages/" in n for n in names)
    assert not any(n.startswith(("root/", "work/", "home/")) for n in names)


def _host_ids(pid: int) -> set[int]:
    """The real, effective, saved and fs uids and gids of host process ``pid``."""
    with open(f"/proc/{pid}/status") as f:
        return {int(x) for line in f if line.startswith(("Uid:", "Gid:")) for x in line.split()[1:]}


def _container_pids(sb: DockerSandbox, worker: Any) -> list[int]:
    """The host pids of every process of ``worker``'s container."""
    top = sb._client().api.top(worker.container_id)
    col = top["Titles"].index("PID")
    return [int(row[col]) for row in top["Processes"]]


def test_each_container_runs_as_a_host_uid_of_its_own() -> None:
    """No user namespace: a container's uid is a host uid, and the kernel's per-user
    quotas are that uid's; each container has one that no other container or local
    worker holds (the 65534 of every container before)."""
    require_backend("docker")
    rng = container_uid_range()
    if rng is None:
        pytest.skip("containers share uid 65534 unless the caller is root (FLEXMG_SANDBOX_UIDS)")
    first, count = rng
    with make_sandbox("docker", workers=2, timeout=5.0) as sb:
        threads = [
            threading.Thread(target=sb.run, args=("import time; time.sleep(0.5)",))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        workers = list(sb._all)
        assert len(workers) == 2
        uids = []
        for w in workers:
            assert isinstance(w, DockerWorker) and w.host_uid is not None
            uid = w.host_uid.uid
            assert first <= uid < first + count and uid != SHARED_UID
            pids = _container_pids(sb, w)
            assert pids, "no process in the container"
            for pid in pids:  # the zygote, fork server, judge server, idle runner: that uid only
                assert _host_ids(pid) == {uid}, (uid, pid, _host_ids(pid))
            uids.append(uid)
        assert len(set(uids)) == 2, uids
        r = sb.run("import os\nprint(os.getuid(), os.getgid(), *os.getgroups())")
        uid, *gids = map(int, r.stdout.split())
        assert uid in uids and set(gids) == {uid}, r.stdout  # no group but its own
    for w in workers:  # closing the sandbox gave the uids back
        assert isinstance(w, DockerWorker) and w.host_uid is None


def test_uids_off_keeps_the_shared_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    require_backend("docker")
    monkeypatch.setenv("FLEXMG_SANDBOX_UIDS", "off")
    with make_sandbox("docker", workers=1, timeout=5.0) as sb:
        assert isinstance(sb, DockerSandbox)
        r = sb.run("import os\nprint(os.getuid())")
        assert r.stdout == f"{SHARED_UID}\n", r
        (w,) = sb._all
        assert isinstance(w, DockerWorker) and w.host_uid is None
        assert all(_host_ids(pid) == {SHARED_UID} for pid in _container_pids(sb, w))


# Ten children each touch 60 MiB and wait; then the run touches 8 MiB blocks until the
# container's memory cgroup is full (each process stays under its own address-space
# limit): the cgroup's OOM killer takes the process with the most memory among those at
# oom_score_adj 1000 (the run's), i.e. the run's main process.
CGROUP_OOM = """
import os, time
kids = 10
r, w = os.pipe()
for _ in range(kids):
    if os.fork() == 0:
        os.close(r)
        block = b'\\x01' * (60 << 20)
        os.write(w, b'.')
        time.sleep(600)
        os._exit(0)
os.close(w)
got = 0
while got < kids:
    got += len(os.read(r, kids))
held = []
for _ in range(60):
    held.append(b'\\x02' * (8 << 20))
print('survived', len(held))
"""


@pytest.mark.slow
def test_a_run_killed_by_the_containers_oom_killer_is_oom() -> None:
    """The container's memory cgroup (2 x memory_mb + tmp_mb + 256 MiB) is exhausted by
    the run's processes together: the OOM kill is the run's "oom" (the cgroup's OOM-kill
    counter rose), the worker lives on, and the next run is judged normally."""
    require_backend("docker")
    with make_sandbox("docker", workers=1, timeout=60.0, memory_mb=256, tmp_mb=16) as sb:
        assert sb.run("print(1)").stdout == "1\n"
        r = sb.run(CGROUP_OOM)
        assert (r.status, r.exit_code) == ("oom", -9), (r.status, r.exit_code, r.stdout, r.error)
        assert "survived" not in r.stdout, r.stdout
        (w,) = sb._all
        assert isinstance(w, DockerWorker)
        after = sb.run("print(6 * 7)")
        assert (after.status, after.stdout) == ("ok", "42\n"), after
        assert sb._all == [w], "the OOM kill cost the container"
        rep = sb.run_tests("def f(x):\n    return 2 * x\n", ["assert f(2) == 4"])
        assert (rep.status, rep.passed) == ("ok", 1), rep
