"""The seat driver: play a flexmg episode with one callable per role.

Every framework adapter (OpenEnv, TRL, verl, verifiers) goes through this
module, so a model sees the same chat prompt whichever route drives it: the
one :func:`observation_to_messages` builds (system = the role's instructions,
user = task + what its predecessors wrote + feedback), which is the prompt
flexmg's own chat agents see.

A role callable takes the chat messages and returns the role's text; the
batched form takes a list of message lists and returns one text per list.
Frozen roles can be anything with that shape: a script, another model, an
HTTP client.

Example:
    >>> from flexmg.integrations.seats import play_episode
    >>> echo = {"a": lambda m: m[-1]["content"].split()[1], "b": lambda m: "hello"}
    >>> result = play_episode("echo", echo, seed=0)
    >>> [s.role for s in result.segments], sorted(result.rewards)
    (['a', 'b'], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flexmg.models.prompts import chat_messages
from flexmg.vector_base import EnvRunner

Messages = list[dict[str, str]]
RoleFn = Callable[[Messages], str]
BatchRoleFn = Callable[[list[Messages]], list[str]]

__all__ = [
    "BatchRoleFn",
    "EpisodeResult",
    "RoleFn",
    "SeatDriver",
    "Segment",
    "observation_to_messages",
    "play_batch",
    "play_episode",
]


@dataclass
class Segment:
    """One role's turn: the chat prompt it saw and what it said (as the env kept it)."""

    role: str
    round: int
    messages: Messages
    text: str


@dataclass
class EpisodeResult:
    """One episode played by the seat driver.

    Attributes:
        env_id: the env id (or the env's name when an env object was passed).
        seed: the reset seed.
        transcripts: per role, its chat: system, then user = observation and
            assistant = its reply, round by round.
        segments: every turn in turn order (for token-level trainers that mask
            all but their trained roles).
        rewards: per role, the rewards summed over the episode.
        score: the team score (``env.episode_metrics["score"]``).
        metrics: ``env.episode_metrics``.
    """

    env_id: str
    seed: int | None
    transcripts: dict[str, Messages] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)


def observation_to_messages(obs: Mapping[str, Any], *, system: bool = True) -> Messages:
    """The chat prompt of an observation: system = role instructions, user = the rest.

    ``system=False`` folds the instructions into the user message, for chat
    templates without a system role.

    >>> obs = {"task": "What is 2 + 3?", "role": "solver", "instructions": "Solve it."}
    >>> [m["role"] for m in observation_to_messages(obs)]
    ['system', 'user']
    >>> observation_to_messages(obs, system=False)[0]["content"].splitlines()[0]
    'Solve it.'
    """
    if not isinstance(obs, Mapping):
        raise TypeError(
            f"observation_to_messages expects a flexmg observation (a dict with task, role, "
            f"instructions, context, feedback), got {type(obs).__name__}"
        )
    messages = chat_messages(obs)
    if system:
        return messages
    sys_msg, user_msg = messages
    return [{"role": "user", "content": f"{sys_msg['content']}\n\n{user_msg['content']}"}]


def _check_roles(possible: Sequence[str], roles: Mapping[str, Any]) -> None:
    if not isinstance(roles, Mapping):
        raise TypeError(
            f"roles must map each role name to a callable, got {type(roles).__name__}; "
            f"roles of this env: {list(possible)}"
        )
    missing = [r for r in possible if r not in roles]
    unknown = sorted(set(roles) - set(possible))
    if missing or unknown:
        raise KeyError(
            f"roles must give one callable for each role of the env {list(possible)}; "
            f"missing {missing}, unknown {unknown}"
        )
    for name, fn in roles.items():
        if not callable(fn):
            raise TypeError(f"the entry for role {name!r} must be callable, got {fn!r}")


def _check_text(role: str, text: Any) -> str:
    if not isinstance(text, str):
        raise TypeError(
            f"the callable of role {role!r} must return a str (the role's message), "
            f"got {type(text).__name__}"
        )
    return text


