"""The tiny program language behind the procedural code tasks.

A *spec* is a JSON-able dict that describes one small function ``f``. This
module gives a spec its meaning (:func:`evaluate`, used for the hidden tests'
expected values and the canonical form), its Python text
(:func:`render_code`, the reference solution), its English prompt
(:func:`render_prompt`) and its systematic mistakes (:func:`mutations`, the
wrong variants a noisy teacher draws from). Nothing here runs generated code:
expected values come from interpreting the spec, and the sandbox tests that
the rendered code agrees.

Spec kinds (``spec["kind"]``) and their arguments:

=============  ========  =====================================================
kind           args      meaning
=============  ========  =====================================================
``arith``      x         ``steps`` applied to x (``x * 3 + 1``)
``binary``     a, b      ``a + b``, ``a - b``, ``a * b``, ``max``, ``min``,
                         then ``steps``
``branch``     x         ``arms`` ``[cond, steps]`` tried in order, else
                         ``otherwise`` steps
``list_map``   xs        ``[steps(x) for x in xs if keep(x)]``
``list_reduce`` xs       ``sum``/``len``/``max``/``min`` of the mapped,
                         kept elements
``string``     s         string ``ops`` in order (slices, case, repeat)
=============  ========  =====================================================

Example:
    >>> spec = {"kind": "arith", "steps": [["*", 3], ["+", 1]]}
    >>> evaluate(spec, [2])
    7
    >>> print(render_code(spec), end="")
    def f(x):
        return x * 3 + 1
    >>> render_prompt(spec, example=[2])
    'Write `f(x)` that returns x * 3 + 1. For example, f(2) returns 7.'
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "ARGS",
    "COMPARISONS",
    "KINDS",
    "STRING_OPS",
    "MULTIPLICATIVE",
    "Spec",
    "behaviour",
    "call_text",
    "canonical_form",
    "evaluate",
    "mutations",
    "outcome",
    "render_code",
    "render_prompt",
]

Spec = dict[str, Any]

#: The argument names of ``f`` for each kind.
ARGS: dict[str, tuple[str, ...]] = {
    "arith": ("x",),
    "binary": ("a", "b"),
    "branch": ("x",),
    "list_map": ("xs",),
    "list_reduce": ("xs",),
    "string": ("s",),
}
KINDS = tuple(ARGS)

# operator -> (precedence, function, words for "every element ...")
_ARITH: dict[str, tuple[int, Callable[[int, int], int], str]] = {
    "+": (1, operator.add, "increased by {c}"),
    "-": (1, operator.sub, "decreased by {c}"),
    "*": (2, operator.mul, "multiplied by {c}"),
    "//": (2, operator.floordiv, "floor-divided by {c}"),
    "%": (2, operator.mod, "taken modulo {c}"),
}
#: Operators whose constant must be at least 2 (1 would be a no-op, 0 an error).
MULTIPLICATIVE = frozenset({"*", "//", "%"})

# comparison -> (test, words after "is")
COMPARISONS: dict[str, tuple[Callable[[int, int], bool], str]] = {
    ">": (operator.gt, "greater than {c}"),
    "<": (operator.lt, "less than {c}"),
    ">=": (operator.ge, "at least {c}"),
    "<=": (operator.le, "at most {c}"),
    "==": (operator.eq, "equal to {c}"),
    "!=": (operator.ne, "not equal to {c}"),
    "even": (lambda v, c: v % 2 == 0, "even"),
    "odd": (lambda v, c: v % 2 == 1, "odd"),
}

# binary op -> (precedence, code, function, words)
_BINARY: dict[str, tuple[int, str, Callable[[int, int], int], str]] = {
    "+": (1, "a + b", operator.add, "the sum of a and b"),
    "-": (1, "a - b", operator.sub, "a minus b"),
    "*": (2, "a * b", operator.mul, "the product of a and b"),
    "max": (3, "max(a, b)", max, "the larger of a and b"),
    "min": (3, "min(a, b)", min, "the smaller of a and b"),
}

# string op -> (function(s, k), code suffix or infix, noun phrase, verb phrase)
STRING_OPS: dict[str, tuple[Callable[[str, Any], str], str, str, str]] = {
    "head": (
        lambda s, k: s[:k],
        "[:{k}]",
        "the first {k} characters of s",
        "keeps its first {k} characters",
    ),
    "tail": (
        lambda s, k: s[-k:],
        "[-{k}:]",
        "the last {k} characters of s",
        "keeps its last {k} characters",
    ),
    "drop": (
        lambda s, k: s[k:],
        "[{k}:]",
        "s without its first {k} characters",
        "drops its first {k} characters",
    ),
    "reverse": (lambda s, k: s[::-1], "[::-1]", "s reversed", "reverses it"),
    "upper": (lambda s, k: s.upper(), ".upper()", "s in upper case", "makes it upper case"),
    "lower": (lambda s, k: s.lower(), ".lower()", "s in lower case", "makes it lower case"),
    "repeat": (lambda s, k: s * k, " * {k}", "s repeated {k} times", "repeats it {k} times"),
    "append": (lambda s, k: s + k, " + {k!r}", "s followed by {k!r}", "appends {k!r}"),
}
_STRING_PREC = {"repeat": 2, "append": 1}  # the rest are postfix (precedence 3)

# ----------------------------------------------------------------- meaning


def _apply_steps(value: int, steps: list[list[Any]]) -> int:
    for op, c in steps:
        value = _ARITH[op][1](value, c)
    return value


def _holds(value: int, cond: list[Any]) -> bool:
    cmp, c = cond
    return bool(COMPARISONS[cmp][0](value, c))


def evaluate(spec: Spec, args: list[Any]) -> Any:
    """What ``f(*args)`` returns for ``spec`` (exceptions propagate, as in Python).

    >>> evaluate({"kind": "list_map", "steps": [["*", 2]], "keep": [">", 0]}, [[-1, 3]])
    [6]
    """
    kind = spec["kind"]
    if kind == "arith":
        return _apply_steps(args[0], spec["steps"])
    if kind == "binary":
        return _apply_steps(_BINARY[spec["op"]][2](args[0], args[1]), spec["steps"])
    if kind == "branch":
        x = args[0]
        for cond, steps in spec["arms"]:
            if _holds(x, cond):
                return _apply_steps(x, steps)
        return _apply_steps(x, spec["otherwise"])
    if kind in ("list_map", "list_reduce"):
        keep = spec.get("keep")
        values = [_apply_steps(x, spec["steps"]) for x in args[0] if not keep or _holds(x, keep)]
        if kind == "list_map":
            return values
        return {"sum": sum, "len": len, "max": max, "min": min}[spec["reduce"]](values)
    if kind == "string":
        s = args[0]
        for name, k in spec["ops"]:
            s = STRING_OPS[name][0](s, k)
        return s
    raise ValueError(f"unknown spec kind {kind!r}; expected one of {KINDS}")


# Fixed probe inputs per argument list: two specs with the same outputs on all
# of them are treated as the same task (the canonical form decides the split).
_PROBES: dict[tuple[str, ...], list[list[Any]]] = {
    ("x",): [[v] for v in range(-24, 25)],
    ("a", "b"): [[a, b] for a in (-9, -4, 0, 1, 5, 8, 13) for b in (-7, -2, 0, 3, 6, 11)],
    ("xs",): [
        [[]],
        [[0]],
        [[7]],
        [[-4]],
        [[1, 2, 3]],
        [[4, -2, 7, 0]],
        [[9, 9, 1]],
        [[-5, -8, -1]],
        [[2, 4, 6, 8, 10, 12, 14]],
        [[13, -13, 21, 3, -7, 0, 5]],
        [list(range(-25, 26, 3))],
        [[20, -20, 11, -11, 6, -6, 1]],
    ],
    ("s",): [
        [""],
        ["a"],
        ["Ab"],
        ["hello"],
        ["World!"],
        ["abcdefgh"],
        ["XYZ xyz"],
        ["Python3"],
        ["aBcDeFgHiJkLmN"],
        ["The quick brown fox"],
    ],
}


def outcome(spec: Spec, args: list[Any]) -> str:
    """``repr`` of what ``f(*args)`` returns, or ``<ErrorName>`` when it raises
    (``max([])`` is part of a function's behaviour)."""
    try:
        return repr(evaluate(spec, args))
    except Exception as e:  # max([]) and friends: part of the behaviour
        return f"<{type(e).__name__}>"


_BEHAVIOUR_MEMO: dict[str, tuple[str, ...]] = {}
_MEMO_LIMIT = 50_000


def behaviour(spec: Spec) -> tuple[str, ...]:
    """What ``spec`` returns (or raises) on each fixed probe input of its kind."""
    key = repr(spec)
    found = _BEHAVIOUR_MEMO.get(key)
    if found is None:
        if len(_BEHAVIOUR_MEMO) >= _MEMO_LIMIT:
            _BEHAVIOUR_MEMO.clear()
        found = tuple(outcome(spec, probe) for probe in _PROBES[ARGS[spec["kind"]]])
        _BEHAVIOUR_MEMO[key] = found
    return found


def canonical_form(spec: Spec, outcomes: tuple[str, ...] | None = None) -> str:
    """The behaviour of ``spec`` on fixed probe inputs, as text.

    Equivalent tasks (``x + 2 + 1`` and ``x + 3``; ``max(a, b)`` however it is
    written) have the same canonical form, so a split decided on it never puts
    one in train and its twin in eval. Pass ``outcomes`` when
    :func:`behaviour` was already computed.

    >>> a = {"kind": "arith", "steps": [["+", 2], ["+", 1]]}
    >>> canonical_form(a) == canonical_form({"kind": "arith", "steps": [["+", 3]]})
    True
    """
    if outcomes is None:
        outcomes = behaviour(spec)
    return f"f({', '.join(ARGS[spec['kind']])}):" + ",".join(outcomes)


# ----------------------------------------------------------------- text


def _expr(start: str, prec: int, steps: list[list[Any]]) -> tuple[str, int]:
    """Python text of ``steps`` applied to ``start`` (of precedence ``prec``),
    with only the parentheses Python needs."""
    text = start
    for op, c in steps:
        op_prec = _ARITH[op][0]
        if prec < op_prec:
            text = f"({text})"
        text, prec = f"{text} {op} {c}", op_prec
    return text, prec


def _cond_code(var: str, cond: list[Any]) -> str:
    cmp, c = cond
    if cmp in ("even", "odd"):
        return f"{var} % 2 == {0 if cmp == 'even' else 1}"
    return f"{var} {cmp} {c}"


def _cond_words(cond: list[Any]) -> str:
    cmp, c = cond
    return COMPARISONS[cmp][1].format(c=c)


def _string_code(ops: list[list[Any]]) -> str:
    text, prec = "s", 3
    for name, k in ops:
        pattern = STRING_OPS[name][1]
        op_prec = _STRING_PREC.get(name, 3)
        if prec < op_prec:
            text = f"({text})"
        text, prec = text + pattern.format(k=k), op_prec
    return text


def _body(spec: Spec) -> list[str]:
    """The lines of ``f``'s body (without indentation)."""
    kind = spec["kind"]
    if kind == "arith":
        return [f"return {_expr('x', 3, spec['steps'])[0]}"]
    if kind == "binary":
        prec, code = _BINARY[spec["op"]][:2]
        return [f"return {_expr(code, prec, spec['steps'])[0]}"]
    if kind == "branch":
        lines = []
        for cond, steps in spec["arms"]:
            lines += [f"if {_cond_code('x', cond)}:", f"    return {_expr('x', 3, steps)[0]}"]
        return [*lines, f"return {_expr('x', 3, spec['otherwise'])[0]}"]
    if kind in ("list_map", "list_reduce"):
        item = _expr("x", 3, spec["steps"])[0]
        keep = spec.get("keep")
        rule = f" if {_cond_code('x', keep)}" if keep else ""
        if kind == "list_map":
            return [f"return [{item} for x in xs{rule}]"]
        reduce = spec["reduce"]
        if item == "x" and not keep:
            return [f"return {reduce}(xs)"]
        if reduce == "len":
            return [f"return len([{item} for x in xs{rule}])"]
        return [f"return {reduce}({item} for x in xs{rule})"]
    if kind == "string":
        return [f"return {_string_code(spec['ops'])}"]
    raise ValueError(f"unknown spec kind {kind!r}; expected one of {KINDS}")


def render_code(spec: Spec) -> str:
    """The reference solution: a complete ``def f(...)`` (newline-terminated).

    >>> print(render_code({"kind": "string", "ops": [["reverse", 0], ["head", 3]]}), end="")
    def f(s):
        return s[::-1][:3]
    """
    head = f"def f({', '.join(ARGS[spec['kind']])}):"
    return "\n".join([head, *("    " + line for line in _body(spec))]) + "\n"


def call_text(spec: Spec, args: list[Any]) -> str:
    """``f(<args>)`` as Python text, e.g. ``f([1, 2], 'ab')``."""
    return f"f({', '.join(repr(a) for a in args)})"


def _list_words(spec: Spec) -> str:
    steps, keep = spec["steps"], spec.get("keep")
    item = _expr("x", 3, steps)[0]
    kept = f" that is {_cond_words(keep)}" if keep else ""
    if spec["kind"] == "list_map":
        if not steps:
            return f"the elements of xs that are {_cond_words(keep)}, in order"
        if len(steps) == 1 and not keep:
            op, c = steps[0]
            return f"the list xs with every element {_ARITH[op][2].format(c=c)}"
        return f"the list of {item} for each element x of xs{kept}, in order"
    reduce = spec["reduce"]
    if reduce == "len":
        return f"the number of elements of xs{kept.replace(' is ', ' are ')}"
    noun = {"sum": "the sum", "max": "the largest value", "min": "the smallest value"}[reduce]
    never_empty = "" if reduce == "sum" else " (xs is never empty)"
    if not steps and not keep:
        plain = {"sum": "the sum of the elements", "max": "the largest element"}
        return plain.get(reduce, "the smallest element") + " of xs" + never_empty
    return f"{noun} of {item} for each element x of xs{kept}{never_empty}"


def _what(spec: Spec) -> str:
    """What ``f`` returns, in words (the end of "Write `f(x)` that returns ...")."""
    kind = spec["kind"]
    if kind == "arith":
        return _expr("x", 3, spec["steps"])[0]
    if kind == "binary":
        if not spec["steps"]:
            return _BINARY[spec["op"]][3]
        prec, code = _BINARY[spec["op"]][:2]
        return _expr(code, prec, spec["steps"])[0]
    if kind == "branch":
        parts = [
            f"{_expr('x', 3, steps)[0]} if x is {_cond_words(cond)}" for cond, steps in spec["arms"]
        ]
        return ", ".join(parts) + f", and {_expr('x', 3, spec['otherwise'])[0]} otherwise"
    if kind in ("list_map", "list_reduce"):
        return _list_words(spec)
    if kind == "string":
        name, k = spec["ops"][0]
        return STRING_OPS[name][2].format(k=k)
    raise ValueError(f"unknown spec kind {kind!r}; expected one of {KINDS}")


def render_prompt(spec: Spec, example: list[Any] | None = None) -> str:
    """The task text shown to the agents, with one worked example call when
    ``example`` (the arguments) is given.

    >>> render_prompt({"kind": "binary", "op": "max", "steps": []})
    'Write `f(a, b)` that returns the larger of a and b.'
    """
    signature = f"f({', '.join(ARGS[spec['kind']])})"
    if spec["kind"] == "string" and len(spec["ops"]) > 1:
        verbs = ", then ".join(STRING_OPS[name][3].format(k=k) for name, k in spec["ops"])
        text = f"Write `{signature}` that takes the string s, {verbs}, and returns the result."
    else:
        text = f"Write `{signature}` that returns {_what(spec)}."
    if example is not None:
        text += f" For example, {call_text(spec, example)} returns {evaluate(spec, example)!r}."
    return text


# ----------------------------------------------------------------- mistakes

_OP_SWAPS = {"+": ("-", "*"), "-": ("+",), "*": ("+", "//"), "//": ("%", "*"), "%": ("//",)}
_CMP_SWAPS = {
    ">": (">=", "<"),
    "<": ("<=", ">"),
    ">=": (">", "<="),
    "<=": ("<", ">="),
    "==": ("!=",),
    "!=": ("==",),
    "even": ("odd",),
    "odd": ("even",),
}
_BINARY_SWAPS = {"+": ("-", "*"), "-": ("+",), "*": ("+",), "max": ("min",), "min": ("max",)}
_REDUCE_SWAPS = {"sum": ("len", "max"), "len": ("sum",), "max": ("min",), "min": ("max",)}
_STRING_SWAPS = {
    "head": ("tail", "drop"),
    "tail": ("head",),
    "drop": ("head",),
    "upper": ("lower",),
    "lower": ("upper",),
}
_SIZED = frozenset({"head", "tail", "drop", "repeat"})


def _step_mutations(steps: list[list[Any]]) -> Iterator[tuple[str, list[list[Any]]]]:
    for i, (op, c) in enumerate(steps):
        lowest = 2 if op in MULTIPLICATIVE else 1
        for delta in (-1, 1):
            if c + delta >= lowest:
                yield "off_by_one", [*steps[:i], [op, c + delta], *steps[i + 1 :]]
        for other in _OP_SWAPS[op]:
            c2 = max(c, 2) if other in MULTIPLICATIVE else c
            yield "wrong_operator", [*steps[:i], [other, c2], *steps[i + 1 :]]
        yield "missing_step", steps[:i] + steps[i + 1 :]


def _cond_mutations(cond: list[Any]) -> Iterator[tuple[str, list[Any]]]:
    cmp, c = cond
    if cmp not in ("even", "odd"):
        yield "off_by_one", [cmp, c - 1]
        yield "off_by_one", [cmp, c + 1]
    for other in _CMP_SWAPS[cmp]:
        yield "wrong_comparison", [other, c]


def _with(spec: Spec, key: str, value: Any) -> Spec:
    out = copy.deepcopy(spec)
    out[key] = value
    return out


def mutations(spec: Spec) -> Iterator[tuple[str, Spec]]:
    """Every single systematic mistake on ``spec``: ``(label, wrong spec)``.

    Labels: ``off_by_one`` (a constant one off), ``wrong_operator``,
    ``wrong_comparison``, ``missing_step``, ``swapped_branches``. A mutation
    may happen to behave like ``spec``; callers check against the tests.

    >>> sorted({label for label, _ in mutations({"kind": "arith", "steps": [["+", 1]]})})
    ['missing_step', 'off_by_one', 'wrong_operator']
    """
    kind = spec["kind"]
    if "steps" in spec:
        for label, steps in _step_mutations(spec["steps"]):
            yield label, _with(spec, "steps", steps)
    if kind == "binary":
        for other in _BINARY_SWAPS[spec["op"]]:
            yield "wrong_operator", _with(spec, "op", other)
    if kind in ("list_map", "list_reduce") and spec.get("keep"):
        for label, keep in _cond_mutations(spec["keep"]):
            yield label, _with(spec, "keep", keep)
    if kind == "list_reduce":
        for other in _REDUCE_SWAPS[spec["reduce"]]:
            yield "wrong_operator", _with(spec, "reduce", other)
    if kind == "branch":
        arms = spec["arms"]
        for i, (cond, steps) in enumerate(arms):
            for label, cond2 in _cond_mutations(cond):
                yield label, _with(spec, "arms", [*arms[:i], [cond2, steps], *arms[i + 1 :]])
            for label, steps2 in _step_mutations(steps):
                yield label, _with(spec, "arms", [*arms[:i], [cond, steps2], *arms[i + 1 :]])
            swapped = _with(spec, "arms", [*arms[:i], [cond, spec["otherwise"]], *arms[i + 1 :]])
            yield "swapped_branches", _with(swapped, "otherwise", steps)
        for label, steps in _step_mutations(spec["otherwise"]):
            yield label, _with(spec, "otherwise", steps)
    if kind == "string":
        ops = spec["ops"]
        for i, (name, k) in enumerate(ops):
            if name in _SIZED:
                for delta in (-1, 1):
                    if k + delta >= 1:
                        yield (
                            "off_by_one",
                            _with(spec, "ops", [*ops[:i], [name, k + delta], *ops[i + 1 :]]),
                        )
            for other in _STRING_SWAPS.get(name, ()):
                yield "wrong_operator", _with(spec, "ops", [*ops[:i], [other, k], *ops[i + 1 :]])
            yield "missing_step", _with(spec, "ops", ops[:i] + ops[i + 1 :])
