"""flexmg as a verifiers v1 multi-seat ``Env``: one seat per workflow role (extra ``verifiers``).

verifiers v1 declares every seat of an env as an ``AgentConfig`` field of its
``EnvConfig`` (its own model, client, sampling and ``trainable`` flag). A flexmg env's
roles depend on the env id, so :func:`make_env_config` builds that config class for
the env (one field per role, tool-less ``null`` harness, local ``subprocess``
runtime) and :class:`FlexMGSeatsEnv` plays it:

* each role is one open ``interaction`` (its system prompt = the role's instructions,
  each user turn = what the role observes now: the task, its predecessors' messages,
  the feedback), driven in the order of the round's dependency graph by the seat
  driver, so per-round graphs are respected;
* when the episode is over every seat's trace carries the rewards: ``team_score``
  (the env's team score) and ``role_reward`` (that role's summed reward), weighted by
  ``reward="team"`` (default) or ``"role"`` so that ``trace.reward`` is the one the
  trainer should use, plus the ``success`` metric;
* seats not listed in ``trainable`` are marked ``trainable = False`` (a frozen
  partner whose tokens are never training data).

The taskset (``FlexMGTaskset``, plugin id ``flexmg-verifiers``) yields one task per
episode seed. Example (needs a model behind ``base_url``)::

    import asyncio
    import verifiers.v1 as vf
    from flexmg.integrations.verifiers import make_env, run_episodes

    env = make_env("math-2agent", seeds=[0, 1], trainable=["solver"])
    ctx = vf.ModelContext(model="my-model", client=vf.EvalClientConfig(
        base_url="http://127.0.0.1:8000/v1", api_key_var="OPENAI_API_KEY"))
    episodes = asyncio.run(run_episodes(env, ctx))
    for trace in episodes[0].traces:
        print(trace.agent.name, trace.agent.trainable, trace.reward)
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pydantic
import verifiers.v1 as vf

import flexmg
from flexmg.integrations.seats import SeatDriver

__all__ = [
    "PLUGIN_ID",
    "FlexMGEnvConfig",
    "FlexMGSeatsEnv",
    "FlexMGTask",
    "FlexMGTaskData",
    "FlexMGTaskset",
    "FlexMGTasksetConfig",
    "EpisodeErrors",
    "describe_failures",
    "make_env",
    "make_env_config",
    "run_episodes",
]

PLUGIN_ID = "flexmg-verifiers"
"""The taskset id verifiers imports (the ``flexmg_verifiers`` module re-exports this one)."""

DEFAULT_SEAT: dict[str, Any] = {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
"""Every seat's default: verifiers' tool-less chat harness, run as a local subprocess."""


class FlexMGTaskData(vf.TaskData):
    """One flexmg episode: the env id, its ``make`` keywords and the reset seed."""

    env_id: str
    seed: int
    env_kwargs: dict[str, Any] = pydantic.Field(default_factory=dict)


class FlexMGTask(vf.Task[FlexMGTaskData]):
    """A flexmg episode as a verifiers task (scored by the env, see ``FlexMGSeatsEnv``)."""


class FlexMGTasksetConfig(vf.TasksetConfig):
    """Which episodes the taskset holds.

    ``env_id`` with ``env_kwargs``, at ``seeds`` (or ``seed_start`` + ``range(num_tasks)``).
    """

    id: str = PLUGIN_ID
    env_id: str = "math-2agent"
    env_kwargs: dict[str, Any] = pydantic.Field(default_factory=dict)
    seeds: list[int] | None = None
    seed_start: int = pydantic.Field(0, ge=0)
    num_tasks: int = pydantic.Field(16, ge=1)

    def episode_seeds(self) -> list[int]:
        """The seeds of the taskset's episodes, in order."""
        if self.seeds is not None:
            return list(self.seeds)
        return list(range(self.seed_start, self.seed_start + self.num_tasks))


class FlexMGTaskset(vf.Taskset[FlexMGTask, FlexMGTasksetConfig]):
    """One task per episode seed; the prompt is the episode's task text."""

    def load(self) -> Iterator[FlexMGTask]:
        """Yield one task per episode seed, with the task text of the env reset at that seed."""
        config = self.config
        env = flexmg.make(config.env_id, **config.env_kwargs)
        try:
            for seed in config.episode_seeds():
                env.reset(seed=seed)
                yield FlexMGTask(
                    FlexMGTaskData(
                        id=f"{env.task.id}",
                        name=f"{config.env_id}#{seed}",
                        prompt=env.task.prompt,
                        env_id=config.env_id,
                        seed=seed,
                        env_kwargs=config.env_kwargs,
                    ),
                    config.task,
                )
        finally:
            env.close()


