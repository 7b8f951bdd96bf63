"""The test-first code family: the tester's tests are the coder's only view of the spec.

The tester sees the task's specification (its docstring and examples); the
coder sees only the function's signature, under a neutral name
(:data:`NEUTRAL_NAME`, so the name gives nothing away), and the tester's tests.
After each round the tester's tests are run in the real sandbox
(:mod:`flexmg.sandboxes`) against the coder's code and the coder sees which
failed; in the next round it revises. Hidden tests grade the team. With a
mute tester the coder knows only the argument names and types, and its code
can do no better than a stub.

| | |
|---|---|
| Ids | ``code-testfirst-v0`` |
| Agents (graph order) | 2: tester -> coder |
| Graph | a path: the coder sees the tester's message; everyone sees earlier rounds and their feedback |
| Observation keys | ``task`` (the spec for the tester; the signature for the coder), ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | the fraction of hidden tests the coder's last fenced Python block passes; an episode's rewards add up to its final score |
| Graded role | coder (the last role) |
| Episode end | terminated when every hidden test passes or when the last round (``horizon``, default 2) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (default ``"builtin"``: the packaged HumanEval-style set; a HumanEval/MBPP file or a :class:`TestFirstConfig` or its dict), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``sandbox``, ``sandbox_timeout`` |
| Credit info | as in the code family: ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``tests_passed``, ``tests_total``, ``sandbox_error``, ``graded``; the round's feedback is the tester's tests' results (never the hidden tests') |

Version history:
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("code-testfirst", sandbox="local")
    >>> env.reset(seed=0)
    >>> NEUTRAL_NAME in env.observe("coder")["task"], NEUTRAL_NAME in env.observe("tester")["task"]
    (True, True)
    >>> env.close()
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flexmg.env import Judgement, TurnRecord
from flexmg.envs.families.code import (
    FENCE,
    CodeReward,
    code_oracle,
    code_task_source,
    doctest_asserts,
)
from flexmg.envs.families.common import judge_turns
from flexmg.family import Family
from flexmg.tasks import Task, TaskSource
from flexmg.workflow import Workflow

VERSION = 0

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {"code-testfirst": ("tester", "coder")}

#: The name the function goes by in every view and test (its own name would tell the coder).
NEUTRAL_NAME = "mystery_fn"

PROMPTS: dict[str, str] = {
    "tester": (
        f"You are the tester. Only you see the specification of `{NEUTRAL_NAME}`. Write tests "
        "that pin its behaviour down, as plain `assert` statements in one ```python fenced "
        "block. They are run against the coder's code, and the coder sees which failed."
    ),
    "coder": (
        f"You are the coder. You see only the signature of `{NEUTRAL_NAME}`; the tester's tests "
        f"(and which of them your last code failed) are all you know of what it must do. {FENCE}"
    ),
}

OPTIONS: dict[str, Any] = {"sandbox": "auto", "sandbox_timeout": 5.0}


@dataclass(frozen=True)
class TestFirstConfig:
    """The test-first family's tasks: a code-task spec of the code family (``builtin``, a file).

    >>> TestFirstConfig(source="").validate()
    Traceback (most recent call last):
    ...
    ValueError: TestFirstConfig.source must name a code task set, got ''
    """

    __test__ = False  # not a pytest class

    source: str = "builtin"

    def validate(self) -> TestFirstConfig:
        """Return self, or raise ``ValueError`` naming the bad field."""
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError(
                f"TestFirstConfig.source must name a code task set, got {self.source!r}"
            )
        return self

    @classmethod
    def of(cls, spec: Any) -> TestFirstConfig:
        """The config of a ``tasks=`` spec: None, a source name or path, a config or its dict."""
        if spec is None:
            return cls()
        if isinstance(spec, TestFirstConfig):
            return spec.validate()
        if isinstance(spec, str):
            return cls(source=spec).validate()
        if isinstance(spec, dict):
            try:
                return cls(**spec).validate()
            except TypeError as err:
                raise ValueError(f"bad TestFirstConfig fields {sorted(spec)}: {err}") from None
        raise TypeError(
            f"tasks= must be None, a task-set name or path, a TestFirstConfig or a dict, "
            f"got {type(spec).__name__}"
        )


def _rename(value: Any, old: str) -> Any:
    pattern = re.compile(rf"\b{re.escape(old)}\b")
    if isinstance(value, str):
        return pattern.sub(NEUTRAL_NAME, value)
    if isinstance(value, list):
        return [_rename(v, old) for v in value]
    return value


def neutral_task(task: Task) -> Task:
    """``task`` with its function renamed :data:`NEUTRAL_NAME` in prompt, solution and tests.

    >>> t = neutral_task(Task("t", "def add(a, b):", "def add(a, b):\\n    return a + b",
    ...                       {"entry_point": "add", "tests": ["assert add(1, 2) == 3"]}))
    >>> t.prompt, t.meta["tests"], t.meta["original_name"]
    ('def mystery_fn(a, b):', ['assert mystery_fn(1, 2) == 3'], 'add')
    """
    old = str(task.meta.get("entry_point") or "")
    if not old or old == NEUTRAL_NAME:
        return task
    meta = {k: _rename(v, old) for k, v in task.meta.items()}
    meta.update(entry_point=NEUTRAL_NAME, original_name=old)
    return Task(
        id=task.id, prompt=_rename(task.prompt, old), answer=_rename(task.answer, old), meta=meta
    )


class TestFirstTaskSource:
    """The code family's tasks with the function under its neutral name."""

    __test__ = False  # not a pytest class

    def __init__(self, config: TestFirstConfig, split: str) -> None:
        self.config = config.validate()
        self.inner: TaskSource = code_task_source(config.source, split)
        self.name = f"testfirst/{getattr(self.inner, 'name', config.source)}"

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def get(self, index: int) -> Task:
        """The task at ``index`` (the code family's, renamed)."""
        return neutral_task(self.inner.get(index))


