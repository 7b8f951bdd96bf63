"""The built-in math and code workflows (``math-Nagent-v0``, ``code-Nagent-v0``).

Each is a :class:`flexmg.Workflow`; the graded role is the last role of the
round's order (so role ablations via ``roles=`` keep working).

Example:
    >>> import flexmg
    >>> env = flexmg.make("math-2agent")
    >>> env.possible_agents
    ['solver', 'verifier']
"""

from __future__ import annotations

from flexmg.envs.prompts import CODE_ROLES, MATH_ROLES
from flexmg.envs.rewards import CodeReward, MathReward, code_task_source, math_task_source

from flexmg.workflow import Workflow

_FAMILIES = {
    "math": (MATH_ROLES, math_task_source, MathReward.from_options, {"grade_timeout": 1.0}),
    "code": (
        CODE_ROLES,
        code_task_source,
        CodeReward.from_options,
        {"sandbox": "auto", "sandbox_timeout": 5.0},
    ),
}


def _builtin(family: str, roles: tuple[str, ...], description: str) -> Workflow:
    """A built-in workflow: every role sees every earlier role; one round by default."""
    prompts, tasks, reward_factory, options = _FAMILIES[family]
    return Workflow(
        name=f"{family}-{len(roles)}agent",
        roles={r: prompts[r] for r in roles},
        edges=[(a, b) for i, b in enumerate(roles) for a in roles[:i]],
        tasks=tasks,
        reward_factory=reward_factory,
        options=options,
        horizon=1,
        description=description,
    )


math_1agent = _builtin("math", ("solver",), "math: solver (graded)")
math_2agent = _builtin("math", ("solver", "verifier"), "math: solver -> verifier (graded)")
math_3agent = _builtin(
    "math", ("planner", "solver", "verifier"), "math: planner -> solver -> verifier (graded)"
)
math_4agent = _builtin(
    "math",
    ("decomposer", "planner", "executor", "verifier"),
    "math: decomposer -> planner -> executor -> verifier (graded)",
)
code_1agent = _builtin("code", ("coder",), "code: coder (graded by hidden tests in a sandbox)")
code_2agent = _builtin("code", ("coder", "reviewer"), "code: coder -> reviewer (graded)")
code_3agent = _builtin(
    "code", ("planner", "coder", "reviewer"), "code: planner -> coder -> reviewer"
)
code_4agent = _builtin(
    "code",
    ("planner", "coder", "tester", "reviewer"),
    "code: planner -> coder -> tester (its tests are run) -> reviewer (graded)",
)
