"""Docker backend specifics: container hardening flags, auto selection, the offline image.

Skipped with a reason when no daemon answers or the image is missing, unless
``FLEXMG_REQUIRE_DOCKER=1`` (as in CI), which turns that into a failure.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexmg.sandboxes import make_sandbox
from flexmg.sandboxes.docker_backend import DockerSandbox
from flexmg.sandboxes.image import image_name, write_rootfs
from flexmg.sandboxes.testing import docker_required, require_backend

pytestmark = pytest.mark.docker


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
    assert cfg["User"] == "65534:65534"
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
    assert r.stdout.splitlines() == ["65534 65534 0000000000000000", "0"], r


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
