"""The code family: a team writes a Python function; hidden tests run in a sandbox.

| | |
|---|---|
| Ids | ``code-1agent-v1``, ``code-2agent-v1``, ``code-3agent-v1``, ``code-4agent-v1`` |
| Agents (graph order) | 1: coder; 2: coder -> reviewer; 3: planner -> coder -> reviewer; 4: planner -> coder -> tester -> reviewer |
| Graph | full chain: each role sees every earlier role's message of the round; the tester's asserts are run against the latest solution and the result is shown to later roles |
| Observation keys | ``task``, ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | the fraction of hidden tests the graded role's last fenced Python block passes; an episode's rewards add up to its final score |
| Graded role | the last role of the round (reviewer; the coder alone in code-1agent) |
| Episode end | terminated when every test passes or when the last round (``horizon``, default 1) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (default: the seeded procedural family ``"procedural"``, difficulties 1-2; ``"builtin"`` for the hand-written set, or a HumanEval/MBPP file), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``sandbox``, ``sandbox_timeout`` |
| Credit info | ``infos[role]``: ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``tests_passed``, ``tests_total``, ``sandbox_error``, ``graded`` |

``format_ok`` is True when the message holds a fenced Python block;
``answer_correct`` says whether the role's solution passes every hidden test
however it is written (a bare, unfenced function definition counts too);
None for a role whose message defines no solution (the graded role always
gets a bool).

Version history:
    v1: judging the last round terminates the episode (v0 truncated it at
        the horizon); the role infos gain ``format_ok`` and ``answer_correct``;
        the default tasks are the procedural family (v0: the built-in set).
    v0: first release.

Example:
    >>> import flexmg
    >>> flexmg.make("code-2agent").possible_agents
    ['coder', 'reviewer']
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, cast

from flexmg.env import Judgement, TurnRecord
from flexmg.envs.families.common import judge_turns, team_workflows
from flexmg.envs.families.teachers import CodeTeacher
from flexmg.family import Family, WarmStart
from flexmg.tasks import Split, Task, TaskSource
from flexmg.workflow import Workflow, current_round

VERSION = 1

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {
    "code-1agent": ("coder",),
    "code-2agent": ("coder", "reviewer"),
    "code-3agent": ("planner", "coder", "reviewer"),
    "code-4agent": ("planner", "coder", "tester", "reviewer"),
}

FENCE = "Write your final code in one ```python fenced block."

PROMPTS: dict[str, str] = {
    "coder": f"You are the coder. Implement the function exactly as specified. {FENCE}",
    "reviewer": (
        "You are the reviewer. Review the code above, fix any bug, and return the complete "
        f"final function. {FENCE}"
    ),
    "planner": (
        "You are the planner. Describe the algorithm and the edge cases to handle; "
        "do not write the code."
    ),
    "tester": (
        "You are the tester. Write extra test cases for the function as plain `assert` "
        "statements in one ```python fenced block; they will be run against the coder's code "
        "and the results shown to the reviewer."
    ),
}

OPTIONS: dict[str, Any] = {"sandbox": "auto", "sandbox_timeout": 5.0}

NOTES = {"tester": "tester (its tests are run)"}


def code_task_source(spec: Any, split: str) -> TaskSource:
    """``tasks=`` of the code envs: ``None``/``"procedural"``, ``"builtin"``, a HumanEval/MBPP file or tasks."""
    from flexmg.envs.code import make_code_source

    # the env passes its ``split=`` through as given; make_code_source rejects unknown splits
    return make_code_source(spec, split=cast(Split, split))


def _entry_point(task: Task) -> str:
    return str(task.meta.get("entry_point", ""))


def fenced_solution(text: str, task: Task) -> str | None:
    """The message's last fenced Python block when it defines the task's function."""
    from flexmg.envs.code import extract_code
    from flexmg.envs.code.program import defines_name

    code = extract_code(text)
    return code if code and defines_name(code, _entry_point(task)) else None


def bare_solution(text: str, task: Task) -> str | None:
    """The whole message when it has no fenced block but defines the task's function."""
    from flexmg.envs.code import find_code_blocks
    from flexmg.envs.code.program import defines_name

    if find_code_blocks(text) or not defines_name(text, _entry_point(task)):
        return None
    return text


