"""Build the Docker sandbox image offline (no registry needed).

The image is a minimal root filesystem assembled from this machine's Python:
the interpreter at ``/opt/python``, the shared libraries ``ldd`` finds, and the
standard library (without site-packages, tests, tkinter, idlelib, ...). It is
written as a tarball and loaded with ``docker import``, so it builds in seconds
with no network. The tag encodes the Python version and the layout version, so
a changed interpreter means a new image.

Run: ``python -m flexmg.sandboxes.image build`` or ``flexmg sandbox build-image``.

Example:
    >>> image_name().startswith("flexmg-sandbox:py")
    True
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from .rootfs import SANDBOX_PREFIX, Manifest, python_manifest

IMAGE_REPO = "flexmg-sandbox"
LAYOUT_VERSION = 1


def image_name() -> str:
    """The sandbox image tag for this machine's Python."""
    v = sys.version_info
    return f"{IMAGE_REPO}:py{v.major}.{v.minor}.{v.micro}-v{LAYOUT_VERSION}"


def _add_dir(
    tar: tarfile.TarFile, path: str, mode: int = 0o755, seen: set[str] | None = None
) -> None:
    parts = Path(path.lstrip("/")).parts
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        if seen is not None and sub in seen:
            continue
        info = tarfile.TarInfo(sub)
        info.type = tarfile.DIRTYPE
        info.mode = mode if i == len(parts) else 0o755
        info.mtime = int(time.time())
        tar.addfile(info)
        if seen is not None:
            seen.add(sub)


def _add_bytes(tar: tarfile.TarFile, path: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.size = len(data)
    info.mode = mode
    info.mtime = int(time.time())
    tar.addfile(info, io.BytesIO(data))


def write_rootfs(out: str | os.PathLike[str], manifest: Manifest | None = None) -> int:
    """Write the root filesystem tarball to ``out``; return its size in bytes."""
    m = manifest or python_manifest()
    seen: set[str] = set()
    with tarfile.open(out, "w") as tar:
        for d in ("/tmp", "/etc", "/dev", "/proc", "/opt/python/bin", "/opt/python/lib"):
            _add_dir(tar, d, 0o1777 if d == "/tmp" else 0o755, seen)
        for src, dst in m.files:
            _add_dir(tar, os.path.dirname(dst), 0o755, seen)
            tar.add(src, arcname=dst.lstrip("/"), recursive=False)
        stdlib_src, stdlib_dst = m.stdlib
        skip = set(m.skip)

        def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            rel = Path(info.name).relative_to(stdlib_dst.lstrip("/"))
            if rel.parts and (rel.parts[0] in skip or rel.parts[0].startswith("config-")):
                return None
            if info.name.endswith((".opt-1.pyc", ".opt-2.pyc", ".a")):
                return None
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            return info

        _add_dir(tar, os.path.dirname(stdlib_dst), 0o755, seen)
        tar.add(stdlib_src, arcname=stdlib_dst.lstrip("/"), filter=keep)
        _add_bytes(
            tar,
            "/etc/passwd",
            b"root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/tmp:/bin/false\n",
        )
        _add_bytes(tar, "/etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    return os.path.getsize(out)


def image_exists(client: Any | None = None) -> bool:
    """True when the sandbox image for this Python is present in the daemon."""
    import docker

    client = client or docker.from_env(timeout=10)
    try:
        client.images.get(image_name())
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(client: Any | None = None, *, quiet: bool = False) -> str:
    """Build (or rebuild) the sandbox image offline; return its tag."""
    import docker

    client = client or docker.from_env(timeout=300)
    m = python_manifest()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="flexmg-rootfs-") as tmp:
        tarball = os.path.join(tmp, "rootfs.tar")
        size = write_rootfs(tarball, m)
        repo, tag = image_name().split(":")
        env = m.env()
        changes = [f"ENV {k}={v}" for k, v in env.items()] + [
            "USER 65534:65534",
            "WORKDIR /tmp",
            f'CMD ["{m.python}", "-I", "-S", "-c", "print(\\"flexmg sandbox image\\")"]',
            "LABEL org.flexmg.sandbox=1",
        ]
        client.api.import_image(src=tarball, repository=repo, tag=tag, changes=changes)
    if not quiet:
        print(
            f"built {image_name()} ({size / 1e6:.1f} MB rootfs from {m.files[0][0]}, "
            f"python at {SANDBOX_PREFIX}) in {time.perf_counter() - t0:.1f} s"
        )
    return image_name()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m flexmg.sandboxes.image",
        description="Build the flexmg Docker sandbox image offline.",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build (or rebuild) the image")
    sub.add_parser("name", help="print the image tag")
    tar = sub.add_parser("rootfs", help="only write the root filesystem tarball")
    tar.add_argument("out")
    args = ap.parse_args(argv)
    if args.cmd == "name":
        print(image_name())
        return 0
    if args.cmd == "rootfs":
        print(write_rootfs(args.out))
        return 0
    try:
        build_image()
    except Exception as e:
        print(f"error: could not build the sandbox image: {e}", file=sys.stderr)
        print("is a Docker daemon running? (docker info; start dockerd)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
