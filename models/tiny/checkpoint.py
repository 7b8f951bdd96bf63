"""The warm start's checkpoints: hash, compare and save a tiny model's weights.

Example:
    >>> from flexmg.models.tiny.model import build_tiny_model
    >>> a, b = build_tiny_model(seed=0), build_tiny_model(seed=0)
    >>> same_weights(a, b), weights_sha256(a) == weights_sha256(b)
    (True, True)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from flexmg.models.tiny.tokenizer import build_char_tokenizer


def weights_sha256(model: Any) -> str:
    """SHA-256 of a model's parameters (names, shapes and float32 bytes, in name order)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.detach().to(torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save(model: Any, info: dict[str, Any], folder: Path) -> None:
    """Write model + tokenizer + ``warmstart.json`` into ``folder``, replacing it atomically."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        model.save_pretrained(tmp)
        build_char_tokenizer().save_pretrained(tmp)
        info = {**info, "weights_sha256": _sha256(tmp / "model.safetensors")}
        (tmp / "warmstart.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; the asset folder is ordinary repo content
        for path in tmp.iterdir():
            os.chmod(path, 0o644)
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
            os.replace(folder, old)
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def same_weights(a: Any, b: Any) -> bool:
    """True when two models have bit-identical parameters."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
