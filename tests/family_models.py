"""Local models shaped like real chat models (no downloads), for the learner's tests.

Each family gets a tiny random model of its real architecture class, a
character tokenizer with the family's chat special tokens and chat template,
and (for Qwen) a ``generation_config.json`` carrying Qwen2.5-Instruct's
sampling defaults, which flexmg must not inherit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

QWEN_INSTRUCT_SAMPLING = {"repetition_penalty": 1.1, "top_k": 20, "top_p": 0.8, "temperature": 0.7}

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>"
    "\n\n{{ m['content'] }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
ZEPHYR = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
FAMILIES: dict[str, dict[str, Any]] = {
    "qwen2": {
        "template": CHATML,
        "special": ["<|im_start|>", "<|im_end|>"],
        "turn_end": "<|im_end|>",
    },
    "llama": {
        "template": LLAMA3,
        "special": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        "turn_end": "<|eot_id|>",
    },
    "gpt_neox": {
        "template": ZEPHYR,
        "special": ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        "turn_end": "<|end|>",
    },
    "gpt2": {
        "template": ZEPHYR,
        "special": ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        "turn_end": "<|end|>",
    },
}


def _config(family: str, vocab: int, hidden: int, layers: int, pad: int, bos: int, eos: int) -> Any:
    import transformers as tf

    ids = {"pad_token_id": pad, "bos_token_id": bos, "eos_token_id": eos}
    if family == "qwen2":
        return tf.Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                              num_hidden_layers=layers, num_attention_heads=2,
                              num_key_value_heads=1, max_position_embeddings=4096,
                              tie_word_embeddings=True, **ids)  # fmt: skip
    if family == "llama":
        return tf.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                              num_hidden_layers=layers, num_attention_heads=2,
                              num_key_value_heads=2, max_position_embeddings=4096,
                              tie_word_embeddings=False, **ids)  # fmt: skip
    if family == "gpt_neox":
        return tf.GPTNeoXConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                                num_hidden_layers=layers, num_attention_heads=2,
                                max_position_embeddings=4096, **ids)  # fmt: skip
    if family == "gpt2":
        return tf.GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=2,
                             n_positions=4096, **ids)  # fmt: skip
    raise ValueError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}")


def build_family_model(
    folder: Path,
    family: str = "qwen2",
    hidden: int = 32,
    layers: int = 2,
    vocab_size: int | None = None,
    qwen_instruct_sampling: bool = True,
    seed: int = 0,
    stop_scale: float = 1.0,
) -> str:
    """Save a tiny random ``family`` model with a chat template to ``folder``; returns the path.

    ``vocab_size`` widens the embedding beyond the tokenizer (e.g. Qwen's 151,936).
    ``stop_scale`` multiplies the output-layer rows of the stop tokens, so that some
    sampled actions stop early and others run to the token limit (rewards that differ
    with ``--truncation-penalty``).
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    spec = FAMILIES[family]
    tok = build_char_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": list(spec["special"])})
    tok.chat_template = spec["template"]
    vocab = max(len(tok), vocab_size or 0)
    cfg = _config(family, vocab, hidden, layers, tok.pad_token_id, tok.bos_token_id,
                  tok.eos_token_id)  # fmt: skip
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    turn_end = tok.convert_tokens_to_ids(spec["turn_end"])
    if stop_scale != 1.0:
        with torch.no_grad():
            model.get_output_embeddings().weight[[turn_end, tok.eos_token_id]] *= stop_scale
    gen: dict[str, Any] = {"bos_token_id": tok.bos_token_id, "pad_token_id": tok.pad_token_id}
    if family == "qwen2":  # like Qwen2.5-Instruct: stop list and sampling defaults
        gen["eos_token_id"] = [turn_end, tok.eos_token_id]
        if qwen_instruct_sampling:
            gen.update(do_sample=True, **QWEN_INSTRUCT_SAMPLING)
    else:  # the turn end is only known from the chat template
        gen["eos_token_id"] = tok.eos_token_id
    model.generation_config = GenerationConfig(**gen)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def build_small_tiny_model(folder: Path) -> str:
    """Save a random 1-layer character-level Qwen2 (the tiny model's shape) to ``folder``.

    Fast on CPU; the trainer tests run ``flexmg train --model`` on it.
    """
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    cfg = tiny_config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    build_tiny_model(seed=0, config=cfg).save_pretrained(folder)
    build_char_tokenizer().save_pretrained(folder)
    return str(folder)
