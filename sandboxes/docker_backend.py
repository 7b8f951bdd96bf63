"""The Docker backend: warm hardened containers running the same zygote as the local backend.

Each worker is one long-lived container (``network_mode="none"``, read-only
root, a size-limited tmpfs at ``/tmp``, ``cap_drop=ALL``, ``no-new-privileges``,
a host uid of its own (:func:`container_uid_range`; else the shared 65534),
pids and memory limits with memory == memswap, a capped json-file log,
a private IPC namespace without ``/dev/shm``)
whose pid 1 is the zygote. Jobs go in over the container's attached stdin and
answers come back on its stdout, so a warm run costs a fork inside the container
instead of a ``docker exec`` (or ~0.4 s for a fresh container).

The image is built offline by ``flexmg sandbox build-image`` (see :mod:`.image`).

Example:
    >>> from flexmg.sandboxes import make_sandbox
    >>> with make_sandbox("docker", timeout=2.0) as sb:  # doctest: +SKIP
    ...     sb.run("import socket; socket.create_connection(('1.1.1.1', 53))").status
    'error'
"""

from __future__ import annotations

import os
import select
import socket
import struct
import time
import uuid
from typing import Any

from . import seccomp
from .base import Sandbox, SandboxUnavailable
from .image import image_name
from .limits import Limits, cleanup_budget
from .rootfs import python_manifest
from .uids import WorkerUid, uid_range
from .worker import Worker, WorkerError, zygote_argv

_EXTRA_MEMORY = 256 << 20
_LABEL = "org.flexmg.sandbox.owner"
SHARED_UID = 65534  # the containers' uid where they get none of their own


def container_uid_range() -> tuple[int, int] | None:
    """The host uids the containers run as, one per container; None: all run as 65534.

    Containers have no user namespace, so a container's uid *is* a host uid and
    the kernel's per-user quotas (POSIX message queue bytes, pending signals,
    pipe buffer pages, ...) are those of that host uid: under one shared uid a
    run holding a quota made the same call fail in every other container. The
    range and its flock-held uids are those of the local backend's workers
    (:mod:`.uids`), so a container never shares a uid with a local worker either.
    None (the shared 65534) when the caller is not root (it cannot take the
    root-only uid locks), with ``FLEXMG_SANDBOX_UIDS=off``, or when the daemon is
    not on this machine (``DOCKER_HOST`` other than a unix socket: the locks here
    say nothing about the uids in use there).

    >>> os.environ["FLEXMG_SANDBOX_UIDS"] = "off"; print(container_uid_range())
    None
    >>> del os.environ["FLEXMG_SANDBOX_UIDS"]
    """
    host = os.environ.get("DOCKER_HOST", "").strip()
    if host and not host.startswith("unix://"):
        return None
    return uid_range()


def _client(timeout: int = 10) -> Any:
    import docker

    return docker.from_env(timeout=timeout)


def probe_docker() -> str | None:
    """None when the docker backend works here, else why not."""
    try:
        import docker
    except ImportError:
        return "the docker Python SDK is not installed (pip install docker)"
    try:
        client = _client(timeout=5)
        client.ping()
    except Exception as e:
        return (
            f"no Docker daemon answers ({type(e).__name__}: {str(e)[:200]}); install docker.io "
            "and start dockerd"
        )
    try:
        client.images.get(image_name())
    except docker.errors.ImageNotFound:
        return f"the sandbox image {image_name()} is missing; build it with `flexmg sandbox build-image`"
    except Exception as e:
        return f"could not query the Docker daemon: {e}"
    return None


