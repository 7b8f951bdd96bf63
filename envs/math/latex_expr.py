"""A small, strict LaTeX reader for the answers most math tasks have.

It reads numbers, ``\\frac``, ``\\sqrt``, powers, ``\\pi``, ``e``, letters and
Greek letters, the common functions with a bracketed argument, tuples and
intervals, sets, lists, unions of intervals and matrices into a small tree
(:class:`Node` tuples) that :mod:`flexmg.envs.math.evaluate` computes.

It reads only what has one meaning. Anything a parser could take two ways
(``2^10``, ``3/4x``, ``x(x+1)``, ``\\sin x``, ``\\log 8``, a subscript on a
number, a prime) raises :class:`Ambiguous`, and the answer goes to math-verify
in a worker process instead. So the reader never disagrees with math-verify
about *what* an answer says, only decides faster.

Example:
    >>> read_shape("\\\\frac{1}{2}\\\\sqrt{3}")
    ('expr', ('mul', (('div', ('num', Fraction(1, 1), None, 0), ('num', Fraction(2, 1), None, 0)), ('root', ('num', Fraction(3, 1), None, 0), None))))
    >>> read_shape("[0, 1)")[0:3]
    ('tuple', '[', ')')
    >>> read_shape("3/4x")
    Traceback (most recent call last):
    ...
    flexmg.envs.math.latex_expr.Ambiguous: implicit product after a division
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

Node = tuple[Any, ...]
MAX_CHARS = 400
MAX_DEPTH = 40

_TOKEN = re.compile(
    r"(?P<num>\d+\.\d*|\.\d+|\d+)|(?P<cmd>\\[a-zA-Z]+)|(?P<rows>\\\\)|(?P<esc>\\[{}|])"
    r"|(?P<space>\\[,;:! ]|\s+|~)|(?P<letter>[a-zA-Z])|(?P<sym>[-+*/^_(){}\[\],&=<>|!'])"
)
FUNCTIONS = frozenset("sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh ln exp".split())
GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
    "xi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Phi "
    "Psi Omega".split()
)
_FRACS = frozenset({"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"})
_MATRICES = frozenset({"pmatrix", "bmatrix", "matrix", "smallmatrix"})
_TIMES = frozenset({"\\cdot", "\\times", "*"})


class Ambiguous(Exception):
    """The text is outside what this reader takes to have a single meaning."""


class Malformed(Ambiguous):
    """The text is no expression at all.

    An operator with nothing on one side, a stray dot, an empty group: a parser
    that reads part of it and drops the rest would grade junk.
    """


# Tokens that can never start a value: finding one where a value must start is malformed.
_NOT_A_START = frozenset(
    {"*", "/", "^", "_", ":", "!", "'", "&", ")", "]", "}", "\\}", "=", "<", ">", ",", "end"}
    | {"\\times", "\\cdot", "\\div", "\\circ"}
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    for match in _TOKEN.finditer(text):
        if match.start() != position:
            if text[position] == ".":
                raise Malformed("a stray dot")
            raise Ambiguous(f"unexpected character {text[position]!r}")
        position = match.end()
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            out.append((kind, match.group()))
    if position != len(text):
        if text[position] == ".":
            raise Malformed("a stray dot")
        raise Ambiguous(f"unexpected character {text[position]!r}")
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    # ------------------------------------------------------------ helpers
    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, text: str) -> None:
        if self.take()[1] != text:
            raise Ambiguous(f"expected {text!r}")

    def done(self) -> bool:
        return self.pos >= len(self.tokens)

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Ambiguous("nested too deeply")

    # ------------------------------------------------------------ grammar
    def expr(self) -> Node:
        self.nested()
        terms = [self.term()]
        while self.peek()[1] in ("+", "-"):
            sign = self.take()[1]
            term = self.term()
            terms.append(term if sign == "+" else ("neg", term))
        self.depth -= 1
        return terms[0] if len(terms) == 1 else ("add", tuple(terms))

    def term(self) -> Node:
        factors = [self.signed()]
        after_division = False
        while True:
            kind, text = self.peek()
            if text in _TIMES:
                self.take()
                factors.append(self.signed())
                after_division = False
            elif text in ("/", "\\div"):
                self.take()
                divisor = self.power()
                factors[-1] = ("div", factors[-1], divisor)
                after_division = True
            elif self.starts_factor(kind, text):
                if after_division:
                    raise Ambiguous("implicit product after a division")
                if kind == "num" and self.ends_in_number(factors[-1]):
                    raise Ambiguous("two numbers side by side")
                factors.append(self.power())
            else:
                break
        return factors[0] if len(factors) == 1 else ("mul", tuple(factors))

    @staticmethod
    def ends_in_number(node: Node) -> bool:
        return node[0] == "num" or (node[0] == "pow" and node[2][0] == "num")

    def starts_factor(self, kind: str, text: str) -> bool:
        if kind in ("num", "letter"):
            return True
        if kind == "cmd":
            name = text[1:]
            return text in _FRACS or name in ("sqrt", "pi") or name in GREEK or name in FUNCTIONS
        return text in ("(", "{")

    def signed(self) -> Node:
        if self.peek()[1] == "-":
            self.take()
            return ("neg", self.signed())
        if self.peek()[1] == "+":
            self.take()
            return self.signed()
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.peek()[1] == "^":
            self.take()
            exponent = self.exponent()
            if self.peek()[1] in ("^", "_", "'"):
                raise Ambiguous("a double superscript")
            return ("pow", base, exponent)
        return base

    def exponent(self) -> Node:
        kind, text = self.peek()
        if text == "{":
            return self.group()
        if kind == "num":
            self.take()
            if len(text) != 1:
                raise Ambiguous("an unbraced exponent of several digits")
            return ("num", Fraction(int(text)), None, 0)
        if kind == "letter" or (kind == "cmd" and (text[1:] in GREEK or text == "\\pi")):
            return self.atom()
        if text in _FRACS or text == "\\sqrt":  # x^\frac12: the command is the exponent
            return self.atom()
        if text in _NOT_A_START or kind == "end":
            raise Malformed("a superscript with nothing in it")
        raise Ambiguous("an exponent that is not a group, a digit or a letter")

    def group(self) -> Node:
        self.expect("{")
        inner = self.expr()
        self.expect("}")
        return inner

    def argument(self) -> Node:
        """A ``\\frac``/``\\sqrt`` argument: a group, one digit, one letter or a constant."""
        kind, text = self.peek()
        if text == "{":
            return self.group()
        if kind == "num":
            self.take()
            if "." in text:
                raise Ambiguous("a decimal as an unbraced argument")
            if len(text) > 1:  # \frac12: TeX takes one digit per argument
                self.tokens[self.pos - 1] = ("num", text[1:])
                self.pos -= 1
                text = text[0]
            return ("num", Fraction(int(text)), None, 0)
        if kind == "letter" or (kind == "cmd" and (text[1:] in GREEK or text == "\\pi")):
            return self.atom()
        raise Ambiguous("an argument that is not a group, a digit or a letter")

    def atom(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return self.number(text)
        if kind == "letter":
            return self.letter(text)
        if text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if text == "{":
            inner = self.expr()
            self.expect("}")
            return inner
        if kind == "cmd":
            return self.command(text)
        if text in _NOT_A_START or kind == "end":
            raise Malformed(f"{text or 'the end'!r} where a value must start")
        raise Ambiguous(f"{text!r} cannot start a value")

    def number(self, text: str) -> Node:
        if self.peek()[1] == "_" and "." not in text:
            return self.based(text)
        if self.peek()[1] in ("_", "'", "!"):
            raise Ambiguous("a number with a subscript, prime or factorial")
        if "." in text:
            places = len(text.split(".")[1])
            digits = len(text.replace(".", "").lstrip("0"))
            return ("num", Fraction(text), places, digits)
        value: Node = ("num", Fraction(int(text)), None, 0)
        if self.peek()[1] in _FRACS:  # a mixed number: 1\frac{4}{5} is 9/5
            save = self.pos
            self.take()
            numerator, denominator = self.argument(), self.argument()
            if numerator[0] == "num" and denominator[0] == "num" and numerator[2] is None:
                if denominator[1] == 0 or numerator[1] >= denominator[1]:
                    raise Ambiguous("a whole number before an improper fraction")
                return ("num", value[1] + numerator[1] / denominator[1], None, 0)
            self.pos = save
        return value

    def based(self, digits: str) -> Node:
        """``4343_6``: digits in the base of their subscript (2 to 36)."""
        self.take()
        kind, base = self.take()
        if base == "{":
            kind, base = self.take()
            self.expect("}")
        if kind != "num" or not base.isdigit() or not 2 <= int(base) <= 36:
            raise Ambiguous("a subscript that is not a base")
        if any(int(d) >= int(base) for d in digits):
            raise Ambiguous("a subscript that is not a base")
        return ("num", Fraction(int(digits, int(base))), None, 0)

    def letter(self, text: str) -> Node:
        if text == "E":
            raise Ambiguous("E (a point or Euler's number)")
        nxt = self.peek()[1]
        if nxt in ("(", "'"):
            raise Ambiguous("a letter before a bracket or a prime (a function?)")
        name = text
        if nxt == "_":
            self.take()
            kind, sub = self.take()
            if sub == "{":
                parts = []
                while self.peek()[1] != "}":
                    if self.done():
                        raise Ambiguous("an unclosed subscript")
                    parts.append(self.take()[1])
                self.take()
                sub = "".join(parts)
            elif kind not in ("num", "letter"):
                raise Ambiguous("an odd subscript")
            name = f"{text}_{sub}"
            if self.peek()[1] in ("(", "'", "_"):
                raise Ambiguous("a subscripted letter before a bracket")
        if name == "e":
            return ("e",)
        return ("var", name)

    def command(self, text: str) -> Node:
        name = text[1:]
        if text in _FRACS:
            numerator = self.argument()
            return ("div", numerator, self.argument())
        if name == "sqrt":
            index = None
            if self.peek()[1] == "[":
                self.take()
                index = self.expr()
                self.expect("]")
            return ("root", self.argument(), index)
        if name == "pi":
            return ("pi",)
        if name in GREEK:
            if self.peek()[1] in ("(", "'", "_"):
                raise Ambiguous("a Greek letter before a bracket, prime or subscript")
            return ("var", name)
        if name in FUNCTIONS:
            power = None
            if self.peek()[1] == "^":
                self.take()
                power = self.exponent()
            if self.peek()[1] == "(":
                self.take()
                argument = self.expr()
                self.expect(")")
            elif self.peek()[1] == "{":
                argument = self.group()
            else:
                raise Ambiguous(f"\\{name} without a bracketed argument")
            node: Node = ("fn", name, argument)
            return ("pow", node, power) if power is not None else node
        if name == "infty":
            return ("inf",)
        raise Ambiguous(f"the command {text}")


# --------------------------------------------------------------------- shapes
def _split_commas(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    parts: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for token in tokens:
        text = token[1]
        if text in ("(", "[", "{", "\\{"):
            depth += 1
        elif text in (")", "]", "}", "\\}"):
            depth -= 1
        if text == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _expression(tokens: list[tuple[str, str]]) -> Node:
    if not tokens:
        raise Ambiguous("an empty element")
    parser = _Parser(tokens)
    node = parser.expr()
    if not parser.done():
        raise Ambiguous(f"unread text from {parser.peek()[1]!r}")
    return node


def _endpoint(tokens: list[tuple[str, str]]) -> Node:
    texts = [t[1] for t in tokens]
    if texts in (["\\infty"], ["+", "\\infty"]):
        return ("inf", 1)
    if texts == ["-", "\\infty"]:
        return ("inf", -1)
    return _expression(tokens)


def _bracketed(tokens: list[tuple[str, str]]) -> Node | None:
    """``(a, b)``, ``[a, b)``, ``(a, b, c)`` spanning all of ``tokens``, else None."""
    if len(tokens) < 2 or tokens[0][1] not in ("(", "[") or tokens[-1][1] not in (")", "]"):
        return None
    depth = 0
    for index, token in enumerate(tokens):
        if token[1] in ("(", "[", "{", "\\{"):
            depth += 1
        elif token[1] in (")", "]", "}", "\\}"):
            depth -= 1
            if depth == 0 and index != len(tokens) - 1:
                return None
    parts = _split_commas(tokens[1:-1])
    if len(parts) < 2:
        return None
    return ("tuple", tokens[0][1], tokens[-1][1], tuple(_endpoint(p) for p in parts))


def _matrix(text: str) -> Node | None:
    match = re.fullmatch(r"\s*\\begin\{(\w+)\}(.*)\\end\{(\w+)\}\s*", text, re.DOTALL)
    if match is None:
        return None
    if match.group(1) != match.group(3) or match.group(1) not in _MATRICES:
        raise Ambiguous(f"the {match.group(1)} environment")
    body = match.group(2)
    if "\\begin" in body:
        raise Ambiguous("a nested environment")
    rows = [r for r in re.split(r"\\\\", body) if r.strip() and r.strip() != "\\hline"]
    table = tuple(
        tuple(_expression(_tokens(cell.strip())) for cell in row.split("&")) for row in rows
    )
    if not table or len({len(row) for row in table}) != 1:
        raise Ambiguous("a ragged matrix")
    return ("matrix", table)


def read_shape(text: str) -> Node:
    """The shape and tree of an answer: ``expr``, ``tuple``, ``set``, ``union`` or ``matrix``.

    Raises :class:`Ambiguous` for anything outside the module's grammar.
    """
    if len(text) > MAX_CHARS:
        raise Ambiguous("too long for the in-process reader")
    matrix = _matrix(text)
    if matrix is not None:
        return matrix
    tokens = _tokens(text)
    if not tokens:
        raise Ambiguous("empty")
    if tokens[0][1] == "\\{" and tokens[-1][1] == "\\}":
        inner = tokens[1:-1]
        return ("set", tuple(_expression(p) for p in _split_commas(inner)))
    pieces = _split_top(tokens, "\\cup")
    if len(pieces) > 1:
        intervals = [_bracketed(p) for p in pieces]
        if any(i is None or len(i[3]) != 2 for i in intervals):
            raise Ambiguous("a union of something other than intervals")
        return ("union", tuple(i for i in intervals if i is not None))
    bracketed = _bracketed(tokens)
    if bracketed is not None:
        return bracketed
    parts = _split_commas(tokens)
    if len(parts) > 1:
        return ("set", tuple(_expression(p) for p in parts))
    return ("expr", _expression(tokens))


def _split_top(tokens: list[tuple[str, str]], separator: str) -> list[list[tuple[str, str]]]:
    parts: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for token in tokens:
        if token[1] in ("(", "[", "{", "\\{"):
            depth += 1
        elif token[1] in (")", "]", "}", "\\}"):
            depth -= 1
        if token[1] == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts
