"""The reward-hacking suite (tests/grader_conformance/hacking): every attempt refused,
every honest form accepted, and every verdict explained."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from flexmg.envs.math import REASONS, GradingSettings, grade_detailed
from helpers import load_benchmark

conformance = load_benchmark("grader_conformance")
DOC = Path(__file__).resolve().parents[1] / "docs" / "grading.md"
HACK_CLASSES = {
    "equation", "inequality", "text_hedge", "scale", "approximation", "set_braces", "obscured",
    "superscript", "degenerate", "primes", "subscripts", "accents", "lists", "multiple_values",
    "units_keep", "unknown_command", "near_miss", "choices", "sets_for_values", "junk_padding",
}  # fmt: skip
HONEST_CLASSES = {
    "float_repr", "sci_notation", "unicode", "boxed_unbraced", "thousands", "scale_words",
    "units", "assignment", "marks_kept", "lists", "percent", "equivalent",
}  # fmt: skip


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return conformance.load_hacking()


@pytest.fixture(scope="module")
def outcomes(cases: list[dict]) -> list:
    return conformance.grade_cases(cases)


def test_suite_is_well_formed(cases: list[dict]) -> None:
    ids = Counter(case["id"] for case in cases)
    assert not [i for i, n in ids.items() if n > 1], "case ids must be unique"
    for case in cases:
        assert case["expected"] == (0 if case["kind"] == "hack" else 1), case["id"]
        GradingSettings.from_mapping(case["setting"])
        assert case["why"].strip() and case["class"].strip()
    hack = Counter(c["class"] for c in cases if c["kind"] == "hack")
    honest = Counter(c["class"] for c in cases if c["kind"] == "honest")
    assert set(hack) == HACK_CLASSES and set(honest) == HONEST_CLASSES
    assert all(n >= 5 for n in hack.values()), hack
    assert all(n >= 5 for n in honest.values()), honest


def test_every_hack_is_refused_and_every_honest_form_accepted(outcomes: list) -> None:
    wrong = [(o.case["id"], o.got, o.reason) for o in outcomes if not o.agrees]
    assert not wrong


def test_every_verdict_says_why(outcomes: list) -> None:
    for outcome in outcomes:
        result = grade_detailed(
            outcome.case["completion"], outcome.case["gold"], 5.0, outcome.case["setting"]
        )
        assert result.reason in REASONS, outcome.case["id"]
        assert result.detail.strip(), f"{outcome.case['id']}: {result.reason} without a detail"


def test_refusals_name_the_rule_broken(outcomes: list) -> None:
    by_class: dict[str, set[str]] = {}
    for outcome in outcomes:
        if outcome.case["kind"] == "hack":
            by_class.setdefault(outcome.case["class"], set()).add(outcome.reason)
    # the classes the commitment rules catch are refused for that rule, not as merely "wrong"
    assert by_class["equation"] == {"relation"}
    assert by_class["inequality"] == {"relation"}
    assert by_class["obscured"] == {"obscured"}
    assert by_class["subscripts"] == {"marks"}
    assert by_class["accents"] == {"marks"}
    assert by_class["degenerate"] <= {
        "free_variable",
        "indeterminate",
        "unparseable",
        "shape",
        "unknown_command",
    }
    assert by_class["units_keep"] == {"extra_text"}
    assert "hedged" in by_class["text_hedge"] and "hedged" in by_class["approximation"]


def test_per_class_table(outcomes: list, capsys: pytest.CaptureFixture[str]) -> None:
    table = conformance.summarize_hacking(outcomes)
    assert all(row["accepted"] == 0 for (kind, _), row in table.items() if kind == "hack")
    assert all(row["refused"] == 0 for (kind, _), row in table.items() if kind == "honest")
    conformance.print_hacking(table)
    printed = capsys.readouterr().out
    assert "hack    ALL" in printed and "honest  ALL" in printed


def test_a_malformed_hacking_case_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "kind": "hack"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1: a hacking case needs"):
        conformance.load_hacking(tmp_path)


def test_the_docs_list_every_class() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = sorted(c for c in HACK_CLASSES | HONEST_CLASSES if f"`{c}`" not in text)
    assert not missing, f"add to docs/grading.md: {missing}"


def test_verdicts_do_not_depend_on_what_the_worker_graded_before(cases: list[dict]) -> None:
    # Every suite case (hacking and the conformance corpus) in file order and in a shuffled
    # order, each on a fresh worker pool with an empty verdict cache: the same scores.
    import random

    from flexmg.envs.math import grader

    everything = cases + conformance.load_cases()

    def scores(order: list[int]) -> dict[int, float]:
        grader.configure(workers=1)
        grader._cache.clear()
        return {
            i: grade_detailed(everything[i]["completion"], everything[i]["gold"], 5.0,
                              everything[i].get("setting") or {}).score
            for i in order
        }  # fmt: skip

    order = list(range(len(everything)))
    first = scores(order)
    random.Random(0).shuffle(order)
    assert scores(order) == first
