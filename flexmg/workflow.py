"""Declarative task builder: roles, dependency edges, a task source, a reward.

A :class:`Workflow` describes a collaborative task; calling it (or
``flexmg.make`` on an id registered with it) builds a :class:`WorkflowEnv`,
which is a full :class:`~flexmg.env.FlexMGEnv`. The built-in math and code envs
are defined this way.

Example (a 2-role task: ``b`` must repeat the word ``a`` picked):
    >>> import flexmg
    >>> from flexmg.tasks import ListTaskSource, Task
    >>> def reward(task, transcript):
    ...     last = {r.role: r.action for r in transcript}
    ...     return float(last.get("b", "").strip() == last.get("a", "").strip() != "")
    >>> wf = flexmg.Workflow(
    ...     name="copy",
    ...     roles={"a": "Say one word.", "b": "Repeat what a said."},
    ...     edges=[("a", "b")],
    ...     tasks=ListTaskSource([Task(id="t", prompt="Play.")]),
    ...     reward=reward,
    ... )
    >>> env = wf(horizon=2)
    >>> env.reset(seed=1)
    >>> env.step("hello"); env.step("hello")
    >>> env.episode_metrics["success"], env.episode_metrics["rounds"]
    (True, 1)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flexmg.env import FlexMGEnv, GraphFn, Judgement, TurnRecord
from flexmg.family import Family
from flexmg.graph import DependencyGraph
from flexmg.tasks import Task, TaskSource

#: The keywords every workflow env takes (its ``options`` come on top).
ENV_KEYWORDS = (
    "tasks",
    "split",
    "horizon",
    "max_rounds",
    "roles",
    "prompts",
    "max_action_chars",
    "render_mode",
)

RewardFn = Callable[[Task, Sequence[TurnRecord]], float | Judgement]
TaskFactory = Callable[[Any, str], TaskSource]


@dataclass
class Workflow:
    """A collaborative task, declared.

    Attributes:
        name: the env's name.
        roles: role name -> role prompt, in declaration order.
        reward: ``(task, transcript) -> score | Judgement``; the transcript holds
            every turn so far (``TurnRecord``); the current round's turns are
            those with the highest ``round``.
        tasks: a ``TaskSource``, a list of ``Task``, or a factory
            ``(spec, split) -> TaskSource`` that receives the ``tasks=`` keyword
            given at ``make`` time (``None`` when absent).
        edges: dependency edges ``(src, dst)``; ``None`` = every role sees every
            earlier role (full chain in declaration order).
        graph: a per-round graph function ``(round, transcript) -> DependencyGraph``
            (overrides ``edges``: the "flexible" part of a Flex-MG).
        horizon: default number of rounds.
        description: one line shown by ``flexmg list``.
        reward_factory: optional ``(options) -> reward`` used instead of
            ``reward`` when the reward needs resources (e.g. a sandbox); the
            ``options`` are the workflow's ``options`` updated by ``make`` kwargs.
        options: extra keyword arguments the env accepts, with defaults.
        task_views: role -> ``(task) -> str``, what that role sees of the task
            (default: the task's prompt); a role can be kept from seeing the
            task at all, so that it depends on its predecessors' messages.
        family: what the env family declares about itself (:class:`flexmg.family.Family`:
            token budgets, oracle, scorer, export fields, warm-start data); None for
            a workflow of no family.
    """

    name: str
    roles: Mapping[str, str]
    reward: RewardFn | None = None
    tasks: TaskSource | Sequence[Task] | TaskFactory | None = None
    edges: Sequence[tuple[str, str]] | None = None
    graph: GraphFn | None = None
    horizon: int = 1
    description: str = ""
    reward_factory: Callable[[dict[str, Any]], RewardFn] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    task_views: Mapping[str, Callable[[Task], str]] = field(default_factory=dict)
    family: Family | None = None

    def __post_init__(self) -> None:
        if not self.roles:
            raise ValueError(f"workflow {self.name!r} needs at least one role")
        if (self.reward is None) == (self.reward_factory is None):
            raise ValueError(
                f"workflow {self.name!r}: give exactly one of reward= or reward_factory="
            )
        if self.tasks is None:
            raise ValueError(f"workflow {self.name!r} needs a task source (tasks=...)")
        unknown = sorted(set(self.task_views) - set(self.roles))
        if unknown:
            raise ValueError(
                f"workflow {self.name!r}: task_views names unknown roles {unknown}; "
                f"roles: {list(self.roles)}"
            )
        self.default_graph()  # validate edges now, not at make time

    def default_graph(self, roles: Sequence[str] | None = None) -> DependencyGraph:
        """The graph of round 0 for ``roles`` (declared edges, or the full chain)."""
        roles = list(roles if roles is not None else self.roles)
        if self.edges is None or list(roles) != list(self.roles):
            return DependencyGraph.full_chain(roles)
        return DependencyGraph(roles, self.edges)

    def make_env(self, **kwargs: Any) -> WorkflowEnv:
        """Build the env. Keywords: ``tasks``, ``split``, ``horizon``, ``max_rounds``,
        ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, plus the
        workflow's ``options``.
        """
        return WorkflowEnv(self, **kwargs)

    __call__ = make_env


def current_round(transcript: Sequence[TurnRecord]) -> list[TurnRecord]:
    """The turns of the latest round of ``transcript`` (what a reward usually grades).

    >>> from flexmg.env import TurnRecord
    >>> turns = [TurnRecord(0, "a", 0, {}, "x"), TurnRecord(1, "a", 0, {}, "y")]
    >>> [t.action for t in current_round(turns)]
    ['y']
    """
    if not transcript:
        return []
    last = transcript[-1].round
    return [r for r in transcript if r.round == last]


def _nearest(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or nothing.

    >>> _nearest("solvr", ["solver", "verifier"])
    " (did you mean 'solver'?)"
    """
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve_roles(
    workflow: Workflow, roles: Any, prompts: Mapping[str, str] | None
) -> dict[str, str]:
    if roles is None:
        resolved = dict(workflow.roles)
    elif isinstance(roles, Mapping):
        resolved = {str(k): str(v) for k, v in roles.items()}
    elif isinstance(roles, Sequence) and not isinstance(roles, str):
        for role in roles:
            if role not in workflow.roles:
                raise ValueError(
                    f"roles= names unknown role {role!r}{_nearest(str(role), workflow.roles)}; "
                    f"roles of {workflow.name}: {list(workflow.roles)} (new roles need "
                    "their prompts: roles={name: prompt})"
                )
        resolved = {str(r): workflow.roles[r] for r in roles}
    else:
        raise TypeError(
            f"roles= must be a dict role->prompt or a list of role names, got {type(roles).__name__}"
        )
    if not resolved:
        raise ValueError("roles= must name at least one role")
    for role, prompt in (prompts or {}).items():
        if role not in resolved:
            raise ValueError(
                f"prompts= names unknown role {role!r}{_nearest(str(role), resolved)}; "
                f"roles: {list(resolved)}"
            )
        resolved[role] = str(prompt)
    return resolved


class WorkflowEnv(FlexMGEnv):
    """The env a :class:`Workflow` builds (see ``Workflow.make_env`` for keywords)."""

    def __init__(
        self,
        workflow: Workflow,
        tasks: Any = None,
        split: str = "train",
        horizon: int | None = None,
        max_rounds: int | None = None,
        roles: Any = None,
        prompts: Mapping[str, str] | None = None,
        max_action_chars: int = 8192,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(workflow.options))
        if unknown:
            accepted = [*ENV_KEYWORDS, *workflow.options]
            raise TypeError(
                f"{workflow.name} got unexpected keyword(s) {unknown}"
                f"{_nearest(unknown[0], accepted)}; accepted: {accepted}"
            )
        role_prompts = _resolve_roles(workflow, roles, prompts)
        role_names = list(role_prompts)
        graph: DependencyGraph | GraphFn
        if workflow.graph is not None and role_names == list(workflow.roles):
            graph = workflow.graph
        else:
            graph = workflow.default_graph(role_names)
        super().__init__(
            roles=role_names,
            graph=graph,
            instructions=role_prompts,
            horizon=workflow.horizon if horizon is None else horizon,
            max_rounds=max_rounds,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
            name=workflow.name,
        )
        self.workflow = workflow
        self.family = workflow.family
        self.split = split
        self.options = {**workflow.options, **options}
        self.task_source = self._make_source(workflow.tasks, tasks, split)
        try:
            self._size: int | None = len(self.task_source)  # type: ignore[arg-type]
        except TypeError:
            self._size = None
        reward = (
            workflow.reward_factory(self.options)
            if workflow.reward_factory is not None
            else workflow.reward
        )
        assert reward is not None  # Workflow checks that exactly one of the two is given
        self._reward: RewardFn = reward

    @staticmethod
    def _make_source(declared: Any, spec: Any, split: str) -> TaskSource:
        if isinstance(spec, TaskSource):
            return spec
        if (
            spec is not None
            and isinstance(spec, Sequence)
            and spec
            and all(isinstance(t, Task) for t in spec)
        ):
            from flexmg.tasks import ListTaskSource

            return ListTaskSource(list(spec), split="all", name="custom")
        if isinstance(declared, TaskSource) or (
            isinstance(declared, Sequence) and not isinstance(declared, str)
        ):
            if spec is not None:
                raise TypeError(
                    "this workflow has a fixed task source; tasks= must be a TaskSource or a "
                    f"list of Task, got {type(spec).__name__}"
                )
            if isinstance(declared, TaskSource):
                return declared
            from flexmg.tasks import ListTaskSource

            return ListTaskSource(list(declared), split="all", name="custom")
        if callable(declared):
            return declared(spec, split)
        raise TypeError(f"cannot build a task source from {type(declared).__name__}")

    def sample_task(self, rng: np.random.Generator) -> Task:
        bound = self._size if self._size else 2**62
        return self.task_source.get(int(rng.integers(0, bound)))

    def task_text(self, agent: str) -> str:
        view = self.workflow.task_views.get(agent)
        return super().task_text(agent) if view is None else str(view(self.current_task))

    def judge(self, task: Task, transcript: Sequence[TurnRecord], round_index: int) -> Judgement:
        result = self._reward(task, transcript)
        if isinstance(result, Judgement):
            return result
        try:
            return Judgement(score=float(result))
        except (TypeError, ValueError):
            raise TypeError(
                f"the reward function of {self.workflow.name!r} must return a float or a "
                f"flexmg.Judgement, got {type(result).__name__}"
            ) from None

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        hook = getattr(self._reward, "annotate", None)
        return hook(task, transcript) if callable(hook) else None

    def close(self) -> None:
        closer = getattr(self._reward, "close", None)
        if callable(closer):
            closer()
