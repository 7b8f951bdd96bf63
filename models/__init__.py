"""The models: loading a causal LM by name, decoding it, its prompts, the tiny model, the zoo.

* :mod:`~flexmg.models.zoo`: models by name, offline (``flexmg models``), and the
  local safetensors cache; :mod:`~flexmg.models.loading`: the one loader.
* :mod:`~flexmg.models.prompts`: how an observation becomes a prompt (torch-free;
  the integrations use it too); :mod:`~flexmg.models.config`: the sampling
  distribution (torch-free).
* :mod:`~flexmg.models.sampling`: the one decoder (``Decoder``, a KV-cached
  sampler) and the log-probs of exactly its distribution;
  :mod:`~flexmg.models.actor`: a bare model as an actor (``ModelActor``).
* :mod:`~flexmg.models.tiny`: the project's tiny model, its tokenizer, its noisy
  teachers and its warm start.

``import flexmg.models`` imports no torch; loading a model does.

Example:
    >>> from flexmg.models import zoo
    >>> zoo.model_kind("tiny"), zoo.model_kind("smollm2-135m")
    ('tiny', 'llm')
"""

from __future__ import annotations

__all__: list[str] = []
