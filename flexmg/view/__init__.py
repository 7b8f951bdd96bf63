"""``flexmg view``: every episode as the team's conversation, in one self-contained HTML page.

The page (no server, no network: data, CSS and script inline) shows each episode
turn by turn in graph order, round by round, with each role's reward, its
format/correct flags, and the value and advantage of each action where training
recorded them; it filters by outcome, role and prompt text, and puts the same
prompts side by side (the start and the end of training). It reads episodes
files, training run folders, ``flexmg eval`` outputs and leaderboard folders
(:mod:`flexmg.view.sources`); records are :mod:`flexmg.transcripts` records.

Example:
    >>> import flexmg, os, tempfile
    >>> from flexmg.episodes import rollout
    >>> from flexmg.transcripts import episode_record, write_transcripts
    >>> from flexmg.view import build_page, load_collection, write_page
    >>> folder = tempfile.mkdtemp()
    >>> eps = rollout(flexmg.make("echo"), lambda o: "hi", episodes=2).episodes
    >>> _ = write_transcripts(f"{folder}/eps.jsonl", [episode_record(e, "echo") for e in eps])
    >>> page = write_page(f"{folder}/page.html", build_page(load_collection([f"{folder}/eps.jsonl"])))
    >>> page.read_text().startswith("<!DOCTYPE html>")
    True
"""

from flexmg.view.compare import Comparison, default_comparisons, pair_by_prompt
from flexmg.view.page import build_page, page_data, write_page
from flexmg.view.sources import Collection, EpisodeGroup, ViewError, load_collection

__all__ = [
    "Collection",
    "Comparison",
    "EpisodeGroup",
    "ViewError",
    "build_page",
    "default_comparisons",
    "load_collection",
    "page_data",
    "pair_by_prompt",
    "write_page",
]
