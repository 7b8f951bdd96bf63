"""Benchmark the MARFT learner: one update at the real-model defaults, and team sizes.

**Learner section** (``--section learner``): one rollout + PPO update at the
defaults of ``flexmg train --model PATH`` (128 episodes x 512 new tokens,
micro-batches of 8) on a thin Qwen2-shaped model (1 layer, 32 wide) with
Qwen's 151,936-token vocabulary; peak memory against vocabulary size and
action length (each point in a fresh child process); the time of one update
with the rollout's old log-probs (now) against recomputing them in a second
pass (before); and, after one PPO step on 500-token actions, how much of the
batch each ratio definition (per token, length-normalised action, summed
action) would clip. Target: <= 4 GiB peak RSS on CPU at the defaults.

**Teams section** (``--section teams``): memory, rollout and update speed for 1,
2 and 4 agents:

For each model (the warm-started tiny model and a ~50M-parameter random-init
Qwen2-style model with the same character vocabulary) and each team size, a
fresh child process builds a :class:`~flexmg.agents.policy.TeamPolicy`, runs a
rollout (every role generates for a batch of math observations, each seeing its
predecessors' outputs; here a fixed-size stand-in so that every team size does
the same work per call) and a PPO-style update (batched ``evaluate`` + backward +
Adam step per role), and reports its own peak RSS. It also times the batched
log-prob recomputation against a per-sample loop over the same batch. Peak RSS
comes from a second child per configuration that runs one rollout + update with
a fixed glibc mmap threshold (live memory, not the allocator's cache).

On CUDA (``--device cuda``, or ``auto`` on a machine with a GPU) timings are
synchronized and the memory figure is the peak of ``torch.cuda.max_memory_allocated``.

To tell a slow batched path from a compute-bound one, the benchmark also counts
the floating-point operations of one batched recomputation
(``torch.utils.flop_counter``) and measures the device's large-matmul rate in the
same process: ``flops / rate`` is a floor under any batched implementation, so
``loop time / floor`` is the most any batching could gain over the loop there.

Run:
    python benchmarks/bench_marft.py            # both sections; the learner's takes long on a CPU
    python benchmarks/bench_marft.py --section learner --device cuda   # every GPU figure
    python benchmarks/bench_marft.py --quick    # well under a minute
    python benchmarks/bench_marft.py --device cuda --dtype bfloat16   # on a GPU
    python benchmarks/bench_marft.py --json out.json

Targets: peak memory with 4 agents <= 1.15x that with 1 agent (one base model,
adapters only per role); batched recomputation >= 5x faster than the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXED_CONTEXT = "\n".join(f"[{r}]: \\boxed{{12}} x" for r in ("decomposer", "planner", "executor"))
TEAMS = {
    1: ("solver",),
    2: ("solver", "verifier"),
    4: ("decomposer", "planner", "executor", "verifier"),
}


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], Any], device: Any, reps: int) -> float:
    """Mean seconds per call of ``fn`` over ``reps`` calls, after one warm-up call."""
    fn()
    _synchronize(device)
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    _synchronize(device)
    return (time.perf_counter() - start) / reps


def matmul_rate(device: Any, dtype: Any, size: int = 1024, reps: int = 5) -> float:
    """The device's square-matmul rate in FLOP/s for ``dtype`` (best of a few sizes)."""
    import torch

    sizes = (size, 2 * size, 4 * size) if device.type == "cuda" else (size // 2, size)
    best = 0.0
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        best = max(best, 2 * n**3 / _timed(lambda a=a, b=b: a @ b, device, reps))
    return best


def count_flops(fn: Callable[[], Any]) -> int:
    """Floating-point operations of one call of ``fn`` (matmuls and attention)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return int(counter.get_total_flops())


def child(
    model: str,
    agents: int,
    batch: int,
    new_tokens: int,
    reps: int,
    seed: int,
    threads: int,
    device_name: str = "cpu",
    dtype_name: str = "auto",
) -> dict:
    """Measure one (model, team size) configuration in this process; returns a result dict."""
    import torch

    torch.set_num_threads(threads)
    from flexmg.agents.policy import PolicyConfig, TeamPolicy
    from flexmg.models.tiny.model import count_parameters

    torch.manual_seed(seed)
    roles = list(TEAMS[agents])
    cfg = PolicyConfig(  # the tiny model's sampling and batching, whatever the shape
        model=model, max_new_tokens=new_tokens, device=device_name, dtype=dtype_name,
        prompt_style="compact", temperature=1.0, micro_batch=0,
    )  # fmt: skip
    policy = TeamPolicy(roles, cfg)
    device = policy.device
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        from flexmg.envs.math import make_math_source

        source = make_math_source("arithmetic", split="train", difficulty=1)
        tasks = [source.get(i).prompt for i in range(batch)]
    except ImportError:  # the env package is part of the repo; keep the bench usable alone
        tasks = [f"What is {i % 10} + {(3 * i) % 10}?" for i in range(batch)]
    actor_optims = {r: torch.optim.Adam(policy.policy_parameters(r), lr=1e-4) for r in roles}
    critic_optim = torch.optim.Adam(policy.critic_parameters(), lr=1e-4)

    def rollout() -> tuple[dict[str, Any], int, float]:
        # Every role of every team size sees the same fixed-size context (as long as the
        # last role of a 4-agent team would), so per-call shapes are identical across team
        # sizes and memory/throughput differences come from the team machinery alone.
        batches = {}
        tokens = 0
        start = time.perf_counter()
        for role in roles:
            obs = [{"task": t, "role": role, "context": FIXED_CONTEXT} for t in tasks]
            out = policy.act(role, obs)
            batches[role] = out
            tokens += sum(len(a) for a in out.action_ids)
        _synchronize(device)
        return batches, tokens, time.perf_counter() - start

    def update(batches: dict[str, Any]) -> float:
        start = time.perf_counter()
        critic_optim.zero_grad(set_to_none=True)
        for role in roles:
            b = batches[role]
            ev = policy.evaluate(role, b.prompt_ids, b.action_ids)
            old = torch.tensor([sum(lp) for lp in b.token_logprobs], device=device)
            loss = -(ev.action_logprob - old).exp().mean() + (ev.values**2).mean()
            actor_optims[role].zero_grad(set_to_none=True)
            loss.backward()
            actor_optims[role].step()
        critic_optim.step()
        _synchronize(device)
        return time.perf_counter() - start

    batches, _, _ = rollout()  # warm-up
    update(batches)
    if reps == 0:  # memory-only run
        update(batches)
        return {"peak_rss_mb": round(_peak_rss_mb(), 1), **_gpu_peak(device)}
    roll_tokens = roll_time = upd_time = 0.0
    for _ in range(reps):
        batches, tokens, dt = rollout()
        roll_tokens += tokens
        roll_time += dt
        upd_time += update(batches)

    # Batched recomputation vs a per-sample loop over the same batch (forward + backward).
    b = batches[roles[0]]

    def batched() -> None:
        policy.evaluate(roles[0], b.prompt_ids, b.action_ids).action_logprob.sum().backward()

    def looped() -> None:
        for p, a in zip(b.prompt_ids, b.action_ids, strict=True):
            policy.evaluate(roles[0], [p], [a]).action_logprob.sum().backward()

    timings = {
        name: _timed(fn, device, reps) for name, fn in (("batched", batched), ("loop", looped))
    }
    flops = count_flops(batched)
    rate = matmul_rate(device, policy.dtype)
    floor = flops / rate
    policy.zero_grad(set_to_none=True)
    update(batches)  # leave gradients and optimizer states allocated for the memory figure
    state_bytes = sum(
        t.numel() * t.element_size()
        for opt in [critic_optim, *actor_optims.values()]
        for st in opt.state.values()
        for t in st.values()
        if torch.is_tensor(t)
    )
    tensor_bytes = sum(p.numel() * p.element_size() for p in policy.parameters()) + sum(
        p.grad.numel() * p.grad.element_size() for p in policy.parameters() if p.grad is not None
    )
    base = policy.model.get_base_model()
    adapters = sum(p.numel() for r in {policy.adapter_name(x): x for x in roles}.values()
                   for p in policy.policy_parameters(r))  # fmt: skip
    return {
        "model": "tiny" if model == "tiny" else "mid-50M",
        "agents": agents,
        "batch": batch,
        "base_params": count_parameters(base) - adapters,
        "adapter_params": adapters,
        "critic_params": sum(p.numel() for p in policy.critic_parameters()),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "model_state_mb": round((tensor_bytes + state_bytes) / 2**20, 2),
        "rollout_tokens_per_s": round(roll_tokens / roll_time, 1),
        "update_samples_per_s": round(reps * agents * batch / upd_time, 1),
        "recompute_batched_s": round(timings["batched"], 4),
        "recompute_loop_s": round(timings["loop"], 4),
        "recompute_speedup": round(timings["loop"] / timings["batched"], 2),
        "recompute_gflop": round(flops / 1e9, 3),
        "matmul_gflops": round(rate / 1e9, 1),
        "recompute_batched_gflops": round(flops / timings["batched"] / 1e9, 1),
        "recompute_speedup_ceiling": round(timings["loop"] / floor, 2),
        "threads": torch.get_num_threads(),
        "device": str(device),
        "dtype": str(policy.dtype).removeprefix("torch."),
        **_gpu_peak(device),
    }


def _gpu_peak(device: Any) -> dict[str, float]:
    import torch

    if device.type != "cuda":
        return {}
    return {"peak_gpu_mb": round(torch.cuda.max_memory_allocated(device) / 2**20, 1)}


def save_mid_model(folder: Path) -> str:
    """Write the ~50M-parameter random Qwen2-style model (character tokenizer) to ``folder``."""
    from flexmg.models.tiny.model import build_tiny_model, count_parameters, mid_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    model = build_tiny_model(seed=0, config=mid_config())
    print(f"mid model: {count_parameters(model) / 1e6:.1f}M parameters", file=sys.stderr)
    model.save_pretrained(folder)
    build_char_tokenizer().save_pretrained(folder)
    return str(folder)


def run_child(args: list[str], memory_only: bool = False) -> dict:
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TQDM_DISABLE": "1"}
    if memory_only:
        # A fixed glibc mmap threshold returns freed large buffers to the OS, so peak RSS
        # tracks live memory, not the allocator's cache (which grows with the call count).
        # It slows allocation down, so timings come from a separate child without it.
        env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def format_report(results: list[dict]) -> str:
    """The per-configuration table printed by :func:`main`."""
    memory = "peak GPU MB" if "peak_gpu_mb" in results[0] else "peak RSS MB"
    header = (f"{'model':<8} {'agents':>6} {'batch':>5} {memory:>11} {'rollout tok/s':>13} "
              f"{'update samples/s':>16} {'recompute x':>11} {'ceiling x':>9}")  # fmt: skip
    lines = [header, "-" * len(header)]
    for r in results:
        mb = r.get("peak_gpu_mb", r["peak_rss_mb"])
        lines.append(f"{r['model']:<8} {r['agents']:>6} {r['batch']:>5} {mb:>11.1f} "
                     f"{r['rollout_tokens_per_s']:>13.1f} {r['update_samples_per_s']:>16.1f} "
                     f"{r['recompute_speedup']:>10.1f}x {r['recompute_speedup_ceiling']:>8.1f}x")  # fmt: skip
    return "\n".join(lines)


def summarize(results: list[dict]) -> dict[str, dict[str, Any]]:
    """Per model: the 4-vs-1-agent memory ratios and the worst recompute speedup.

    The memory figure is the GPU peak on CUDA, else the process's peak RSS.
    """
    summary = {}
    for name in dict.fromkeys(r["model"] for r in results):
        rows = {r["agents"]: r for r in results if r["model"] == name}
        key = "peak_gpu_mb" if "peak_gpu_mb" in rows[1] else "peak_rss_mb"
        worst = min(rows.values(), key=lambda r: r["recompute_speedup"])
        summary[name] = {
            "device": rows[1]["device"],
            "dtype": rows[1]["dtype"],
            "threads": rows[1]["threads"],
            "memory": "GPU memory" if key == "peak_gpu_mb" else "RSS",
            "memory_ratio_4_vs_1": round(rows[4][key] / rows[1][key], 3),
            "model_state_ratio_4_vs_1": round(
                rows[4]["model_state_mb"] / rows[1]["model_state_mb"], 3
            ),
            "min_recompute_speedup": worst["recompute_speedup"],
            "min_recompute_speedup_ceiling": worst["recompute_speedup_ceiling"],
            "batched_gflops": worst["recompute_batched_gflops"],
            "matmul_gflops": worst["matmul_gflops"],
            "base_params": rows[1]["base_params"],
            "adapter_params_4_agents": rows[4]["adapter_params"],
        }
    return summary


# ----------------------------------------------------------------------------- learner
# One PPO update at the learner's defaults for real models (``--model PATH``): 128
# episodes x 512 new tokens, Qwen's 151,936-token vocabulary, on a thin Qwen2-shaped model.
DEFAULT_VOCAB, DEFAULT_NEW_TOKENS, DEFAULT_EPISODES = 151_936, 512, 128


def save_thin_model(folder: Path, vocab: int) -> str:
    """A 1-layer, 32-wide Qwen2-shaped random model with a ``vocab``-token embedding."""
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    cfg = tiny_config(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)  # fmt: skip
    build_tiny_model(seed=0, config=cfg).save_pretrained(folder)
    build_char_tokenizer().save_pretrained(folder)
    return str(folder)


def _rollout_batch(policy: Any, episodes: int, seed: int) -> tuple[Any, float]:
    """One role's rollout of ``episodes`` math prompts (rewards: a seeded coin, so that the
    actor step happens), as single-turn episodes; returns the batch and its seconds."""
    import random

    from flexmg.agents.samples import RolloutBatch, Sample

    rng = random.Random(seed)
    obs = [
        {"task": f"What is {i % 50} + {(7 * i) % 50}?", "role": "solver"} for i in range(episodes)
    ]
    start = time.perf_counter()
    ab = policy.act("solver", obs)
    _synchronize(policy.device)
    seconds = time.perf_counter() - start
    episodes_out = []
    for i in range(episodes):
        reward = float(rng.random() < 0.5)
        episodes_out.append([Sample(
            episode=i, turn=0, role="solver", round=0, prompt_ids=ab.prompt_ids[i],
            action_ids=ab.action_ids[i], truncated=ab.truncated[i], reward=reward,
            team_reward=reward, last_in_round=True, sampler_logprobs=ab.sampler_logprobs[i],
            old_token_logprobs=ab.token_logprobs[i], old_value=ab.values[i],
            old_token_values=ab.token_values[i],
        )])  # fmt: skip
    return RolloutBatch(episodes_out, [{} for _ in episodes_out]), seconds


def learner_child(
    vocab: int, new_tokens: int, episodes: int, recompute: int, threads: int,
    device_name: str = "cpu", dtype_name: str = "auto",
) -> dict:  # fmt: skip
    """Rollout + one PPO update at the real-model defaults; peak memory and seconds."""
    import torch

    torch.set_num_threads(threads)
    from flexmg.agents.marft import MARFT
    from flexmg.agents.policy import PolicyConfig, TeamPolicy
    from flexmg.agents.ppo import PPOConfig, PPOLearner

    with tempfile.TemporaryDirectory(prefix="flexmg-thin-") as tmp:
        path = save_thin_model(Path(tmp), vocab)  # a model folder: the "llm" kind's defaults
        policy = TeamPolicy(["solver"], PolicyConfig(
            model=path, device=device_name, dtype=dtype_name, max_new_tokens=new_tokens,
            prompt_style="compact"))  # fmt: skip
    learner = PPOLearner(policy, PPOConfig(recompute_old=bool(recompute)), MARFT)
    if policy.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(policy.device)
    torch.manual_seed(0)
    batch, rollout_s = _rollout_batch(policy, episodes, seed=0)
    start = time.perf_counter()
    stats = learner.update(batch, update=0, generator=torch.Generator().manual_seed(0))
    _synchronize(policy.device)
    return {
        "vocab": vocab, "new_tokens": new_tokens, "episodes": episodes,
        "recompute_old": bool(recompute), "micro_batch": policy.config.micro_batch,
        "action_tokens": sum(len(s.action_ids) for s in batch.samples) / episodes,
        "rollout_s": round(rollout_s, 2), "update_s": round(time.perf_counter() - start, 2),
        "actor_steps": stats["actor_steps"], "sampler_kl": stats["sampler_kl"],
        "peak_rss_mb": round(_peak_rss_mb(), 1), "device": str(policy.device),
        "dtype": str(policy.dtype).removeprefix("torch."), "threads": torch.get_num_threads(),
        **_gpu_peak(policy.device),
    }  # fmt: skip


def ratio_child(
    vocab: int, new_tokens: int, episodes: int, lr: float, threads: int,
    device_name: str = "cpu", dtype_name: str = "auto",
) -> dict:  # fmt: skip
    """After one PPO step (epochs 1, minibatches 1): the share of the batch that each
    ratio definition would clip at 0.2 (token ratios: share of tokens; action ratios:
    share of actions)."""
    import torch

    torch.set_num_threads(threads)
    from flexmg.agents.marft import MARFT
    from flexmg.agents.policy import PolicyConfig, TeamPolicy
    from flexmg.agents.ppo import PPOConfig, PPOLearner, _pad

    with tempfile.TemporaryDirectory(prefix="flexmg-thin-") as tmp:
        path = save_thin_model(Path(tmp), vocab)  # a model folder: the "llm" kind's defaults
        policy = TeamPolicy(["solver"], PolicyConfig(
            model=path, device=device_name, dtype=dtype_name, max_new_tokens=new_tokens,
            prompt_style="compact"))  # fmt: skip
    ppo = PPOConfig(lr_actor=lr, epochs=1, minibatches=1, target_kl=None, lr_schedule="constant")
    learner = PPOLearner(policy, ppo, MARFT)
    torch.manual_seed(0)
    batch, _ = _rollout_batch(policy, episodes, seed=0)
    learner.update(batch, update=0)
    samples = batch.samples
    new = policy.score("solver", [s.prompt_ids for s in samples], [s.action_ids for s in samples])[
        0
    ]
    width = max(len(s.action_ids) for s in samples)
    dev = torch.device("cpu")
    log_ratio = _pad(new, width, dev) - _pad([s.old_token_logprobs for s in samples], width, dev)
    mask = _pad([[1.0] * len(s.action_ids) for s in samples], width, dev)
    summed = (log_ratio * mask).sum(-1)
    mean = summed / mask.sum(-1).clamp(min=1.0)

    def clipped(lr_: torch.Tensor) -> torch.Tensor:
        return ((lr_.exp() - 1.0).abs() > 0.2).float()

    return {
        "vocab": vocab, "new_tokens": new_tokens, "episodes": episodes, "lr_actor": lr,
        "action_tokens": float(mask.sum() / len(samples)),
        "clip_token": round(float((clipped(log_ratio) * mask).sum() / mask.sum()), 4),
        "clip_action_mean": round(float(clipped(mean).mean()), 4),
        "clip_action_sum": round(float(clipped(summed).mean()), 4),
        "mean_abs_token_log_ratio": float((log_ratio.abs() * mask).sum() / mask.sum()),
    }  # fmt: skip


def learner_report(memory: list[dict], timing: list[dict], ratios: list[dict]) -> str:
    """The learner section's printed report (memory grid, update time, ratio clip shares)."""
    key = "peak_gpu_mb" if memory and "peak_gpu_mb" in memory[0] else "peak_rss_mb"
    label = "peak GPU MiB" if key == "peak_gpu_mb" else "peak RSS MiB"
    lines = [f"{'vocab':>7} {'new tokens':>10} {'episodes':>8} {label:>13} {'rollout s':>9} "
             f"{'update s':>8}"]  # fmt: skip
    for r in memory:
        lines.append(f"{r['vocab']:>7} {r['new_tokens']:>10} {r['episodes']:>8} {r[key]:>13.1f} "
                     f"{r['rollout_s']:>9.1f} {r['update_s']:>8.1f}")  # fmt: skip
    default = [r for r in memory if (r["vocab"], r["new_tokens"], r["episodes"])
               == (DEFAULT_VOCAB, DEFAULT_NEW_TOKENS, DEFAULT_EPISODES)]  # fmt: skip
    if default:
        gib = default[0][key] / 1024
        target = " (target <= 4 GiB RSS on CPU: " + ("met)" if gib <= 4 else "NOT met)")
        lines.append(f"one update at the defaults: peak {gib:.2f} GiB"
                     + (target if key == "peak_rss_mb" else ""))  # fmt: skip
    if len(timing) == 2:
        once, twice = sorted(timing, key=lambda r: r["recompute_old"])
        lines.append(
            f"time per update at {once['episodes']} x {once['new_tokens']} tokens: "
            f"{once['update_s']:.1f} s with the rollout's log-probs (now) vs "
            f"{twice['update_s']:.1f} s recomputing them (before): "
            f"recompute ratio {twice['update_s'] / max(once['update_s'], 1e-9):.2f}x"
        )
    for r in ratios:
        lines.append(
            f"after one step (lr {r['lr_actor']:g}, {r['action_tokens']:.0f}-token actions): "
            f"clipped at 0.2: token ratios {100 * r['clip_token']:.1f}% of tokens, "
            f"length-normalised action ratio {100 * r['clip_action_mean']:.1f}% of actions, "
            f"summed action ratio {100 * r['clip_action_sum']:.1f}% of actions"
        )
    return "\n".join(lines)


