"""The check family: a verifier with a real signal, the evaluation of the solver's expression.

Each problem is an arithmetic expression with two- and three-digit numbers
(``What is 347 * 29 - 118?``): easy to write down, easy to get wrong by mental
arithmetic. The solver sees the problem and writes it as an expression (on a
line ``Expression: ...``). The env evaluates that expression with a safe
evaluator (integers, ``+ - * /``, parentheses; no code is run) and shows the
result to the checker, which never sees the problem: it accepts the solver's
answer or corrects it to the evaluated value. With a mute solver the checker
has nothing to work from and can only guess.

``check-1agent`` is the fair single-agent counterpart: one solver, two rounds
(the same two actions as the team), the evaluation of its round-1 expression
shown to it in round 2.

| | |
|---|---|
| Ids | ``check-2agent-v1``, ``check-1agent-v1`` |
| Agents (graph order) | 2: solver -> checker; 1: solver (horizon 2) |
| Graph | a path: the checker sees the solver's message and the env's evaluation of its expression |
| Observation keys | ``task`` (the problem for the solver; a notice that it is hidden for the checker), ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | as in the math family: ``(1 - format_weight) * correct + format_weight * format_ok`` of the graded role's answer |
| Graded role | the last role of the round (checker; the solver alone in check-1agent) |
| Episode end | terminated when solved or when the last round (``horizon``: 1 for the team, 2 alone) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (``None`` or a :class:`CheckConfig` or its dict), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``grade_timeout``, ``format_weight`` |
| Credit info | as in the math family (``answer``, ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``grade_reason``, ``graded``); the solver's turn records ``annotation`` (the evaluation, or why there is none) |

Version history:
    v1: the format term is paid only for a box that commits to a value (right or wrong): a box holding a hedge, prose or a free variable earns nothing (the math family's v3 reward).
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("check-2agent")
    >>> env.reset(seed=0)
    >>> env.step("Expression: " + env.task.meta["expression"])
    >>> env.observe("checker")["context"].splitlines()[-1].startswith("[env on solver]: ")
    True
    >>> env.step(checker_from(env.observe("checker")["context"]))
    >>> env.rewards["solver"]
    1.0
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from flexmg.env import TurnRecord
from flexmg.envs.families.common import team_workflows
from flexmg.envs.families.math import BOX, FORMAT_WEIGHT, MathReward, math_score
from flexmg.family import Family
from flexmg.tasks import Task, check_split, split_of, stable_hash
from flexmg.workflow import Workflow

VERSION = 1

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {
    "check-2agent": ("solver", "checker"),
    "check-1agent": ("solver",),
}

HIDDEN = (
    "The problem is hidden from you; you see the solver's message and what its expression "
    "evaluates to."
)

EXPRESSION = "Write the problem as one arithmetic expression on a line `Expression: ...`."

PROMPTS: dict[str, str] = {
    "solver": (
        f"You are the solver. {EXPRESSION} Then give your answer. {BOX} If you see the "
        "evaluation of an earlier expression, use it."
    ),
    "checker": (
        "You are the checker. You cannot see the problem. The env evaluated the solver's "
        "expression: accept the solver's answer if it matches, else correct it. " + BOX
    ),
}

OPTIONS: dict[str, Any] = {"grade_timeout": 1.0, "format_weight": FORMAT_WEIGHT}

#: Problem shapes: ``{a}``, ``{b}``, ``{c}`` are filled with numbers.
SHAPES: tuple[str, ...] = (
    "{a} * {b} - {c}",
    "{a} * {b} + {c}",
    "({a} + {b}) * {c}",
    "{a} * ({b} - {c})",
)

#: The evaluator's limits: expressions longer than this, or numbers with more digits, are refused.
MAX_EXPRESSION_CHARS = 160
MAX_NUMBER_DIGITS = 15


@dataclass(frozen=True)
class CheckConfig:
    """The check family's tasks: numbers in ``low..high``, shapes from :data:`SHAPES`.

    >>> CheckConfig(shapes=("{a} ** {b}",)).validate()
    Traceback (most recent call last):
    ...
    ValueError: CheckConfig.shapes must be a non-empty subset of SHAPES, got ('{a} ** {b}',)
    """

    low: int = 12
    high: int = 999
    shapes: tuple[str, ...] = SHAPES

    def validate(self) -> CheckConfig:
        """Return self, or raise ``ValueError`` naming the bad field."""
        if not (isinstance(self.low, int) and isinstance(self.high, int)) or not (
            1 <= self.low < self.high <= 10**6
        ):
            raise ValueError(
                f"CheckConfig needs 1 <= low < high <= 10**6, got low={self.low} high={self.high}"
            )
        if not self.shapes or any(s not in SHAPES for s in self.shapes):
            raise ValueError(
                f"CheckConfig.shapes must be a non-empty subset of SHAPES, got {self.shapes}"
            )
        return self

    @classmethod
    def of(cls, spec: Any) -> CheckConfig:
        """The config of a ``tasks=`` spec: None, a CheckConfig or its dict."""
        if spec is None:
            return cls()
        if isinstance(spec, CheckConfig):
            return spec.validate()
        if isinstance(spec, dict):
            fields = {**spec, **({"shapes": tuple(spec["shapes"])} if "shapes" in spec else {})}
            try:
                return cls(**fields).validate()
            except TypeError as err:
                raise ValueError(f"bad CheckConfig fields {sorted(spec)}: {err}") from None
        raise TypeError(f"tasks= must be None, a CheckConfig or a dict, got {type(spec).__name__}")


class CheckTaskSource:
    """Procedural expression problems, seeded by index, kept to one split by their form.

    >>> src = CheckTaskSource(CheckConfig(), "test")
    >>> src.get(0) == src.get(0), src.get(0).answer == str(evaluate_expression(src.get(0).meta["expression"])[0])
    (True, True)
    """

    def __init__(self, config: CheckConfig, split: str) -> None:
        check_split(split)
        self.config = config.validate()
        self.split = split
        self.name = "check"

    def get(self, index: int) -> Task:
        """The task at ``index`` (same on every call and machine)."""
        rng = random.Random(stable_hash("check-family", asdict(self.config), self.split, index))
        c = self.config
        while True:
            shape = rng.choice(c.shapes)
            numbers = {k: rng.randint(c.low, c.high) for k in "abc"}
            form = shape.format(**numbers)
            if self.split == "all" or split_of(f"check/{form}") == self.split:
                break
        value, _ = evaluate_expression(form)
        return Task(
            id=f"check/{form}",
            prompt=f"What is {form}?",
            answer=str(value),
            meta={"expression": form, "solution": f"{form} = {value}"},
        )


def check_task_source(spec: Any, split: str) -> CheckTaskSource:
    """``tasks=`` of the check envs: None, a :class:`CheckConfig` or its dict."""
    return CheckTaskSource(CheckConfig.of(spec), split)


def hidden_task(task: Task) -> str:
    """What the checker sees of the task: a notice, never the problem."""
    return HIDDEN


# ----------------------------------------------------------------- the safe evaluator
_LABELLED = re.compile(r"expression\s*:\s*([^\n]*)", re.IGNORECASE)
# no required last character: a greedy run never backtracks, so hostile text stays linear
_RUN = re.compile(r"[\d(][\d +\-*/()]*")
_OPERATOR = re.compile(r"\d ?\)* ?[-+*/] ?\(* ?-?\d")
_NUM = re.compile(r"\d+")


def find_expression(message: str) -> str | None:
    """The solver's expression: its last ``Expression: ...`` line, else its first arithmetic run.

    >>> find_expression("Expression: 3 * (4 - 1)\\nso \\\\boxed{9}")
    '3 * (4 - 1)'
    >>> find_expression("I get 12 * 5 = 60"), find_expression("just 60")
    ('12 * 5', None)
    """
    text = message[:65536].replace("×", "*").replace("÷", "/").replace("−", "-")
    labelled = _LABELLED.findall(text)
    if labelled:
        cut = labelled[-1].split("=")[0].strip().rstrip(".")
        return cut or None
    for line in text.splitlines():
        for found in _RUN.findall(re.sub(r"[ \t]+", " ", line)):
            run = found.rstrip(" +-*/(")
            if _OPERATOR.search(run[: 2 * MAX_EXPRESSION_CHARS]):
                return run.strip()
    return None


def evaluate_expression(expression: str) -> tuple[Fraction | None, str]:
    """The exact value of an arithmetic expression, or None and the reason it has none.

    Only integers, ``+ - * /`` and parentheses are read (never ``eval``); at most
    :data:`MAX_EXPRESSION_CHARS` characters and :data:`MAX_NUMBER_DIGITS` digits a number.

    >>> evaluate_expression("347 * 29 - 118")
    (Fraction(9945, 1), 'ok')
    >>> evaluate_expression("1 / 0"), evaluate_expression("os.exit(1)")[1][:44]
    ((None, 'division by zero'), 'not arithmetic: unexpected character at 0 in')
    """
    from flexmg.envs.math.generators.expression import evaluate

    if len(expression) > MAX_EXPRESSION_CHARS:
        return None, f"too long ({len(expression)} characters; at most {MAX_EXPRESSION_CHARS})"
    if any(len(n) > MAX_NUMBER_DIGITS for n in _NUM.findall(expression)):
        return None, f"a number has more than {MAX_NUMBER_DIGITS} digits"
    try:
        return evaluate(expression), "ok"
    except ZeroDivisionError:
        return None, "division by zero"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as err:
        return None, f"not arithmetic: {str(err)[:200]}"


def show_value(value: Fraction) -> str:
    """An exact value as the checker reads it: an integer, else ``p/q (≈ decimal)``.

    >>> show_value(Fraction(7, 2)), show_value(Fraction(-4))
    ('7/2 (= 3.5)', '-4')
    """
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator} (= {float(value):.6g})"


def evaluation_note(message: str) -> str:
    """What the env shows after a solver's turn: its expression's value, or why there is none.

    >>> evaluation_note("Expression: 2 * 21")
    'the expression 2 * 21 evaluates to 42'
    >>> evaluation_note("ok")
    'no expression found (write a line `Expression: ...`)'
    """
    expression = find_expression(message)
    if expression is None:
        return "no expression found (write a line `Expression: ...`)"
    value, reason = evaluate_expression(expression)
    shown = expression if len(expression) <= 200 else expression[:200] + "..."
    if value is None:
        return f"the expression {shown} cannot be evaluated: {reason}"
    return f"the expression {shown} evaluates to {show_value(value)}"


class CheckReward(MathReward):
    """The math family's reward; after a solver's turn, the evaluation of its expression."""

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CheckReward:
        """Build from the env's options (``grade_timeout``, ``format_weight``)."""
        return cls(
            grade_timeout=options.get("grade_timeout", 1.0),
            format_weight=options.get("format_weight", FORMAT_WEIGHT),
        )

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        """After a ``solver`` turn: :func:`evaluation_note` of its message."""
        turn = transcript[-1]
        return evaluation_note(turn.action) if turn.role == "solver" else None


