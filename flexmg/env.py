"""The Flex-MG environment: a PettingZoo AEC env for teams of LLM agents.

Agents are *roles*. Within a round they act in the order fixed by a
:class:`~flexmg.graph.DependencyGraph` (which may change between rounds); each
role sees the task, the transcript of earlier rounds and the outputs of its
predecessors in this round. After the last role of a round acts, the round is
judged: the judge returns a score in ``[0, 1]`` (plus per-role credit
information). The episode *terminates* when the task is solved or its last
round (the horizon) has been judged: the game is over either way. It is
*truncated* only by a limit imposed from outside the game, ``max_rounds``
(PettingZoo's ``max_cycles``) below the horizon.

Rewards follow one rule: the reward of a round is the change of the score
since the previous round, so **the rewards of an episode add up to the final
score** (1.0 for a solved math task, the fraction of tests passed for code).

Subclasses implement :meth:`FlexMGEnv.sample_task` and :meth:`FlexMGEnv.judge`
(most users build envs with :class:`flexmg.Workflow` instead).

Example:
    >>> import flexmg
    >>> env = flexmg.make("echo-v1")
    >>> env.reset(seed=0)
    >>> for role in env.agent_iter():
    ...     obs, reward, terminated, truncated, info = env.last()
    ...     env.step(None if terminated or truncated else obs["task"].split()[-1])
    >>> env.episode_metrics["success"]
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from flexmg.graph import DependencyGraph
from flexmg.spaces import UnicodeText
from flexmg.tasks import Task, stable_hash

if TYPE_CHECKING:
    from flexmg.family import Family

GraphFn = Callable[[int, Sequence["TurnRecord"]], DependencyGraph]

OBS_KEYS = ("task", "role", "instructions", "round", "context", "feedback")


@dataclass
class TurnRecord:
    """One agent turn of an episode (see ``env.transcript``)."""

    round: int
    role: str
    position: int
    observation: dict[str, Any]
    action: str
    reward: float = 0.0
    team_reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        obs = {k: (int(v) if k == "round" else v) for k, v in self.observation.items()}
        return {
            "round": self.round,
            "role": self.role,
            "position": self.position,
            "observation": obs,
            "action": self.action,
            "reward": self.reward,
            "team_reward": self.team_reward,
            "info": self.info,
            "time": self.time,
        }


@dataclass
class Judgement:
    """What a judge says about a finished round.

    Attributes:
        score: the team's score after this round, in ``[0, 1]``.
        done: ``True`` ends the episode now (the task is solved); ``None``
            means "solved iff score >= 1".
        feedback: text shown to every role in the next round.
        role_scores: optional per-role scores (default: each role gets ``score``).
        role_info: per-role credit metadata merged into ``infos[role]``
            (e.g. ``{"verifier": {"own_correct": True, "format_error": False}}``).
        metrics: episode-level metrics merged into ``env.episode_metrics``.
    """

    score: float
    done: bool | None = None
    feedback: str = ""
    role_scores: Mapping[str, float] | None = None
    role_info: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)


def prompt_id(prompt: str) -> str:
    """A short stable id of a task's prompt: episodes on the same problem share it
    (``episode_metrics["prompt_id"]``), so evaluations can count distinct prompts.

    >>> prompt_id("What is 2 + 3?") == prompt_id("What is 2 + 3?") != prompt_id("What is 3 + 2?")
    True
    """
    return f"{stable_hash('prompt', prompt):016x}"


def _clean_text(text: str) -> tuple[str, bool]:
    """Replace lone surrogates (invalid Unicode) with U+FFFD; report whether any were found."""
    if text.isascii():
        return text, False
    try:
        text.encode("utf-8")
        return text, False
    except UnicodeEncodeError:
        repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        # lone surrogates survive utf-16 surrogatepass; replace them explicitly
        repaired = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in repaired)
        return repaired, True


def _clip_tail(text: str, limit: int) -> str:
    """Keep the last ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    marker = "[...earlier context cut...]\n"
    return marker + text[len(text) - (limit - len(marker)) :]