def run_learner_section(args: argparse.Namespace) -> dict[str, list[dict]]:
    """Memory grid over vocabulary size and action length, update time, ratio clip shares."""
    episodes = 16 if args.quick else DEFAULT_EPISODES
    vocabs = [8192, DEFAULT_VOCAB] if not args.quick else [8192, 32768]
    lengths = [128, DEFAULT_NEW_TOKENS] if not args.quick else [32, 64]
    common = [str(args.threads), args.device, args.dtype]
    memory = []
    for vocab in vocabs:
        for tokens in lengths:
            res = run_child(["learner", str(vocab), str(tokens), str(episodes), "0", *common],
                            memory_only=True)  # fmt: skip
            memory.append(res)
            print(json.dumps(res), file=sys.stderr)
    t_episodes, t_tokens = (episodes, lengths[-1]) if args.device.startswith("cuda") else (
        min(episodes, 32), min(lengths[-1], 128))  # fmt: skip
    timing = [run_child(["learner", str(vocabs[-1]), str(t_tokens), str(t_episodes), str(r),
                         *common]) for r in (0, 1)]  # fmt: skip
    ratios = [run_child(["ratio", str(vocabs[-1]), str(500 if not args.quick else 64),
                         str(32 if not args.quick else 8), str(lr), *common])
              for lr in (1e-5, 1e-4)]  # fmt: skip
    print(learner_report(memory, timing, ratios))
    return {"memory": memory, "timing": timing, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small batches, one repetition")
    parser.add_argument("--no-mid", action="store_true", help="skip the ~50M-parameter model")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads per child (default 1: on a shared or busy machine more "
        "threads than free cores makes OpenMP spin and runs 10-100x slower)",
    )
    parser.add_argument(
        "--device", default="auto", help="auto (cuda when available), cpu, cuda or cuda:N"
    )
    parser.add_argument(
        "--dtype", default="auto", help="auto (bf16 on a CUDA device that has it, else fp32), "
        "float32 or bfloat16",
    )  # fmt: skip
    parser.add_argument(
        "--section", choices=["all", "teams", "learner"], default="all",
        help="teams: memory per team size and batched recompute; learner: one update at the "
        "real-model defaults (memory vs vocabulary and action length, update time, ratios)",
    )  # fmt: skip
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "learner":
            *nums, device, dtype = rest
            print(json.dumps(learner_child(*(int(x) for x in nums), device, dtype)))
        elif kind == "ratio":
            vocab, tokens, episodes, lr, threads, device, dtype = rest
            print(json.dumps(ratio_child(int(vocab), int(tokens), int(episodes), float(lr),
                                         int(threads), device, dtype)))  # fmt: skip
        else:
            model, *nums, device, dtype = rest
            print(json.dumps(child(model, *(int(x) for x in nums), device, dtype)))
        return 0
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            parser.error(
                f"--device {args.device}: torch sees no CUDA device here "
                f"(torch {torch.__version__}); use --device cpu or run on a machine with a GPU"
            )

    report: dict[str, Any] = {}
    if args.section in ("all", "learner"):
        report["learner"] = run_learner_section(args)
    if args.section == "learner":
        _write_json(args.json, report)
        return 0
    plans = [("tiny", 16 if args.quick else 64, 16, 1 if args.quick else 2)]
    with tempfile.TemporaryDirectory(prefix="flexmg-bench-") as tmp:
        if not args.no_mid:
            plans.append(
                (
                    save_mid_model(Path(tmp) / "mid"),
                    4 if args.quick else 8,
                    8,
                    1,
                )
            )
        results = []
        for model, batch, new_tokens, reps in plans:
            for agents in TEAMS:
                cfg = [
                    model,
                    agents,
                    batch,
                    new_tokens,
                    reps,
                    0,
                    args.threads,
                    args.device,
                    args.dtype,
                ]
                res = run_child(["teams", *(str(x) for x in cfg)])
                cfg[4] = 0
                res.update(run_child(["teams", *(str(x) for x in cfg)], memory_only=True))
                results.append(res)
                print(json.dumps(res), file=sys.stderr)

    print(format_report(results))
    summary = summarize(results)
    for name, s in summary.items():
        print(f"{name} on {s['device']} ({s['dtype']}, {s['threads']} thread(s)): peak "
              f"{s['memory']} 4 agents / 1 agent = {s['memory_ratio_4_vs_1']:.3f} (target <= 1.15); "
              f"weights+grads+optimizer states {s['model_state_ratio_4_vs_1']:.3f}x; batched "
              f"log-prob recomputation {s['min_recompute_speedup']:.1f}x a per-sample loop "
              f"(target >= 5x; at most {s['min_recompute_speedup_ceiling']:.1f}x possible here: "
              f"the batched path runs at {s['batched_gflops']:.0f} GFLOP/s of a {s['matmul_gflops']:.0f} "
              f"GFLOP/s matmul rate); base {s['base_params'] / 1e6:.2f}M params, "
              f"+{s['adapter_params_4_agents']} LoRA params for 4 agents")  # fmt: skip
    report.update(results=results, summary=summary)
    _write_json(args.json, report)
    return 0


def _write_json(path: Path | None, data: dict[str, Any]) -> None:
    if path:
        from flexmg.io import atomic_write_text

        atomic_write_text(path, json.dumps(data, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())
