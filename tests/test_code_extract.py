"""extract_code / find_code_blocks: which block is the solution, hostile text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from flexmg.envs.code import extract_code, find_code_blocks, python_blocks


def test_last_python_block_wins() -> None:
    msg = "first\n```python\na = 1\n```\nbetter:\n```python\na = 2\n```\nbye"
    assert extract_code(msg) == "a = 2"


def test_py_and_bare_fences_count_other_languages_do_not() -> None:
    assert extract_code("```py\nx = 1\n```") == "x = 1"
    assert extract_code("```\nx = 2\n```") == "x = 2"
    assert extract_code("```Python3\nx = 3\n```") == "x = 3"
    assert extract_code("```python\nx = 4\n```\n```bash\npip install x\n```") == "x = 4"
    assert extract_code("```bash\nls\n```") is None
    assert extract_code("```text\nhello\n```") is None


def test_none_when_no_block_or_empty_block() -> None:
    assert extract_code("def f():\n    return 1") is None
    assert extract_code("") is None
    assert extract_code("```python\n\n   \n```") is None
    assert extract_code(None) is None  # type: ignore[arg-type]


def test_unclosed_final_block_is_taken() -> None:
    blocks = find_code_blocks("```python\ndef f():\n    return 1")
    assert len(blocks) == 1 and not blocks[0].closed
    assert extract_code("```python\ndef f():\n    return 1") == "def f():\n    return 1"


def test_indentation_inside_block_is_kept_and_crlf_normalised() -> None:
    msg = "```python\r\ndef f(x):\r\n    return x\r\n```\r\n"
    assert extract_code(msg) == "def f(x):\n    return x"


def test_inline_triple_backticks_and_longer_fences() -> None:
    assert extract_code("use ```python``` fences") is None
    msg = "````python\nprint('```')\n```\nstill code\n````"
    assert extract_code(msg) == "print('```')\n```\nstill code"


def test_tilde_fence_and_indented_fence() -> None:
    assert extract_code("~~~python\nz = 3\n~~~") == "z = 3"
    assert extract_code("  ```python\n  y = 1\n  ```") == "  y = 1"


def test_python_blocks_in_order() -> None:
    msg = "```python\na\n```\n```js\nb\n```\n```\nc\n```"
    assert python_blocks(msg) == ["a", "c"]


def test_huge_and_pathological_inputs_are_fast_and_safe() -> None:
    assert extract_code("`" * 200_000) is None
    assert extract_code("```\n" * 50_000) is None  # 25,000 empty bare blocks
    big = "```python\n" + "x = 1\n" * 100_000 + "```"
    assert extract_code(big).count("\n") == 99_999
    assert extract_code("```python\n\x00\ud800 é 漢字 🙂\n```") == "\x00\ud800 é 漢字 🙂"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    out = extract_code(text)
    assert out is None or (isinstance(out, str) and out.strip())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="`~\r\n")), st.text())
def test_roundtrip_of_a_fenced_block(code: str, prefix: str) -> None:
    prefix = prefix.replace("`", "").replace("~", "")
    msg = f"{prefix}\n```python\n{code}\n```\n"
    expected = code.rstrip() if code.strip() else None
    assert extract_code(msg) == expected