class FlexMGEnvConfig(vf.EnvConfig):
    """The env knobs.

    The seats (one ``AgentConfig`` per role) are added by :func:`make_env_config`.
    """

    taskset: FlexMGTasksetConfig = FlexMGTasksetConfig()
    trainable: list[str] | None = None
    """The trainable seats (``None``: every seat)."""
    reward: Literal["team", "role"] = "team"
    """Which recorded reward counts in ``trace.reward``: the team score or the role's own."""


class FlexMGSeatsEnv(vf.Env[FlexMGEnvConfig]):
    """A flexmg workflow played by verifiers agents, one seat per role."""

    async def setup(self, agents: vf.Agents) -> None:
        """Mark each role's agent trainable when it is in ``config.trainable`` (or that is ``None``)."""
        trainable = self.config.trainable
        for role in self.config.agent_harnesses():
            getattr(agents, role).trainable = trainable is None or role in trainable

    async def run(self, task: FlexMGTask, agents: vf.Agents) -> None:
        """Play ``task``'s episode with one agent seat per role, then record rewards and metrics.

        Each seat's trace gets the team score and its role's reward (weighted by
        ``config.reward``), the ``success`` and ``turns`` metrics, and a ``flexmg`` info entry.
        """
        data = task.data
        env = flexmg.make(data.env_id, **data.env_kwargs)
        driver = SeatDriver(env, data.env_id, data.seed)
        seats: dict[str, Any] = {}
        finished: set[str] = set()
        try:
            async with contextlib.AsyncExitStack() as stack:
                while (turn := driver.pending()) is not None:
                    role, messages = turn
                    if role in finished:  # its run hit a limit: it says nothing more
                        driver.act("")
                        continue
                    if role not in seats:
                        seat_task = type(task)(
                            data.model_copy(
                                update={"prompt": None, "system_prompt": messages[0]["content"]}
                            ),
                            task.config,
                        )
                        seats[role] = await stack.enter_async_context(
                            getattr(agents, role).interaction(seat_task)
                        )
                    segment = await seats[role].turn(messages[-1]["content"])
                    if segment.terminated:
                        finished.add(role)
                        driver.act("")
                    else:
                        driver.act(segment.last_reply)
        finally:
            env.close()
        result = driver.result
        team_weight = 1.0 if self.config.reward == "team" else 0.0
        for role, seat in seats.items():
            trace = seat.trace
            trace.record_reward("team_score", result.score, weight=team_weight)
            trace.record_reward("role_reward", result.rewards[role], weight=1.0 - team_weight)
            trace.record_metric("success", float(bool(result.metrics.get("success"))))
            trace.record_metric("turns", float(sum(s.role == role for s in result.segments)))
            trace.info["flexmg"] = {
                "env_id": data.env_id,
                "seed": data.seed,
                "rewards": result.rewards,
                "score": result.score,
                "order": [s.role for s in result.segments],
            }


_ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _seat_fields(
    roles: Sequence[str], seats: Mapping[str, Mapping[str, Any]]
) -> dict[str, tuple[type, vf.AgentConfig]]:
    unknown = sorted(set(seats) - set(roles))
    if unknown:
        raise ValueError(f"seats= names unknown roles {unknown}; roles: {list(roles)}")
    fields = {}
    for role in roles:
        if not _ROLE_NAME.match(role) or role in FlexMGEnvConfig.model_fields:
            raise ValueError(
                f"role {role!r} cannot be a verifiers seat: seats are config fields, so a role "
                f"must be a Python identifier other than {sorted(FlexMGEnvConfig.model_fields)}"
            )
        spec = {**DEFAULT_SEAT, **dict(seats.get(role, {}))}
        fields[role] = (vf.AgentConfig, vf.AgentConfig.model_validate(spec))
    return fields


