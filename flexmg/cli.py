"""The ``flexmg`` command line.

Commands: ``list`` (registered envs), ``check ENV_ID`` (conformance verdict),
``play ENV_ID`` (type each role's message by hand), ``sandbox ...``
(sandbox image and status), ``train`` / ``eval`` (MARFT and IPPO learners),
``leaderboard`` (compare agents), ``serve ENV_ID`` (an OpenEnv server),
``export ENV_ID`` (one dataset row per episode seed, for other trainers).

Example:
    $ flexmg list
    $ flexmg check math-2agent
    $ flexmg play echo --seed 3
    $ flexmg export math-2agent --split eval --n 1000 --format parquet --out gsm.parquet
    $ flexmg serve math-2agent --port 8000
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``["horizon=2", "tasks=gsm8k.jsonl"]`` -> ``{"horizon": 2, "tasks": "gsm8k.jsonl"}``.

    Values are read as JSON when they parse, else kept as strings.

    >>> parse_kwargs(["horizon=2", "tasks={\\"name\\": \\"linear\\"}", "split=eval"])
    {'horizon': 2, 'tasks': {'name': 'linear'}, 'split': 'eval'}
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--kw expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _cmd_list(args: argparse.Namespace) -> int:
    import flexmg

    flexmg.registration.load_plugins()
    rows = []
    for env_id in sorted(flexmg.registry):
        spec = flexmg.registry[env_id]
        try:
            env = spec.make()
            graph = env.graph if env._fixed_graph is None else env._fixed_graph
            roles = (
                " -> ".join(env._fixed_graph.order())
                if env._fixed_graph
                else ", ".join(env.possible_agents)
            )
            edges = str(graph) if env._fixed_graph else "per-round graph function"
            env.close()
        except Exception as err:  # still list it, with the reason
            roles, edges = "?", f"(cannot build: {type(err).__name__}: {err})"
        rows.append((env_id, roles, edges, spec.description))
    if args.json:
        print(
            json.dumps(
                [dict(zip(("id", "roles", "graph", "description"), r)) for r in rows], indent=2
            )
        )
        return 0
    width = max(len(r[0]) for r in rows)
    for env_id, roles, edges, desc in rows:
        print(f"{env_id.ljust(width)}  {desc}")
        print(f"{' ' * width}  roles: {roles}")
        print(f"{' ' * width}  graph: {edges}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from flexmg.test import api_test

    print(f"checking {args.env_id} ...", flush=True)
    report = api_test(args.env_id, num_cycles=args.cycles, verbose=True, **parse_kwargs(args.kw))
    return 0 if report.passed else 1


def _read_action(role: str) -> str | None:
    print(f"{role}> (end with an empty line; '\\q' quits)", flush=True)
    lines = []
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


def _cmd_play(args: argparse.Namespace) -> int:
    import flexmg
    from flexmg.io import json_default

    env = flexmg.make(args.env_id, **parse_kwargs(args.kw))
    env.reset(seed=args.seed)
    print(f"=== {args.env_id} (seed {args.seed}); roles: {' -> '.join(env.graph.order())} ===")
    print(f"TASK:\n{env.task.prompt}\n")
    try:
        for role in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            print(f"--- round {int(obs['round']) + 1}, role: {role} ---")
            print(f"instructions: {obs['instructions']}")
            if obs["feedback"]:
                print(f"feedback: {obs['feedback']}")
            if obs["context"]:
                print(f"context:\n{obs['context']}")
            action = _read_action(role)
            if action is None:
                print("quit.")
                return 0
            env.step(action)
            if any(env.rewards.values()) or env.transcript[-1].position == 0 or not env.agents:
                print(f"rewards: {env.rewards}")
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


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from flexmg.integrations.openenv import serve
    except ImportError as err:
        print(f"flexmg: error: {err}", file=sys.stderr)
        return 2
    kwargs = parse_kwargs([*args.kw, *args.kw_opt])
    serve(args.env_id, kwargs, host=args.host, port=args.port, max_sessions=args.max_sessions)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from flexmg.integrations.export import export_rows

    fmt = args.format or ("parquet" if args.out.endswith(".parquet") else "jsonl")
    try:
        path = export_rows(
            args.env_id,
            args.out,
            n=args.n,
            fmt=fmt,
            split=args.split,
            seed_start=args.seed_start,
            env_kwargs=parse_kwargs([*args.kw, *args.kw_opt]),
            agent_name=args.agent_name,
            progress=True,
        )
    except (ImportError, ValueError) as err:
        print(f"flexmg: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.n} rows ({fmt}) to {path}")
    return 0


def _add_kwargs_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kw", nargs="*", metavar="KEY=VALUE", help="env kwargs (JSON values)")
    p.add_argument("--kw", dest="kw_opt", nargs="*", default=[], metavar="KEY=VALUE")


def standalone_main(add_commands: Any, prog: str, argv: Sequence[str] | None = None) -> int:
    """Run one package's commands without the rest of the CLI (``python -m flexmg.agents.cli``).

    ``add_commands(subparsers)`` adds the package's sub-commands, each with a ``func``.
    """
    parser = argparse.ArgumentParser(prog=prog)
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flexmg", description="Flex-MG environments for teams of LLM agents."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("list", help="list registered env ids with roles and graph")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_list)
    p = sub.add_parser("check", help="run the conformance checker on an env id")
    p.add_argument("env_id")
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="env kwargs")
    p.set_defaults(func=_cmd_check)
    p = sub.add_parser("play", help="play an env by hand: type each role's message")
    p.add_argument("env_id")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="env kwargs")
    p.set_defaults(func=_cmd_play)
    p = sub.add_parser("serve", help="serve an env with OpenEnv's HTTP/WebSocket API")
    p.add_argument("env_id")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--max-sessions", type=int, default=64, help="concurrent WebSocket sessions")
    _add_kwargs_arguments(p)
    p.set_defaults(func=_cmd_serve)
    p = sub.add_parser("export", help="write one dataset row per episode seed (jsonl/parquet)")
    p.add_argument("env_id")
    p.add_argument("--out", required=True, help="output file (.jsonl or .parquet)")
    p.add_argument("--n", type=int, default=1000, help="number of episodes (seeds)")
    p.add_argument("--split", default="eval", help="task split: train, eval or all")
    p.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default=None,
        help="default: from the --out suffix",
    )
    p.add_argument("--seed-start", type=int, default=0, help="first seed")
    p.add_argument("--agent-name", default="flexmg_agent", help="verl's agent_name column")
    _add_kwargs_arguments(p)
    p.set_defaults(func=_cmd_export)
    from flexmg.view import cli as view_cli

    p = sub.add_parser("view", help=view_cli.HELP)
    view_cli.add_arguments(p)
    p.set_defaults(func=view_cli.run)
    for module in ("flexmg.sandboxes.cli", "flexmg.agents.cli", "flexmg.baselines.cli"):
        try:
            mod = __import__(module, fromlist=["add_commands"])
        except ImportError as err:
            missing = (getattr(err, "name", "") or "").split(".")[0]
            if missing in {"torch", "transformers", "peft", "tokenizers"}:
                continue  # those commands need the train extra; they are absent without it
            if module.endswith((".cli",)) and getattr(err, "name", "") == module:
                continue
            raise
        mod.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``flexmg`` console script."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # KEY=VALUE env kwargs may follow options (``flexmg serve ID --port 1 k=v``)
        if not hasattr(args, "kw_opt") or any(a.startswith("-") or "=" not in a for a in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.kw = [*args.kw, *extra]
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from flexmg.registration import MissingDependencyError, UnknownEnvError

    try:
        return int(args.func(args) or 0)
    except (UnknownEnvError, MissingDependencyError) as err:
        print(f"flexmg: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
