"""``flexmg play ENV``: play an env by hand, typing each role's message.

At a terminal a message ends with an empty line; from a pipe each line is one turn
(``printf 'garden\\ngarden\\n' | flexmg play echo``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flexmg.cli.common import check_env, parse_kwargs


def add_command(sub: Any) -> None:
    """Add ``play`` to the ``flexmg`` sub-commands."""
    p = sub.add_parser("play", help="play an env by hand: type each role's message")
    p.add_argument("env_id", help="a registered id or package.module:factory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="env kwargs")
    p.set_defaults(func=run)


def _read_action(role: str, piped: bool) -> str | None:
    """One message from stdin; None to quit (``\\q`` or the end of the input).

    Typed at a terminal, a message may span lines and ends with an empty line.
    From a pipe each line is one turn's message (blank lines are skipped; ``\\n``
    in a line is a newline of the message).
    """
    if piped:
        print(f"{role}> (one line per turn from the pipe)", flush=True)
        while True:
            try:
                line = input()
            except EOFError:
                return None
            if line == "\\q":
                return None
            if line.strip():
                return line.replace("\\n", "\n")
    print(f"{role}> (end with an empty line; '\\q' quits)", flush=True)
    lines: list[str] = []
    while True:
        try:
            line = input()
        except EOFError:
            return "\n".join(lines) if lines else None
        if line == "\\q":
            return None
        if line == "" and lines:
            return "\n".join(lines)
        if line == "" and not lines:
            return ""
        lines.append(line)


def run(args: argparse.Namespace) -> int:
    """Play one episode, reading each message from stdin (see :func:`_read_action`)."""
    import flexmg
    from flexmg.io import json_default
    from flexmg.vector_base import EnvRunner

    kwargs = parse_kwargs(args.kw)
    check_env(args.env_id, kwargs)
    piped = not sys.stdin.isatty()
    env = flexmg.make(args.env_id, **kwargs)
    runner = EnvRunner(env, 0)
    runner.reset(args.seed, None)
    print(f"=== {args.env_id} (seed {args.seed}); roles: {' -> '.join(env.graph.order())} ===")
    print(f"TASK:\n{env.task.prompt}\n")
    try:
        while (role := runner.pending()) is not None:
            obs = env.observe(role)
            print(f"--- round {int(obs['round']) + 1}, role: {role} ---")
            print(f"instructions: {obs['instructions']}")
            if obs["feedback"]:
                print(f"feedback: {obs['feedback']}")
            if obs["context"]:
                print(f"context:\n{obs['context']}")
            action = _read_action(role, piped)
            if action is None:
                print("quit.")
                return 0
            runner.step(role, action)
            rewards = runner.step_rewards
            if any(rewards.values()) or env.transcript[-1].position == 0 or not env.agents:
                print(f"rewards: {rewards}")
            note = env.transcript[-1].info.get("annotation")
            if note:
                print(f"[env]: {note}")
        metrics = env.episode_metrics
        print(
            f"=== episode over: success={metrics.get('success')} score={metrics.get('score')} "
            f"rounds={metrics.get('rounds')} ==="
        )
        print(json.dumps(metrics, indent=2, default=json_default))
    finally:
        env.close()
    return 0
