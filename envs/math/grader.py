"""Grade a completion's ``\\boxed{}`` answer against a gold answer.

Only answers inside ``\\boxed{...}`` count. No box, or several *distinct*
boxes, scores 0.0 and is flagged as a format error (several boxes are read as
one list only when the gold is a list of at least as many values). Both sides
are normalised (:mod:`flexmg.envs.math.normalize`), then read
(:mod:`flexmg.envs.math.reading`): an answer that does not commit to one value
(a hedge, an unnamed equation, a struck-out or hidden value, a list for one
value, marks or variables the gold does not have) is refused with its reason.
What remains is compared value by value: identical writing and plain numbers
in-process (:mod:`flexmg.envs.math.exact`), symbolic answers the in-process
evaluator reads (:mod:`flexmg.envs.math.evaluate`), everything else by
math-verify in worker processes under a CPU-time deadline per call (see
:mod:`flexmg.envs.math._pool`), with the decimal rule of
:mod:`flexmg.envs.math.tolerance` on numbers everywhere. How lenient the
comparison is comes from :class:`~flexmg.envs.math.settings.GradingSettings`,
per task or dataset. Every verdict says why in ``reason`` and ``detail``.
Worker verdicts are cached (LRU), so are parsed gold answers.

Example:
    >>> grade(r"7 + 5 = \\boxed{12}", "12")
    1.0
    >>> r = grade_detailed(r"\\boxed{3} or \\boxed{4}", "3")
    >>> (r.score, r.format_error, r.reason)
    (0.0, True, 'multiple_boxed')
    >>> grade_detailed(r"\\boxed{x + 1 = 12}", "12").reason
    'relation'
    >>> grade(r"\\boxed{0.33}", r"\\frac{1}{3}", settings={"precision": 2})
    1.0
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._pool import WALL_FACTOR, GraderPool
from .boxed import canonical_box, extract_boxed, same_meaning_form, sanitize
from .commitment import check
from .evaluate import compare
from .exact import fast_verdict
from .normalize import normalize_answer
from .reading import REFUSALS, Reading, Refusal, read
from .settings import GradingSettings, SettingsKey, coerce_settings
from .targets import Target, targets

MAX_BOX_CHARS = 1000  # a final answer longer than this is not an answer
MAX_DISTINCT_BOXES = 4  # more differently-written boxes than this: a format error
MAX_LISTED_BOXES = 12  # a list gold may be answered one box per value, up to this many
_MIN_SECONDS = 0.005
_LIST_JOIN = re.compile(r",|;|\band\b|\bor\b")
_BOX_SHELL = re.compile(r"\\(?:boxed|fbox)\s*(?:\{\s*\})?[.,;:!?]*")
_CACHE_SIZE = 65536

REASONS = (
    "correct",
    "wrong",
    "no_boxed",
    "multiple_boxed",
    "empty_boxed",
    "too_long",
    "unparseable",
    "timeout",
    "gold_unparseable",
    "error",
    *REFUSALS,
)


@dataclass(frozen=True)
class GradeResult:
    """The verdict on one completion.

    Attributes:
        score: 1.0 (correct) or 0.0.
        format_error: True when the completion does not give exactly one
            usable boxed answer (none, several distinct, empty, too long).
        reason: one of :data:`REASONS`: ``correct``, ``wrong``, a format error,
            or the rule a non-committal answer breaks (``hedged``, ``relation``,
            ``shape``, ``marks``, ``free_variable``, ...: see
            :mod:`flexmg.envs.math.reading`).
        extracted: the boxed answer that was graded (None when there is none).
        detail: why, in words: how the values matched, or what differs or is refused.
    """

    score: float
    format_error: bool
    reason: str
    extracted: str | None
    detail: str = ""


_CacheKey = tuple[str, str, SettingsKey]  # (gold, answer, settings key)


class _VerdictCache:
    """A thread-safe LRU of (gold, answer, settings) -> (score, reason, detail)."""

    def __init__(self, size: int) -> None:
        self._data: OrderedDict[_CacheKey, tuple[float, str, str]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: _CacheKey) -> tuple[float, str, str] | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: _CacheKey, value: tuple[float, str, str]) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_cache = _VerdictCache(_CACHE_SIZE)
_pool: GraderPool | None = None
_pool_lock = threading.Lock()


def _default_workers() -> int:
    raw = os.environ.get("FLEXMG_GRADER_WORKERS", "1")
    try:
        return max(1, int(raw))
    except ValueError:
        raise ValueError(f"FLEXMG_GRADER_WORKERS must be a positive integer, got {raw!r}") from None


def get_pool() -> GraderPool:
    """The process-wide grader pool (created on first use; a forked child gets its own).

    Its size is ``FLEXMG_GRADER_WORKERS`` (default 1); see :func:`configure`.
    """
    global _pool
    with _pool_lock:
        if _pool is None or _pool._owner_pid != os.getpid() or _pool._closed:
            _pool = GraderPool(workers=_default_workers())
        return _pool


def configure(workers: int) -> None:
    """Replace the process-wide pool with one of ``workers`` processes.

    >>> configure(workers=1)
    """
    global _pool
    new = GraderPool(workers=workers)
    with _pool_lock:
        old, _pool = _pool, new
    if old is not None:
        old.close()


def shutdown() -> None:
    """Stop the grader's worker processes now (they also stop at exit).

    >>> shutdown()
    """
    global _pool
    with _pool_lock:
        old, _pool = _pool, None
    if old is not None:
        old.close()


def _after_fork_in_child() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


@lru_cache(maxsize=8192)
def _clean_gold(gold: str) -> str:
    """The gold's answer, normalised: its boxed part where it has boxes (see :func:`_gold_boxes`)."""
    text = sanitize(gold).strip().strip("$").strip()
    if "\\\\boxed" in text:
        text = text.replace("\\\\boxed", "\\boxed")  # escaped text: \\boxed for \boxed
    boxed = _gold_boxes(text)
    if boxed is not None:
        text = boxed
    return normalize_answer(text) if text else text


