"""Dataset export: one row per episode seed, for trainers that read prompt datasets.

A row carries the first role's chat prompt (the one :func:`observation_to_messages`
builds), the gold answer and the seed, so an env-backed trainer can replay the
episode with ``env.reset(seed=row["seed"])``, plus verl's fields
(``data_source``, chat ``prompt``, ``ability``, ``reward_model``, ``extra_info``,
``agent_name``). ``flexmg export`` writes rows as jsonl (no extra needed) or
parquet (needs ``datasets``); files are written atomically.

Example:
    >>> import flexmg
    >>> from flexmg.integrations.export import episode_row
    >>> row = episode_row(flexmg.make("math-2agent", split="eval"), "math-2agent", seed=0)
    >>> row["extra_info"]["role"], row["reward_model"]["style"], row["prompt"][0]["role"]
    ('solver', 'rule', 'system')
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from flexmg.integrations.seats import observation_to_messages
from flexmg.io import atomic_write_via

FORMATS = ("jsonl", "parquet")
DEFAULT_AGENT_NAME = "flexmg_agent"

DEFAULT_SPLIT = "eval"

__all__ = [
    "DEFAULT_AGENT_NAME",
    "DEFAULT_SPLIT",
    "FORMATS",
    "episode_row",
    "export_rows",
    "iter_rows",
    "repeated_rows",
    "resolve_split",
    "write_rows",
]


def resolve_split(split: str | None, env_kwargs: Mapping[str, Any] | None = None) -> str:
    """The split an export uses: ``split``, else ``env_kwargs["split"]``, else ``"eval"``.

    Both given and different is a mistake, refused in one line.

    >>> resolve_split(None), resolve_split(None, {"split": "train"}), resolve_split("all")
    ('eval', 'train', 'all')
    """
    in_kwargs = (env_kwargs or {}).get("split")
    if split is not None and in_kwargs is not None and str(in_kwargs) != split:
        raise ValueError(
            f"two splits given: split={split!r} and env kwarg split={in_kwargs!r}; give one"
        )
    return str(
        split if split is not None else in_kwargs if in_kwargs is not None else DEFAULT_SPLIT
    )


def repeated_rows(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many rows repeat an earlier row's episode (same prompt and answer).

    >>> a = {"prompt": [{"role": "user", "content": "1+1?"}], "answer": "2"}
    >>> repeated_rows([a, dict(a), {**a, "answer": "3"}])
    1
    """
    return len(rows) - len({_episode_key(r) for r in rows})


def _episode_key(row: Mapping[str, Any]) -> str:
    return json.dumps([row["prompt"], row["answer"]], sort_keys=True, default=str)


def ability_of(env_id: str) -> str:
    """The ``ability`` its env family declares (``math``, ``code``), else ``"multi-agent"``.

    Read from the family's metadata (:attr:`flexmg.family.Family.ability`), never
    from the id's spelling.

    >>> ability_of("code-3agent"), ability_of("relay-2agent"), ability_of("echo")
    ('code', 'multi-agent', 'multi-agent')
    """
    from flexmg.family import family_of

    family = family_of(env_id)
    return family.ability if family is not None else "multi-agent"


def episode_row(
    env: Any,
    env_id: str,
    seed: int,
    *,
    split: str = "train",
    index: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = DEFAULT_AGENT_NAME,
) -> dict[str, Any]:
    """The row of episode ``seed``: reset ``env`` and read the first role's prompt.

    ``env_kwargs`` are recorded (as JSON text in ``extra_info``) so a trainer
    rebuilds the same env: ``flexmg.make(env_id, **json.loads(...))``.
    """
    env.reset(seed=seed)
    role = env.agent_selection
    messages = observation_to_messages(env.observe(role))
    task = env.task
    return {
        "data_source": f"flexmg/{env_id}",
        "prompt": messages,
        "ability": ability_of(env_id),
        "reward_model": {"style": "rule", "ground_truth": task.answer},
        "extra_info": {
            "env_id": env_id,
            "seed": int(seed),
            "split": split,
            "index": int(index),
            "task_id": task.id,
            "role": role,
            "roles": list(env.possible_agents),
            "env_kwargs": json.dumps(dict(env_kwargs or {}), sort_keys=True),
        },
        "agent_name": agent_name,
        "env_id": env_id,
        "seed": int(seed),
        "answer": task.answer,
    }


