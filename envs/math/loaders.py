"""Math dataset loaders: files and Hugging Face datasets to :class:`Task` lists.

Formats (auto-detected from the record keys):

* ``gsm8k``: ``question`` and ``answer`` whose last line is ``#### N``;
* ``math``: ``problem`` with ``answer`` and/or ``solution`` (the last
  ``\\boxed{}`` of the solution is the answer when ``answer`` is missing);
* ``plain``: ``question`` and ``answer``.

Files: ``.jsonl``, ``.json`` (a list of records, or ``{"data": [...]}``), their
``.gz`` versions, and ``.parquet`` (needs pyarrow). Task ids are
``<name>/<record id>`` where the record id is ``unique_id``/``id`` when
present, else the line number, so the train/eval split is stable.

Each task's ``meta["grading"]`` holds the grading settings of its format
(:data:`flexmg.envs.math.settings.DATASET_DEFAULTS`, as a dict); pass
``grading=`` to :func:`records_to_tasks` (or a ``grading`` key in a record)
to override them.

Example:
    >>> tasks = records_to_tasks([{"question": "1+1?", "answer": "So 2.\\n#### 2"}], "toy")
    >>> tasks[0].answer, tasks[0].meta["format"], tasks[0].meta["grading"]["units"]
    ('2', 'gsm8k', 'strip')
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flexmg.tasks import Task

from .boxed import extract_boxed
from .settings import DATASET_DEFAULTS, GradingSettings, coerce_settings

FORMATS = ("gsm8k", "math", "plain")
FILE_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".parquet")


def detect_format(record: Mapping[str, Any]) -> str:
    """Which known format a record is in; ValueError naming the formats if none.

    >>> detect_format({"problem": "p", "solution": "\\\\boxed{1}"})
    'math'
    """
    keys = set(record)
    if "problem" in keys and ({"answer", "solution"} & keys):
        return "math"
    if {"question", "answer"} <= keys:
        return "gsm8k" if "####" in str(record["answer"]) else "plain"
    raise ValueError(
        f"unknown math record format with keys {sorted(keys)}; known formats: "
        "gsm8k (question, answer ending in '#### N'), math (problem, solution and/or "
        "answer), plain (question, answer)"
    )


def gsm8k_final_answer(answer: str) -> str:
    """The number after the last ``####``, without thousands separators or ``$``.

    >>> gsm8k_final_answer("5 + 7 = 12\\n#### 1,200")
    '1200'
    """
    final = answer.rsplit("####", 1)[-1].strip()
    return final.replace(",", "").replace("$", "").strip()


def record_to_task(
    record: Mapping[str, Any],
    name: str,
    position: int,
    grading: GradingSettings | Mapping[str, Any] | None = None,
) -> Task:
    """Convert one record; ``position`` is its index in the file (the fallback id).

    Grading settings: the record's own ``grading`` mapping, else ``grading``,
    else the default of the record's format.
    """
    fmt = detect_format(record)
    record_id = record.get("unique_id", record.get("id", record.get("task_id", position)))
    task_id = f"{name}/{record_id}"
    chosen = record.get("grading", grading)
    try:
        settings = DATASET_DEFAULTS[fmt] if chosen is None else coerce_settings(chosen)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{task_id}: bad grading settings: {exc}") from None
    meta: dict[str, Any] = {
        "source": name,
        "format": fmt,
        "record_id": record_id,
        "grading": settings.to_dict(),
    }
    if fmt == "gsm8k":
        full = str(record["answer"])
        prompt, answer = str(record["question"]), gsm8k_final_answer(full)
        meta["solution"] = full
    elif fmt == "math":
        prompt = str(record["problem"])
        solution = record.get("solution")
        given = record.get("answer")
        if given is not None and str(given).strip() != "":
            answer = str(given)
        else:
            boxes = extract_boxed(str(solution or ""))
            if not boxes:
                raise ValueError(
                    f"{task_id}: MATH record has no answer and no \\boxed{{}} solution"
                )
            answer = boxes[-1]
        if solution is not None:
            meta["solution"] = str(solution)
        for key in ("level", "subject", "type"):
            if key in record:
                meta[key] = record[key]
    else:
        prompt, answer = str(record["question"]), record["answer"]
    answer = str(answer).strip()
    if not answer:
        raise ValueError(f"{task_id}: empty answer")
    return Task(id=task_id, prompt=prompt, answer=answer, meta=meta)


def records_to_tasks(
    records: Iterable[Mapping[str, Any]],
    name: str,
    grading: GradingSettings | Mapping[str, Any] | None = None,
) -> list[Task]:
    """Convert records of one dataset (mixed formats are allowed).

    ``grading`` overrides the per-format default grading settings of every task.
    """
    tasks = [record_to_task(record, name, i, grading) for i, record in enumerate(records)]
    if not tasks:
        raise ValueError(f"dataset {name!r} has no records")
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise ValueError(f"dataset {name!r} has two records with id {task.id!r}")
        seen.add(task.id)
    return tasks


def _open_text(path: Path) -> Any:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read the records of a ``.jsonl``/``.json``(``.gz``)/``.parquet`` file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"math dataset file not found: {path}")
    lower = path.name.lower()
    if lower.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError:
            raise ImportError(
                f"reading {path} needs pyarrow: `pip install pyarrow` (or convert it to .jsonl)"
            ) from None
        return list(pq.read_table(path).to_pylist())
    if lower.endswith((".jsonl", ".jsonl.gz")):
        records = []
        with _open_text(path) as handle:
            for line_no, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from None
        return records
    if lower.endswith((".json", ".json.gz")):
        with _open_text(path) as handle:
            data = json.load(handle)
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        if isinstance(data, dict) and "problem" in data:
            data = [data]  # one MATH problem per file, as in the original release
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records or {{'data': [...]}}")
        return data
    raise ValueError(f"unsupported math dataset file {path.name!r}; use one of {FILE_SUFFIXES}")


def load_file(
    path: str | Path, grading: GradingSettings | Mapping[str, Any] | None = None
) -> list[Task]:
    """Tasks of a dataset file, named after the file (``gsm8k_test``).

    ``grading`` overrides the per-format default grading settings.

    >>> load_file("missing.jsonl")
    Traceback (most recent call last):
    ...
    FileNotFoundError: math dataset file not found: missing.jsonl
    """
    path = Path(path)
    name = path.name.split(".")[0]
    return records_to_tasks(read_records(path), name, grading)


def is_hf_dataset(obj: object) -> bool:
    """Duck-typed check for a Hugging Face ``datasets.Dataset`` (no import needed)."""
    return hasattr(obj, "column_names") and hasattr(obj, "__getitem__") and hasattr(obj, "__len__")


def load_hf_dataset(
    dataset: Any,
    name: str | None = None,
    grading: GradingSettings | Mapping[str, Any] | None = None,
) -> list[Task]:
    """Tasks of an in-memory Hugging Face dataset (rows are dicts)."""
    label = name or str(getattr(getattr(dataset, "info", None), "dataset_name", None) or "hf")
    return records_to_tasks((dict(row) for row in dataset), label, grading)