def _gold_boxes(text: str) -> str | None:
    """The answer of a gold written with boxes (None: it has none).

    One box is the answer; several joined by ``,``, ``;``, ``and``, ``or`` or
    no words are a list; otherwise the last box is the answer.
    """
    boxes = [b.strip() for b in extract_boxed(text)]
    if not boxes or not all(boxes):
        return None
    distinct = list(dict.fromkeys(boxes))
    if len(distinct) == 1:
        return distinct[0]
    between, position = [], 0
    for box in boxes:
        start = text.find(box, position)
        if start < 0:
            return boxes[-1]
        between.append(text[position:start])
        position = start + len(box)
    gaps = [re.sub(r"\\(?:boxed|fbox)\s*\{|\}", "", gap) for gap in between[1:]]
    if all(_LIST_JOIN.search(gap) or not re.search("[A-Za-z]", gap) for gap in gaps):
        return ", ".join(boxes)
    return boxes[-1]


def grade_detailed(
    completion: str,
    gold: str,
    timeout: float = 1.0,
    settings: GradingSettings | Mapping[str, Any] | None = None,
) -> GradeResult:
    """Grade ``completion`` against ``gold`` and say why.

    ``timeout`` is the CPU time (seconds) one comparison may use in the
    grading worker: a busy machine does not turn a slow but legitimate
    comparison into a timeout. Whatever the load, the call returns within
    about ``WALL_FACTOR * timeout`` seconds (4 s for the default 1 s).
    ``settings`` (a :class:`GradingSettings` or a dict of its fields; default
    ``GradingSettings()``) says how lenient the comparison is.

    Never raises on any completion text; raises TypeError/ValueError on
    programmer errors (non-str arguments, empty gold, bad timeout, bad settings).

    >>> grade_detailed(r"\\boxed{\\frac{1}{2^{99}}}", r"\\frac{1}{2^{98}}").reason
    'wrong'
    >>> grade_detailed("the answer is 12", "12").reason
    'no_boxed'
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    if not isinstance(gold, str):
        raise TypeError(f"gold must be a str (e.g. '12' or '\\\\frac{{3}}{{4}}'), got {gold!r}")
    if not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    options = coerce_settings(settings)
    gold_clean = _clean_gold(gold)
    if not gold_clean:
        raise ValueError(f"gold answer is empty ({gold!r}); every math task needs one")

    wall = _WallBound(timeout * WALL_FACTOR)
    boxes = extract_boxed(completion)
    if not boxes:
        return GradeResult(0.0, True, "no_boxed", None, "no complete \\boxed{...} found")
    if any(len(b) > MAX_BOX_CHARS * 4 for b in boxes):  # cheap bound before cleaning
        return GradeResult(0.0, True, "too_long", None, f"boxed answer over {MAX_BOX_CHARS} chars")
    unique: dict[str, str] = {}  # canonical form -> cleaned content, last box last
    for raw in boxes:
        content = _clean_box(raw)
        unique.pop(canonical_box(content), None)
        unique[canonical_box(content)] = content
    contents = list(unique.values())
    content = contents[-1]
    if any(len(c) > MAX_BOX_CHARS for c in contents):
        return GradeResult(
            0.0, True, "too_long", content[:200], f"boxed answer over {MAX_BOX_CHARS} chars"
        )
    if not content and len(contents) == 1:
        return GradeResult(0.0, True, "empty_boxed", "", "the box is empty")
    if len(contents) > 1:
        if not all(contents):
            return _multiple(len(contents))
        if (
            2 <= len(contents) <= _gold_reading(gold_clean, options).count
            and len(contents) <= MAX_LISTED_BOXES
        ):
            # The gold is a list: one box per value is the list, written in boxes.
            content = ", ".join(contents)
        else:
            # Several boxes that differ in writing: fine if they all mean the same
            # (``15\frac{39}{40}`` and ``\frac{639}{40}``), a format error otherwise.
            if len(contents) > MAX_DISTINCT_BOXES:
                return _multiple(len(contents))
            last = _gold_reading(content, options)
            for other in contents[:-1]:
                verdict = _judge(other, content, last, timeout, wall, options)
                if verdict[1] == "timeout":
                    return GradeResult(0.0, False, "timeout", content, verdict[2])
                if verdict[0] != 1.0:
                    return _multiple(len(contents))
    score, reason, detail = _judge(content, gold_clean, None, timeout, wall, options)
    return GradeResult(score, False, reason, content, detail)


def _gold_reading(gold: str, options: GradingSettings) -> Reading:
    reading = read(gold, options)  # cached per (gold, settings)
    assert isinstance(reading, Reading)  # a gold is never refused
    return reading


def _multiple(count: int) -> GradeResult:
    return GradeResult(0.0, True, "multiple_boxed", None, f"{count} different boxed answers")


def _clean_box(raw: str) -> str:
    """Sanitized, normalised box content, with redundant nested boxes removed."""
    content = sanitize(raw).strip()
    while content.startswith(("\\boxed", "\\fbox")) and len(content) <= MAX_BOX_CHARS:
        inner = extract_boxed(content)  # \boxed{\boxed{5}} -> 5, \boxed{\boxed 5} -> 5
        if len(inner) != 1 or not _BOX_SHELL.fullmatch(content.replace(inner[0], "", 1)):
            break
        content = inner[0].strip()
    if len(content) > MAX_BOX_CHARS:
        return content  # reported as too long; not worth normalising
    return normalize_answer(content) if content else content


@dataclass
class _WallBound:
    """The wall-clock bound of one grading call; it starts at the first worker call
    (so that starting the worker pool, once per process, does not count).
    """

    seconds: float
    deadline: float | None = None

    def start(self) -> float:
        """The bound's ``time.monotonic()`` deadline (set on first use)."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.seconds
        return self.deadline


