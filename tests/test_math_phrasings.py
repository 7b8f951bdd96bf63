"""Other wordings of the arithmetic problems: same answers and splits, distinct prompts."""

from __future__ import annotations

import pytest

from flexmg.envs.math import make_math_source
from flexmg.envs.math.generators.arithmetic import ArithmeticGenerator
from flexmg.envs.math.generators.phrasings import UNSEEN, phrase, phrasings
from flexmg.tasks import split_of


def test_a_wording_keeps_the_answer_the_canonical_form_and_the_split() -> None:
    plain = ArithmeticGenerator(ops="+-", split="test")
    tasks = [plain.get(i) for i in range(100)]
    for op in "+-":
        for wording in phrasings(op, negatives=False):
            worded = ArithmeticGenerator(ops=op, split="test", phrasing=wording)
            by_prompt = {p.prompt: p for p in worded.problems() if worded.in_split(p)}
            for task in tasks:
                a, task_op, b = task.prompt.removeprefix("What is ").removesuffix("?").split(" ")
                if task_op != op:
                    continue
                p = by_prompt[phrase(int(a), op, int(b), wording)]
                assert p.canonical == task.meta["canonical"] and str(p.answer) == task.answer
                assert split_of(p.canonical) == "test" and p.phrasing == wording


def test_unseen_draws_every_wording_and_never_the_training_one() -> None:
    source = make_math_source(
        {"name": "arithmetic", "ops": "+-", "phrasing": "unseen"}, split="test"
    )
    tasks = [source.get(i) for i in range(600)]
    seen = {t.meta["phrasing"] for t in tasks}
    assert seen == set(UNSEEN["+"]) | set(UNSEEN["-"])
    assert all(t.meta["phrasing"] != "what_is" for t in tasks)
    assert {t.meta["split"] for t in tasks} == {"test"}


def test_word_problems_are_left_out_where_numbers_can_be_negative() -> None:
    source = ArithmeticGenerator(difficulty=4, phrasing="unseen")
    wordings = {source.get(i).meta["phrasing"] for i in range(300)}
    assert wordings and not any(w.startswith("word_") for w in wordings)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"phrasing": "shout"}, "phrasing must be one of"),
        ({"ops": "+-", "phrasing": "add"}, "has no wording for"),
        ({"ops": "+", "negatives": True, "phrasing": "word_box"}, "word problem"),
    ],
)
def test_bad_wordings_are_one_clear_error(fields: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ArithmeticGenerator(**fields)
