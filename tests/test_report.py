"""The learning report: paired figures, pass@k, transitions, answer kinds, copying."""

from __future__ import annotations

import pytest

from flexmg.report import learning_report, render_report


def _ep(solver: tuple[str, bool], verifier: tuple[str, bool], copies: bool) -> dict:
    def role(kind: str, right: bool, **extra) -> dict:
        return {"answer_correct": right, "format_ok": right, "answer_kind": kind, **extra}

    return {
        "graded_role": "verifier",
        "success": verifier[1],
        "per_role": {
            "solver": role(*solver, copies_earlier=False),
            "verifier": role(*verifier, copies_earlier=copies),
        },
    }


WRONG_COPY = _ep(("off_by_one", False), ("repeats_earlier", False), True)
RIGHT_COPY = _ep(("right", True), ("right", True), True)
FIXED = _ep(("off_by_one", False), ("right", True), False)


def test_paired_gain_transitions_kinds_and_copying() -> None:
    start = {"greedy": [WRONG_COPY, WRONG_COPY, RIGHT_COPY, RIGHT_COPY],
             "sampled": [[WRONG_COPY] * 4, [WRONG_COPY] * 4, [RIGHT_COPY] * 4, [RIGHT_COPY] * 4]}  # fmt: skip
    end = {"greedy": [FIXED, FIXED, RIGHT_COPY, WRONG_COPY],
           "sampled": [[FIXED] * 4, [FIXED, WRONG_COPY] * 2, [RIGHT_COPY] * 4, [WRONG_COPY] * 4]}  # fmt: skip
    r = learning_report(start, end, ks=(1, 4, 8))
    team = r["team"]
    assert team["greedy"]["correct"]["start"] == 0.5 and team["greedy"]["correct"]["end"] == 0.75
    assert team["greedy"]["correct"]["gain"] == 0.25
    assert team["sampled"]["correct"]["end"] == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert team["transitions"] == {"wrong_to_right": 2, "right_to_wrong": 1,
                                   "right_to_right": 1, "wrong_to_wrong": 0}  # fmt: skip
    assert team["pass@4"]["end"] == 0.75 and "pass@8" not in team  # 4 samples: no pass@8
    verifier = r["roles"]["verifier"]
    assert verifier["answer_kinds"]["start"]["greedy"] == {"repeats_earlier": 0.5, "right": 0.5}
    assert verifier["copying"]["start"] == {"copies": 1.0, "copies_wrong": 0.5}
    assert verifier["copying"]["end"] == {"copies": 0.5, "copies_wrong": 0.25}
    assert r["roles"]["solver"]["greedy"]["correct"]["gain"] == -0.25
    text = render_report(r)
    assert "2 wrong -> right, 1 right -> wrong" in text and "## role `verifier`" in text


def test_unreported_metrics_are_left_out_and_misaligned_prompts_refused() -> None:
    bare = {"graded_role": "a", "success": True, "per_role": {"a": {}}}
    r = learning_report({"greedy": [bare], "sampled": []}, {"greedy": [bare], "sampled": []})
    assert r["team"] == {}  # no correct/format/kinds reported: nothing made up
    with pytest.raises(ValueError, match="same prompts"):
        learning_report({"greedy": [WRONG_COPY], "sampled": []}, {"greedy": [], "sampled": []})