Verdict = tuple[float, str, str]


def _judge(
    content: str,
    gold: str,
    gold_reading: Reading | None,
    cpu_seconds: float,
    wall: _WallBound,
    options: GradingSettings,
) -> Verdict:
    """(score, reason, detail) of a cleaned answer against a cleaned gold.

    ``gold_reading`` is the gold's reading, or None to read it only if needed
    (two plain numbers need none).
    """
    if content == gold or same_meaning_form(content) == same_meaning_form(gold):
        return 1.0, "correct", "written as the gold is"
    plain = fast_verdict(content, gold, options)  # two plain numbers: nothing to read
    if plain is not None:
        return (1.0 if plain[0] == "correct" else 0.0), plain[0], plain[1]
    if gold_reading is None:
        gold_reading = _gold_reading(gold, options)
    answer = read(content, options, gold_reading)
    if isinstance(answer, Refusal):
        return 0.0, answer.reason, answer.detail
    if gold_reading.text is not None:
        if answer.text == gold_reading.text:
            return 1.0, "correct", f"the same text answer ({gold_reading.text!r})"
        return 0.0, "wrong", f"the gold is the text {gold_reading.text!r}"
    refusal = check(answer, gold_reading, options)
    if refusal is not None:
        return 0.0, refusal.reason, refusal.detail
    details: list[str] = []
    for target in targets(answer, gold_reading):
        score, reason, detail = _equivalent(target, cpu_seconds, wall, options)
        if score != 1.0:
            if target.chain and reason == "wrong":
                return 0.0, "relation", f"a side of the chain, {target.answer!r}, is not the gold"
            return score, reason, detail
        details.append(detail)
    notes = "; ".join(answer.notes)
    summary = "; ".join(dict.fromkeys(d for d in details if d))
    return 1.0, "correct", f"{summary} ({notes})" if notes else summary


