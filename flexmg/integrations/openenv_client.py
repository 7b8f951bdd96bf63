"""A synchronous session on a ``flexmg serve`` server: one WebSocket, one env.

:class:`FlexMGSession` speaks OpenEnv's WebSocket protocol (``reset``, ``step``,
``state``) on one plain blocking socket read by the calling thread
(:class:`~flexmg.integrations.wsconn.BlockingWebSocket`), so a turn costs one round trip,
no event loop and no thread switch. It answers like OpenEnv's
``GenericEnvClient(...).sync()`` (a ``StepResult`` whose ``observation`` is a dict), so it
drops in where that client is used.

* It checks that the server plays the env it was told to: given ``env_id`` (and
  ``env_kwargs``), a server playing another env or other kwargs is refused with
  :class:`ServerMismatchError` before any episode.
* A request the server refuses raises :class:`ServerRefusedError`, whose message keeps
  the validation errors' field paths (``action.message: Input should be a valid string``).

Needs ``pip install 'flexmg[openenv]'``.

Example (with ``flexmg serve math-2agent --port 8000`` running)::

    from flexmg.integrations.openenv_client import FlexMGSession
    with FlexMGSession("http://127.0.0.1:8000", env_id="math-2agent") as session:
        first = session.reset(seed=0)          # first.observation["role"] == "solver"
        step = session.step({"message": "\\\\boxed{5}"})
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from openenv.core.client_types import StepResult
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "flexmg.integrations.openenv_client needs OpenEnv: pip install 'flexmg[openenv]'"
    ) from err

from flexmg.integrations.wsconn import BlockingWebSocket

__all__ = [
    "FlexMGSession",
    "ServerMismatchError",
    "ServerRefusedError",
    "describe_errors",
    "server_identity",
]

IDENTITY_PATH = "/flexmg"


class ServerRefusedError(RuntimeError):
    """The server refused a request (bad action, capacity reached, ...); the session goes on."""


class ServerMismatchError(ValueError):
    """The server plays another env id or other env kwargs than the client was told."""


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic validation errors as ``field.path: message`` parts.

    >>> describe_errors([{"loc": ["action", "message"], "msg": "Field required"},
    ...                  {"loc": [], "msg": "Input should be an object"}])
    'action.message: Field required; (request): Input should be an object'
    """
    parts = []
    for error in errors:
        where = ".".join(str(p) for p in error.get("loc") or ()) or "(request)"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def _canonical(env_id: str) -> str:
    import flexmg

    try:
        return str(flexmg.spec(env_id).id)
    except Exception:  # an id this process cannot resolve is compared as written
        return env_id


def server_identity(base_url: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """What a ``flexmg serve`` server plays: ``{"env_id": ..., "env_kwargs": {...}}``."""
    url = base_url.rstrip("/") + IDENTITY_PATH
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 (http only)
        return dict(json.loads(resp.read()))


def check_identity(
    base_url: str, env_id: str, env_kwargs: Mapping[str, Any] | None, timeout_s: float = 30.0
) -> None:
    """Raise :class:`ServerMismatchError` unless the server plays ``env_id`` with ``env_kwargs``."""
    served = server_identity(base_url, timeout_s)
    want_id, got_id = _canonical(env_id), _canonical(str(served.get("env_id", "")))
    want_kwargs = json.loads(json.dumps(dict(env_kwargs or {}), sort_keys=True, default=str))
    got_kwargs = dict(served.get("env_kwargs") or {})
    if want_id != got_id or want_kwargs != got_kwargs:
        raise ServerMismatchError(
            f"the server at {base_url} plays {got_id} with kwargs {got_kwargs}, but this client "
            f"was told {want_id} with kwargs {want_kwargs}; start the server with the same env "
            "(flexmg serve ENV_ID KEY=VALUE ...) or give the client the server's"
        )


class FlexMGSession:
    """One session (one env) on a ``flexmg serve`` server, over a blocking WebSocket.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000``.
        env_id: when given, the server must play this env (else :class:`ServerMismatchError`).
        env_kwargs: the env kwargs the server must use (checked with ``env_id``).
        timeout_s: how long to wait for the server's answer to one request.
    """

    def __init__(
        self,
        base_url: str,
        *,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError(f"base_url must start with http(s):// or ws(s)://, got {base_url!r}")
        http_url = base_url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)
        if env_id is not None:
            check_identity(http_url, env_id, env_kwargs, timeout_s)
        elif env_kwargs:
            raise ValueError("env_kwargs are checked against the server's with env_id: give both")
        ws_url = http_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        self.base_url = http_url.rstrip("/")
        self.timeout_s = timeout_s
        self._ws: BlockingWebSocket | None = BlockingWebSocket(
            ws_url.rstrip("/") + "/ws", timeout_s=timeout_s
        )

    def _call(self, message: Mapping[str, Any]) -> dict[str, Any]:
        if self._ws is None:
            raise RuntimeError("the session is closed")
        answer = json.loads(self._ws.request(json.dumps(message)))
        if answer.get("type") == "error":
            data = answer.get("data") or {}
            why = str(data.get("message", "unknown error"))
            if data.get("errors"):
                why = f"{why}: {describe_errors(data['errors'])}"
            raise ServerRefusedError(f"the flexmg server refused the {message['type']}: {why} "
                                     f"(code {data.get('code', 'UNKNOWN')})")  # fmt: skip
        return dict(answer.get("data") or {})

    @staticmethod
    def _result(data: Mapping[str, Any]) -> StepResult:
        return StepResult(
            observation=data.get("observation", {}),
            reward=data.get("reward"),
            done=bool(data.get("done", False)),
        )

    def reset(self, seed: int | None = None, **kwargs: Any) -> StepResult:
        """Start an episode (``seed`` reproduces it); the first role's observation."""
        return self._result(self._call({"type": "reset", "data": {"seed": seed, **kwargs}}))

    def step(self, action: Mapping[str, Any]) -> StepResult:
        """Play ``{"message": text}`` (optionally ``"role"``) for the role whose turn it is."""
        if not isinstance(action, Mapping):
            raise TypeError(f"action must be a dict like {{'message': text}}, got {action!r}")
        return self._result(self._call({"type": "step", "data": dict(action)}))

    def state(self) -> dict[str, Any]:
        """The session's episode (env id, seed, whose turn, turns so far)."""
        return self._call({"type": "state"})

    def close(self) -> None:
        """Close the session (the server closes its env)."""
        if self._ws is not None:
            try:
                self._ws.send(json.dumps({"type": "close"}))
            except Exception:  # noqa: BLE001 - closing a dead socket is fine
                pass
            self._ws.close()
            self._ws = None

    def __enter__(self) -> FlexMGSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
