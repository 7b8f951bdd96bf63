"""The env family modules: their tables tell the truth, credit info, versions, the relay."""

from __future__ import annotations

import importlib
import re

import pytest

import flexmg
from flexmg.envs.families import FAMILY_MODULES
from flexmg.envs.math.generators import format_number
from flexmg.envs.math.generators.expression import evaluate
from flexmg.registration import UnknownEnvError
from flexmg.workflow import ENV_KEYWORDS

FAMILIES = [importlib.import_module(name) for name in FAMILY_MODULES]


def _row(doc: str, label: str) -> str:
    match = re.search(rf"^\| {re.escape(label)} \| (.+) \|$", doc, flags=re.MULTILINE)
    assert match, f"no '{label}' row in the table"
    return match.group(1)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_family_table_matches_what_the_envs_do(family) -> None:
    doc = family.__doc__
    ids, agents, arguments = (
        _row(doc, "Ids"),
        _row(doc, "Agents (graph order)"),
        _row(doc, "Arguments"),
    )
    for row in ("Observation keys", "Action", "Reward", "Graded role", "Episode end"):
        _row(doc, row)
    assert f"v{family.VERSION}:" in doc.split("Version history:")[1]
    for name, roles in family.TEAMS.items():
        assert f"``{name}-v{family.VERSION}``" in ids
        assert " -> ".join(roles) in agents or roles == (roles[0],)
        env = flexmg.make(name)
        assert env.possible_agents == list(roles) == env.graph.order()
        assert flexmg.spec(name).id == f"{name}-v{family.VERSION}"
        for arg in [*ENV_KEYWORDS, *env.workflow.options]:
            assert f"``{arg}``" in arguments, (name, arg)
        obs_keys = _row(doc, "Observation keys")
        env.reset(seed=0)
        assert all(f"``{k}``" in obs_keys for k in env.observe(roles[0]))
        env.close()


def test_unversioned_ids_resolve_to_the_newest_and_old_versions_say_what_exists() -> None:
    assert flexmg.spec("math-2agent").id == "math-2agent-v3"
    assert flexmg.spec("echo").id == "echo-v1"
    with pytest.raises(
        UnknownEnvError, match=r"'math-2agent-v1' is out of date: use 'math-2agent-v3'"
    ):
        flexmg.make("math-2agent-v1")


def test_old_module_names_still_import() -> None:
    from flexmg.envs.prompts import CODE_ROLES, MATH_ROLES
    from flexmg.envs.rewards import CodeReward, MathReward, math_task_source
    from flexmg.envs.workflows import code_4agent, math_2agent

    assert MATH_ROLES["solver"] and CODE_ROLES["coder"] and callable(math_task_source)
    assert MathReward and CodeReward and list(code_4agent.roles)[-1] == "reviewer"
    assert list(math_2agent.roles) == ["solver", "verifier"]


def _play_math(messages: dict[str, str], env_id: str = "math-2agent", seed: int = 0):
    env = flexmg.make(env_id)
    env.reset(seed=seed)
    gold = env.task.answer
    for role in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else messages[role].replace("GOLD", gold))
    return env.episode_metrics


@pytest.mark.parametrize(
    ("verifier", "format_ok", "answer_correct", "success"),
    [
        ("So the answer is \\boxed{GOLD}.", True, True, True),
        ("The answer is GOLD.", False, True, True),  # right value, not boxed: solved (v2)
        ("\\boxed{GOLD1} hmm, no: \\boxed{GOLD}", False, False, False),  # two answers: none
        ("\\boxed{GOLD1}", True, False, False),  # boxed, wrong value
        ("I cannot tell.", False, False, False),  # the graded role always gets a bool
        # a box that commits to no value earns no format credit (v3): no farming the term
        ("\\boxed{not sure}", False, False, False),
        ("\\boxed{?}", False, False, False),
        ("\\boxed{maybe GOLD}", False, False, False),
    ],
)
def test_math_credit_separates_format_from_correctness(
    verifier: str, format_ok: bool, answer_correct: bool, success: bool
) -> None:
    metrics = _play_math({"solver": "I am not sure.", "verifier": verifier})
    graded = metrics["per_role"]["verifier"]
    assert (graded["format_ok"], graded["answer_correct"], metrics["success"]) == (
        format_ok,
        answer_correct,
        success,
    )
    assert graded["own_correct"] is (format_ok and answer_correct)
    assert graded["format_error"] is not format_ok or "\\boxed{" in verifier
    assert metrics["score"] == pytest.approx(0.9 * answer_correct + 0.1 * format_ok)
    assert (metrics["format_ok"], metrics["answer_correct"]) == (format_ok, answer_correct)
    solver = metrics["per_role"]["solver"]  # no number at all: no answer to judge
    assert (solver["format_ok"], solver["answer_correct"], solver["own_correct"]) == (
        False,
        None,
        None,
    )


