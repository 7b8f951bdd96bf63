"""The kinds of wrong math answers the learning report counts."""

from __future__ import annotations

import pytest

from flexmg.envs.math.answers import ANSWER_KINDS, answer_kind, number_of, same_answer


@pytest.mark.parametrize(
    ("answer", "correct", "gold", "earlier", "kind"),
    [
        ("12", True, "12", (), "right"),
        ("13", False, "12", (), "off_by_one"),
        ("11", False, "12", (), "off_by_one"),
        ("-12", False, "12", (), "sign"),
        ("0", False, "0", (), "other"),  # -0 is not a sign slip
        (None, False, "12", ("12",), "no_answer"),
        ("13", False, "12", ("13",), "repeats_earlier"),  # a copied slip counts as copying
        ("13.0", False, "12", ("13",), "repeats_earlier"),
        ("7", False, "12", ("13", None), "other"),
        ("x+1", False, "x+2", ("x + 1",), "repeats_earlier"),
        ("\\frac{3}{4}", False, "-\\frac{3}{4}", (), "sign"),
    ],
)
def test_answer_kinds(answer, correct, gold, earlier, kind) -> None:
    assert answer_kind(answer, correct, gold, earlier) == kind
    assert kind in ANSWER_KINDS


def test_numbers_and_sameness() -> None:
    assert number_of("1/0") is None and number_of("") is None and number_of("1e5") is None
    assert same_answer("3/4", "\\frac{3}{4}") and not same_answer("3", "4")


def test_the_env_names_each_role_answer_and_copying() -> None:
    import flexmg

    env = flexmg.make("math-2agent")
    env.reset(seed=0)
    gold = int(env.task.answer)
    env.step(f"It is {gold + 1}.")
    env.step(f"\\boxed{{{gold + 1}}}")
    roles = env.episode_metrics["per_role"]
    assert (roles["solver"]["answer_kind"], roles["solver"]["copies_earlier"]) == (
        "off_by_one",
        False,
    )
    assert (roles["verifier"]["answer_kind"], roles["verifier"]["copies_earlier"]) == (
        "repeats_earlier",
        True,
    )
    env.reset(seed=0)
    env.step(f"It is {gold + 1}.")
    env.step(f"No: {gold}.")
    roles = env.episode_metrics["per_role"]
    assert roles["verifier"]["answer_kind"] == "right" and not roles["verifier"]["copies_earlier"]