class SeatDriver:
    """One env's episode, advanced turn by turn by whoever supplies the texts.

    The chat view of :class:`flexmg.vector_base.EnvRunner` (the one turn stepper)
    for :func:`play_episode` and the framework adapters: :meth:`pending` names the
    role to act and its prompt, :meth:`act` plays that role's text. ``result``
    fills in as the episode goes.

    >>> import flexmg
    >>> driver = SeatDriver(flexmg.make("echo"), "echo", seed=0)
    >>> role, messages = driver.pending()
    >>> driver.act("hello"); driver.step_rewards
    {'a': 0.0, 'b': 0.0}
    """

    def __init__(self, env: Any, env_id: str, seed: int | None, system: bool = True) -> None:
        self.env = env
        self.system = system
        self.result = EpisodeResult(env_id=env_id, seed=seed)
        self.result.transcripts = {r: [] for r in env.possible_agents}
        self.observation: dict[str, Any] | None = None
        self.step_rewards: dict[str, float] = {}
        self.step_infos: dict[str, dict[str, Any]] = {}
        self.team_reward = 0.0
        self._runner = EnvRunner(env, 0)
        self._runner.reset(seed, None)
        self.result.rewards = self._runner.rewards
        self._prompt: tuple[str, int, Messages] | None = None

    @property
    def done(self) -> bool:
        """Whether the episode is over (no role is left to act)."""
        return self.pending() is None

    def pending(self) -> tuple[str, Messages] | None:
        """The role to act next and its prompt; ``None`` once the episode is over."""
        if self._prompt is not None:
            return self._prompt[0], self._prompt[2]
        role = self._runner.pending()
        if role is None:
            self.observation = None
            _finish(self.result, self._runner)
            return None
        obs = self.env.observe(role)
        messages = observation_to_messages(obs, system=self.system)
        self.observation = obs
        self._prompt = (role, int(obs["round"]), messages)
        return role, messages

    def act(self, text: str) -> None:
        """Play ``text`` for the pending role and record the turn."""
        if self.pending() is None:
            raise RuntimeError("the episode is over: no role is waiting to act")
        assert self._prompt is not None
        role, round_index, messages = self._prompt
        self._runner.step(role, _check_text(role, text))
        self._prompt = None
        self.step_rewards = self._runner.step_rewards
        self.step_infos = self._runner.step_infos
        record = self.env.transcript[-1]
        self.team_reward = float(record.team_reward)
        _record_turn(self.result, Segment(role, round_index, messages, record.action))


def _record_turn(result: EpisodeResult, segment: Segment) -> None:
    """Add one turn to ``result``: its segment, and the role's chat (system once, user, reply)."""
    chat = result.transcripts.setdefault(segment.role, [])
    if not chat and segment.messages[0]["role"] == "system":
        chat.append(dict(segment.messages[0]))
    chat.append(dict(segment.messages[-1]))
    chat.append({"role": "assistant", "content": segment.text})
    result.segments.append(segment)


def _finish(result: EpisodeResult, runner: EnvRunner) -> None:
    """Fill ``result``'s end-of-episode fields from the runner's finished episode."""
    assert runner.result is not None
    result.rewards = runner.result.rewards
    result.metrics = dict(runner.result.metrics)
    result.score = float(result.metrics.get("score", 0.0))


def _make_env(env_or_id: Any, env_kwargs: Mapping[str, Any] | None) -> tuple[Any, str, bool]:
    """``(env, env_id, owned)``: build from an id (owned: closed after) or take an env."""
    if isinstance(env_or_id, str):
        import flexmg

        return flexmg.make(env_or_id, **dict(env_kwargs or {})), env_or_id, True
    if env_kwargs:
        raise ValueError("env_kwargs apply only when an env id is given, not an env object")
    if not hasattr(env_or_id, "possible_agents") or not hasattr(env_or_id, "agent_iter"):
        raise TypeError(
            f"play_episode expects an env id or a flexmg env (PettingZoo AEC), "
            f"got {type(env_or_id).__name__}"
        )
    return env_or_id, str(env_or_id.metadata.get("name", type(env_or_id).__name__)), False


