"""Agreement of flexmg's math grader with public grader suites, per suite.

Usage:
    python benchmarks/grader_conformance.py [--show] [--suite NAME]

The corpus is ``tests/grader_conformance/*.jsonl``: one case per line with
``gold``, ``completion`` (the prediction in a ``\\boxed{}``), ``expected``
(the source suite's verdict, 0 or 1), ``source`` (where the rule or case comes
from), ``setting`` (the :class:`GradingSettings` the source implies) and,
where flexmg deliberately differs, ``flexmg`` (its verdict) and ``reason``.
Deliberate disagreements are listed in docs/grading.md.

For each suite the script prints how many cases agree with the source, how
many differ as documented, and how many differ unexpectedly (``--show`` lists
every disagreement). Exit status 1 when any disagreement is undocumented or a
documented verdict changed.
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
CASE_KEYS = {"id", "suite", "gold", "completion", "expected", "source", "setting"}


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
    args = parser.parse_args()
    cases = [c for c in load_cases() if args.suite in (None, c["suite"])]
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
        if args.show and not (outcome.agrees and outcome.as_documented):
            kind = "documented" if outcome.as_documented else "UNEXPECTED"
            case = outcome.case
            print(
                f"[{kind}] {case['id']}: gold {case['gold'][:60]!r}, completion "
                f"{case['completion'][:80]!r}: source {case['expected']}, flexmg {outcome.got} "
                f"({outcome.reason}) {case.get('reason', '')}"
            )
    return 1 if any(row["unexpected"] for row in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
