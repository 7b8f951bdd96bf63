"""Baselines and the leaderboard: scripted oracle/empty/random agents, IPPO, the runner.

* :mod:`flexmg.baselines.scripted`: ``OracleAgent`` (upper bound), empty/random (lower bounds).
* :mod:`flexmg.baselines.leaderboard`: ``run_leaderboard`` / ``flexmg leaderboard``.
* :mod:`flexmg.baselines.run_loader`: a training run folder as a team of agents.
* :mod:`flexmg.baselines.ippo`: the IPPO learner (``flexmg train --algo ippo``).

Example:
    >>> import tempfile
    >>> from flexmg.baselines import run_leaderboard
    >>> res = run_leaderboard({"entries": ["scripted:oracle"], "envs": ["math-1agent"],
    ...                        "seeds": [0], "episodes": 2, "out": tempfile.mkdtemp(),
    ...                        "progress": False}, echo=False)
    >>> res["summary"][0]["success_rate"]["mean"]
    1.0
"""

from __future__ import annotations

from flexmg.baselines.entries import EntryContext, EntrySpec
from flexmg.baselines.leaderboard import LeaderboardConfig, eval_seed, run_leaderboard
from flexmg.baselines.scripted import OracleAgent, make_oracle, make_scripted

__all__ = [
    "EntryContext",
    "EntrySpec",
    "LeaderboardConfig",
    "OracleAgent",
    "eval_seed",
    "make_oracle",
    "make_scripted",
    "run_leaderboard",
]
