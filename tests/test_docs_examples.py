"""Every Python example in docs/*.md runs as written (in a scratch directory).

A block can opt out with an HTML comment on the line before its fence,
``<!-- not run: why -->`` (e.g. it reads the output of a long experiment).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"(<!-- not run:[^\n]*-->\n)?```python\n(.*?)\n```", re.S)

# What some examples must print (a marker in the block -> text in its output).
EXPECTED_OUTPUT = {
    "sb.map_tests": ["ok 0 '2\\n'", "ok 2 2", "[2, 0]"],
    "grade_code(message": ["1.0 passed"],
    "vec.episodes()": ["8 ["],
}


def doc_blocks() -> list[tuple[str, str]]:
    found = []
    for path in sorted(DOCS.glob("*.md")):
        for i, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            if match.group(1) is None:
                found.append((f"{path.name}#{i + 1}", match.group(2)))
    return found


def test_blocks_are_found() -> None:
    names = [name for name, _ in doc_blocks()]
    # a block marked "<!-- not run: ... -->" is not collected (integrations.md has three)
    assert len(names) >= 6 and "integrations.md#3" not in names, names


@pytest.mark.parametrize("name,code", doc_blocks(), ids=[n for n, _ in doc_blocks()])
def test_doc_example_runs(
    name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    if "make_sandbox(" in code:
        from flexmg.sandboxes.local import probe_local

        why = probe_local()
        if why is not None:
            pytest.skip(f"the local sandbox cannot run here: {why}")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    for marker, texts in EXPECTED_OUTPUT.items():
        if marker in code:
            for text in texts:
                assert text in out, (name, out)
