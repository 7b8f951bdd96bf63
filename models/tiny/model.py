"""The project's own tiny causal LM (Qwen2 architecture, character tokenizer).

Nothing is downloaded: the architecture is a small ``Qwen2Config`` (so LoRA can
target ``q_proj`` / ``v_proj`` exactly as on a real Qwen model) and the
tokenizer comes from :mod:`flexmg.models.tiny.tokenizer`. The warm-started weights
ship in ``models/tiny/assets/`` and are reproduced bit-for-bit by
``python -m flexmg.models.tiny.warmstart``.

Example:
    >>> from flexmg.models.tiny.model import build_tiny_model, count_parameters
    >>> model = build_tiny_model(seed=0)
    >>> count_parameters(model) > 100_000
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from flexmg.models.tiny.tokenizer import build_char_tokenizer, char_vocab

TINY_ASSET_DIR = Path(__file__).resolve().parent / "assets"

TINY_DEFAULTS: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}

# A ~50M-parameter Qwen2-style shape (character vocabulary) for benchmarks.
MID_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 2048,
    "num_hidden_layers": 8,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}


def tiny_config(**overrides: Any) -> Qwen2Config:
    """A ``Qwen2Config`` for the character vocabulary; keyword overrides win.

    >>> tiny_config(num_hidden_layers=3).num_hidden_layers
    3
    """
    vocab = char_vocab()
    kwargs: dict[str, Any] = {
        **TINY_DEFAULTS,
        "vocab_size": len(vocab),
        "pad_token_id": vocab["<pad>"],
        "bos_token_id": vocab["<s>"],
        "eos_token_id": vocab["</s>"],
        "rms_norm_eps": 1e-6,
        "attention_dropout": 0.0,
        "use_cache": True,
    }
    kwargs.update(overrides)
    return Qwen2Config(**kwargs)


def mid_config(**overrides: Any) -> Qwen2Config:
    """The ~50M-parameter benchmark shape (random init, character vocabulary).

    >>> mid_config().num_hidden_layers
    8
    """
    return tiny_config(**{**MID_DEFAULTS, **overrides})


def build_tiny_model(seed: int = 0, config: Qwen2Config | None = None) -> Qwen2ForCausalLM:
    """A randomly initialised model for ``config`` (default :func:`tiny_config`), seeded.

    The global torch RNG is left untouched (initialisation runs in a forked RNG).

    >>> a, b = build_tiny_model(seed=1), build_tiny_model(seed=1)
    >>> bool(torch.equal(a.lm_head.weight, b.lm_head.weight))
    True
    """
    cfg = config if config is not None else tiny_config()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = cfg.pad_token_id
    model.generation_config.eos_token_id = cfg.eos_token_id
    model.generation_config.bos_token_id = cfg.bos_token_id
    model.eval()
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once).

    >>> count_parameters(torch.nn.Linear(2, 3))
    9
    """
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def load_tiny(
    path: str | Path | None = None,
) -> tuple[Qwen2ForCausalLM, PreTrainedTokenizerFast]:
    """Load the warm-started tiny model and its tokenizer (default: the shipped asset).

    Raises:
        FileNotFoundError: when the checkpoint is missing, with the command that rebuilds it.

    >>> model, tok = load_tiny()
    >>> tok.eos_token_id == model.config.eos_token_id
    True
    """
    folder = Path(path) if path is not None else TINY_ASSET_DIR
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"no tiny-model checkpoint in {folder} (expected config.json and "
            "model.safetensors); rebuild it with `python -m flexmg.models.tiny.warmstart`"
        )
    model = Qwen2ForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.eval()
    tokenizer = build_char_tokenizer()
    return model, tokenizer
