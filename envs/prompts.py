"""Default role prompts of the built-in workflows (override with ``prompts=`` or ``roles=``)."""

from __future__ import annotations

BOX = "Put the final answer, and nothing else, inside \\boxed{}."

MATH_ROLES: dict[str, str] = {
    "solver": f"You are the solver. Solve the problem step by step. {BOX}",
    "verifier": (
        "You are the verifier. Check the previous answer carefully; if it is wrong, correct it. "
        f"Restate the final answer. {BOX}"
    ),
    "planner": "You are the planner. Outline a short plan to solve the problem; do not solve it.",
    "decomposer": (
        "You are the decomposer. Break the problem into small sub-questions, in order; "
        "do not solve them."
    ),
    "executor": f"You are the executor. Follow the plan and compute the answer. {BOX}",
}

FENCE = "Write your final code in one ```python fenced block."

CODE_ROLES: dict[str, str] = {
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
