"""Seat-driver overhead per turn on the echo example, next to the plain AEC loop.

The seat driver renders each turn's chat prompt, keeps per-role transcripts,
rewards and role-tagged segments; the reference is the same episodes played
with ``env.agent_iter()`` / ``env.last()`` / ``env.step()``, measured in the same
run. Target: driver/plain under 1.5x on echo (where the env itself is the whole
cost, so this is the worst case). ``play_batch`` is reported too; it builds its
envs on every call, which dominates on echo.

Run: python benchmarks/bench_seats.py [--episodes 5000]
"""

from __future__ import annotations

import argparse
import time


def bench_plain(episodes: int) -> tuple[float, int]:
    import flexmg

    env = flexmg.make("echo")
    turns = 0
    start = time.perf_counter()
    for ep in range(episodes):
        env.reset(seed=ep)
        for _ in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
            else:
                env.step("apple")
                turns += 1
    return (time.perf_counter() - start) / turns, turns


def bench_driver(episodes: int) -> tuple[float, int]:
    import flexmg
    from flexmg.integrations.seats import play_episode

    env = flexmg.make("echo")
    roles = {r: (lambda messages: "apple") for r in env.possible_agents}
    turns = 0
    start = time.perf_counter()
    for ep in range(episodes):
        turns += len(play_episode(env, roles, seed=ep).segments)
    return (time.perf_counter() - start) / turns, turns


def bench_batch(episodes: int, batch: int) -> tuple[float, int]:
    from flexmg.integrations.seats import play_batch

    roles = {r: (lambda b: ["apple"] * len(b)) for r in ("a", "b")}
    turns = 0
    start = time.perf_counter()
    for first in range(0, episodes, batch):
        results = play_batch("echo", roles, seeds=range(first, first + batch))
        turns += sum(len(r.segments) for r in results)
    return (time.perf_counter() - start) / turns, turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    plain, n_plain = bench_plain(args.episodes)
    driver, n_driver = bench_driver(args.episodes)
    batch, n_batch = bench_batch(args.episodes, args.batch)
    print(f"plain AEC loop     : {plain * 1e6:8.1f} us/turn ({n_plain} turns)")
    print(f"play_episode       : {driver * 1e6:8.1f} us/turn ({n_driver} turns)")
    print(
        f"play_batch ({args.batch:>3})   : {batch * 1e6:8.1f} us/turn ({n_batch} turns, envs built per call)"
    )
    print(f"driver overhead    : {(driver - plain) * 1e6:8.1f} us/turn")
    print(f"ratio driver/plain : {driver / plain:8.2f}x (target < 1.5x)")


if __name__ == "__main__":
    main()
