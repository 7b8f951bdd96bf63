"""Whether a ``--model`` name loads here, said before any weights load (no torch imported).

:func:`model_problem` returns why a name will not load and what to do, or None.
The commands that take ``--model`` call it first, so a typo is one line at
once, not a traceback after the env and the tokenizer were built.

Example:
    >>> model_problem("tiny") is None
    True
    >>> print(model_problem("/no/such/model-folder"))
    could not load model '/no/such/model-folder': no such folder; pass 'tiny', a name of `flexmg models`, a folder with config.json + weights + tokenizer, or a Hugging Face id in the local cache
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from flexmg.models import zoo

__all__ = ["model_problem"]

WHAT = (
    "pass 'tiny', a name of `flexmg models`, a folder with config.json + weights + "
    "tokenizer, or a Hugging Face id in the local cache"
)


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name.endswith("/") or name.count("/") > 1


def _hf_cached(name: str) -> bool:
    """True when ``name`` is a Hugging Face id whose config.json is in the local cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings it
        return False
    try:
        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001 - a malformed id (HFValidationError): not cached
        return False
    return isinstance(found, str)


def model_problem(name: str) -> str | None:
    """Why ``name`` will not load as a model here and what to do, or None when it will.

    >>> print(model_problem("smollm2-135"))  # doctest: +ELLIPSIS
    could not load model 'smollm2-135': not 'tiny', a name of `flexmg models` (did you mean 'smollm2-135m'?)...
    """
    why = _why_not(name)
    return None if why is None else f"could not load model {name!r}: {why}"


def _why_not(name: str) -> str | None:
    if name == "tiny":
        return None
    entry = zoo.ZOO.get(name)
    if entry is not None:
        if entry.package is None or (zoo.cache_dir() / entry.name / "config.json").is_file():
            return None
        try:
            zoo.package_file(entry)
        except zoo.MissingModelPackageError as exc:
            return str(exc).removeprefix(f"model {entry.name!r} ")
        return None
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            return (
                "the folder has no config.json; a model folder holds config.json, the weights "
                "and the tokenizer (what save_pretrained writes)"
            )
        return None
    if folder.exists():
        return f"it is a file, not a folder; {WHAT}"
    if _looks_like_path(name):
        return f"no such folder; {WHAT}"
    if _hf_cached(name):
        return None
    close = difflib.get_close_matches(name, ["tiny", *zoo.ZOO], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HF_HOME") or "~/.cache/huggingface"
    return (
        f"not 'tiny', a name of `flexmg models`{hint}, a model folder, nor a "
        f"Hugging Face id in the local cache ({cache}); nothing is downloaded at run time: "
        "download it first (`hf download ID`) or pass its folder"
    )