# ----------------------------------------------------------------- scripted roles
_EVALUATED = re.compile(r"evaluates to (-?\d+(?:/\d+)?)")


def solver_from(task_view: str, context: str = "") -> str:
    """A scripted solver from its own observation: the evaluation it was shown, else the expression.

    >>> solver_from("What is 2 * 21?")
    'Expression: 2 * 21'
    >>> solver_from("What is 2 * 21?", "[env on solver]: the expression 2 * 21 evaluates to 42")
    'Expression: 2 * 21\\nThe answer is \\\\boxed{42}.'
    """
    match = re.search(r"What is (.+)\?", task_view)
    line = f"Expression: {match.group(1)}" if match else "Expression: none"
    seen = _EVALUATED.findall(context[-8192:])
    return f"{line}\nThe answer is \\boxed{{{seen[-1]}}}." if seen else line


def checker_from(context: str) -> str:
    """A scripted checker: boxes the evaluated value it was shown, else guesses 0.

    >>> checker_from("[env on solver]: the expression 2 * 21 evaluates to 42")
    '\\\\boxed{42}'
    """
    seen = _EVALUATED.findall(context[-8192:])
    return f"\\boxed{{{seen[-1] if seen else 0}}}"


def check_oracle(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The scripted oracle's message: the problem's expression, and its value when graded.

    >>> check_oracle(Task("t", "p", "42", {"expression": "2 * 21"}), "solver", "", graded=False)
    'Expression: 2 * 21'
    """
    line = f"Expression: {task.meta.get('expression', '')}"
    return f"{line}\nThe answer is \\boxed{{{task.answer}}}." if graded else line


#: The family's metadata.
FAMILY = Family(
    name="check",
    teams=TEAMS,
    tasks=check_task_source,
    oracle=check_oracle,
    score=math_score,
    ability="multi-agent",
)

#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    FAMILY,
    prompts=PROMPTS,
    describe=lambda roles: (
        "verifier with a signal: the checker sees the solver's expression evaluated (graded)"
        if len(roles) > 1
        else "verifier's single-agent counterpart: two rounds, the evaluation shown in round 2"
    ),
    per_team=lambda roles: {
        "edges": list(zip(roles, roles[1:])),
        "task_views": {r: hidden_task for r in roles[1:]},
        "horizon": 1 if len(roles) > 1 else 2,
    },
    reward_factory=CheckReward.from_options,
    options=OPTIONS,
)

check_2agent = WORKFLOWS["check-2agent"]
check_1agent = WORKFLOWS["check-1agent"]