class CodeReward:
    """Score = fraction of the hidden tests the graded role's last ``python`` block passes.

    A backend name (``"auto"``, ``"local"``, ...) means the process's shared sandbox
    for that backend and timeout (:func:`flexmg.sandboxes.hold_shared_sandbox`),
    held on first use in the process that judges (so every ``AsyncVectorEnv``
    worker has its own) and released by ``env.close()``; a sandbox object passed
    in is used as it is and left open.
    """

    def __init__(self, sandbox: Any = "auto", sandbox_timeout: float = 5.0) -> None:
        from flexmg.sandboxes import BACKENDS

        if isinstance(sandbox, str) and sandbox not in BACKENDS:  # at make(), not first judge
            close = difflib.get_close_matches(sandbox, BACKENDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"unknown sandbox backend {sandbox!r}{hint}; sandbox= takes one of "
                f"{list(BACKENDS)} or a Sandbox object"
            )
        self._sandbox_spec = sandbox
        self.sandbox_timeout = float(sandbox_timeout)
        self._sandbox: Any = None if isinstance(sandbox, str) else sandbox

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CodeReward:
        """Build from the env's options (``sandbox``, ``sandbox_timeout``)."""
        return cls(
            sandbox=options.get("sandbox", "auto"),
            sandbox_timeout=options.get("sandbox_timeout", 5.0),
        )

    @property
    def sandbox(self) -> Any:
        """The sandbox the tests run in (made on first use)."""
        if self._sandbox is None:
            from flexmg.sandboxes import hold_shared_sandbox

            self._sandbox = hold_shared_sandbox(self._sandbox_spec, timeout=self.sandbox_timeout)
        return self._sandbox

    def _passes(self, code: str, task: Task) -> bool:
        from flexmg.envs.code import grade_code

        g = grade_code(f"```python\n{code}\n```", task, self.sandbox)
        return g.total > 0 and g.passed == g.total

    def credit(self, turn: TurnRecord, task: Task, graded: bool) -> tuple[dict[str, Any], Any]:
        """The credit info of one turn, and its grade (None when not graded)."""
        from flexmg.envs.code import extract_code, grade_code

        bare = bare_solution(turn.action, task)
        if not graded and fenced_solution(turn.action, task) is None:
            info: dict[str, Any] = {"own_correct": None, "format_error": False, "graded": False}
            info["format_ok"] = extract_code(turn.action) is not None
            info["answer_correct"] = None if bare is None else self._passes(bare, task)
            return info, None
        g = grade_code(turn.action, task, self.sandbox)
        own_correct = g.total > 0 and g.passed == g.total
        format_ok = not g.format_error
        if format_ok:
            answer_correct: bool | None = own_correct
        else:
            answer_correct = bare is not None and self._passes(bare, task)
        info = {
            "own_correct": own_correct,
            "format_error": bool(g.format_error),
            "format_ok": format_ok,
            "answer_correct": answer_correct,
            "tests_passed": g.passed,
            "tests_total": g.total,
            "sandbox_error": g.sandbox_error,
            "graded": graded,
        }
        return info, g

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        """Judge the latest round."""
        graded, role_info, result = judge_turns(self.credit, task, transcript)
        team = role_info[graded.role]
        return Judgement(
            score=float(result.reward),
            done=team["own_correct"],
            feedback=result.feedback(),  # counts and failure kinds, never the hidden tests
            role_info=role_info,
            metrics={
                "graded_role": graded.role,
                "tests_passed": result.passed,
                "tests_total": result.total,
                "sandbox_error": result.sandbox_error,
                "status": result.status,
                "format_ok": team["format_ok"],
                "answer_correct": team["answer_correct"],
            },
        )

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        """After a ``tester`` turn: run its asserts against this round's latest solution."""
        from flexmg.envs.code import run_agent_tests

        turn = transcript[-1]
        if turn.role != "tester":
            return None
        fenced = [fenced_solution(r.action, task) for r in current_round(transcript)[:-1]]
        solutions = [code for code in fenced if code]
        if not solutions:
            return "No solution code to test yet."
        return run_agent_tests(solutions[-1], turn.action, self.sandbox, task=task)

    def close(self) -> None:
        """Release the shared sandbox this reward held (a sandbox passed in stays open)."""
        if self._sandbox is not None and isinstance(self._sandbox_spec, str):
            from flexmg.sandboxes import release_shared_sandbox

            release_shared_sandbox(self._sandbox)
            self._sandbox = None


