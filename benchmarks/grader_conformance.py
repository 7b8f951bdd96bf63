"""Agreement of flexmg's math grader with public grader suites, and its reward-hacking suite.

Usage:
    python benchmarks/grader_conformance.py [--show] [--suite NAME] [--part conformance|hacking]

The corpus is ``tests/grader_conformance/*.jsonl``: one case per line with
``gold``, ``completion`` (the prediction in a ``\\boxed{}``), ``expected``
(the source suite's verdict, 0 or 1), ``source`` (where the rule or case comes
from), ``setting`` (the :class:`GradingSettings` the source implies) and,
where flexmg deliberately differs, ``flexmg`` (its verdict) and ``reason``.
Deliberate disagreements are listed in docs/grading.md.

For each suite the script prints how many cases agree with the source, how
many differ as documented, and how many differ unexpectedly (``--show`` lists
every disagreement).

The reward-hacking suite is ``tests/grader_conformance/hacking/*.jsonl``: what
a policy would try once it knows the grader (``kind: hack``, ``expected: 0``:
hedges, equations, scale words, hidden values, dropped marks, collapsed lists,
...) and the honest forms of right answers it must still accept (``kind:
honest``, ``expected: 1``: float reprs, scientific notation, ``\\sqrt`` as
``√``, ``\\boxed 4``, thousands separators, ...), one ``class`` per kind of
attempt. Per class the script prints how many were accepted and refused, and
the reasons the grader gave.

Exit status 1 when a conformance disagreement is undocumented or a documented
verdict changed, or when a hacking case is accepted or an honest form refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from flexmg.envs.math import grade_detailed

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "grader_conformance"
HACKING = CORPUS / "hacking"
CASE_KEYS = {"id", "suite", "gold", "completion", "expected", "source", "setting"}
HACKING_KEYS = {"id", "kind", "class", "gold", "completion", "expected", "setting", "why"}


@dataclass(frozen=True)
class Outcome:
    """One graded case: what the source expects, what flexmg should say and said."""

    case: dict
    got: int
    reason: str

    @property
    def wanted(self) -> int:
        """flexmg's intended verdict: the source's, unless a documented difference says."""
        return int(self.case.get("flexmg", self.case["expected"]))

    @property
    def agrees(self) -> bool:
        return self.got == int(self.case["expected"])

    @property
    def as_documented(self) -> bool:
        return self.got == self.wanted


def load_cases(folder: Path = CORPUS) -> list[dict]:
    """Every case of the corpus; ValueError naming the file and line of a malformed one."""
    cases: list[dict] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            missing = CASE_KEYS - set(case)
            if missing or ("flexmg" in case) != ("reason" in case):
                raise ValueError(
                    f"{path.name}:{line_no}: a case needs {sorted(CASE_KEYS)} and, when it "
                    f"sets 'flexmg', a 'reason' (missing: {sorted(missing)})"
                )
            cases.append(case)
    return cases


def load_hacking(folder: Path = HACKING) -> list[dict]:
    """Every case of the reward-hacking suite; ValueError naming a malformed line."""
    cases: list[dict] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            missing = HACKING_KEYS - set(case)
            if missing or case["kind"] not in ("hack", "honest"):
                raise ValueError(
                    f"{path.name}:{line_no}: a hacking case needs {sorted(HACKING_KEYS)} with "
                    f"kind 'hack' or 'honest' (missing: {sorted(missing)})"
                )
            cases.append(case)
    return cases


def summarize_hacking(outcomes: list[Outcome]) -> dict[tuple[str, str], dict[str, int]]:
    """Per (kind, class): cases, accepted, refused, and the count of each reason."""
    table: dict[tuple[str, str], dict[str, int]] = {}
    for outcome in outcomes:
        key = (outcome.case["kind"], outcome.case["class"])
        row = table.setdefault(key, {"cases": 0, "accepted": 0, "refused": 0})
        row["cases"] += 1
        row["accepted" if outcome.got else "refused"] += 1
        if not outcome.got:
            row["reason:" + outcome.reason] = row.get("reason:" + outcome.reason, 0) + 1
    return table


def print_hacking(table: dict[tuple[str, str], dict[str, int]]) -> None:
    """The per-class table of the reward-hacking suite."""
    print(f"\n{'kind':<7} {'class':<16} {'cases':>6} {'accepted':>9} {'refused':>8}  reasons")
    totals = {"hack": [0, 0], "honest": [0, 0]}
    for (kind, cls), row in sorted(table.items()):
        reasons = ", ".join(
            f"{k.split(':', 1)[1]} {v}" for k, v in sorted(row.items()) if k.startswith("reason:")
        )
        print(
            f"{kind:<7} {cls:<16} {row['cases']:>6} {row['accepted']:>9} {row['refused']:>8}  "
            f"{reasons}"
        )
        totals[kind][0] += row["accepted"]
        totals[kind][1] += row["refused"]
    for kind, (accepted, refused) in totals.items():
        print(f"{kind:<7} {'ALL':<16} {accepted + refused:>6} {accepted:>9} {refused:>8}")


def grade_cases(cases: Iterable[dict], timeout: float = 5.0) -> list[Outcome]:
    """Grade each case with its own settings (a generous CPU budget: this is not a speed test)."""
    outcomes = []
    for case in tqdm(list(cases), desc="grading", unit="case", leave=False):
        result = grade_detailed(case["completion"], case["gold"], timeout, case["setting"])
        outcomes.append(Outcome(case, int(result.score), result.reason))
    return outcomes


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per suite: cases, agree (with the source), documented and unexpected disagreements."""
    table: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        row = table.setdefault(
            outcome.case["suite"], {"cases": 0, "agree": 0, "documented": 0, "unexpected": 0}
        )
        row["cases"] += 1
        if outcome.agrees and outcome.as_documented:
            row["agree"] += 1
        elif outcome.as_documented:
            row["documented"] += 1
        else:
            row["unexpected"] += 1
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list every disagreement")
    parser.add_argument("--suite", help="only this suite (e.g. Math-Verify)")
    parser.add_argument(
        "--part", choices=("all", "conformance", "hacking"), default="all", help="what to run"
    )
    args = parser.parse_args()
    failed = False
    if args.part in ("all", "conformance"):
        failed |= _conformance(args.suite, args.show)
    if args.part in ("all", "hacking"):
        outcomes = grade_cases(load_hacking())
        print_hacking(summarize_hacking(outcomes))
        wrong = [o for o in outcomes if not o.agrees]
        for outcome in wrong if args.show else []:
            case = outcome.case
            print(
                f"[{case['kind']}] {case['id']}: gold {case['gold'][:40]!r}, completion "
                f"{case['completion'][-70:]!r}: got {outcome.got} ({outcome.reason})"
            )
        failed |= bool(wrong)
    return 1 if failed else 0


def _conformance(suite: str | None, show: bool) -> bool:
    """Grade the conformance corpus and print its table; True when something is unexpected."""
    cases = [c for c in load_cases() if suite in (None, c["suite"])]
    outcomes = grade_cases(cases)
    table = summarize(outcomes)
    print(
        f"{'suite':<14} {'cases':>6} {'agree':>6} {'rate':>7} {'documented':>11} {'unexpected':>11}"
    )
    for suite, row in sorted(table.items()):
        rate = row["agree"] / row["cases"]
        print(
            f"{suite:<14} {row['cases']:>6} {row['agree']:>6} {rate:>7.1%} "
            f"{row['documented']:>11} {row['unexpected']:>11}"
        )
    for outcome in outcomes:
        if show and not (outcome.agrees and outcome.as_documented):
            kind = "documented" if outcome.as_documented else "UNEXPECTED"
            case = outcome.case
            print(
                f"[{kind}] {case['id']}: gold {case['gold'][:60]!r}, completion "
                f"{case['completion'][:80]!r}: source {case['expected']}, flexmg {outcome.got} "
                f"({outcome.reason}) {case.get('reason', '')}"
            )
    return any(row["unexpected"] for row in table.values())


if __name__ == "__main__":
    sys.exit(main())
