"""The grading worker: math-verify under a CPU-time deadline, plus its zygote.

This file runs in three places:

* imported in-package (``flexmg.envs.math._worker``) for :func:`verify_boxed`;
* loaded *by path* in the zygote process (``python -c BOOT``), so that worker
  processes never import flexmg, gymnasium or torch, nor the user's
  ``__main__`` (no ``if __name__ == "__main__"`` guard needed anywhere);
* in each worker, forked from the zygote, in its main thread, where
  ``signal.setitimer`` deadlines work. The deadline counts the worker's own
  CPU time (``ITIMER_PROF``), so a busy machine slows grading down but does
  not turn a legitimate comparison into a timeout.

The zygote imports sympy and math-verify once and warms them up; forking a
worker from it takes milliseconds, so a worker that overruns is simply
killed and replaced.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import socket
import struct
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import math_verify.grader
import math_verify.parser
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy import Basic
from sympy.matrices import MatrixBase

if __package__:
    from .strict import is_plain_number, judge_numbers, numbers_agree, percent_value
else:  # loaded by path in the zygote: load the sibling module the same way
    _spec = importlib.util.spec_from_file_location(
        "_flexmg_math_strict", Path(__file__).with_name("strict.py")
    )
    assert _spec is not None and _spec.loader is not None
    _strict = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_strict)
    is_plain_number = _strict.is_plain_number
    judge_numbers = _strict.judge_numbers
    numbers_agree = _strict.numbers_agree
    percent_value = _strict.percent_value

# We enforce deadlines ourselves; silence math-verify's "timeout disabled" notes.
math_verify.grader.TIMEOUT_WARNING_SHOWN = True
math_verify.parser.TIMEOUT_WARNING_SHOWN = True
logging.getLogger("math_verify").setLevel(logging.ERROR)
logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)

_CONFIG: list[LatexExtractionConfig | ExprExtractionConfig] = [
    LatexExtractionConfig(boxed_match_priority=0),
    ExprExtractionConfig(),
]

# Worker memory cap: a runaway sympy computation fails with MemoryError
# instead of swapping the machine.
MEMORY_LIMIT_BYTES = 3 * 1024**3

Verdict = tuple[float, str, str]  # (score, reason, detail)
# GradingSettings.key(): (precision, set_relations, strict_variables, units, percent,
# float_tolerance); this file cannot import flexmg, so the default is written out here.
Options = tuple[int, bool, bool, str, str, float]
DEFAULT_OPTIONS: Options = (6, False, True, "strip", "sign", 1e-9)


# Graded once in the zygote before any worker is forked, so that every worker
# starts with sympy's lazily built machinery in place. The sum matters: without
# it the first comparison of sums in a fresh worker costs about 1.5 s more CPU
# time (a legitimate Fibonacci-sum answer took 1.8 s instead of 0.4 s).
WARM_UP = (
    ("\\frac{6}{8}", "0.75"),
    ("x=5", "5"),
    ("(1,2)", "(1, 2)"),
    ("a_n = \\sum_{k=0}^{n-1} a_k a_{n-k-1}", "a_n = \\sum_{k=0}^{n-1} a_{n-k-1} a_k"),
)


class _Deadline(BaseException):
    """Raised by SIGALRM; a BaseException so library ``except Exception`` won't eat it."""


@lru_cache(maxsize=8192)
def _parse_gold(gold: str) -> list[Any]:
    return list(parse("\\boxed{" + gold + "}", _CONFIG, parsing_timeout=None))


@lru_cache(maxsize=8192)
def _parse_pred(content: str) -> list[Any]:
    return list(parse("\\boxed{" + content + "}", _CONFIG, parsing_timeout=None))


def _is_math(obj: object) -> bool:
    return isinstance(obj, (Basic, MatrixBase))


