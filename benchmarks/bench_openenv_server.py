"""OpenEnv server overhead: episodes/s through ``flexmg serve`` next to in-process play.

The same episodes (seeds 0..N-1 of math-2agent, scripted replies, so the env and its
grader are the whole cost) are played three ways in each round, one after another:

* in process: the seat driver on one env (``play_episode``), the reference;
* one ``FlexMGSession`` session on ``flexmg serve`` with flexmg's lean ``/ws`` endpoint
  (the default, flexmg.integrations.openenv_ws);
* one ``FlexMGSession`` session on ``flexmg serve --openenv-ws`` (OpenEnv's own endpoint).

Target: one session within 3x of in-process episodes/s. Both servers run on this machine,
so server and client share its cores, and on uvloop when it is installed (the ``openenv``
extra installs it; the first line says which). The three ways alternate within each round
(``--rounds``, their order rotating from round to round), so all see the same load on a
shared machine; each way's episodes/s and each round's in-process/server ratio are printed
as min / median / max over the rounds. Also measured: OpenEnv's
``GenericEnvClient(...).sync()`` on each endpoint, a round trip without the env
(``state``), and with ``--sessions N``: N concurrent sessions (one client process each) on
a server with ``--workers`` processes against one session on that server, per endpoint.

Run: python benchmarks/bench_openenv_server.py [--episodes 300] [--rounds 7] [--sessions 2]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

ENV = "math-2agent"
REPLY = "The answer is \\boxed{5}."
REPEATS = 3
SERVER_PIDS: dict[str, int] = {}  # base URL -> its server process (for its CPU time)


def in_process(episodes: int, first: int = 0) -> float:
    """Episodes/s of the seat driver on one env."""
    import flexmg
    from flexmg.integrations.seats import play_episode

    env = flexmg.make(ENV)
    roles = {r: (lambda messages: REPLY) for r in env.possible_agents}
    start = time.perf_counter()
    for seed in range(first, first + episodes):
        play_episode(env, roles, seed=seed)
    return episodes / (time.perf_counter() - start)


def play_remote(client: Any, episodes: int, first: int = 0) -> list[float]:
    """Play ``episodes`` over ``client``; the scores."""
    scores = []
    for seed in range(first, first + episodes):
        result = client.reset(seed=seed)
        while not result.done:
            result = client.step({"message": REPLY})
        scores.append(float(result.observation["score"]))
    return scores


def one_session(url: str, episodes: int, client: str) -> float:
    """Episodes/s of one session with ``client`` (``flexmg`` or ``openenv``)."""
    if client == "flexmg":
        from flexmg.integrations.openenv_client import FlexMGSession

        session: Any = FlexMGSession(url, env_id=ENV)
    else:
        from openenv.core import GenericEnvClient

        session = GenericEnvClient(base_url=url).sync()
        session.connect()
    with session:
        play_remote(session, 5, first=10**6)  # warm up: connection, imports
        best = 0.0
        for _ in range(REPEATS):  # the best of a few: the machine is shared
            start = time.perf_counter()
            play_remote(session, episodes)
            best = max(best, episodes / (time.perf_counter() - start))
        return best


def cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds (user + system) of process ``pid`` so far, or of this process."""
    if pid is None:
        return time.process_time()
    with open(f"/proc/{pid}/stat") as f:  # Linux; fields 14 and 15: utime, stime
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternated(
    urls: dict[str, str], episodes: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Episodes/s per round of in-process play and of one FlexMGSession on each server.

    The ways take turns within each round (their order rotating from round to round), so
    each round's in-process and server figures saw the same load on a shared machine.
    Also returns each way's CPU microseconds per episode per round: this process's for
    in-process play, the server's plus this process's (the client) for a session. CPU
    time, unlike episodes/s, hardly depends on how busy the machine's other work keeps it.
    """
    from flexmg.integrations.openenv_client import FlexMGSession

    sessions = {name: FlexMGSession(url, env_id=ENV) for name, url in urls.items()}
    ways = ["in process", *urls]
    rates: dict[str, list[float]] = {way: [] for way in ways}
    cpu: dict[str, list[float]] = {way: [] for way in ways}
    try:
        for session in sessions.values():
            play_remote(session, 5, first=10**6)
        for index in range(rounds):
            shift = index % len(ways)
            for way in ways[shift:] + ways[:shift]:
                pid = SERVER_PIDS.get(urls.get(way, ""))
                before = cpu_seconds() + (cpu_seconds(pid) if pid else 0.0)
                if way == "in process":
                    rates[way].append(in_process(episodes))
                else:
                    start = time.perf_counter()
                    play_remote(sessions[way], episodes)
                    rates[way].append(episodes / (time.perf_counter() - start))
                after = cpu_seconds() + (cpu_seconds(pid) if pid else 0.0)
                cpu[way].append((after - before) / episodes * 1e6)
    finally:
        for session in sessions.values():
            session.close()
    return rates, cpu


def message_floor(url: str, calls: int = 2000) -> float:
    """Seconds per round trip of a request the server answers without the env (``state``)."""
    from flexmg.integrations.openenv_client import FlexMGSession

    with FlexMGSession(url) as session:
        session.reset(seed=0)
        for _ in range(100):
            session.state()
        start = time.perf_counter()
        for _ in range(calls):
            session.state()
        return (time.perf_counter() - start) / calls


def _session_worker(url: str, episodes: int, first: int, out: Any) -> None:
    from flexmg.integrations.openenv_client import FlexMGSession

    with FlexMGSession(url, env_id=ENV) as session:
        play_remote(session, 3, first=10**6 + first)
        out.put(("ready", time.perf_counter()))
        play_remote(session, episodes, first=first)
        out.put(("done", time.perf_counter()))


def many_sessions(url: str, episodes: int, sessions: int) -> float:
    """Episodes/s of ``sessions`` concurrent sessions, one client process each."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    per = max(1, episodes // sessions)
    procs = [
        ctx.Process(target=_session_worker, args=(url, per, i * per, out)) for i in range(sessions)
    ]
    for p in procs:
        p.start()
    events = [out.get(timeout=600) for _ in range(2 * sessions)]
    for p in procs:
        p.join()
    start = max(t for kind, t in events if kind == "ready")
    end = max(t for kind, t in events if kind == "done")
    return per * sessions / max(end - start, 1e-9)


@contextlib.contextmanager
def server(workers: int, lean: bool = True) -> Iterator[str]:
    """A ``flexmg serve`` process on a free port (``lean``: flexmg's /ws); its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "flexmg.cli", "serve", ENV, "--port", str(port)]
    cmd += ["--workers", str(workers), "--log-level", "warning"]
    cmd += [] if lean else ["--openenv-ws"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    SERVER_PIDS[url] = proc.pid
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
                    json.loads(resp.read())
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("flexmg serve did not come up") from None
                time.sleep(0.3)
        time.sleep(1.0 if workers > 1 else 0.0)  # let every worker start
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def spread(values: list[float]) -> str:
    """``min / median / max`` of ``values``."""
    import statistics

    return " / ".join(f"{v:,.2f}" for v in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300, help="episodes per pass")
    parser.add_argument("--rounds", type=int, default=7, help="alternated rounds")
    parser.add_argument("--sessions", type=int, default=0, help="also N concurrent sessions")
    parser.add_argument("--workers", type=int, default=0, help="server processes for them")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    in_process(20, first=10**6)  # warm up the grader
    names = {True: "lean /ws", False: "OpenEnv /ws"}
    with server(1, lean=True) as lean_url, server(1, lean=False) as openenv_url:
        urls = {names[True]: lean_url, names[False]: openenv_url}
        rates, cpu = alternated(urls, args.episodes, args.rounds)
        generic = {name: one_session(url, args.episodes, "openenv") for name, url in urls.items()}
        floors = {name: message_floor(url) for name, url in urls.items()}
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio (pip install uvloop)"
    local = rates["in process"]
    print(f"{ENV}, {args.episodes} episodes a pass, {args.rounds} alternated rounds, "
          f"scripted replies, cores: {os.cpu_count()}, server event loop: {loop}")  # fmt: skip
    print("episodes/s, min / median / max over the rounds:")
    print(f"  in process (seat driver), the reference: {spread(local)}")
    for name in urls:
        print(f"  server, 1 FlexMGSession, {name:<12}  : {spread(rates[name])}")
    print("in-process / server episodes/s, per round (target <= 3x), min / median / max:")
    for name in urls:
        ratios = [a / b for a, b in zip(local, rates[name], strict=True)]
        print(f"  {name:<12}: {spread(ratios)}")
    print("CPU us per episode (server + client for a session), min / median / max:")
    print(f"  in process  : {spread(cpu['in process'])}")
    for name in urls:
        ratios = [b / a for a, b in zip(cpu["in process"], cpu[name], strict=True)]
        print(f"  {name:<12}: {spread(cpu[name])}, {spread(ratios)}x in process's")
    lean_vs = [a / b for a, b in zip(rates[names[True]], rates[names[False]], strict=True)]
    print(f"lean / OpenEnv's endpoint episodes/s, per round: {spread(lean_vs)}")
    for name in urls:
        print(
            f"{name:<12}: OpenEnv's GenericEnvClient.sync(), best of {REPEATS}: "
            f"{generic[name]:,.1f} episodes/s; a round trip without the env (state): "
            f"{floors[name] * 1e6:.1f} us"
        )
    if args.sessions:
        workers = args.workers or min(args.sessions, os.cpu_count() or 1)
        for lean in (True, False):
            with server(workers, lean=lean) as url:
                one, many = [], []
                for _ in range(max(1, min(3, args.rounds))):  # alternated, as above
                    one.append(many_sessions(url, args.episodes, 1))
                    many.append(many_sessions(url, args.episodes, args.sessions))
            ratios = [m / o for m, o in zip(many, one, strict=True)]
            print(
                f"{names[lean]:<12}, {workers} workers: 1 session {spread(one)}, "
                f"{args.sessions} sessions {spread(many)} episodes/s; "
                f"{args.sessions} / 1 per round: {spread(ratios)}"
            )


if __name__ == "__main__":
    main()
