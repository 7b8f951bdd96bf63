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


def _math(n: int, roles: tuple[str, ...], description: str) -> Workflow:
    return Workflow(
        name=f"math-{n}agent",
        roles={r: MATH_ROLES[r] for r in roles},
        edges=[(a, b) for i, b in enumerate(roles) for a in roles[:i]],
        tasks=math_task_source,
        reward_factory=MathReward.from_options,
        options={"grade_timeout": 1.0},
        horizon=1,
        description=description,
    )


def _code(n: int, roles: tuple[str, ...], description: str) -> Workflow:
    return Workflow(
        name=f"code-{n}agent",
        roles={r: CODE_ROLES[r] for r in roles},
        edges=[(a, b) for i, b in enumerate(roles) for a in roles[:i]],
        tasks=code_task_source,
        reward_factory=CodeReward.from_options,
        options={"sandbox": "auto", "sandbox_timeout": 5.0},
        horizon=1,
        description=description,
    )


math_1agent = _math(1, ("solver",), "math: solver (graded)")
math_2agent = _math(2, ("solver", "verifier"), "math: solver -> verifier (graded)")
math_3agent = _math(
    3, ("planner", "solver", "verifier"), "math: planner -> solver -> verifier (graded)"
)
math_4agent = _math(
    4,
    ("decomposer", "planner", "executor", "verifier"),
    "math: decomposer -> planner -> executor -> verifier (graded)",
)
code_1agent = _code(1, ("coder",), "code: coder (graded by hidden tests in a sandbox)")
code_2agent = _code(2, ("coder", "reviewer"), "code: coder -> reviewer (graded)")
code_3agent = _code(3, ("planner", "coder", "reviewer"), "code: planner -> coder -> reviewer")
code_4agent = _code(
    4,
    ("planner", "coder", "tester", "reviewer"),
    "code: planner -> coder -> tester (its tests are run) -> reviewer (graded)",
)
