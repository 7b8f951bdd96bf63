"""Each role's trained LoRA adapter in peft's own layout, loadable without flexmg.

:func:`export_adapters` writes ``folder/<role>/adapter_config.json`` and
``adapter_model.safetensors`` for every role (with parameter sharing one folder,
``shared``), plus ``folder/flexmg_adapters.json`` naming the base model and which
adapter each role uses. The folder is replaced whole and atomically, so a reader
never sees a half-written set. Plain transformers + peft load one::

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(BASE)  # the run's base model
    solver = PeftModel.from_pretrained(base, "RUN_DIR/adapters/solver")

``BASE`` is ``base_model_name_or_path`` in the adapter's config: the Hugging Face id
or folder the run loaded (for a zoo model such as ``smollm2-135m``, its converted
local copy; ``flexmg models`` says where that is).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_json

__all__ = ["ADAPTERS_DIR", "export_adapters", "exportable"]

ADAPTERS_DIR = "adapters"
"""The run folder's subfolder that holds the latest exported adapters."""


def exportable(policy: Any) -> bool:
    """Whether ``policy``'s model is a peft model (a Hugging Face model; not the tiny one)."""
    from peft import PeftModel

    return isinstance(getattr(policy, "model", None), PeftModel)


def export_adapters(policy: Any, folder: str | os.PathLike[str]) -> Path:
    """Write every adapter of ``policy`` (a ``TeamPolicy``) to ``folder``; returns it.

    Args:
        policy: the team policy (its ``model`` is a peft model with one adapter per
            role, or one ``shared`` adapter).
        folder: where the adapters go (replaced whole; its parent must exist).
    """
    folder = Path(folder)
    base = str(getattr(policy.model, "base_model", policy.model).config.name_or_path)
    adapter_of = {role: policy.adapter_name(role) for role in policy.roles}
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for adapter in dict.fromkeys(adapter_of.values()):
            policy.model.save_pretrained(str(tmp / ".peft"), selected_adapters=[adapter])
            saved = tmp / ".peft" / adapter if adapter != "default" else tmp / ".peft"
            config_path = saved / "adapter_config.json"
            config = json.loads(config_path.read_text(encoding="utf-8"))
            config["base_model_name_or_path"] = base
            config["inference_mode"] = True
            config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
            saved.rename(tmp / adapter)
            shutil.rmtree(tmp / ".peft", ignore_errors=True)
        atomic_write_json(
            tmp / "flexmg_adapters.json",
            {"base_model": base, "model": policy.config.model, "roles": adapter_of},
        )
        for path in tmp.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        tmp.chmod(0o755)
        old = folder.with_name(f".{folder.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