def _equivalent(
    target: Target, cpu_seconds: float, wall: _WallBound, options: GradingSettings
) -> Verdict:
    """(score, reason, detail) of one comparison: in-process when possible, else a worker."""
    content, gold = target.answer, target.gold
    if content == gold or same_meaning_form(content) == same_meaning_form(gold):
        return 1.0, "correct", "written as the gold is"
    fast = fast_verdict(content, gold, options)  # plain numbers: exact
    if fast is None:
        decision = compare(content, gold, options.precision, options.float_tolerance)
        fast = None if decision is None else (decision.verdict, decision.detail)
    if fast is not None:
        reason = "unparseable" if fast[0] == "malformed" else fast[0]
        return (1.0 if reason == "correct" else 0.0), reason, fast[1]
    key = (gold, content, options.key())
    cached = _cache.get(key)
    if cached is not None:
        return cached
    pool = get_pool()
    pool.start()  # idempotent; the first start (imports sympy) is not grading time
    wall_deadline = wall.start()
    if wall_deadline - time.monotonic() <= _MIN_SECONDS:
        return 0.0, "timeout", "no time left in the grading deadline"
    verdict = pool.grade(content, gold, cpu_seconds, options.key(), wall_deadline)
    if verdict[1] not in ("timeout", "error"):
        _cache.put(key, verdict)
    return verdict


def grade(
    completion: str,
    gold: str,
    timeout: float = 1.0,
    settings: GradingSettings | Mapping[str, Any] | None = None,
) -> float:
    """1.0 if the completion's single boxed answer equals ``gold``, else 0.0.

    >>> grade(r"\\boxed{0.5}", r"\\frac{1}{2}")
    1.0
    """
    return grade_detailed(completion, gold, timeout, settings).score