class DockerWorker(Worker):
    """A container whose pid 1 is the zygote, reached over its attach socket."""

    def __init__(
        self, client: Any, create_kwargs: dict[str, Any], host_uid: WorkerUid | None = None
    ) -> None:
        super().__init__()
        self.client = client
        self.host_uid = host_uid  # released by close() once the container is gone
        self.container_id: str | None = None
        self._buf = bytearray()
        self._stderr = bytearray()
        api = client.api
        try:
            self.container_id = api.create_container(**create_kwargs)["Id"]
            resp = api.attach_socket(
                self.container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            self._resp = resp
            self._sock: socket.socket = getattr(resp, "_sock", resp)
            self._sock.setblocking(True)
            api.start(self.container_id)
        except BaseException:
            self.close()
            raise

    def _send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def _fill(self, deadline: float) -> None:
        """Read one multiplexed chunk (8-byte header + payload) into the stdout buffer."""
        head = self._raw(8, deadline)
        stream, size = head[0], struct.unpack(">I", head[4:8])[0]
        payload = self._raw(size, deadline)
        if stream == 1:
            self._buf.extend(payload)
        else:
            self._stderr.extend(payload[-4096:])
            del self._stderr[:-4096]

    def _raw(self, n: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        while n > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerError("the container did not answer in time")
            ready, _, _ = select.select([self._sock], [], [], left)
            if not ready:
                continue
            chunk = self._sock.recv(min(n, 1 << 20))
            if not chunk:
                raise WorkerError("the container's stream closed")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _recv_exact(self, n: int, deadline: float) -> bytes:
        while len(self._buf) < n:
            self._fill(deadline)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _describe_death(self) -> str:
        if not self.container_id:
            return "no container"
        try:
            state = self.client.api.inspect_container(self.container_id)["State"]
            desc = f"container {state.get('Status')}, exit code {state.get('ExitCode')}"
            if state.get("OOMKilled"):
                desc += ", OOM-killed"
        except Exception as e:
            desc = f"container state unknown ({e})"
        tail = bytes(self._stderr).decode("utf-8", "replace").strip()[-600:]
        return desc + (f", stderr: {tail}" if tail else "")

    def close(self) -> None:
        self.alive = False
        for obj in (getattr(self, "_sock", None), getattr(self, "_resp", None)):
            try:
                if obj is not None:
                    obj.close()
            except Exception:
                pass
        gone = True
        if self.container_id:
            import docker

            try:  # force: kills its processes first; returns once they are gone
                self.client.api.remove_container(self.container_id, force=True)
            except docker.errors.NotFound:
                pass  # auto_remove took it when its zygote exited
            except Exception:
                gone = False
            self.container_id = None
        if self.host_uid is not None and gone:  # no process of the container is left
            self.host_uid.release()
            self.host_uid = None


class DockerSandbox(Sandbox):
    """The Docker backend; see the module docstring.

    Args:
        workers: containers run in parallel (default: the usable CPU cores).
        image: the image tag (default: :func:`flexmg.sandboxes.image.image_name`).
        limits: a :class:`Limits`, or pass its fields as keywords.
    """

    backend = "docker"

    def __init__(
        self,
        *,
        workers: int | None = None,
        image: str | None = None,
        limits: Limits | None = None,
        **limit_kwargs: Any,
    ) -> None:
        if limits is not None and limit_kwargs:
            raise TypeError("pass either limits=Limits(...) or limit keywords, not both")
        lim = limits or Limits.from_kwargs(**limit_kwargs)
        self.image = image or image_name()
        why = probe_docker() if image is None else None
        if why is not None:
            raise SandboxUnavailable(f"the docker sandbox backend cannot work here: {why}")
        super().__init__(lim, workers=workers)
        self._manifest = python_manifest()
        self._client_obj: Any = None
        self._client_pid = -1
        self._uids = container_uid_range()

    def _client(self) -> Any:
        if self._client_obj is None or self._client_pid != os.getpid():
            self._client_obj = _client(timeout=60)
            self._client_pid = os.getpid()
        return self._client_obj

    def _create_kwargs(self, cpu: int | None = None, uid: int = SHARED_UID) -> dict[str, Any]:
        import docker

        lim = self.limits
        client = self._client()
        mem = (int(lim.memory_mb) << 20) * 2 + (int(lim.tmp_mb) << 20) + _EXTRA_MEMORY
        config = {
            "tmp_root": "/tmp",
            "cleanup_budget": cleanup_budget(),
            "env": self._manifest.env(),
            "clean_ipc": True,
            "extra_clean": ["/dev/shm"],
            "cpu": cpu,
            "seccomp": seccomp.zygote_filter(),  # on top of Docker's default profile
            # the container's own cgroup (v2, v1): its OOM-kill counter, read by the zygote
            "oom_events": [
                "/sys/fs/cgroup/memory.events",
                "/sys/fs/cgroup/memory/memory.oom_control",
            ],
        }
        host_config = client.api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={int(lim.tmp_mb)}m,mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=int(lim.max_procs),
            mem_limit=mem,
            memswap_limit=mem,
            ipc_mode="none",  # a private IPC namespace and no writable /dev/shm
            log_config=docker.types.LogConfig(
                type="json-file", config={"max-size": "1m", "max-file": "1"}
            ),
            ulimits=[docker.types.Ulimit(name="core", soft=0, hard=0)],
            init=False,
            auto_remove=True,  # gone as soon as the zygote exits (e.g. its owner died)
        )
        return {
            "image": self.image,
            "command": zygote_argv(self._manifest.python, config),
            "user": f"{uid}:{uid}",  # groups: its own gid only
            "stdin_open": True,
            "tty": False,
            "network_disabled": True,
            "working_dir": "/tmp",
            "environment": self._manifest.env(),
            "hostname": "sandbox",
            "labels": {_LABEL: f"{socket.gethostname()}:{os.getpid()}"},
            "name": f"flexmg-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}",
            "host_config": host_config,
        }

    def _start_worker(self, cpu: int | None) -> Worker:
        held: WorkerUid | None = None
        if self._uids is not None:
            try:
                held = WorkerUid.acquire(*self._uids)
            except OSError as e:
                raise SandboxUnavailable(f"no host uid for a sandbox container: {e}") from None
        try:
            try:
                client = self._client()
                kwargs = self._create_kwargs(cpu, held.uid if held is not None else SHARED_UID)
            except BaseException:
                if held is not None:
                    held.release()  # no container was created
                raise
            # a DockerWorker that fails to start closes itself: it removes its container
            # and gives the uid back (it keeps the uid when the removal failed)
            w = DockerWorker(client, kwargs, held)
        except Exception as e:
            raise WorkerError(f"could not start a sandbox container: {e}") from None
        try:
            w.wait_ready()
        except BaseException:
            w.close()
            raise
        return w

    def _after_reply(self, w: Worker, reply: dict[str, Any]) -> None:
        # A SIGKILL by the container's OOM killer shows as -9 with no MemoryError; only the
        # cgroup's OOM-kill counter tells it from any other SIGKILL (one the run sent itself).
        if (
            reply.get("exit_code") == -9
            and reply.get("status") is None
            and not reply.get("traced")
            and _docker_oom(reply)
        ):
            reply["cgroup_oom"] = True


def _docker_oom(reply: dict[str, Any]) -> bool:
    """The zygote saw the container's OOM-kill counter rise during the run.

    >>> _docker_oom({"oom_kills": 1}), _docker_oom({"oom_kills": 0}), _docker_oom({})
    (True, False, False)
    """
    kills = reply.get("oom_kills")
    return type(kills) is int and kills > 0
