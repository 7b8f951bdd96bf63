"""Scripted baselines: the oracle solves every procedural task; empty/random are lower bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

import flexmg
from flexmg.baselines.scripted import (
    OracleAgent,
    envs_of,
    make_oracle,
    make_random,
    make_scripted,
)
from flexmg.env import OBS_KEYS
from flexmg.envs.code import builtin_tasks, extract_code
from flexmg.envs.families.code import code_oracle as code_message
from flexmg.envs.families.code import doctest_asserts
from flexmg.episodes import rollout
from flexmg.tasks import EVAL_SEED_OFFSET, Task

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
GENERATORS = ["arithmetic", "chain", "fractions", "linear", "word"]


@pytest.mark.parametrize("env_id", ["math-1agent", "math-2agent", "math-3agent", "math-4agent"])
@pytest.mark.parametrize("generator", GENERATORS)
def test_oracle_solves_every_procedural_math_task(env_id: str, generator: str) -> None:
    vec = flexmg.make_vec(env_id, num_envs=4, split="eval", tasks=generator)
    result = rollout(vec, make_oracle(vec), episodes=8, seed=EVAL_SEED_OFFSET)
    assert result.success_rate == 1.0
    for ep in result.episodes:
        graded = ep.metrics["graded_role"]
        assert ep.metrics["per_role"][graded]["format_error"] is False


@pytest.mark.parametrize("name", ["gsm8k_test.jsonl", "math500_test.jsonl"])
def test_oracle_solves_real_benchmark_records(name: str) -> None:
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"benchmark data {path} is absent (shared/data next to the repo)")
    vec = flexmg.make_vec("math-2agent", num_envs=8, split="eval", tasks=str(path))
    result = rollout(vec, make_oracle(vec), episodes=32, seed=EVAL_SEED_OFFSET)
    assert result.success_rate == 1.0


def test_oracle_code_messages_are_reference_and_runnable_asserts() -> None:
    for task in builtin_tasks():
        graded = code_message(task, "reviewer", "", graded=True)
        assert extract_code(graded).strip() == task.answer.strip()
        tests = extract_code(code_message(task, "tester", "write asserts", graded=False))
        assert tests and tests.startswith("assert ")
        namespace: dict = {}
        exec(task.answer, namespace)  # trusted reference solutions shipped with the repo
        exec(tests, namespace)  # the tester's doctest-derived asserts hold for the reference
        plan = code_message(task, "planner", "do not write the code", graded=False)
        assert "```" not in plan and task.meta["entry_point"] in plan


def _code_rollout(env_id: str, episodes: int, **kwargs: object) -> list:
    sandboxes = pytest.importorskip("flexmg.sandboxes")
    if not hasattr(sandboxes, "make_sandbox"):
        pytest.skip("flexmg.sandboxes.make_sandbox is not available")
    vec = flexmg.make_vec(env_id, num_envs=4, split="eval", **kwargs)
    try:
        result = rollout(vec, make_oracle(vec), episodes=episodes, seed=EVAL_SEED_OFFSET)
    finally:
        vec.close()
    errors = [ep.metrics.get("sandbox_error") for ep in result.episodes]
    if any(errors):
        pytest.skip(f"the sandbox cannot run tests on this machine: {errors[0]}")
    return result.episodes


@pytest.mark.parametrize("env_id", ["code-1agent", "code-2agent", "code-3agent", "code-4agent"])
def test_oracle_solves_code_envs(env_id: str) -> None:
    episodes = _code_rollout(env_id, 8)
    assert all(ep.success for ep in episodes), [ep.metrics.get("status") for ep in episodes]
    if env_id == "code-4agent":  # the tester's doctest asserts ran against the coder's code
        notes = [r.info.get("annotation", "") for ep in episodes for r in ep.transcript]
        assert any("passed" in n for n in notes)


@pytest.mark.parametrize(
    "env_id", ["relay-2agent", "relay-3agent", "split-2agent", "check-2agent", "code-testfirst"]
)
def test_oracle_solves_envs_whose_roles_see_a_view_of_the_task(env_id: str) -> None:
    """Batched on a vector env: views that hide the task are told apart by the context."""
    vec = flexmg.make_vec(env_id, num_envs=4, split="test")
    try:
        result = rollout(vec, OracleAgent(lambda: vec.envs), episodes=8, seed=0)
    finally:
        vec.close()
    assert result.success_rate == 1.0


def test_oracle_solves_humaneval() -> None:
    path = DATA / "HumanEval.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"benchmark data {path} is absent (shared/data next to the repo)")
    episodes = _code_rollout("code-2agent", 12, tasks=str(path))
    assert all(ep.success for ep in episodes)


def test_oracle_does_not_touch_observations() -> None:
    vec = flexmg.make_vec("math-2agent", num_envs=2, split="eval")
    oracle = make_oracle(vec)
    seen: list[dict] = []

    class Spy:
        def act(self, observations: list[dict]) -> list[str]:
            before = [dict(o) for o in observations]
            out = oracle.act(observations)
            assert observations == before  # nothing written into observations
            seen.extend(observations)
            return out

    result = rollout(vec, {"solver": Spy(), "verifier": Spy()}, episodes=4, seed=0)
    assert result.success_rate == 1.0
    assert seen and all(set(o) == set(OBS_KEYS) for o in seen)
    # the solver's observation (no predecessor) never contains the answer
    for ep in result.episodes:
        solver_obs = ep.transcript[0].observation
        assert solver_obs["context"] == "" and "boxed" not in solver_obs["task"]


def test_oracle_errors_are_clear() -> None:
    with pytest.raises(TypeError, match="function returning the envs"):
        OracleAgent([])  # type: ignore[arg-type]
    env = flexmg.make("math-2agent")
    env.reset(seed=0)
    oracle = OracleAgent(lambda: [env])
    with pytest.raises(LookupError, match="no env being played"):
        oracle.act([{"task": "a task nobody plays", "role": "solver"}])
    vec = flexmg.make_vec("echo", num_envs=1, vectorization="async")
    try:
        with pytest.raises(TypeError, match="vectorization='sync'"):
            envs_of(vec)
    finally:
        vec.close()
    with pytest.raises(ValueError, match="unknown scripted agent"):
        make_scripted("genius", None)


def test_lower_bounds_fail_and_random_is_seeded() -> None:
    env = flexmg.make("math-2agent", split="eval")
    empty = rollout(env, make_scripted("empty", None), episodes=6, seed=0)
    assert empty.success_rate == 0.0
    assert all(ep.metrics["per_role"]["verifier"]["format_error"] for ep in empty.episodes)
    a, b = make_random(3, "math-2agent"), make_random(3, "math-2agent")
    obs = [{"task": "x"}] * 5
    assert a.act(obs) == b.act(obs)
    assert make_random(4, "math-2agent").act(obs) != make_random(3, "math-2agent").act(obs)


def test_doctest_asserts_skips_tracebacks_and_blank_outputs() -> None:
    prompt = ">>> f(1)\n2\n>>> f(-1)\nTraceback (most recent call last):\n>>> g()\n\n"
    assert doctest_asserts(prompt) == ["assert f(1) == 2"]
    task = Task(
        id="t", prompt="def h(): pass", answer="def h():\n    return 1\n", meta={"entry_point": "h"}
    )
    assert code_message(task, "tester", "", graded=False) == "```python\nassert callable(h)\n```"