class FlexMGEnv(AECEnv):
    """Base class of all Flex-MG environments (a ``pettingzoo.AECEnv``).

    Args:
        roles: role names (the PettingZoo agents), in declaration order.
        graph: the round's dependency graph, or a function ``(round, transcript)
            -> DependencyGraph`` that may return a different graph every round.
        instructions: the prompt of each role (shown in its observation).
        horizon: the number of rounds the game lasts at most (part of the task:
            judging the last round terminates the episode).
        max_rounds: an outside limit on rounds (``None``: none); reaching it
            before the game ends truncates the episode.
        max_action_chars: longer actions are cut to this length and flagged
            with ``infos[role]["action_truncated"] = True``.
        max_task_chars / max_context_chars: observation field limits; context
            beyond the limit keeps its most recent part.
        render_mode: ``None``, ``"human"`` (print turns) or ``"ansi"``.
        name: the env's name (``metadata["name"]``).

    Attributes:
        family: what the env's family declares about itself
            (:class:`flexmg.family.Family`), or None.
    """

    metadata: dict[str, Any] = {
        "name": "flexmg",
        "render_modes": ["human", "ansi"],
        "is_parallelizable": True,
    }
    family: Family | None = None

    def __init__(
        self,
        roles: Sequence[str],
        graph: DependencyGraph | GraphFn | None = None,
        instructions: Mapping[str, str] | None = None,
        horizon: int = 1,
        max_rounds: int | None = None,
        max_action_chars: int = 8192,
        max_task_chars: int = 65536,
        max_context_chars: int = 65536,
        render_mode: str | None = None,
        name: str = "flexmg",
    ) -> None:
        super().__init__()
        roles = list(roles)
        if graph is None:
            graph = DependencyGraph.full_chain(roles)
        if isinstance(graph, DependencyGraph):
            if sorted(graph.roles) != sorted(roles):
                raise ValueError(f"graph roles {graph.roles} differ from env roles {roles}")
            self._fixed_graph: DependencyGraph | None = graph
            self._graph_fn: GraphFn | None = None
        elif callable(graph):
            self._fixed_graph = None
            self._graph_fn = graph
        else:
            raise TypeError(
                f"graph must be a DependencyGraph or a function (round, transcript) -> "
                f"DependencyGraph, got {type(graph).__name__}"
            )
        if not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be an int >= 1, got {horizon!r}")
        if max_rounds is not None and (
            isinstance(max_rounds, bool)
            or not isinstance(max_rounds, (int, np.integer))
            or max_rounds < 1
        ):
            raise ValueError(f"max_rounds must be None or an int >= 1, got {max_rounds!r}")
        if not isinstance(max_action_chars, (int, np.integer)) or max_action_chars < 1:
            raise ValueError(f"max_action_chars must be an int >= 1, got {max_action_chars!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, "
                f"got {render_mode!r}"
            )
        instructions = dict(instructions or {})
        unknown = sorted(set(instructions) - set(roles))
        if unknown:
            raise ValueError(f"instructions given for unknown roles {unknown}; roles: {roles}")
        self.metadata = {**type(self).metadata, "name": name}
        self.possible_agents: list[str] = roles
        self.instructions = {r: instructions.get(r, "") for r in roles}
        self.horizon = int(horizon)
        self.max_rounds = None if max_rounds is None else int(max_rounds)
        self.max_action_chars = int(max_action_chars)
        self.max_task_chars = int(max_task_chars)
        self.max_context_chars = int(max_context_chars)
        self.render_mode = render_mode
        self._action_space = {r: UnicodeText(self.max_action_chars) for r in roles}
        self._observation_space = {r: self._make_obs_space() for r in roles}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self._has_reset = False
        self.agents: list[str] = []
        self.transcript: list[TurnRecord] = []
        self.task: Task | None = None
        self.episode_metrics: dict[str, Any] = {}

    # ------------------------------------------------------------------ hooks
    def sample_task(self, rng: np.random.Generator) -> Task:
        """Draw the episode's task from the seeded ``rng`` (subclasses override)."""
        raise NotImplementedError(f"{type(self).__name__} must implement sample_task(rng)")

    def judge(self, task: Task, transcript: Sequence[TurnRecord], round_index: int) -> Judgement:
        """Score the team after round ``round_index`` (subclasses override)."""
        raise NotImplementedError(f"{type(self).__name__} must implement judge(...)")

    def task_text(self, agent: str) -> str:
        """What ``agent`` sees of the task (default: the prompt; subclasses may hide it)."""
        return self.current_task.prompt

    @property
    def current_task(self) -> Task:
        """The episode's task (``RuntimeError`` before the first ``reset``)."""
        if self.task is None:
            raise RuntimeError("no task yet: call env.reset() first")
        return self.task

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        """Optional text the env attaches to the turn just taken (``transcript[-1]``),
        shown to its successors after the action, e.g. the results of tests a tester
        role wrote. Stored in ``record.info["annotation"]``. Default: none.
        """
        return None

    # ----------------------------------------------------------------- spaces
    def _make_obs_space(self) -> spaces.Dict:
        return spaces.Dict(
            {
                "task": UnicodeText(self.max_task_chars),
                "role": UnicodeText(256),
                "instructions": UnicodeText(65536),
                "round": spaces.Discrete(self.horizon),
                "context": UnicodeText(self.max_context_chars),
                "feedback": UnicodeText(65536),
            }
        )

    def observation_space(self, agent: str) -> spaces.Dict:
        try:
            return self._observation_space[agent]
        except KeyError:
            raise KeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}") from None

    def action_space(self, agent: str) -> UnicodeText:
        try:
            return self._action_space[agent]
        except KeyError:
            raise KeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}") from None

    # ------------------------------------------------------------------ state
    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    @property
    def round(self) -> int:
        """The current round (0-based)."""
        return self._round

    @property
    def graph(self) -> DependencyGraph:
        """The dependency graph of the current round (round 0's before the first reset)."""
        if not self._has_reset:
            return self._graph_for(0)
        return self._graph

    def _graph_for(self, round_index: int) -> DependencyGraph:
        if self._fixed_graph is not None:
            return self._fixed_graph
        assert self._graph_fn is not None
        graph = self._graph_fn(round_index, tuple(self.transcript))
        if not isinstance(graph, DependencyGraph):
            raise TypeError(
                f"the graph function returned {type(graph).__name__}, expected DependencyGraph"
            )
        if sorted(graph.roles) != sorted(self.possible_agents):
            raise ValueError(
                f"the graph of round {round_index} has roles {graph.roles}, "
                f"expected {self.possible_agents}"
            )
        return graph

    def _require_reset(self, what: str) -> None:
        if not self._has_reset:
            raise RuntimeError(f"call env.reset() before env.{what}")

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode. ``reset(seed=s)`` reproduces the episode exactly.

        Options: ``{"task": Task}`` plays the given task instead of drawing one.
        """
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        options = options or {}
        task = options.get("task")
        if task is None:
            task = self.sample_task(self.np_random)
        if not isinstance(task, Task):
            raise TypeError(f"the task must be a flexmg.tasks.Task, got {type(task).__name__}")
        self.task = task
        self._has_reset = True
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._skip_agent_selection = None
        self.transcript = []
        self.episode_metrics = {}
        self._round = 0
        self._position = 0
        self._feedback = ""
        self._score = 0.0
        self._role_scores = {a: 0.0 for a in self.agents}
        self._round_outputs: dict[str, str] = {}
        self._annotations: dict[str, str] = {}
        self._round_start = 0
        self._rounds_text: list[str] = []
        self._role_stats = {
            a: {
                "chars": 0,
                "turns": 0,
                "truncated_actions": 0,
                "invalid_unicode": 0,
                "repeated_predecessor": 0,
            }
            for a in self.agents
        }
        self._graph = self._graph_for(0)
        self._order = self._graph.order()
        self.agent_selection = self._order[0]
        if self.render_mode == "human":
            print(f"=== new episode: task {task.id} ===\n{task.prompt}")

    # ---------------------------------------------------------------- observe
    def observe(self, agent: str) -> dict[str, Any]:
        """The observation of ``agent`` now (works for any role at any time after reset)."""
        self._require_reset("observe()")
        if agent not in self._observation_space:
            raise KeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
        return {
            "task": self.task_text(agent)[: self.max_task_chars],
            "role": agent,
            "instructions": self.instructions[agent],
            "round": np.int64(min(self._round, self.horizon - 1)),
            "context": _clip_tail(self._context_for(agent), self.max_context_chars),
            "feedback": self._feedback,
        }

    def _context_for(self, agent: str) -> str:
        parts = list(self._rounds_text)
        visible = [
            self._render_turn(p)
            for p in self._graph.predecessors(agent)
            if p in self._round_outputs
        ]
        if visible:
            if parts:
                parts.append(f"Round {self._round + 1}:")
            parts.extend(visible)
        return "\n".join(parts)

    def _render_turn(self, role: str) -> str:
        text = f"[{role}]: {self._round_outputs[role]}"
        note = self._annotations.get(role)
        return f"{text}\n[env on {role}]: {note}" if note else text

    # ------------------------------------------------------------------- step
    def step(self, action: str | None) -> None:
        """Act for ``agent_selection``. Finished roles must be stepped with ``None``."""
        self._require_reset("step()")
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            if action is not None:
                raise ValueError(
                    f"role {agent!r} has finished its episode: step it with None "
                    f"(PettingZoo's dead-step rule), got {type(action).__name__}"
                )
            self._was_dead_step(action)
            return
        if not self.agents:
            raise RuntimeError("the episode is over: call env.reset() to start a new one")
        if not isinstance(action, str):
            raise TypeError(
                f"the action of role {agent!r} must be a str (the agent's message), got "
                f"{type(action).__name__}"
            )
        started = time.perf_counter()
        observation = self.observe(agent)
        truncated = len(action) > self.max_action_chars
        if truncated:
            action = action[: self.max_action_chars]
        action, invalid_unicode = _clean_text(action)
        preds = self._graph.predecessors(agent)
        stripped = action.strip()
        repeated = bool(stripped) and any(
            self._round_outputs.get(p, "").strip() == stripped for p in preds
        )
        stats = self._role_stats[agent]
        stats["chars"] += len(action)
        stats["turns"] += 1
        stats["truncated_actions"] += int(truncated)
        stats["invalid_unicode"] += int(invalid_unicode)
        stats["repeated_predecessor"] += int(repeated)
        self._round_outputs[agent] = action
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self.infos[agent] = {
            "round": self._round,
            "chars": len(action),
            "action_truncated": truncated,
            "invalid_unicode": invalid_unicode,
            "repeated_predecessor": repeated,
        }
        record = TurnRecord(
            round=self._round,
            role=agent,
            position=self._position,
            observation=observation,
            action=action,
        )
        self.transcript.append(record)
        note = self.annotate(self.current_task, tuple(self.transcript))
        if note:
            self._annotations[agent] = str(note)
            record.info["annotation"] = str(note)
        if self.render_mode == "human":
            print(f"[round {self._round + 1}] {agent}: {action}")
        if self._position + 1 < len(self._order):
            self._position += 1
            self.agent_selection = self._order[self._position]
        else:
            self._finish_round()
        record.time = time.perf_counter() - started
        self._accumulate_rewards()

    def _finish_round(self) -> None:
        judgement = self.judge(self.current_task, tuple(self.transcript), self._round)
        if not isinstance(judgement, Judgement):
            raise TypeError(
                f"judge() must return a flexmg.Judgement, got {type(judgement).__name__}"
            )
        score = float(judgement.score)
        if not np.isfinite(score):
            raise ValueError(f"the judge returned a non-finite score {score!r}")
        role_scores = dict(judgement.role_scores or {})
        done = score >= 1.0 if judgement.done is None else bool(judgement.done)
        team_reward = score - self._score
        self._score = score
        for a in self.agents:
            new = float(role_scores.get(a, score))
            self.rewards[a] = new - self._role_scores[a]
            self._role_scores[a] = new
            info = dict(self.infos[a])
            info.update(judgement.role_info.get(a, {}))
            info["team_score"] = score
            self.infos[a] = info
        for record in self.transcript[self._round_start :]:
            record.reward = self.rewards[record.role]
            record.team_reward = team_reward
            record.info = {**record.info, **self.infos[record.role]}
        round_lines = [f"Round {self._round + 1}:"]
        round_lines += [self._render_turn(r.role) for r in self.transcript[self._round_start :]]
        if judgement.feedback:
            round_lines.append(f"Feedback: {judgement.feedback}")
        self._rounds_text.append("\n".join(round_lines))
        self._feedback = judgement.feedback
        game_over = done or self._round + 1 >= self.horizon
        cut_off = self.max_rounds is not None and self._round + 1 >= self.max_rounds
        self._round += 1
        self._round_outputs = {}
        self._annotations = {}
        self._round_start = len(self.transcript)
        if game_over or cut_off:
            self._end_episode(judgement, solved=done, truncated=not game_over)
        else:
            self._graph = self._graph_for(self._round)
            self._order = self._graph.order()
            self._position = 0
            self.agent_selection = self._order[0]

    def _end_episode(self, judgement: Judgement, solved: bool, truncated: bool) -> None:
        per_role = {}
        for a in self.possible_agents:
            role_metrics = dict(self._role_stats[a])
            role_metrics.update(judgement.role_info.get(a, {}))
            per_role[a] = role_metrics
        self.episode_metrics = {
            "task_id": self.current_task.id,
            "prompt_id": prompt_id(self.current_task.prompt),
            "success": bool(solved),
            "score": self._score,
            "team_reward": self._score,
            "rounds": self._round,
            "truncated": truncated,
            **dict(judgement.metrics),
            "per_role": per_role,
        }
        for a in self.agents:
            if truncated:
                self.truncations[a] = True
            else:
                self.terminations[a] = True
            self.infos[a] = {**self.infos[a], "episode": self.episode_metrics}
        self._position = 0
        self.agent_selection = self._order[0]
        self._deads_step_first()

    # ----------------------------------------------------------------- render
    def render(self) -> str | None:
        """``"ansi"``: the transcript as text; ``"human"``: print it."""
        if self.render_mode is None:
            return None
        if not self._has_reset:
            return ""
        lines = [f"Task {self.current_task.id}: {self.current_task.prompt}"]
        for r in self.transcript:
            lines.append(f"[round {r.round + 1}] {r.role} (reward {r.reward:+.3f}): {r.action}")
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Release resources (sandboxes, worker processes) held by the env."""

    def __str__(self) -> str:
        return self.metadata["name"]
