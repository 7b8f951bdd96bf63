"""No import circles among the modules of the flexmg packages (flexmg/, envs/, agents/, ...).

Every import counts, also one inside a function (a lazy import still ties two
modules together); imports under ``if TYPE_CHECKING:`` (annotations only) do not. Imports of the packages ``flexmg`` and ``flexmg.envs``
themselves are left out: every module sits below them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "flexmg": ROOT / "flexmg",
    "flexmg.envs": ROOT / "envs",
    "flexmg.agents": ROOT / "agents",
    "flexmg.baselines": ROOT / "baselines",
    "flexmg.sandboxes": ROOT / "sandboxes",
}
SKIP = ("flexmg.agents.__main__",)


def _modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([prefix, *parts])
            if not name.startswith(SKIP):
                found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:  # annotations only: no import at run time
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            module = node.module or ""
            if node.level:
                module = f"{base}.{module}" if module else base
            targets.add(module)
            targets.update(f"{module}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in modules and t != name and t not in FOLDERS}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_checker_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_the_core_and_the_env_families() -> None:
    modules = _modules()
    assert "flexmg.vector_ray" in modules and "flexmg.envs.math.generators.word" in modules
    edges = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "flexmg.vector_base" in edges["flexmg.vector_ray"]
    assert _cycles(edges) == []
