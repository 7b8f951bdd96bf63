"""Loading a causal LM and its tokenizer by name: ``tiny``, a zoo name, a HF id or a folder.

:func:`load_model` is the one loader (the team policy, ``ModelActor`` and the
scripts use it). Nothing is downloaded at run time: a Hugging Face id must be
in the local cache; a zoo name (``flexmg models``) is converted once from its
installed package into the local cache (:mod:`flexmg.models.zoo`).

Example:
    >>> model, tok = load_model("tiny", device="cpu")
    >>> tok.padding_side, tok.pad_token_id is not None, next(model.parameters()).dtype
    ('left', True, torch.float32)
"""

from __future__ import annotations

from typing import Any

import torch

from flexmg.models import zoo
from flexmg.models.config import DTYPE_NAMES
from flexmg.models.names import model_problem

__all__ = ["DTYPES", "load_model", "load_tokenizer", "resolve_device", "resolve_dtype"]

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, dt) for name, dt in DTYPE_NAMES.items()}
"""Weight dtypes by name (``PolicyConfig.dtype`` names one of them, or ``"auto"``)."""


def resolve_device(name: str) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; anything else as given.

    >>> resolve_device("cpu").type
    'cpu'
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device {name!r} was asked for, but torch {torch.__version__} sees no CUDA device "
            f"(built with CUDA {torch.version.cuda}); use device='auto' or 'cpu'"
        )
    return device


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``"auto"`` -> bf16 on a CUDA device that supports it, else fp32.

    >>> resolve_dtype("auto", torch.device("cpu"))
    torch.float32
    """
    if name != "auto":
        return DTYPES[name]
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def load_tokenizer(name: str) -> Any:
    """AutoTokenizer, except for folders that declare the generic tokenizers backend.

    transformers 5 maps such folders to the model type's tokenizer class (e.g.
    ``Qwen2Tokenizer``), which replaces the saved pre-tokenizer; a folder saved
    from :func:`~flexmg.models.tiny.tokenizer.build_char_tokenizer` would lose its spaces.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        from transformers.models.auto.tokenization_auto import get_tokenizer_config

        declared = get_tokenizer_config(name).get("tokenizer_class")
    except Exception:  # noqa: BLE001 - any failure: let AutoTokenizer decide and report
        declared = None
    if declared in ("TokenizersBackend", "PreTrainedTokenizerFast"):
        return PreTrainedTokenizerFast.from_pretrained(name)
    return AutoTokenizer.from_pretrained(name)


def load_model(name: str, device: str = "auto", dtype: str = "auto") -> tuple[Any, Any]:
    """(model, tokenizer) of ``name`` on ``device``: pad token set, prompts padded on the left.

    Args:
        name: ``"tiny"`` (the shipped warm-started model), a zoo name (``flexmg
            models``), a Hugging Face id in the local cache, or a folder.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ... (:func:`resolve_device`).
        dtype: ``"auto"`` or a name of :data:`DTYPES` (:func:`resolve_dtype`).
    """
    where = resolve_device(device)
    weights = resolve_dtype(dtype, where)
    if name == "tiny":
        from flexmg.models.tiny.model import load_tiny

        model, tokenizer = load_tiny()
        model = model.to(dtype=weights)
    else:
        from transformers import AutoModelForCausalLM

        problem = model_problem(name)  # said plainly, and no download is tried
        if problem:
            raise OSError(problem)
        path = zoo.local_path(name)
        try:
            tokenizer = load_tokenizer(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=weights)
        except OSError as exc:
            raise OSError(
                f"could not load model {name!r}: pass 'tiny', a name of `flexmg models`, a "
                "local folder with config.json + weights + tokenizer, or a Hugging Face model "
                f"id that is in the local cache (no downloads happen at run time). Cause: {exc}"
            ) from exc
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ValueError(
                f"the tokenizer of {name!r} has neither a pad nor an eos token; "
                "set tokenizer.pad_token before using it"
            )
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return model.to(where), tokenizer
