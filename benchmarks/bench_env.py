"""Env overhead per agent turn on the echo example, next to PettingZoo's tictactoe_v3.

Measures ``env.last()`` + ``env.step()`` per turn (observation building,
turn scheduling, bookkeeping, transcript), minus the time spent inside the
reward function, which is measured and reported separately. Target: under 50
microseconds per turn.

Run: python benchmarks/bench_env.py [--episodes 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def bench_flexmg(episodes: int) -> tuple[float, float, int]:
    import flexmg
    from flexmg.examples.echo import EchoEnv, echo_reward

    judge_time = 0.0

    def timed_reward(task, transcript):
        nonlocal judge_time
        t0 = time.perf_counter()
        out = echo_reward(task, transcript)
        judge_time += time.perf_counter() - t0
        return out

    wf = flexmg.Workflow(
        name="echo-bench",
        roles=dict(EchoEnv.roles),
        edges=EchoEnv.edges,
        tasks=EchoEnv.tasks,
        reward=timed_reward,
    )
    env = wf()
    turns = 0
    start = time.perf_counter()
    for ep in range(episodes):
        env.reset(seed=ep)
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
            else:
                env.step("apple")
                turns += 1
    total = time.perf_counter() - start
    return (total - judge_time) / turns, judge_time / turns, turns


def bench_tictactoe(episodes: int) -> tuple[float, int]:
    from pettingzoo.classic import tictactoe_v3

    env = tictactoe_v3.env()
    rng = np.random.default_rng(0)
    turns = 0
    start = time.perf_counter()
    for ep in range(episodes):
        env.reset(seed=ep)
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
            else:
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[rng.integers(len(legal))]))
                turns += 1
    return (time.perf_counter() - start) / turns, turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20000)
    args = parser.parse_args()
    bench_flexmg(200)  # warm-up
    ours, judge, n_ours = bench_flexmg(args.episodes)
    ttt, n_ttt = bench_tictactoe(max(args.episodes // 4, 100))
    print(
        f"flexmg echo-v1     : {ours * 1e6:7.2f} us/turn (env overhead, {n_ours} turns; "
        f"reward fn adds {judge * 1e6:.2f} us/turn)"
    )
    print(
        f"pettingzoo tictactoe_v3: {ttt * 1e6:7.2f} us/turn ({n_ttt} turns, incl. its own game logic)"
    )
    print(f"ratio flexmg / tictactoe: {ours / ttt:.2f}x")
    print(f"target < 50 us/turn: {'MET' if ours * 1e6 < 50 else 'NOT MET'}")


if __name__ == "__main__":
    main()
