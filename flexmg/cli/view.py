"""``flexmg view PATH ... [--out PAGE.html] [--open]``: write the episodes page of runs, evals, leaderboards.

:func:`add_command` adds ``view`` to the ``flexmg`` sub-commands; :func:`add_arguments`
declares its flags on any parser and :func:`run` carries it out.

Example:
    >>> import argparse, flexmg, os, tempfile
    >>> from flexmg.episodes import rollout
    >>> from flexmg.transcripts import episode_record, write_transcripts
    >>> folder = tempfile.mkdtemp()
    >>> eps = rollout(flexmg.make("echo"), lambda o: "hi", episodes=3).episodes
    >>> _ = write_transcripts(f"{folder}/eps.jsonl", [episode_record(e, "echo") for e in eps])
    >>> parser = argparse.ArgumentParser(prog="flexmg view")
    >>> add_arguments(parser)
    >>> run(parser.parse_args([f"{folder}/eps.jsonl", "--out", f"{folder}/page.html"]))
    wrote ...page.html: 3 episodes in 1 group, 0 side-by-side comparisons
    0
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from typing import Any

from flexmg.view.compare import default_comparisons
from flexmg.view.page import DEFAULT_MAX_CHARS, build_page, write_page
from flexmg.view.sources import MAX_EPISODES, ViewError, load_collection

__all__ = ["HELP", "add_arguments", "add_command", "default_output", "run"]

HELP = "write one HTML page of episodes (a run folder, an eval, a leaderboard, an episodes file)"


def add_command(sub: Any) -> None:
    """Add ``view`` to the ``flexmg`` sub-commands."""
    parser = sub.add_parser("view", help=HELP)
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg view``."""
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a training run folder, a `flexmg eval` output (.json), a leaderboard folder or an "
        "episodes file (.jsonl); several are shown together",
    )
    parser.add_argument(
        "--out",
        metavar="PAGE.html",
        help="the page to write (default: view.html in the folder, or the file's name with .html)",
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument("--title", help="the page's title (default: from the paths)")
    parser.add_argument(
        "--max-episodes",
        type=int,
        default=MAX_EPISODES,
        help=f"episodes on the page, at most (default {MAX_EPISODES}; each group keeps its first)",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        help=f"characters of one text kept in the page, at most (default {DEFAULT_MAX_CHARS})",
    )


def default_output(paths: list[str]) -> Path:
    """Where the page goes without ``--out``.

    >>> default_output(["runs/r1"]).as_posix(), default_output(["a/eps.jsonl"]).as_posix()
    ('runs/r1/view.html', 'a/eps.html')
    """
    if len(paths) != 1:
        return Path("flexmg-view.html")
    path = Path(paths[0])
    return path / "view.html" if path.is_dir() or not path.suffix else path.with_suffix(".html")


def run(args: argparse.Namespace) -> int:
    """Write the page; one line on stderr and a non-zero exit for anything it cannot show."""
    if args.max_chars < 100:
        print(
            f"flexmg view: error: --max-chars must be >= 100, got {args.max_chars}", file=sys.stderr
        )
        return 2
    if args.max_episodes < 1:
        print(
            f"flexmg view: error: --max-episodes must be >= 1, got {args.max_episodes}",
            file=sys.stderr,
        )
        return 2
    try:
        col = load_collection(args.paths, title=args.title, max_episodes=args.max_episodes)
    except FileNotFoundError as exc:
        print(f"flexmg view: error: {exc}", file=sys.stderr)
        return 2
    except ViewError as exc:
        print(f"flexmg view: error: {exc}", file=sys.stderr)
        return 1
    comparisons = default_comparisons(col.groups)
    out = Path(args.out) if args.out else default_output(args.paths)
    try:
        write_page(out, build_page(col, comparisons, max_chars=args.max_chars))
    except OSError as exc:
        print(f"flexmg view: error: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    groups = len(col.groups)
    print(
        f"wrote {out}: {col.episodes} episodes in {groups} group{'s' * (groups != 1)}, "
        f"{len(comparisons)} side-by-side comparison{'s' * (len(comparisons) != 1)}"
    )
    for line in col.skipped[:5]:
        print(f"flexmg view: skipped {line}", file=sys.stderr)
    if len(col.skipped) > 5:
        print(f"flexmg view: skipped {len(col.skipped) - 5} more lines", file=sys.stderr)
    if args.open and not webbrowser.open(out.resolve().as_uri()):
        print(f"flexmg view: no browser to open; open {out.resolve().as_uri()}", file=sys.stderr)
    return 0
