"""Serve any registered flexmg env with OpenEnv's server API (``flexmg serve``).

OpenEnv (https://github.com/meta-pytorch/OpenEnv) is the HTTP/WebSocket env
standard that TRL, SkyRL and verifiers consume. :func:`create_flexmg_app` wraps
a flexmg env id in OpenEnv's own FastAPI server: ``/reset``, ``/step``,
``/state``, ``/schema`` over HTTP and ``/ws`` for persistent sessions, each
WebSocket session with its own env.

One ``step`` is one turn of the role whose turn it is; the observation names
that role (``role``) and carries its chat prompt (``messages``, the prompt
flexmg's own agents see), the step's ``reward`` (the change of the team score,
so an episode's rewards add up to its score), ``done``, the per-role
``rewards`` of the step, the per-role ``episode_rewards`` so far, the per-role
``infos`` and, once done, ``score`` and ``metrics``. Malformed actions get
OpenEnv's validation errors; a step at the wrong time (before ``reset``, after
the end, or naming another ``role``) returns an observation whose ``error``
says what to do, and the session goes on.

Note: OpenEnv's HTTP ``/step`` is stateless (a fresh env per request), so play
episodes over the WebSocket session: :class:`~flexmg.integrations.openenv_client.FlexMGSession`
(checks the server's env id and kwargs, keeps validation errors' field paths, one blocking
socket) or OpenEnv's ``GenericEnvClient``. ``GET /flexmg`` says which env (and kwargs) the
server plays (and ``ws``: whether its ``/ws`` is flexmg's lean endpoint, the default, or
OpenEnv's own, ``--openenv-ws``); ``flexmg serve --workers N`` spreads sessions over N processes.

Needs ``pip install 'flexmg[openenv]'``.

Example (a server in one shell, a client in another)::

    $ flexmg serve math-2agent --port 8000

    from openenv.core import GenericEnvClient
    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0)                 # result.observation["role"] == "solver"
        result = client.step({"message": "\\boxed{5}"})  # now the verifier's turn
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

try:
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "flexmg.integrations.openenv needs OpenEnv: pip install 'flexmg[openenv]'"
    ) from err
from pydantic import Field

from flexmg.integrations.seats import EpisodeResult, Messages, SeatDriver, Segment

__all__ = [
    "FlexMGAction",
    "FlexMGEnvironment",
    "FlexMGObservation",
    "FlexMGState",
    "RemoteSeatDriver",
    "app_from_environ",
    "create_flexmg_app",
    "freeze_heap",
    "serve",
]

IDENTITY_PATH = "/flexmg"  # GET: {"env_id", "env_kwargs"}, what the client checks
SERVE_SPEC_VAR = "FLEXMG_SERVE_SPEC"  # the app's arguments for uvicorn's worker processes

HTTP_STEP_NOTE = (
    "no episode in progress: call reset first. (OpenEnv's HTTP /step is stateless, a fresh "
    "env per request; play episodes over the WebSocket session /ws, e.g. with "
    "openenv.core.GenericEnvClient.)"
)


class FlexMGAction(Action):
    """One turn: the message of the role whose turn it is."""

    message: str = Field(
        ..., description="the acting role's message (any text; the env cuts what is too long)"
    )
    role: str | None = Field(
        default=None,
        description="optional guard: the role this message is for; refused if it is not its turn",
    )


class FlexMGObservation(Observation):
    """What the acting role sees, plus the episode's rewards so far."""

    env_id: str = Field(default="", description="the flexmg env id")
    role: str = Field(default="", description="the role whose turn it is ('' once done)")
    round: int = Field(default=0, description="the round (0-based)")
    task: str = Field(default="", description="the task shown to every role")
    instructions: str = Field(default="", description="the acting role's instructions")
    context: str = Field(default="", description="what the acting role sees of the others")
    feedback: str = Field(default="", description="feedback on the previous round")
    messages: list[dict[str, str]] = Field(
        default_factory=list, description="the acting role's chat prompt (system + user)"
    )
    rewards: dict[str, float] = Field(
        default_factory=dict, description="per-role rewards dealt by the last step"
    )
    episode_rewards: dict[str, float] = Field(
        default_factory=dict, description="per-role rewards summed over the episode so far"
    )
    infos: dict[str, Any] = Field(default_factory=dict, description="per-role infos")
    score: float | None = Field(default=None, description="the team score once done")
    metrics: dict[str, Any] = Field(
        default_factory=dict, description="env.episode_metrics once done"
    )
    error: str = Field(default="", description="why the last call was refused ('' if not)")


