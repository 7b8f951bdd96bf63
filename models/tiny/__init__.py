"""The project's tiny model: a 0.44M-parameter causal LM that RL can improve on CPU.

A Qwen2-architecture model with a character tokenizer, warm-started on
noisy-teacher transcripts.

* :mod:`~flexmg.models.tiny.model`: its architecture, builder and loader (the
  shipped weights are in ``models/tiny/assets/``);
* :mod:`~flexmg.models.tiny.tokenizer`: the character tokenizer;
* :mod:`~flexmg.models.tiny.transcripts`: the transcripts it learns from, written
  by the env families' noisy teachers;
* :mod:`~flexmg.models.tiny.warmstart`: the supervised warm start that rebuilds
  the shipped weights bit for bit (``python -m flexmg.models.tiny.warmstart``),
  from its data (:mod:`~flexmg.models.tiny.mixtures`), batches
  (:mod:`~flexmg.models.tiny.batches`), training loop (:mod:`~flexmg.models.tiny.fit`)
  and checkpoint files (:mod:`~flexmg.models.tiny.checkpoint`).

Example:
    >>> from flexmg.models.tiny.model import TINY_ASSET_DIR
    >>> (TINY_ASSET_DIR / "model.safetensors").is_file()
    True
"""
