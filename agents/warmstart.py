"""Warm-start the tiny model: a short supervised pass on noisy-teacher math transcripts.

The tiny model starts from random weights, so RL alone would never find a
``\\boxed{...}`` answer. This script trains it (all weights, seeded, one CPU
thread so the result is bit-for-bit reproducible) on role-formatted transcripts
of math-1agent .. math-4agent episodes written by a *noisy teacher*:

* its value is the gold answer with probability ``P_RIGHT`` and otherwise the
  teacher's one systematic slip, gold + 1;
* it boxes the value (``\\boxed{12}``, what the grader reads) with probability
  ``P_BOX[op]`` (high for ``+``, low for ``-`` problems) and otherwise writes the
  bare value (``12``), which the grader scores 0;
* every later role copies its predecessor's value with probability ``P_COPY``
  and otherwise computes its own; each role picks its own format.

So the warm-started model does the arithmetic but often forgets the box: it
starts well above 0 and well below its ceiling, and RL has a learnable signal
that carries over to held-out problems (always box; avoid the slip).

Run ``python -m flexmg.agents.warmstart`` to rebuild ``agents/assets/tiny/``
(``--check`` rebuilds into a temp folder and compares with the shipped weights).

Example:
    >>> from flexmg.agents.warmstart import teacher_episode
    >>> import random
    >>> ex = teacher_episode("What is 2 + 3?", "5", ["solver"], random.Random(0))
    >>> ex[0][0]
    'Q:What is 2 + 3?\\n[solver]:'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from flexmg.agents.llm_agent import compact_prompt
from flexmg.agents.tiny_model import TINY_ASSET_DIR, build_tiny_model, count_parameters, tiny_config
from flexmg.agents.tokenizer import build_char_tokenizer

from flexmg.tasks import Task

# The workflows of flexmg.envs.workflows (roles in graph order; every earlier role is
# a predecessor) and how often each appears in the warm-start data.
WORKFLOWS: dict[str, tuple[str, ...]] = {
    "math-1agent": ("solver",),
    "math-2agent": ("solver", "verifier"),
    "math-3agent": ("planner", "solver", "verifier"),
    "math-4agent": ("decomposer", "planner", "executor", "verifier"),
}
WORKFLOW_WEIGHTS = (0.3, 0.3, 0.2, 0.2)
P_RIGHT = 0.85
P_BOX: dict[str, float] = {"+": 0.6, "-": 0.25, "*": 0.4}
P_BOX_DEFAULT = 0.4
P_COPY = 0.6

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "steps": 600,
    "batch_size": 64,
    "lr": 3e-3,
    "warmup": 50,
    "difficulty": 1,
}


# ----------------------------------------------------------------------- data
class _FallbackArithmetic:
    """Procedural 'What is a op b?' tasks, used only when flexmg.envs.math is absent."""

    name = "fallback-arithmetic"

    def __init__(self, split: str, difficulty: int) -> None:
        self.split, self.hi = split, 10 ** max(1, difficulty)

    def get(self, index: int) -> Task:
        from flexmg.tasks import stable_hash

        k = 0
        while True:
            rng = random.Random(stable_hash("fallback-arith", index, k))
            a, b, op = rng.randrange(self.hi), rng.randrange(self.hi), rng.choice("+-*")
            prompt = f"What is {a} {op} {b}?"
            in_eval = stable_hash("split", prompt) % 5 == 0
            if self.split == "all" or in_eval == (self.split == "eval"):
                value = a + b if op == "+" else a - b if op == "-" else a * b
                return Task(id=f"{self.name}/{index}", prompt=prompt, answer=str(value))
            k += 1


def math_source(split: str, difficulty: int) -> Any:
    """The project's arithmetic source, or a same-format fallback while it is missing."""
    try:
        from flexmg.envs.math import make_math_source

        return make_math_source("arithmetic", split=split, difficulty=difficulty)
    except ImportError:
        return _FallbackArithmetic(split, difficulty)


_OP = re.compile(r"\d\s*([+\-*/x×])\s*-?\d")


def _slip(answer: str) -> str:
    """The noisy teacher's systematic wrong answer: gold + 1 (or a changed last char)."""
    try:
        return str(int(answer.strip()) + 1)
    except ValueError:
        return answer.strip() + "1"