class FlexMGState(State):
    """The session's episode: env id, seed, whose turn, done, the score so far."""

    env_id: str = ""
    seed: int | None = None
    role: str = ""
    round: int = 0
    done: bool = False
    score: float = 0.0
    turns: list[dict[str, Any]] = Field(default_factory=list)


def jsonable(value: Any) -> Any:
    """Plain JSON values from numpy scalars, tuples, sets and nested containers.

    >>> import numpy as np
    >>> jsonable({"a": np.float32(0.5), "b": (np.int64(2), {np.bool_(True)}), "c": float("nan")})
    {'a': 0.5, 'b': [2, [True]], 'c': None}
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # the common case first
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:  # a plain dict (an env's infos, metrics): its plain leaves inline
        out = {}
        for k, v in value.items():
            vk = type(v)
            if vk is str or vk is int or vk is bool or v is None:
                out[k if type(k) is str else str(k)] = v
            else:
                out[k if type(k) is str else str(k)] = jsonable(v)
        return out
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class FlexMGEnvironment(Environment):
    """An OpenEnv ``Environment`` playing one flexmg env, one turn per ``step``.

    >>> env = FlexMGEnvironment("echo")
    >>> env.reset(seed=0).role
    'a'
    >>> env.step(FlexMGAction(message="hello", role="b")).error[:22]
    "it is role 'a''s turn,"
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        import flexmg

        super().__init__()
        self.env_id = env_id
        self._env = flexmg.make(env_id, **dict(env_kwargs or {}))
        self._driver: SeatDriver | None = None
        self._episode_rewards: dict[str, float] = {}
        # the episode's state, kept as plain values (FlexMGState validates every assignment)
        self._seed: int | None = None
        self._episode_id: str | None = None
        self._turns: list[dict[str, Any]] = []
        self._role, self._round, self._done, self._score = "", 0, False, 0.0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> FlexMGObservation:
        """Start an episode (``seed`` reproduces it exactly)."""
        return FlexMGObservation.model_construct(**self.reset_fields(seed, episode_id, **kwargs))

    def step(
        self, action: FlexMGAction, timeout_s: float | None = None, **kwargs: Any
    ) -> FlexMGObservation:
        """Play ``action.message`` for the role whose turn it is."""
        return FlexMGObservation.model_construct(**self.step_fields(action.message, action.role))

    # The same as plain dicts, for the lean WebSocket endpoint (flexmg.integrations.openenv_ws):
    # every FlexMGObservation field, in declaration order, each value of its declared type.
    def reset_fields(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """:meth:`reset`'s observation as a dict of its fields (no model built).

        >>> env = FlexMGEnvironment("echo")
        >>> fields = env.reset_fields(seed=0)
        >>> list(fields)[:5], fields["role"]
        (['done', 'reward', 'metadata', 'env_id', 'role'], 'a')
        """
        self._driver = SeatDriver(self._env, self.env_id, seed)
        self._episode_rewards = {r: 0.0 for r in self._env.possible_agents}
        self._seed, self._episode_id, self._turns = seed, episode_id or str(uuid4()), []
        self._role, self._round, self._done, self._score = "", 0, False, 0.0
        return self._fields(reward=None, rewards={})

    def step_fields(self, message: str, role: str | None = None) -> dict[str, Any]:
        """:meth:`step`'s observation for ``message`` (and the ``role`` guard) as a dict."""
        driver = self._driver
        if driver is None:
            return self._refuse(HTTP_STEP_NOTE)
        turn = driver.pending()
        if turn is None:
            return self._refuse("the episode is over: call reset to start a new one")
        acting = turn[0]
        if role is not None and role != acting:
            return self._refuse(
                f"it is role {acting!r}'s turn, the action names {role!r}; "
                f"send the message as {acting!r} (or leave role unset)"
            )
        driver.act(message)
        for r, v in driver.step_rewards.items():
            self._episode_rewards[r] = self._episode_rewards.get(r, 0.0) + v
        record = self._env.transcript[-1]
        self._turns.append({"round": record.round, "role": record.role, "text": record.action})
        return self._fields(reward=driver.team_reward, rewards=driver.step_rewards)

    def state_fields(self) -> dict[str, Any]:
        """``self.state.model_dump()``, built without the model when its values are plain."""
        seed, episode_id = self._seed, self._episode_id
        if not (
            (seed is None or type(seed) is int) and (episode_id is None or type(episode_id) is str)
        ):  # what FlexMGState would coerce or refuse: let it
            return self.state.model_dump()
        return {
            "episode_id": episode_id,
            "step_count": len(self._turns),
            "env_id": self.env_id,
            "seed": seed,
            "role": self._role,
            "round": self._round,
            "done": self._done,
            "score": self._score,
            "turns": [dict(t) for t in self._turns],
        }

    # OpenEnv runs a sync reset/step in a thread pool, one hop per call; these are quick,
    # so the server awaits the async forms, which play on its event loop directly.
    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> FlexMGObservation:
        """:meth:`reset`, awaited on the server's event loop."""
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    async def step_async(
        self, action: FlexMGAction, timeout_s: float | None = None, **kwargs: Any
    ) -> FlexMGObservation:
        """:meth:`step`, awaited on the server's event loop."""
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> FlexMGState:
        """The session's episode (env id, seed, whose turn, turns so far)."""
        return FlexMGState(
            env_id=self.env_id,
            seed=self._seed,
            episode_id=self._episode_id,
            step_count=len(self._turns),
            role=self._role,
            round=self._round,
            done=self._done,
            score=self._score,
            turns=[dict(t) for t in self._turns],
        )

    def close(self) -> None:
        """Close the flexmg env (its sandbox, if any)."""
        self._env.close()

    def _refuse(self, why: str) -> dict[str, Any]:
        if self._driver:
            fields = self._fields(reward=None, rewards={})
        else:
            fields = FlexMGObservation(env_id=self.env_id).model_dump()
        fields["error"] = why
        return fields

    def _fields(self, reward: float | None, rewards: Mapping[str, float]) -> dict[str, Any]:
        assert self._driver is not None
        driver = self._driver
        turn = driver.pending()
        done = turn is None
        obs = driver.observation or {}
        # pending() has just taken the env's episode_metrics into the driver's result
        metrics = driver.result.metrics if done else None
        score = float(metrics.get("score", 0.0)) if metrics is not None else None
        self._role = "" if turn is None else turn[0]
        self._round = int(obs.get("round", self._round))
        self._done = done
        self._score = score if score is not None else self._score
        infos = driver.step_infos if reward is not None else {}
        # Every field is built here with its declared type, in declaration order.
        return {
            "done": done,
            "reward": None if reward is None else float(reward),
            "metadata": {},
            "env_id": self.env_id,
            "role": self._role,
            "round": self._round,
            "task": str(obs.get("task", "")),
            "instructions": str(obs.get("instructions", "")),
            "context": str(obs.get("context", "")),
            "feedback": str(obs.get("feedback", "")),
            "messages": [] if turn is None else turn[1],
            "rewards": {str(r): float(v) for r, v in rewards.items()},
            "episode_rewards": {str(r): float(v) for r, v in self._episode_rewards.items()},
            "infos": {
                str(r): jsonable({k: v for k, v in i.items() if k != "episode"})
                for r, i in infos.items()
            },
            "score": score,
            "metrics": jsonable(metrics) if metrics is not None else {},
            "error": "",
        }


def create_flexmg_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = 64,
    lean: bool = True,
) -> Any:
    """OpenEnv's FastAPI app serving ``env_id`` (one env per WebSocket session).

    The env is built once here so an unknown id or bad kwargs fail now, not
    in the first session. With ``lean`` (the default), ``/ws`` is served by
    :class:`~flexmg.integrations.openenv_ws.LeanWebSocketEndpoint`: OpenEnv's protocol, the
    same bytes, less work per message; ``lean=False`` keeps OpenEnv's own endpoint.
    ``app.state.flexmg_ws`` says which one serves ``/ws`` (``"lean"`` or ``"openenv"``).
    """
    if not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
    FlexMGEnvironment(env_id, env_kwargs).close()
    factory = functools.partial(FlexMGEnvironment, env_id, dict(env_kwargs or {}))
    app = create_app(
        factory,
        FlexMGAction,
        FlexMGObservation,
        env_name=env_id,
        max_concurrent_envs=max_sessions,
        state_cls=FlexMGState,
    )
    app.state.flexmg_ws = "openenv"
    if lean:
        from flexmg.integrations.openenv_ws import install_lean_ws

        install_lean_ws(app)  # warns and keeps OpenEnv's endpoint if its layout differs
    identity = {
        "env_id": env_id,
        "env_kwargs": jsonable(dict(env_kwargs or {})),
        "ws": app.state.flexmg_ws,  # which endpoint serves /ws: "lean" or "openenv"
    }

    @app.get(IDENTITY_PATH)
    def flexmg_identity() -> dict[str, Any]:
        """The env this server plays, for clients to check (FlexMGSession does)."""
        return identity

    return app


