"""The grid of ``benchmarks/paper_small.py``: its variants, envs, seeds and runs.

Team sizes and each family's 1-agent env come from what the env families declare
(``flexmg.family``), not from env ids.

Example:
    >>> team_size("math-4agent"), single_env("math-4agent")
    (4, 'math-1agent')
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WARMSTART = Path(__file__).resolve().parent.parent / "models" / "tiny" / "assets" / "warmstart.json"
ENVS = ["math-2agent", "math-3agent", "math-4agent", "code-2agent", "code-3agent", "code-4agent"]
SEEDS = [0, 1, 2, 3, 4]
# team variant -> (algorithm, its PolicyConfig fields)
TEAM_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "marft": ("marft", {}),
    "marft-shared": ("marft", {"share_parameters": True}),
    "ippo": ("ippo", {}),
    "group": ("group", {}),  # critic-free, per-agent group-relative advantages (baselines/)
}
GROUP_SIZE = 4  # the group variant plays each prompt this many times per update (--group-size)
GROUPED = {"group"}  # variants whose algorithm needs a group of episodes per prompt
SINGLE = "single"  # one run per team size: entry and folder name single-b<k>
SINGLE_ALGO = "marft"  # with one role MARFT and IPPO are the same learner
VARIANTS = [*TEAM_VARIANTS, SINGLE]
DEFAULT_VARIANTS = ["marft", "marft-shared", "ippo", SINGLE]  # the paper's columns
START = "start"  # the untrained model (the runs' start), evaluated on the same episodes
SINGLE_START = "start-single"  # the same on the single agent's env (its own start)
TITLES = {
    START: "start (untrained)",
    SINGLE_START: "its start (untrained, 1 agent)",
    "marft": "MARFT",
    "marft-shared": "MARFT shared",
    "ippo": "IPPO",
    "group": "group",
    SINGLE: "single agent",
}
OUTCOMES = {"success": "Team success", "correct": "Correctness", "format": "Format"}
TOKEN_TOLERANCE = 0.10  # a row's mean generated tokens per run: max/min - 1 at most this


def _team(env: str) -> tuple[Any, str]:
    """The family of a team env and the env's name in it (a clear error for any other env)."""
    import flexmg
    from flexmg.family import family_of

    family, name = family_of(env), flexmg.spec(env).name
    if family is None or name not in family.teams:
        raise ValueError(f"{env!r} is not a team env of a family that declares its teams")
    return family, name


def team_size(env: str) -> int:
    """The agents of a team env (as its family declares them).

    >>> team_size("code-3agent")
    3
    """
    family, name = _team(env)
    return len(family.teams[name])


def single_env(env: str) -> str:
    """The 1-agent env of a team env's family: ``math-3agent`` -> ``math-1agent``.

    >>> single_env("code-4agent")
    'code-1agent'
    """
    family, _ = _team(env)
    ones = [name for name, roles in family.teams.items() if len(roles) == 1]
    if not ones:
        raise ValueError(f"the family of {env!r} has no 1-agent env")
    return ones[0]


@dataclass(frozen=True)
class Job:
    """One training run; ``row`` is the team env it is compared in (``env`` for a team)."""

    variant: str
    row: str
    env: str
    seed: int
    episodes_per_update: int
    run_dir: Path
    algo: str
    policy: tuple[tuple[str, Any], ...] = ()  # its PolicyConfig fields
    group_size: int = 1  # each training prompt played this many times per update

    @property
    def column(self) -> str:
        """The table column: the variant, or ``single`` for every single-agent run."""
        return SINGLE if self.variant.startswith(SINGLE) else self.variant

    @property
    def label(self) -> str:
        return f"{self.env} {self.variant} seed {self.seed}"


def make_job(args: argparse.Namespace, variant: str, row: str, seed: int) -> Job:
    """The run of ``variant`` for a row: the team as it is, the single agent at its budget."""
    runs = args.out / "runs"
    if variant != SINGLE:
        algo, policy = TEAM_VARIANTS[variant]
        run_dir = runs / f"{row}-{variant}-s{seed}"
        group = getattr(args, "group_size", GROUP_SIZE) if variant in GROUPED else 1
        return Job(variant, row, row, seed, args.episodes_per_update, run_dir, algo,
                   tuple(policy.items()), group)  # fmt: skip
    k, env = team_size(row), single_env(row)
    name = f"{SINGLE}-b{k}"
    run_dir = runs / f"{env}-{name}-s{seed}"
    return Job(name, row, env, seed, k * args.episodes_per_update, run_dir, SINGLE_ALGO)


def has_single(env: str) -> bool:
    """Does the family of a team env have a 1-agent env (a single-agent column)?

    >>> has_single("math-2agent"), has_single("relay-2agent")
    (True, False)
    """
    try:
        single_env(env)
    except ValueError:
        return False
    return True


def plan_jobs(args: argparse.Namespace) -> list[Job]:
    """Every run of the grid: variant x env x seed (the single agent per team size, where
    the env's family has a 1-agent env)."""
    return [
        make_job(args, v, row, s)
        for v in args.variants
        for row in args.envs
        if v != SINGLE or has_single(row)
        for s in args.seeds
    ]


def planned_actions(job: Job, updates: int) -> int:
    """The actions a run samples: updates x episodes per update x agents per episode."""
    return updates * job.episodes_per_update * team_size(job.env)
