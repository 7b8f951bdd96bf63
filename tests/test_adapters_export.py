"""Each role's adapter is exported in peft's layout and loads in plain transformers + peft."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from family_models import build_family_model
from flexmg.agents.adapters import export_adapters
from flexmg.agents.config import PolicyConfig
from flexmg.agents.policy import TeamPolicy

# Runs in a fresh interpreter that never imports flexmg: the adapters must stand alone.
LOADER = r"""
import json, sys
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM
folder, role, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
config = json.load(open(f"{folder}/{role}/adapter_config.json"))
base = AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"])
model = PeftModel.from_pretrained(base, f"{folder}/{role}").eval()
with torch.no_grad():
    logits = model(torch.tensor([ids])).logits[0, -1]
print(json.dumps(logits.tolist()))
assert "flexmg" not in sys.modules
"""


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True])
def test_exported_adapters_load_without_flexmg_and_compute_the_policys_logits(
    tmp_path: Path, shared: bool
) -> None:
    path = build_family_model(tmp_path / "model", "llama")
    policy = TeamPolicy(
        ["solver", "verifier"],
        PolicyConfig(model=path, share_parameters=shared, critic_hidden=(8,), device="cpu"),
    )
    with torch.no_grad():  # trained-looking adapters: every LoRA weight nonzero
        for p in policy.policy_parameters("solver") + policy.policy_parameters("verifier"):
            p.add_(0.05 * torch.randn_like(p))
    folder = export_adapters(policy, tmp_path / "adapters")
    manifest = json.loads((folder / "flexmg_adapters.json").read_text())
    expected = {"solver": "shared", "verifier": "shared"} if shared else {
        "solver": "solver", "verifier": "verifier"}  # fmt: skip
    assert manifest["roles"] == expected and manifest["base_model"] == path
    ids = policy.tokenizer("What is 2 + 3?")["input_ids"]
    for role, adapter in expected.items():
        files = {p.name for p in (folder / adapter).iterdir()}
        assert {"adapter_config.json", "adapter_model.safetensors"} <= files
        out = subprocess.run(
            [sys.executable, "-c", LOADER, str(folder), adapter, json.dumps(ids)],
            capture_output=True, text=True, check=True, timeout=300,
        )  # fmt: skip
        theirs = torch.tensor(json.loads(out.stdout))
        with torch.no_grad():
            policy._activate_adapter(adapter)
            ours = policy.model(torch.tensor([ids])).logits[0, -1]
        torch.testing.assert_close(theirs, ours, rtol=1e-4, atol=1e-4)
    # a second export replaces the folder whole, leaving no temporary folders behind
    export_adapters(policy, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapters", "model"]