def iter_rows(
    env_id: str,
    seeds: Sequence[int],
    *,
    split: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = DEFAULT_AGENT_NAME,
    progress: bool = False,
) -> Iterator[dict[str, Any]]:
    """Rows for ``seeds`` of ``env_id`` (one env, reset per seed), split by :func:`resolve_split`."""
    import flexmg

    split = resolve_split(split, env_kwargs)
    kwargs = {**dict(env_kwargs or {}), "split": split}
    env = flexmg.make(env_id, **kwargs)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(seeds), desc=f"export {env_id}", unit="row")
    try:
        for index, seed in enumerate(seeds):
            yield episode_row(
                env,
                env_id,
                seed,
                split=split,
                index=index,
                env_kwargs=kwargs,
                agent_name=agent_name,
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        env.close()


def write_rows(rows: Sequence[Mapping[str, Any]], out: str | os.PathLike[str], fmt: str) -> Path:
    """Write ``rows`` to ``out`` as ``jsonl`` or ``parquet`` (atomically); returns the path.

    Parquet goes through Hugging Face ``datasets`` (``pip install datasets``).
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    out = Path(out)
    if fmt == "parquet":
        try:
            import datasets
        except ImportError as err:
            raise ImportError(
                "writing parquet needs Hugging Face datasets: pip install 'flexmg[export]' "
                "(or write --format jsonl, which needs nothing)"
            ) from err
        table = datasets.Dataset.from_list([dict(r) for r in rows])
        atomic_write_via(out, table.to_parquet)
        return out
    atomic_write_via(
        out,
        lambda fh: fh.writelines(
            (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8") for row in rows
        ),
    )
    return out


def export_rows(
    env_id: str,
    out: str | os.PathLike[str],
    *,
    n: int,
    fmt: str = "jsonl",
    split: str | None = None,
    seed_start: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = DEFAULT_AGENT_NAME,
    progress: bool = False,
    allow_repeats: bool = False,
    max_draws: int | None = None,
) -> Path:
    """Export ``n`` episodes of ``env_id`` to ``out``, one row each, seeds from ``seed_start``.

    The split is :func:`resolve_split`'s (``"eval"`` unless told). A split holds a
    finite number of tasks, so seeds can draw an episode already exported (same prompt
    and answer). By default such seeds are skipped and later seeds drawn, so the ``n``
    rows are distinct episodes (each row keeps its seed); a split with fewer than ``n``
    of them in ``max_draws`` seeds is refused, nothing written. ``allow_repeats`` takes
    the seeds ``seed_start .. seed_start + n - 1`` as they come, repeats included.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.jsonl"
    >>> _ = export_rows("math-1agent", path, n=3)
    >>> len(path.read_text().splitlines())
    3
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1 (the number of episodes), got {n!r}")
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    draws = n if allow_repeats else (max_draws if max_draws is not None else max(20 * n, 1000))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n, desc=f"export {env_id}", unit="row")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    try:
        for row in iter_rows(
            env_id,
            range(seed_start, seed_start + draws),
            split=split,
            env_kwargs=env_kwargs,
            agent_name=agent_name,
        ):
            key = _episode_key(row)
            if key in seen and not allow_repeats:
                continue
            seen.add(key)
            row["extra_info"]["index"] = len(rows)
            rows.append(row)
            if bar is not None:
                bar.update(1)
            if len(rows) == n:
                break
    finally:
        if bar is not None:
            bar.close()
    if len(rows) < n:
        raise ValueError(
            f"split {resolve_split(split, env_kwargs)!r} of {env_id} has only {len(rows)} "
            f"distinct episodes in seeds {seed_start}..{seed_start + draws - 1}; export at "
            "most that many, another split, or allow repeated episodes (--allow-repeats)"
        )
    return write_rows(rows, out, fmt)