def app_from_environ() -> Any:
    """The app of ``$FLEXMG_SERVE_SPEC`` (JSON: env_id, env_kwargs, max_sessions, lean).

    uvicorn's worker processes (``flexmg serve --workers N``) build the app through this.
    """
    spec = json.loads(os.environ[SERVE_SPEC_VAR])
    app = create_flexmg_app(
        spec["env_id"],
        spec["env_kwargs"],
        max_sessions=int(spec["max_sessions"]),
        lean=bool(spec.get("lean", True)),
    )
    freeze_heap()
    return app


def freeze_heap() -> None:
    """Exempt what the server process holds after start-up from the cyclic GC (``gc.freeze``).

    OpenEnv's server imports FastAPI, Gradio and pydantic models: some 200,000 objects
    that every full collection would walk again (about 0.1 s each on a busy 2-core
    machine) though they live as long as the process. Frozen, collections only walk what
    the sessions allocate; reference counting frees objects as before.
    """
    import gc

    gc.collect()
    gc.freeze()


def serve(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 64,
    workers: int = 1,
    log_level: str = "info",
    lean: bool = True,
) -> None:
    """Serve ``env_id`` with OpenEnv's server until interrupted (``flexmg serve``).

    ``workers`` > 1 runs that many server processes on the port (uvicorn's workers): a
    session stays on the process that accepted it, so concurrent sessions use as many
    cores; ``max_sessions`` holds per process. ``lean=False`` serves ``/ws`` with OpenEnv's
    own endpoint instead of flexmg's lean one (the same answers, more work per message).
    """
    import uvicorn

    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    app = create_flexmg_app(env_id, env_kwargs, max_sessions=max_sessions, lean=lean)  # fails early
    # Observations are a few KB: compressing each costs more CPU than it saves on the wire
    # (clients that offer permessage-deflate, like OpenEnv's, are simply answered without it).
    # uvicorn's loop="auto" picks uvloop when installed (the openenv extra installs it).
    options: dict[str, Any] = {"host": host, "port": port, "log_level": log_level}
    options["ws_per_message_deflate"] = False
    if workers == 1:
        freeze_heap()
        uvicorn.run(app, **options)
        return
    spec = {
        "env_id": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "max_sessions": max_sessions,
        "lean": lean,
    }
    os.environ[SERVE_SPEC_VAR] = json.dumps(spec)
    uvicorn.run(f"{__name__}:app_from_environ", factory=True, workers=workers, **options)


