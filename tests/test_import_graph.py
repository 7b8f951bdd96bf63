"""The flexmg package imports only downward, and no import circle ties its modules together.

The layers, bottom first (docs/architecture.md, "Layers"):

    core        flexmg.* except the packages below
    sandboxes   flexmg.sandboxes    (running untrusted code)
    envs        flexmg.envs         (the env families)
    models      flexmg.models       (causal LMs: loading, decoding, prompts, the tiny model, zoo)
    agents      flexmg.agents       (the learner)
    baselines   flexmg.baselines    (scripted agents, the leaderboard, baseline learners)
    faces       flexmg.integrations, flexmg.view   (other frameworks, the HTML viewer)
    cli         flexmg.cli          (the command line)

A module may import modules of its own layer or of a lower one. Every import counts, also
one inside a function (a lazy import still ties two modules together); imports under
``if TYPE_CHECKING:`` (annotations only) do not. The modules are found by walking the real
package tree (``flexmg/envs`` ... are symlinks to the top-level folders), so every module
has its real name.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flexmg"
LAYERS: tuple[tuple[str, ...], ...] = (
    ("flexmg",),
    ("flexmg.sandboxes",),
    ("flexmg.envs",),
    ("flexmg.models",),
    ("flexmg.agents",),
    ("flexmg.baselines",),
    ("flexmg.integrations", "flexmg.view"),
    ("flexmg.cli",),
)


def layer_of(module: str) -> int:
    """The index of the layer a module belongs to (its longest matching package prefix).

    >>> layer_of("flexmg.tasks"), layer_of("flexmg.envs.math.grader"), layer_of("flexmg.cli")
    (0, 2, 7)
    """
    best, found = -1, 0
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and len(package) > best:
                best, found = len(package), index
    return found


def top_package(module: str) -> str:
    """The layer package a module belongs to (``flexmg`` for the core)."""
    matches = [p for layer in LAYERS for p in layer if module == p or module.startswith(p + ".")]
    return max(matches, key=len)


def package_modules() -> dict[str, Path]:
    """Every module of the package tree (symlinked folders followed), by its real name."""
    found = {}
    paths = [
        Path(folder, name)
        for folder, _, names in os.walk(PACKAGE, followlinks=True)
        for name in names
        if name.endswith(".py")
    ]
    for path in sorted(paths):
        parts = ["flexmg", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        if "__pycache__" not in parts and parts[-1] != "__main__":
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports at run time (typing-only imports left out)."""
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
        if id(node) in typing_only:
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
    return {t for t in targets if t in modules and t != name}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan, iterative)."""
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
                    work.append((child, iter(sorted(edges.get(child, ())))))
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


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_the_checkers_find_what_they_look_for() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("flexmg.agents.ppo") > layer_of("flexmg.models") > layer_of("flexmg.envs")
    assert top_package("flexmg.integrations.verl.reward") == "flexmg.integrations"


def test_the_walk_sees_the_real_package_names(graph: dict[str, set[str]]) -> None:
    for name in ("flexmg.vector_ray", "flexmg.envs.math.generators.word", "flexmg.agents.ppo"):
        assert name in graph, name
    assert "flexmg.vector_base" in graph["flexmg.vector_ray"]


def test_every_import_goes_down(graph: dict[str, set[str]]) -> None:
    upward = sorted(
        f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
        for name, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )
    assert upward == [], "\n".join(upward)


def test_no_import_circle_between_modules(graph: dict[str, set[str]]) -> None:
    # imports of the layer packages themselves are left out: every module sits below them
    roots = {package for layer in LAYERS for package in layer}
    edges = {n: {t for t in ts if t not in roots} for n, ts in graph.items()}
    assert cycles(edges) == []


def test_no_circle_between_the_layer_packages(graph: dict[str, set[str]]) -> None:
    """``import flexmg`` included: the core's ``__init__`` imports no package above it."""
    between: dict[str, set[str]] = {}
    for name, targets in graph.items():
        source = top_package(name)
        between.setdefault(source, set()).update(
            top_package(t) for t in targets if top_package(t) != source
        )
    assert cycles(between) == []
    assert all(layer_of(t) == 0 for t in graph["flexmg"]), graph["flexmg"]