def make_env_config(
    env_id: str,
    *,
    seeds: Sequence[int] | None = None,
    num_tasks: int = 16,
    seed_start: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    trainable: Sequence[str] | None = None,
    reward: Literal["team", "role"] = "team",
    seats: Mapping[str, Mapping[str, Any]] | None = None,
    **env_config: Any,
) -> FlexMGEnvConfig:
    """The verifiers ``EnvConfig`` of ``env_id``: one seat per role, in graph order.

    ``seats={"verifier": {"model": "other-model", "client": {...}}}`` overrides one
    seat's ``AgentConfig`` fields (default: ``null`` harness, ``subprocess`` runtime,
    the run's model). Other keywords (``timeout=``, ``max_concurrent_agents=``) go to
    the config itself.

    >>> config = make_env_config("math-2agent", seeds=[3], trainable=["solver"])
    >>> list(config.agent_harnesses()), config.taskset.episode_seeds()
    (['solver', 'verifier'], [3])
    """
    kwargs = dict(env_kwargs or {})
    env = flexmg.make(env_id, **kwargs)
    try:
        roles = list(env.graph.order())
        roles += [r for r in env.possible_agents if r not in roles]
    finally:
        env.close()
    unknown = sorted(set(trainable or ()) - set(roles))
    if unknown:
        raise ValueError(f"trainable= names unknown roles {unknown}; roles: {roles}")
    name = "FlexMGEnvConfig_" + re.sub(r"\W", "_", env_id)
    # verifiers is not analysed (follow_imports = "skip"), so vf.EnvConfig is Any and mypy
    # cannot see that FlexMGEnvConfig is a pydantic model
    config_cls = pydantic.create_model(  # type: ignore[call-overload]
        name, __base__=FlexMGEnvConfig, **_seat_fields(roles, dict(seats or {}))
    )
    taskset = FlexMGTasksetConfig(
        env_id=env_id,
        env_kwargs=json.loads(json.dumps(kwargs)),
        seeds=None if seeds is None else [int(s) for s in seeds],
        num_tasks=num_tasks,
        seed_start=seed_start,
    )
    return config_cls(
        taskset=taskset,
        trainable=None if trainable is None else list(trainable),
        reward=reward,
        **env_config,
    )


def make_env(env_id: str, **kwargs: Any) -> FlexMGSeatsEnv:
    """``FlexMGSeatsEnv(make_env_config(env_id, **kwargs))``."""
    return FlexMGSeatsEnv(make_env_config(env_id, **kwargs))


class EpisodeErrors(RuntimeError):
    """Episodes of :func:`run_episodes` failed (a provider, harness or sandbox error)."""

    def __init__(self, message: str, episodes: list[vf.Episode]) -> None:
        super().__init__(message)
        self.episodes = episodes


def describe_failures(episodes: Sequence[vf.Episode], limit: int = 5) -> str:
    """One line per failed episode (its seed, then each error: seat, type and message)."""
    lines = []
    for index, episode in enumerate(episodes):
        if episode.ok:
            continue
        errors = [("episode", e) for e in episode.errors]
        for trace in episode.traces:
            errors += [(f"seat {trace.agent.name}", e) for e in trace.errors]
        said = "; ".join(
            f"{where}: {e.type}: {str(e.message).strip()[:300]}" for where, e in errors[-3:]
        )
        seed = getattr(getattr(episode.task, "data", None), "seed", None) if episode.task else None
        lines.append(f"episode {index} (seed {seed}): {said or 'failed without an error'}")
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


async def run_episodes(
    env: FlexMGSeatsEnv,
    ctx: vf.ModelContext,
    *,
    rollouts_per_task: int = 1,
    max_concurrent: int = 8,
    errors: Literal["raise", "keep"] = "raise",
) -> list[vf.Episode]:
    """Play every task of ``env``'s taskset ``rollouts_per_task`` times with ``ctx``'s model.

    Up to ``max_concurrent`` episodes run at once; seats without their own model/client
    use ``ctx``; the episodes come back in task order. A failed episode (a provider that
    refuses or cannot be reached, a harness crash) raises :class:`EpisodeErrors` naming
    each error, with the episodes on ``.episodes``; ``errors="keep"`` returns them as
    they are (``episode.ok`` is False, the errors on ``episode.errors`` and the traces).
    """
    if errors not in ("raise", "keep"):
        raise ValueError(f"errors must be 'raise' or 'keep', got {errors!r}")
    if not isinstance(max_concurrent, int) or max_concurrent < 1:
        raise ValueError(f"max_concurrent must be an int >= 1, got {max_concurrent!r}")
    import asyncio

    semaphore = asyncio.Semaphore(max_concurrent)
    async with env.serving():
        slots = [s for task in env.taskset for s in env.slots(task, rollouts_per_task)]
        episodes = list(
            await asyncio.gather(*(env.run_slot(s, ctx, semaphore=semaphore) for s in slots))
        )
    failed = sum(not e.ok for e in episodes)
    if failed and errors == "raise":
        raise EpisodeErrors(
            f"{failed} of {len(episodes)} episodes failed (errors='keep' returns them):\n"
            + describe_failures(episodes),
            episodes,
        )
    return episodes