class RemoteSeatDriver:
    """A :class:`~flexmg.integrations.seats.SeatDriver` over a ``flexmg serve`` session.

    It offers the same turn-by-turn interface, for trainers that reach the env
    through OpenEnv.

    ``client`` is a :class:`~flexmg.integrations.openenv_client.FlexMGSession` (or OpenEnv's
    ``GenericEnvClient(base_url=...).sync()``, which answers alike).
    """

    def __init__(self, client: Any, env_id: str, seed: int | None) -> None:
        self.client = client
        self.result = EpisodeResult(env_id=env_id, seed=seed)
        self._take(client.reset(seed=seed))

    def _take(self, step: Any) -> None:
        obs = step.observation
        if obs.get("error"):
            from flexmg.integrations.openenv_client import ServerRefusedError

            raise ServerRefusedError(f"the flexmg server refused the step: {obs['error']}")
        self._obs, self._done = obs, bool(step.done)
        if self._done:
            self.result.score = float(obs.get("score") or 0.0)
            self.result.rewards = dict(obs.get("episode_rewards", {}))
            self.result.metrics = dict(obs.get("metrics", {}))

    @property
    def done(self) -> bool:
        """Whether the episode is over."""
        return self._done

    def pending(self) -> tuple[str, Messages] | None:
        """The role to act next and its prompt; ``None`` once the episode is over."""
        return None if self._done else (self._obs["role"], self._obs["messages"])

    def act(self, text: str) -> None:
        """Play ``text`` for the pending role (one OpenEnv ``step``)."""
        turn = self.pending()
        if turn is None:
            raise RuntimeError("the episode is over: no role is waiting to act")
        role, messages = turn
        round_index = int(self._obs.get("round", 0))
        self._take(self.client.step({"message": text, "role": role}))
        self.result.segments.append(Segment(role, round_index, messages, text))