def play_episode(
    env_or_id: Any,
    roles: Mapping[str, RoleFn],
    *,
    seed: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    system: bool = True,
) -> EpisodeResult:
    """Play one episode, asking ``roles[role](messages)`` for each turn.

    An env built from an id is closed afterwards; an env object passed in is not.

    >>> r = play_episode("math-1agent", {"solver": lambda m: "\\\\boxed{0}"}, seed=1)
    >>> r.segments[0].role, r.score in (0.1, 1.0)
    ('solver', True)
    """
    env, env_id, owned = _make_env(env_or_id, env_kwargs)
    try:
        _check_roles(env.possible_agents, roles)
        driver = SeatDriver(env, env_id, seed, system)
        while (turn := driver.pending()) is not None:
            role, messages = turn
            driver.act(roles[role](messages))
        return driver.result
    finally:
        if owned:
            env.close()


def play_batch(
    env_id: str,
    roles: Mapping[str, BatchRoleFn],
    *,
    seeds: Sequence[int],
    env_kwargs: Mapping[str, Any] | None = None,
    system: bool = True,
) -> list[EpisodeResult]:
    """Play one episode per seed, asking each role for all its pending turns at once.

    Envs waiting on the same role are batched into one call of ``roles[role]``
    (envs with per-round graphs may wait on different roles; each role is
    called for its own group). The chat view of :func:`flexmg.episodes.play_batch`,
    the one batch driver. Results come back in the order of ``seeds``.

    >>> team = {"a": lambda b: [m[-1]["content"].split()[1] for m in b], "b": lambda b: ["x"] * len(b)}
    >>> [r.seed for r in play_batch("echo", team, seeds=[4, 5])]
    [4, 5]
    """
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        raise TypeError(f"seeds must be a sequence of ints, got {type(seeds).__name__}")
    seeds = [int(s) for s in seeds]
    if not seeds:
        return []
    from functools import partial

    import flexmg
    from flexmg.episodes import play_batch as play_vector_batch
    from flexmg.vector import SyncVectorEnv

    make = partial(flexmg.make, env_id, **dict(env_kwargs or {}))
    vec = SyncVectorEnv([make for _ in seeds])  # one env per seed, built here (no probe env)
    try:
        _check_roles(vec.possible_agents, roles)
        team = {role: _ChatActor(role, fn, system) for role, fn in roles.items()}
        episodes = play_vector_batch(vec, team, seeds)
    finally:
        vec.close()
    results = []
    for episode in episodes:
        result = EpisodeResult(env_id=env_id, seed=episode.seed)
        result.transcripts = {r: [] for r in vec.possible_agents}
        for record in episode.transcript:
            messages = observation_to_messages(record.observation, system=system)
            _record_turn(result, Segment(record.role, record.round, messages, record.action))
        result.rewards = episode.rewards
        result.metrics = dict(episode.metrics)
        result.score = float(result.metrics.get("score", 0.0))
        results.append(result)
    return results


class _ChatActor:
    """A batched role callable (message lists -> texts) as an :class:`~flexmg.protocols.Actor`."""

    def __init__(self, role: str, fn: BatchRoleFn, system: bool) -> None:
        self.role, self.fn, self.system = role, fn, system

    def act(self, observations: list[dict[str, Any]]) -> list[str]:
        texts = self.fn([observation_to_messages(o, system=self.system) for o in observations])
        if isinstance(texts, (str, bytes)) or len(texts) != len(observations):
            raise ValueError(
                f"the batched callable of role {self.role!r} must return a list of "
                f"{len(observations)} texts (one per message list), got {texts!r:.200}"
            )
        return [_check_text(self.role, t) for t in texts]