def _noisy_value(answer: str, rng: random.Random) -> str:
    return answer.strip() if rng.random() < P_RIGHT else _slip(answer)


def _noisy_format(task: str, value: str, rng: random.Random) -> str:
    found = _OP.search(task)
    p = P_BOX.get(found.group(1), P_BOX_DEFAULT) if found else P_BOX_DEFAULT
    return "\\boxed{" + value + "}" if rng.random() < p else value


def teacher_episode(
    task: str, answer: str, roles: Sequence[str], rng: random.Random
) -> list[tuple[str, str]]:
    """(compact prompt, action) pairs of one noisy-teacher episode (round 0)."""
    outputs: list[tuple[str, str]] = []
    pairs = []
    last = ""
    for i, role in enumerate(roles):
        if i > 0 and rng.random() < P_COPY:
            guess = last
        else:
            guess = _noisy_value(answer, rng)
        action = _noisy_format(task, guess, rng)
        context = "\n".join(f"[{r}]: {a}" for r, a in outputs)
        obs = {"task": task, "role": role, "context": context, "feedback": "", "round": 0}
        pairs.append((compact_prompt(obs), action))
        outputs.append((role, action))
        last = guess
    return pairs


def _batch(
    pairs: Sequence[tuple[str, str]], tokenizer: Any
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask and loss mask (1 on action tokens and EOS)."""
    seqs, masks = [], []
    for prompt, action in pairs:
        p = [tokenizer.bos_token_id, *tokenizer(prompt, add_special_tokens=False)["input_ids"]]
        a = [*tokenizer(action, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
        seqs.append(p + a)
        masks.append([0] * len(p) + [1] * len(a))
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    loss_mask = torch.zeros((len(seqs), width), dtype=torch.float32)
    for i, (s, m) in enumerate(zip(seqs, masks, strict=True)):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
        loss_mask[i, : len(s)] = torch.tensor(m, dtype=torch.float32)
    return ids, attn, loss_mask


# ---------------------------------------------------------------- evaluation
def _boxed_last(text: str) -> str | None:
    try:
        from flexmg.envs.math import extract_boxed
    except ImportError:  # pragma: no cover - the env package is part of the repo
        found = re.findall(r"\\boxed\{([^{}]*)\}", text)
    else:
        found = extract_boxed(text)
    return found[-1].strip() if found else None


@torch.no_grad()
def team_accuracy(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Task],
    roles: Sequence[str] = ("solver",),
    greedy: bool = True,
    max_new_tokens: int = 16,
    seed: int = 0,
) -> float:
    """Share of tasks whose last role's last ``\\boxed{}`` equals the gold answer.

    Roles act in order, each seeing its predecessors' outputs (compact prompts).
    """
    if not tasks:
        raise ValueError("team_accuracy needs at least one task")
    outputs: list[list[tuple[str, str]]] = [[] for _ in tasks]
    texts: list[str] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for role in roles:
            prompts = []
            for t, prev in zip(tasks, outputs, strict=True):
                context = "\n".join(f"[{r}]: {a}" for r, a in prev)
                obs = {"task": t.prompt, "role": role, "context": context}
                ids = [tokenizer.bos_token_id]
                ids += tokenizer(compact_prompt(obs), add_special_tokens=False)["input_ids"]
                prompts.append(ids)
            width = max(len(p) for p in prompts)
            ids_t = torch.full((len(prompts), width), tokenizer.pad_token_id, dtype=torch.long)
            attn = torch.zeros_like(ids_t)
            for i, p in enumerate(prompts):
                ids_t[i, width - len(p) :] = torch.tensor(p)
                attn[i, width - len(p) :] = 1
            out = model.generate(
                input_ids=ids_t,
                attention_mask=attn,
                do_sample=not greedy,
                top_k=0 if greedy else 50,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
            texts = tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
            for prev, text in zip(outputs, texts, strict=True):
                prev.append((role, text))
    right = sum(_boxed_last(text) == t.answer.strip() for t, text in zip(tasks, texts, strict=True))
    return right / len(tasks)


# ------------------------------------------------------------------ training
def train(
    seed: int = 0,
    steps: int = 1500,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 50,
    difficulty: int = 1,
    log_every: int = 100,
    config_overrides: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Train a fresh tiny model on noisy-teacher transcripts; returns (model, info).

    Deterministic for a given seed: data from ``random.Random(seed)``, torch
    seeded in a forked RNG, and one intra-op thread during training.
    """
    tokenizer = build_char_tokenizer()
    source = math_source("train", difficulty)
    rng = random.Random(seed)
    model = build_tiny_model(seed=seed, config=tiny_config(**(config_overrides or {})))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.time()
    losses: list[float] = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for step in range(steps):
                pairs: list[tuple[str, str]] = []
                while len(pairs) < batch_size:
                    task = source.get(rng.randrange(1 << 30))
                    roles = rng.choices(list(WORKFLOWS.values()), WORKFLOW_WEIGHTS)[0]
                    pairs += teacher_episode(task.prompt, task.answer, roles, rng)
                ids, attn, loss_mask = _batch(pairs[:batch_size], tokenizer)
                logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                nll = -logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
                mask = loss_mask[:, 1:]
                loss = (nll * mask).sum() / mask.sum()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                if log_every and (step + 1) % log_every == 0:
                    recent = sum(losses[-log_every:]) / log_every
                    print(
                        f"step {step + 1}/{steps} loss {recent:.4f} ({time.time() - start:.0f}s)",
                        file=sys.stderr,
                    )
    finally:
        torch.set_num_threads(threads)
    model.eval()
    info = {
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "warmup": warmup,
        "difficulty": difficulty,
        "task_source": getattr(source, "name", type(source).__name__),
        "teacher": {
            "p_right": P_RIGHT,
            "p_box": P_BOX,
            "p_box_default": P_BOX_DEFAULT,
            "p_copy": P_COPY,
            "slip": "gold + 1",
            "unboxed": "bare value",
        },
        "final_loss": sum(losses[-50:]) / max(1, len(losses[-50:])),
        "train_seconds": round(time.time() - start, 1),
        "parameters": count_parameters(model),
        "config_overrides": dict(config_overrides or {}),
    }
    return model, info


def measure(model: Any, n_tasks: int = 300, difficulty: int = 1, seed: int = 0) -> dict[str, float]:
    """Held-out (eval split) accuracies: 1-agent greedy/sampled, 2-agent greedy/sampled."""
    tokenizer = build_char_tokenizer()
    source = math_source("eval", difficulty)
    tasks = [source.get(i) for i in range(n_tasks)]
    out = {}
    for name, roles in (("1agent", WORKFLOWS["math-1agent"]), ("2agent", WORKFLOWS["math-2agent"])):
        for greedy in (True, False):
            key = f"{name}_{'greedy' if greedy else 'sampled'}"
            out[key] = round(team_accuracy(model, tokenizer, tasks, roles, greedy, seed=seed), 4)
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save(model: Any, info: dict[str, Any], folder: Path) -> None:
    """Write model + tokenizer + ``warmstart.json`` into ``folder``, replacing it atomically."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        model.save_pretrained(tmp)
        build_char_tokenizer().save_pretrained(tmp)
        info = {**info, "weights_sha256": _sha256(tmp / "model.safetensors")}
        (tmp / "warmstart.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; the asset folder is ordinary repo content
        for path in tmp.iterdir():
            os.chmod(path, 0o644)
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
            os.replace(folder, old)
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def same_weights(a: Any, b: Any) -> bool:
    """True when two models have bit-identical parameters."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: rebuild the shipped warm-start checkpoint (or ``--check`` it)."""
    parser = argparse.ArgumentParser(
        prog="python -m flexmg.agents.warmstart", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=TINY_ASSET_DIR, help="output folder")
    parser.add_argument("--check", action="store_true",
                        help="rebuild in memory and compare with the checkpoint in --out")  # fmt: skip
    parser.add_argument("--no-eval", action="store_true", help="skip the accuracy measurement")
    for key, value in DEFAULTS.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    kwargs = {k: getattr(args, k) for k in DEFAULTS}
    model, info = train(**kwargs)
    if args.check:
        from flexmg.agents.tiny_model import load_tiny

        shipped, _ = load_tiny(args.out)
        ok = same_weights(model, shipped)
        print(f"reproduced {'exactly' if ok else 'WITH DIFFERENCES'}: {args.out}")
        return 0 if ok else 1
    if not args.no_eval:
        info["eval"] = measure(model, difficulty=args.difficulty, seed=args.seed)
        print(json.dumps(info["eval"]))
    save(model, info, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
