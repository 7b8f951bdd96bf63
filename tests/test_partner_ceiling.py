"""The partner-ceiling benchmark's loop: scripted partners, batched model turns, real envs."""

from __future__ import annotations

import json
import re

import flexmg
from flexmg.envs.families.check import checker_from
from flexmg.envs.families.split import solve_from
from helpers import load_benchmark

TASKS = {"tasks": {"low": 0, "high": 40, "ops": "+"}}


def _graded_script(observations: list[dict]) -> list[str]:
    """A stand-in for the model in the graded role that uses what it was given."""
    out = []
    for o in observations:
        if o["role"] == "holder":
            out.append("I will not tell.")
        elif o["role"] == "solver" and "holder" in o["instructions"]:
            out.append(solve_from(o["context"], o["task"]))
        else:
            out.append(checker_from(o["context"]))
    return out


def test_a_graded_role_that_uses_its_partner_scores_only_with_the_oracle() -> None:
    bench = load_benchmark("partner_ceiling")
    supporter, oracle = bench.SUPPORTERS["split-2agent"]
    envs = [flexmg.make("split-2agent", split="test", **TASKS) for _ in range(6)]
    seeds = list(range(6))
    with_oracle = bench.play(envs, seeds, "oracle", supporter, oracle, _graded_script)
    assert all(p["success"] for p in with_oracle)
    first = with_oracle[0]["turns"]
    assert first[0][0] == "holder" and first[0][1].startswith("A = ")
    mute = bench.play(envs, seeds, "mute", supporter, oracle, _graded_script)
    assert mute[0]["turns"][0][1] == "" and sum(p["success"] for p in mute) <= 1
    # "model" partner: the stand-in plays the holder too, and refuses
    own = bench.play(envs, seeds, "model", supporter, oracle, _graded_script)
    assert own[0]["turns"][0][1] == "I will not tell."


def test_the_check_oracle_writes_the_expression_the_checker_is_shown() -> None:
    bench = load_benchmark("partner_ceiling")
    supporter, oracle = bench.SUPPORTERS["check-2agent"]
    envs = [flexmg.make("check-2agent", split="test") for _ in range(3)]
    played = bench.play(envs, [0, 1, 2], "oracle", supporter, oracle, _graded_script)
    assert all(p["success"] for p in played)
    role, text, note = played[0]["turns"][0]
    assert role == "solver" and text.startswith("Expression:") and "evaluates to" in note


def test_the_cli_runs_a_model_end_to_end(tmp_path) -> None:
    bench = load_benchmark("partner_ceiling")
    out = tmp_path / "ceiling.json"
    args = ["--model", "tiny", "--episodes", "3", "--max-new-tokens", "4", "--json", str(out)]
    assert bench.main([*args, "--kw", json.dumps(TASKS)]) == 0
    result = json.loads(out.read_text())
    assert set(result["partners"]) == set(bench.PARTNERS)
    for row in result["partners"].values():
        for mode in ("greedy", "sampled"):
            lo, hi = row[mode]["ci"]
            assert 0.0 <= lo <= row[mode]["success"] <= hi <= 1.0
            assert 0.0 <= row[mode]["score"] <= 1.0


def _lookup_coder(observations: list[dict]) -> list[str]:
    """A coder stand-in that answers exactly the calls the tester asserted, nothing else."""
    out = []
    for o in observations:
        cases = re.findall(r"^assert mystery_fn\((.*)\) == (.+)$", o["context"], re.MULTILINE)
        body = "".join(f"    if args == ({a},):\n        return {e}\n" for a, e in cases)
        out.append(f"```python\ndef mystery_fn(*args):\n{body}    return None\n```")
    return out


def test_the_testfirst_oracle_tester_gives_the_coder_its_spec() -> None:
    bench = load_benchmark("partner_ceiling")
    supporter, oracle = bench.SUPPORTERS["code-testfirst"]
    assert supporter == "tester"
    envs = [flexmg.make("code-testfirst", split="test") for _ in range(2)]
    played = bench.play(envs, [0, 1], "oracle", supporter, oracle, _lookup_coder)
    role, text, _ = played[0]["turns"][0]
    assert role == "tester" and "assert mystery_fn(" in text
    assert all(p["score"] > 0 for p in played)  # the asserted calls pass some hidden tests
    mute = bench.play(envs, [0, 1], "mute", supporter, oracle, _lookup_coder)
    assert mute[0]["turns"][0][1] == "" and all(p["score"] == 0 for p in mute)
    for env in envs:
        env.close()
