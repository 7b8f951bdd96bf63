"""Registration of the built-in env ids (lazy: nothing heavy is imported here)."""

from __future__ import annotations

BUILTIN_ENVS: dict[str, str] = {
    "math-1agent-v0": "math: solver (graded)",
    "math-2agent-v0": "math: solver -> verifier (graded)",
    "math-3agent-v0": "math: planner -> solver -> verifier (graded)",
    "math-4agent-v0": "math: decomposer -> planner -> executor -> verifier (graded)",
    "code-1agent-v0": "code: coder (graded by hidden tests in a sandbox)",
    "code-2agent-v0": "code: coder -> reviewer (graded)",
    "code-3agent-v0": "code: planner -> coder -> reviewer (graded)",
    "code-4agent-v0": "code: planner -> coder -> tester (its tests are run) -> reviewer (graded)",
}


def register_builtin_envs() -> None:
    """Register the math and code workflows of :mod:`flexmg.envs.workflows`."""
    from flexmg.registration import register

    for env_id, description in BUILTIN_ENVS.items():
        attr = env_id.removesuffix("-v0").replace("-", "_")
        register(env_id, f"flexmg.envs.workflows:{attr}", description=description)
