"""The code workflows end to end with the real local sandbox."""

from pathlib import Path

import pytest

import flexmg
from flexmg.envs.code import load_tasks

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def play_graded(env, final_message, others="I have no code."):
    for role in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
        else:
            graded = role == env.graph.order()[-1]
            env.step(final_message if graded else others)
    return env.episode_metrics


def test_reference_solution_scores_one_and_wrong_code_scores_less():
    env = flexmg.make("code-2agent", sandbox="local")
    try:
        env.reset(seed=3)
        metrics = play_graded(env, fenced(env.task.answer))
        assert metrics["success"] and metrics["score"] == 1.0
        assert metrics["tests_passed"] == metrics["tests_total"] > 0
        env.reset(seed=3)
        entry = env.task.meta["entry_point"]
        metrics = play_graded(env, fenced(f"def {entry}(*args, **kwargs):\n    return None"))
        assert not metrics["success"] and metrics["score"] < 1.0
        assert metrics["per_role"]["reviewer"]["format_error"] is False
    finally:
        env.close()


def test_no_code_block_is_a_format_error_with_reason():
    env = flexmg.make("code-1agent", sandbox="local")
    try:
        env.reset(seed=0)
        metrics = play_graded(env, "I refuse to write code.")
        assert metrics["score"] == 0.0
        assert metrics["per_role"]["coder"]["format_error"] is True
    finally:
        env.close()


def test_multi_round_feedback_hides_hidden_tests():
    env = flexmg.make("code-1agent", sandbox="local", horizon=2)
    try:
        env.reset(seed=5)
        entry = env.task.meta["entry_point"]
        env.step(fenced(f"def {entry}(*a):\n    return 12345"))
        feedback = env.observe("coder")["feedback"]
        assert "passed" in feedback
        assert "assert" not in feedback
        env.step(fenced(env.task.answer))
        assert env.episode_metrics["success"] and env.episode_metrics["rounds"] == 2
        assert sum(r.reward for r in env.transcript) == pytest.approx(1.0)
    finally:
        env.close()


def test_tester_role_tests_are_run_and_shown_to_reviewer():
    env = flexmg.make("code-4agent", sandbox="local")
    try:
        env.reset(seed=1)
        entry = env.task.meta["entry_point"]
        env.step("Plan: straightforward.")
        env.step(fenced(env.task.answer))
        env.step(fenced(f"assert {entry} is not None\nassert 1 == 2"))
        context = env.observe("reviewer")["context"]
        assert "[env on tester]:" in context and "1/2 passed" in context
        env.step(fenced(env.task.answer))
        assert env.episode_metrics["success"]
    finally:
        env.close()


def test_async_vector_code_env_grades_in_workers():
    vec = flexmg.make_vec("code-1agent", num_envs=2, vectorization="async", sandbox="local")
    try:
        vec.reset(seed=0)
        vec.observe("coder")
        vec.step("coder", ["```python\nprint('no function')\n```"] * 2)
        assert [e.metrics["score"] for e in vec.episodes()] == [0.0, 0.0]
    finally:
        vec.close()


@pytest.mark.slow
def test_all_humaneval_canonical_solutions_score_one_through_the_env():
    path = SHARED / "HumanEval.jsonl.gz"
    if not path.exists():
        pytest.skip(f"benchmark data not found at {path} (../shared/data is absent)")
    tasks = load_tasks(path)
    assert len(tasks) == 164
    env = flexmg.make("code-1agent", sandbox="local", tasks=tasks)
    failures = []
    try:
        for task in tasks:
            env.reset(seed=0, options={"task": task})
            env.step(fenced(task.prompt + task.answer))
            if env.episode_metrics["score"] != 1.0:
                failures.append((task.id, env.episode_metrics))
    finally:
        env.close()
    assert not failures, failures[:3]


def test_hidden_tests_are_run_as_trusted_and_agent_tests_are_not(sandbox) -> None:
    """The env's hidden tests may use the sandbox's long-lived judge; a tester's never do."""
    from flexmg.envs.code.grading import _trusted

    assert _trusted(sandbox.run_tests) == {"trusted_tests": True}
    assert _trusted(sandbox.map_tests) == {"trusted_tests": True}

    def plain_run_tests(code, tests, entry_point=None):  # a user's own sandbox object
        return None

    assert _trusted(plain_run_tests) == {}

    seen: list[bool] = []
    real = sandbox.run_tests

    def spy(*args, **kwargs):
        seen.append(bool(kwargs.get("trusted_tests")))
        return real(*args, **kwargs)

    from flexmg.envs.code.agent_tests import run_agent_tests
    from flexmg.envs.code.grading import grade_code
    from flexmg.envs.code.loaders import builtin_tasks

    task = builtin_tasks()[0]
    sandbox.run_tests = spy
    try:
        grade = grade_code(f"```python\n{task.answer}\n```", task, sandbox)
        run_agent_tests(
            task.answer,
            f"```python\nassert {task.meta['entry_point']} is not None\n```",
            sandbox,
            task=task,
        )
    finally:
        del sandbox.run_tests
    assert grade.reward == 1.0
    assert seen == [True, False]


def test_code_envs_of_a_process_share_one_sandbox_until_the_last_closes():
    first = flexmg.make("code-1agent", sandbox="local")
    second = flexmg.make("code-1agent", sandbox="local")
    try:
        for env in (first, second):
            env.reset(seed=1)
            assert play_graded(env, fenced(env.task.answer))["success"]
        shared = first.unwrapped._reward.sandbox
        assert second.unwrapped._reward.sandbox is shared
        assert len(shared._all) <= shared.workers  # not a worker per env
        first.close()
        assert not shared._closed
        second.reset(seed=2)
        assert play_graded(second, fenced(second.task.answer))["success"]
    finally:
        first.close()
        second.close()
    assert shared._closed and not shared._all  # the last close stopped the workers