def test_math_answer_value_reads_fractions_however_written() -> None:
    spec = {"name": "fractions", "difficulty": 1}
    env = flexmg.make("math-1agent", tasks=spec)
    for seed in range(40):
        env.reset(seed=seed)
        if "frac" in env.task.answer:
            break
    num, den = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", env.task.answer).groups()
    env.step(f"I get {num}/{den} in the end")
    solver = env.episode_metrics["per_role"]["solver"]
    assert solver["format_ok"] is False and solver["answer_correct"] is True


@pytest.mark.slow
def test_code_credit_separates_format_from_correctness() -> None:
    env = flexmg.make("code-2agent", sandbox="local")
    try:
        env.reset(seed=3)
        solution = env.task.answer
        env.step(solution)  # the coder writes a right function, but bare (no fence)
        env.step(f"```python\n{solution}\n```")
        roles = env.episode_metrics["per_role"]
        assert env.episode_metrics["success"]
        assert roles["reviewer"]["format_ok"] and roles["reviewer"]["answer_correct"]
        assert roles["coder"]["format_ok"] is False and roles["coder"]["answer_correct"] is True
        env.reset(seed=3)
        env.step("No code from me.")
        env.step(solution)  # the graded reviewer is right but unfenced: scores 0
        roles = env.episode_metrics["per_role"]
        assert not env.episode_metrics["success"] and env.episode_metrics["score"] == 0.0
        assert roles["reviewer"]["format_ok"] is False
        assert roles["reviewer"]["answer_correct"] is True
        assert roles["coder"]["answer_correct"] is None
    finally:
        env.close()


def _relay_oracle(obs: dict) -> str:
    """Reader: pass the problem on; courier: repeat; solver: compute what it was told."""
    if obs["role"] == "reader":
        return obs["task"]
    told = obs["context"].rpartition("]: ")[2]
    if obs["role"] == "courier":
        return told
    match = re.search(r"What is (.+)\?", told)
    return f"\\boxed{{{format_number(evaluate(match.group(1)))}}}" if match else "I do not know."


def _play(env, policy, seed: int) -> dict:
    env.reset(seed=seed)
    seen = {}
    for role in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if not (term or trunc):
            seen[role] = obs
        env.step(None if term or trunc else policy(obs))
    return {"metrics": env.episode_metrics, "solver_obs": seen["solver"]}


@pytest.mark.parametrize("env_id", ["relay-2agent", "relay-3agent"])
def test_relay_needs_the_reader(env_id: str) -> None:
    env = flexmg.make(env_id, split="eval")
    seeds = range(12)
    oracle = [_play(env, _relay_oracle, s)["metrics"]["score"] for s in seeds]
    assert oracle == [1.0] * len(seeds)

    def silent_reader(obs: dict) -> str:
        return "" if obs["role"] == "reader" else _relay_oracle(obs)

    silent = [_play(env, silent_reader, s) for s in seeds]
    assert [r["metrics"]["score"] for r in silent] == [0.0] * len(seeds)
    # the solver's view does not depend on the task when the reader says nothing
    views = {tuple(sorted((k, str(v)) for k, v in r["solver_obs"].items())) for r in silent}
    assert len(views) == 1
    assert all(r["metrics"]["per_role"]["reader"]["graded"] is False for r in silent)
