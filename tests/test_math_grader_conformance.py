"""The conformance corpus (tests/grader_conformance): well formed, documented, and agreed with."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from flexmg.envs.math import GradingSettings
from helpers import load_benchmark

conformance = load_benchmark("grader_conformance")
DOC = Path(__file__).resolve().parents[1] / "docs" / "grading.md"
SUITES = {"Math-Verify", "MATH/Minerva", "GSM8K", "Qwen2.5-Math"}


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return conformance.load_cases()


def test_corpus_is_well_formed(cases: list[dict]) -> None:
    ids = Counter(case["id"] for case in cases)
    assert not [i for i, n in ids.items() if n > 1], "case ids must be unique"
    assert {case["suite"] for case in cases} == SUITES
    for suite in SUITES:
        assert sum(case["suite"] == suite for case in cases) >= 20, suite
    for case in cases:
        GradingSettings.from_mapping(case["setting"])  # every case names a valid setting
        assert case["expected"] in (0, 1) and case["source"].strip()
        assert "\\boxed" in case["completion"] or "\\fbox" in case["completion"], case["id"]


def test_every_documented_disagreement_is_listed_in_the_docs(cases: list[dict]) -> None:
    listed = set(re.findall(r"`([a-z0-9_]+-\d{3})`", DOC.read_text(encoding="utf-8")))
    documented = {case["id"] for case in cases if "flexmg" in case}
    assert documented <= listed, f"add to docs/grading.md: {sorted(documented - listed)}"


def test_a_malformed_case_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "gold": "1"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1: a case needs"):
        conformance.load_cases(tmp_path)


def test_a_sample_of_each_suite_grades_as_documented(cases: list[dict]) -> None:
    sample = [c for suite in sorted(SUITES) for c in [x for x in cases if x["suite"] == suite][:6]]
    outcomes = conformance.grade_cases(sample)
    wrong = [(o.case["id"], o.got, o.reason) for o in outcomes if not o.as_documented]
    assert not wrong


@pytest.mark.slow
def test_whole_corpus_grades_as_documented(cases: list[dict]) -> None:
    outcomes = conformance.grade_cases(cases)
    wrong = [(o.case["id"], o.got, o.reason) for o in outcomes if not o.as_documented]
    assert not wrong
    table = conformance.summarize(outcomes)
    assert all(row["unexpected"] == 0 for row in table.values())