# ----------------------------------------------------------------- what it declares
_DOCTEST = re.compile(r"^\s*>>>\s?(?P<expr>.+?)\s*$")
_MAX_ASSERTS = 8


def doctest_asserts(prompt: str, limit: int = _MAX_ASSERTS) -> list[str]:
    """``assert expr == expected`` lines from the ``>>>`` examples of a docstring.

    >>> doctest_asserts('''    >>> add(1, 2)\\n    3\\n''')
    ['assert add(1, 2) == 3']
    """
    lines = prompt.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        m = _DOCTEST.match(line)
        if not m or i + 1 >= len(lines):
            continue
        expected = lines[i + 1].strip()
        if not expected or expected.startswith(">>>") or expected.startswith("Traceback"):
            continue
        out.append(f"assert {m.group('expr')} == {expected}")
        if len(out) >= limit:
            break
    return out


def code_oracle(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The scripted oracle's message for one role on a code task (the reference solution).

    >>> t = Task(id="t", prompt="def f():\\n    '''\\n    >>> f()\\n    1\\n    '''",
    ...          answer="def f():\\n    return 1\\n", meta={"entry_point": "f"})
    >>> code_oracle(t, "tester", "", graded=False)
    '```python\\nassert f() == 1\\n```'
    """
    entry = str(task.meta.get("entry_point", ""))
    writes_tests = role == "tester" or ("assert" in instructions and not graded)
    if writes_tests:
        asserts = doctest_asserts(task.prompt) or [f"assert callable({entry})"]
        return "```python\n" + "\n".join(asserts) + "\n```"
    if graded or "```python" in instructions:
        return f"```python\n{task.answer.strip()}\n```"
    return (
        f"Plan: implement `{entry}` as the docstring specifies; handle empty inputs and the "
        "boundary cases the examples show; keep it pure (no I/O)."
    )


#: The family's metadata. A procedural-code solution of the tiny model (one token per
#: character, fenced) takes up to about 70 tokens; its warm-start data leave out
#: code-4agent, whose tester writes asserts that the env runs, not solutions.
FAMILY = Family(
    name="code",
    teams=TEAMS,
    tasks=code_task_source,
    token_budgets={"tiny": 80, "llm": 512},
    oracle=code_oracle,
    warm_start=WarmStart(
        tasks=(("procedural", 1.0),),
        envs=(("code-1agent", 0.3), ("code-2agent", 0.55), ("code-3agent", 0.15)),
        teacher=CodeTeacher,
    ),
)


#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    FAMILY,
    prompts=PROMPTS,
    describe=lambda roles: (
        f"code: {' -> '.join(NOTES.get(r, r) for r in roles)} (graded by hidden tests in a sandbox)"
    ),
    reward_factory=CodeReward.from_options,
    options=OPTIONS,
)

code_1agent = WORKFLOWS["code-1agent"]
code_2agent = WORKFLOWS["code-2agent"]
code_3agent = WORKFLOWS["code-3agent"]
code_4agent = WORKFLOWS["code-4agent"]