def verify_boxed(content: str, gold: str, options: Options = DEFAULT_OPTIONS) -> Verdict:
    """Grade one boxed answer against a gold answer (no deadline; see the pool).

    ``options`` is :meth:`GradingSettings.key` (precision, set relations,
    strict variables, units policy, percent policy, float tolerance; units and
    percent are applied by the reader before this call). Two plain numbers are
    decided by the decimal rule (:mod:`flexmg.envs.math.strict`); anything else
    by math-verify, whose "equal" the strict check may overrule.

    >>> verify_boxed("\\\\frac{6}{8}", "0.75")[:2]
    (1.0, 'correct')
    >>> verify_boxed("0.1234567", "0.1234571")[:2]
    (0.0, 'wrong')
    >>> verify_boxed("0.33", "\\\\frac{1}{3}", (2, False, True, "strip", "sign", 1e-9))[:2]
    (1.0, 'correct')
    """
    precision, set_relations, strict_variables, _units, percent, float_tolerance = options
    gold_parsed = _parse_gold(gold)
    if not gold_parsed:
        return 0.0, "gold_unparseable", f"math-verify could not parse the gold answer {gold!r}"
    pred_parsed = _parse_pred(content)
    if not pred_parsed:
        return 0.0, "unparseable", "math-verify extracted nothing from the box"
    gold_exprs = [percent_value(g, percent) for g in gold_parsed if isinstance(g, Basic)]
    pred_exprs = [percent_value(p, percent) for p in pred_parsed if isinstance(p, Basic)]
    if (
        gold_exprs
        and pred_exprs
        and is_plain_number(gold_exprs[0])
        and is_plain_number(pred_exprs[0])
    ):
        numbers = judge_numbers(
            gold_exprs[0], pred_exprs[0], gold, content, precision, float_tolerance
        )
        if numbers is not None:
            return (
                (1.0 if numbers[0] else 0.0),
                ("correct" if numbers[0] else "wrong"),
                (f"math-verify read two numbers: {numbers[1]}"),
            )
    if not verify(
        gold_parsed,
        pred_parsed,
        float_rounding=precision,
        strict=strict_variables,
        allow_set_relation_comp=set_relations,
        timeout_seconds=None,
    ):
        if not any(_is_math(p) for p in pred_parsed):
            return 0.0, "unparseable", "the boxed answer is not valid math"
        return 0.0, "wrong", "math-verify: not equivalent"
    if (
        gold_exprs
        and pred_exprs
        and not numbers_agree(
            gold_exprs[0], pred_exprs[0], gold, content, precision, float_tolerance
        )
    ):
        return 0.0, "wrong", "math-verify matched, but the numbers differ (strict numeric check)"
    return 1.0, "correct", "math-verify: equivalent"


def _on_alarm(signum: int, frame: object) -> None:  # SIGPROF: the CPU budget is spent
    raise _Deadline()


def _serve(fd: int) -> None:
    """Worker loop: receive (request, content, gold, cpu_seconds, options), reply with
    (request, score, reason, detail, clean); exit after any verdict that is not clean."""
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGPROF, _on_alarm)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    conn = Connection(fd)
    while True:
        try:
            request, content, gold, seconds, options = conn.recv()
        except (EOFError, OSError):
            return  # the parent closed its end or died: exit quietly
        except (ValueError, TypeError):
            return  # not a request of this protocol: exit, the pool forks a clean worker
        clean = True  # False: library state may be half-updated; this worker must not go on
        try:
            # ITIMER_PROF counts this process's CPU time (user + system).
            signal.setitimer(signal.ITIMER_PROF, max(seconds, 0.001))
            try:
                verdict: Verdict = verify_boxed(content, gold, options)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
        except _Deadline:
            verdict = (0.0, "timeout", f"grading used over {seconds:.3f}s of CPU time")
            clean = False
        except MemoryError:
            verdict, clean = (0.0, "error", "out of memory while grading"), False
        except BaseException as exc:  # noqa: BLE001 - hostile input may raise anything
            # A RecursionError or similar can leave sympy's or the parser's global state
            # half-updated: answer, then exit, so no later verdict comes from that state.
            verdict, clean = (0.0, "error", f"{type(exc).__name__} while grading"), False
        try:
            conn.send((request, *verdict, clean))
        except (OSError, EOFError):
            return
        if not clean:
            return  # the pool forks a clean worker in its place


def zygote_main(ctrl_fd: int) -> None:
    """Fork a worker for each socket the parent sends; exit when the parent goes."""
    ctrl = socket.socket(fileno=ctrl_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    for content, gold in WARM_UP:
        verify_boxed(content, gold)  # warm caches and parsers once, before forking
    ctrl.sendall(b"R")
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(ctrl, 16, 1)
        except (OSError, ConnectionError):
            break
        if not msg or not fds:
            break
        pid = os.fork()
        if pid == 0:
            try:
                ctrl.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _serve(fds[0])
            finally:
                os._exit(0)
        os.close(fds[0])
        try:
            ctrl.sendall(struct.pack("!i", pid))
        except OSError:
            break
    # The parent is gone or closed the pool: end every worker (they share our
    # process group, see GraderPool) and ourselves.
    os.killpg(os.getpgid(0), signal.SIGKILL)
    sys.exit(0)
