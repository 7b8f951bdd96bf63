"""The agent dependency graph: who sees whose output within a round.

An edge ``a -> b`` means role ``b`` sees role ``a``'s output of the same round,
so ``a`` acts before ``b``. The graph is a DAG; its deterministic topological
order is the turn order of a round.

Example:
    >>> from flexmg.graph import DependencyGraph
    >>> g = DependencyGraph(["planner", "coder", "reviewer"],
    ...                     [("planner", "coder"), ("coder", "reviewer")])
    >>> g.order()
    ['planner', 'coder', 'reviewer']
    >>> g.predecessors("reviewer")
    ['coder']
    >>> DependencyGraph.chain(["a", "b"]).layers()
    [['a'], ['b']]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class DependencyGraph:
    """A DAG over roles that fixes the turn order of a round.

    Args:
        roles: the roles, in declaration order (ties in the topological order
            are broken by this order).
        edges: ``(src, dst)`` pairs: ``dst`` sees ``src``'s output this round.

    Raises:
        ValueError: on duplicate or empty role names, unknown roles in edges,
            self-loops or cycles; the message names the offending roles.
    """

    __slots__ = ("_roles", "_edges", "_preds", "_succs", "_order", "_layers")

    def __init__(self, roles: Sequence[str], edges: Iterable[tuple[str, str]] = ()) -> None:
        roles = list(roles)
        if not roles:
            raise ValueError("a DependencyGraph needs at least one role")
        for r in roles:
            if not isinstance(r, str) or not r:
                raise ValueError(f"role names must be non-empty strings, got {r!r}")
        dupes = sorted({r for r in roles if roles.count(r) > 1})
        if dupes:
            raise ValueError(f"duplicate roles in DependencyGraph: {dupes}")
        known = set(roles)
        preds: dict[str, list[str]] = {r: [] for r in roles}
        succs: dict[str, list[str]] = {r: [] for r in roles}
        edge_list: list[tuple[str, str]] = []
        for edge in edges:
            try:
                src, dst = edge
            except (TypeError, ValueError):
                raise ValueError(
                    f"an edge must be a (src, dst) pair of roles, got {edge!r}"
                ) from None
            unknown = [x for x in (src, dst) if x not in known]
            if unknown:
                raise ValueError(
                    f"edge {src!r} -> {dst!r} names unknown role(s) {unknown}; known roles: {roles}"
                )
            if src == dst:
                raise ValueError(f"self-loop on role {src!r}: a role cannot depend on itself")
            if src not in preds[dst]:
                preds[dst].append(src)
                succs[src].append(dst)
                edge_list.append((src, dst))
        self._roles = tuple(roles)
        self._edges = tuple(edge_list)
        rank = {r: i for i, r in enumerate(roles)}
        self._preds = {r: sorted(p, key=rank.__getitem__) for r, p in preds.items()}
        self._succs = succs
        self._order, self._layers = self._toposort()

    @classmethod
    def chain(cls, roles: Sequence[str]) -> DependencyGraph:
        """A pipeline ``roles[0] -> roles[1] -> ...`` (each sees its direct predecessor).

        >>> DependencyGraph.chain(["a", "b", "c"]).predecessors("c")
        ['b']
        """
        return cls(roles, list(zip(roles[:-1], roles[1:])))

    @classmethod
    def full_chain(cls, roles: Sequence[str]) -> DependencyGraph:
        """Each role sees *all* earlier roles (the usual LLM-workflow transcript).

        >>> DependencyGraph.full_chain(["a", "b", "c"]).predecessors("c")
        ['a', 'b']
        """
        return cls(roles, [(a, b) for i, b in enumerate(roles) for a in roles[:i]])

    def _toposort(self) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
        indeg = {r: len(self._preds[r]) for r in self._roles}
        order: list[str] = []
        layers: list[tuple[str, ...]] = []
        frontier = [r for r in self._roles if indeg[r] == 0]
        while frontier:
            layers.append(tuple(frontier))
            order.extend(frontier)
            nxt_set = set()
            for r in frontier:
                for s in self._succs[r]:
                    indeg[s] -= 1
                    if indeg[s] == 0:
                        nxt_set.add(s)
            frontier = [r for r in self._roles if r in nxt_set]
        if len(order) != len(self._roles):
            stuck = [r for r in self._roles if r not in order]
            raise ValueError(f"dependency graph has a cycle through roles {stuck}")
        return tuple(order), tuple(layers)

    @property
    def roles(self) -> list[str]:
        """Roles in declaration order."""
        return list(self._roles)

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Edges in declaration order."""
        return list(self._edges)

    def order(self) -> list[str]:
        """Deterministic topological order (layer by layer, ties by declaration order)."""
        return list(self._order)

    def layers(self) -> list[list[str]]:
        """Groups of roles whose predecessors all come from earlier groups."""
        return [list(layer) for layer in self._layers]

    def predecessors(self, role: str) -> list[str]:
        """Roles whose output ``role`` sees this round (declaration order)."""
        self._check_role(role)
        return list(self._preds[role])

    def successors(self, role: str) -> list[str]:
        """Roles that see ``role``'s output this round."""
        self._check_role(role)
        return list(self._succs[role])

    def _check_role(self, role: str) -> None:
        if role not in self._preds:
            raise ValueError(f"unknown role {role!r}; known roles: {list(self._roles)}")

    def to_dict(self) -> dict[str, list]:
        """A JSON-friendly description."""
        return {"roles": list(self._roles), "edges": [list(e) for e in self._edges]}

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DependencyGraph)
            and self._roles == other._roles
            and set(self._edges) == set(other._edges)
        )

    def __hash__(self) -> int:
        return hash((self._roles, frozenset(self._edges)))

    def __str__(self) -> str:
        if not self._edges:
            return ", ".join(self._roles)
        return ", ".join(f"{a}->{b}" for a, b in self._edges)

    def __repr__(self) -> str:
        return f"DependencyGraph(roles={list(self._roles)!r}, edges={list(self._edges)!r})"
