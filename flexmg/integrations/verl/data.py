"""flexmg episodes as a verl RL dataset (parquet rows that verl's ``RLHFDataset`` reads).

One row per episode seed: ``data_source`` (the env id), ``prompt`` (the first role's
chat prompt, the one flexmg's own agents see), ``ability`` (the env family),
``reward_model`` (``{"style": "rule", "ground_truth": <gold answer>}``),
``extra_info`` (env id, seed, env kwargs as JSON, split, index: enough for
:func:`~flexmg.integrations.verl.reward.compute_score` and the agent loop to replay
the exact episode) and ``agent_name`` (the agent loop verl runs on the row).

Example:
    >>> from flexmg.integrations.verl.data import verl_rows
    >>> row = verl_rows("math-2agent", n=1)[0]
    >>> row["data_source"], row["agent_name"], row["prompt"][0]["role"]
    ('math-2agent', 'flexmg_agent', 'system')
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import flexmg
from flexmg.integrations.seats import observation_to_messages

AGENT_NAME = "flexmg_agent"
"""The name the flexmg agent loop is registered under in verl."""


def parse_env_kwargs(raw: Any) -> dict[str, Any]:
    """``extra_info["env_kwargs"]`` as a dict (rows store it as a JSON string).

    >>> parse_env_kwargs('{"split": "eval"}'), parse_env_kwargs(None)
    ({'split': 'eval'}, {})
    """
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, Mapping):
        raise TypeError(f"extra_info['env_kwargs'] must be a dict or JSON object, got {raw!r}")
    return dict(raw)


def _ability(env_id: str) -> str:
    """The env family (``math``, ``code``, ...) from the id, as verl's ``ability``."""
    return env_id.split("-", 1)[0]


def verl_rows(
    env_id: str,
    *,
    n: int,
    seed_start: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = AGENT_NAME,
) -> list[dict[str, Any]]:
    """The verl rows of the episodes ``seed_start .. seed_start + n - 1`` of ``env_id``.

    ``env_kwargs`` go to ``flexmg.make`` (e.g. ``{"split": "eval"}``) and ride along in
    ``extra_info["env_kwargs"]`` so the episode replays exactly.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (rows to export), got {n!r}")
    if not isinstance(seed_start, int) or seed_start < 0:
        raise ValueError(f"seed_start must be an int >= 0, got {seed_start!r}")
    kwargs = dict(env_kwargs or {})
    kwargs_json = json.dumps(kwargs, sort_keys=True)
    env = flexmg.make(env_id, **kwargs)
    rows = []
    try:
        for index, seed in enumerate(range(seed_start, seed_start + n)):
            env.reset(seed=seed)
            first = env.agent_selection
            rows.append(
                {
                    "data_source": env_id,
                    "prompt": observation_to_messages(env.observe(first)),
                    "ability": _ability(env_id),
                    "reward_model": {"style": "rule", "ground_truth": env.task.answer},
                    "extra_info": {
                        "env_id": env_id,
                        "seed": seed,
                        "env_kwargs": kwargs_json,
                        "split": str(kwargs.get("split", "train")),
                        "index": index,
                        "task_id": env.task.id,
                        "first_role": first,
                    },
                    "agent_name": agent_name,
                }
            )
    finally:
        env.close()
    return rows


def write_parquet(rows: list[dict[str, Any]], out: str | os.PathLike[str]) -> Path:
    """Write ``rows`` to ``out`` atomically (a temporary file renamed into place)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError(
            "writing parquet needs pyarrow: pip install 'flexmg[verl]' (or pyarrow)"
        ) from err
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        pq.write_table(pa.Table.from_pylist(rows), tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def export_verl_parquet(
    env_id: str,
    out: str | os.PathLike[str],
    *,
    n: int,
    seed_start: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = AGENT_NAME,
) -> Path:
    """Write the verl dataset of ``n`` episodes of ``env_id`` to the parquet file ``out``.

    >>> import tempfile, pyarrow.parquet as pq
    >>> path = export_verl_parquet("math-1agent", tempfile.mkdtemp() + "/t.parquet", n=2)
    >>> pq.read_table(path).num_rows
    2
    """
    rows = verl_rows(
        env_id, n=n, seed_start=seed_start, env_kwargs=env_kwargs, agent_name=agent_name
    )
    return write_parquet(rows, out)