def pair_task_source(spec: Any, split: str) -> TestFirstTaskSource:
    """``tasks=`` of the test-first env: None/``"builtin"``, a HumanEval/MBPP file, or a config."""
    return TestFirstTaskSource(TestFirstConfig.of(spec), split)


def signature_view(task: Task) -> str:
    """What the coder sees: the prompt's imports and the function's signature, no docstring.

    >>> signature_view(Task("t", "from x import y\\ndef mystery_fn(a: int,\\n        b: int) -> int:\\n    '''Spec.'''\\n"))
    'Implement:\\n```python\\nfrom x import y\\ndef mystery_fn(a: int,\\n        b: int) -> int:\\n    ...\\n```\\nOnly the tester knows what it must do.'
    """
    lines = task.prompt.splitlines()
    imports = [ln for ln in lines if ln.startswith(("import ", "from "))]
    signature: list[str] = []
    for line in lines:
        if signature or line.startswith(f"def {NEUTRAL_NAME}("):
            signature.append(line)
            if line.rstrip().endswith(":"):
                break
    body = "\n".join([*imports, *(signature or [f"def {NEUTRAL_NAME}(*args):"]), "    ..."])
    return f"Implement:\n```python\n{body}\n```\nOnly the tester knows what it must do."


class TestFirstReward(CodeReward):
    """Hidden tests grade the coder; the feedback is the tester's tests run on the coder's code."""

    __test__ = False  # not a pytest class

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> TestFirstReward:
        """Build from the env's options (``sandbox``, ``sandbox_timeout``)."""
        return cls(
            sandbox=options.get("sandbox", "auto"),
            sandbox_timeout=options.get("sandbox_timeout", 5.0),
        )

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        """No note between turns (the tester's results come as the round's feedback)."""
        return None

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        """Judge the latest round: hidden tests on the coder's code; the tester's as feedback."""
        from flexmg.envs.code import run_agent_tests

        graded, role_info, result = judge_turns(self.credit, task, transcript)
        team = role_info[graded.role]
        tests = [t.action for t in transcript if t.role == "tester" and t.round == graded.round]
        if not tests or not tests[-1].strip():
            feedback = "The tester wrote no tests; nothing was run."
        else:
            feedback = run_agent_tests(graded.action, tests[-1], self.sandbox, task=task)
        return Judgement(
            score=float(result.reward),
            done=team["own_correct"],
            feedback=feedback,
            role_info=role_info,
            metrics={
                "graded_role": graded.role,
                "tests_passed": result.passed,
                "tests_total": result.total,
                "sandbox_error": result.sandbox_error,
                "status": result.status,
                "format_ok": team["format_ok"],
                "answer_correct": team["answer_correct"],
                "tester_feedback": feedback[:500],
            },
        )


def tester_from(task_view: str) -> str:
    """A scripted tester from its own observation: the spec's examples as asserts.

    >>> print(tester_from(">>> mystery_fn(2)\\n4"))
    ```python
    assert mystery_fn(2) == 4
    ```
    """
    asserts = doctest_asserts(task_view) or [f"assert callable({NEUTRAL_NAME})"]
    return "```python\n" + "\n".join(asserts) + "\n```"


def pair_oracle(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The scripted oracle's message: the tester asserts the examples, the coder the solution."""
    return code_oracle(task, "tester" if role == "tester" else "coder", instructions, graded)


#: The family's metadata (its token budgets are the code family's).
FAMILY = Family(
    name="testfirst",
    teams=TEAMS,
    tasks=pair_task_source,
    token_budgets={"tiny": 80, "llm": 512},
    oracle=pair_oracle,
    ability="code",
)

#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = {
    "code-testfirst": Workflow(
        name="code-testfirst",
        roles=dict(PROMPTS),
        description=(
            "code, tests that bite: the tester's tests (run in the sandbox) are the coder's "
            "only spec; hidden tests grade the coder"
        ),
        tasks=pair_task_source,
        family=FAMILY,
        horizon=2,
        edges=[("tester", "coder")],
        task_views={"coder": signature_view},
        reward_factory=TestFirstReward.from_options,
        options=OPTIONS,
    )
}

code_testfirst = WORKFLOWS["code-testfirst"]
