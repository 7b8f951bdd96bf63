import pytest

from flexmg import DependencyGraph


def test_order_is_topological_with_declaration_tiebreak():
    g = DependencyGraph(["c", "a", "b", "d"], [("a", "d"), ("b", "d"), ("c", "b")])
    assert g.order() == ["c", "a", "b", "d"]
    assert g.layers() == [["c", "a"], ["b"], ["d"]]
    assert g.predecessors("d") == ["a", "b"]
    assert g.successors("c") == ["b"]


def test_order_is_deterministic_and_independent_of_edge_order():
    roles = ["p", "q", "r", "s"]
    e1 = [("p", "s"), ("q", "s"), ("r", "s")]
    assert DependencyGraph(roles, e1).order() == DependencyGraph(roles, e1[::-1]).order()
    assert DependencyGraph(roles, e1) == DependencyGraph(roles, e1[::-1])


def test_chain_helpers():
    assert DependencyGraph.chain(["a", "b", "c"]).edges == [("a", "b"), ("b", "c")]
    full = DependencyGraph.full_chain(["a", "b", "c"])
    assert full.predecessors("c") == ["a", "b"]
    assert full.layers() == [["a"], ["b"], ["c"]]


def test_cycle_names_roles():
    with pytest.raises(ValueError, match=r"cycle.*'b'.*'c'|cycle.*\['b', 'c'\]"):
        DependencyGraph(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")])


def test_self_loop_and_unknown_role():
    with pytest.raises(ValueError, match="self-loop on role 'a'"):
        DependencyGraph(["a"], [("a", "a")])
    with pytest.raises(ValueError, match="unknown role.*'z'"):
        DependencyGraph(["a"], [("a", "z")])
    with pytest.raises(ValueError, match="unknown role 'z'"):
        DependencyGraph(["a"]).predecessors("z")


def test_bad_roles():
    with pytest.raises(ValueError, match="duplicate"):
        DependencyGraph(["a", "a"])
    with pytest.raises(ValueError, match="at least one"):
        DependencyGraph([])
    with pytest.raises(ValueError, match="pair"):
        DependencyGraph(["a", "b"], [("a",)])
