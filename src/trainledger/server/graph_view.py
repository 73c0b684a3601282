"""A computational graph (TensorBoard ``GraphDef``) as the JSON the run page draws.

Node names are ``/``-separated module scopes, for trainledger's graphs
(``Net/Linear[fc1]/linear``) and MindSpore's (``Default/network-WithLossCell/.../Conv2D-op5``)
alike; each scope becomes a collapsible box on the page. Edges carry the shape of the tensor
they move: the producer's ``_output_shapes`` entry for the output the input names (``name:k``),
as TensorBoard's Graphs tab labels them.

A graph larger than ``max_nodes`` is collapsed here, not in the browser: every node deeper
than some scope depth is replaced by its scope at that depth (the deepest depth that fits), so
the answer and the layout stay bounded whatever the network.

Bookkeeping nodes are marked, so the page can hide them (its default) and show the network: a
MindSpore graph is mostly ops that order side effects or move values around, not the model's
computation. The rule (``is_bookkeeping``): the ops of ``BOOKKEEPING_OPS`` (``UpdateState``,
``Depend``, ``Load``, ``MakeTuple``, ``TupleGetItem``), every node under an optimizer's scope
(a scope part ``optimizer-<Class>``, MindSpore's name for ``TrainOneStepCell.optimizer``),
optimizer update kernels anywhere (ops named ``Apply<Name>``: ``ApplyMomentum``,
``ApplyAdam``...) and summary ops (``ScalarSummary``, ``ImageSummary``...). Gradients are
computation, not bookkeeping. A hidden node that forwards a value (``Load`` its parameter,
``Depend`` and ``TupleGetItem`` their first input, ``MakeTuple`` all of them) lists it in
``through``, so the page draws ``parameter -> Conv2D`` where the graph says ``parameter -> Load
-> Conv2D``; ``UpdateState`` and the optimizer's ops forward nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_NODES", "graph_view"]

#: Nodes sent at most; a larger graph is collapsed to module level (see the module docstring).
MAX_NODES = 1500
#: Ops that hold values rather than compute; the first dropped when a graph must be cut.
VALUE_OPS = frozenset({"Parameter", "Buffer", "Const"})
#: MindSpore's ops that order side effects or pack values (see the module docstring).
BOOKKEEPING_OPS = frozenset({"UpdateState", "Depend", "Load", "MakeTuple", "TupleGetItem"})
#: bookkeeping ops that forward their first input's value (``MakeTuple`` forwards all)
_FORWARD_FIRST = frozenset({"Depend", "Load", "TupleGetItem"})
#: attributes the view shows elsewhere (shapes) or that only say where a node is
_HIDDEN_ATTRS = frozenset({"_output_shapes", "scope"})
_OUTPUT_INDEX = re.compile(r"^(.*):(\d+)$")


@dataclass
class _Node:
    id: str
    op: str
    shapes: list[list[int]]
    inputs: list[tuple[str, int, bool]] = field(default_factory=list)  # (source, output, control)
    attrs: dict[str, str] = field(default_factory=dict)


def is_bookkeeping(name: str, op: str) -> bool:
    """Whether a node is bookkeeping, by the rule of the module docstring."""
    if op in BOOKKEEPING_OPS or op.endswith("Summary"):
        return True
    if op.startswith("Apply") and op[5:6].isupper():
        return True
    return _in_optimizer(name)


def _in_optimizer(name: str) -> bool:
    return any(part.startswith("optimizer-") for part in name.split("/")[:-1])


def _forwarded(node: _Node) -> list[str]:
    """The inputs whose value a bookkeeping node passes on (see the module docstring)."""
    data = [source for source, _, control in node.inputs if not control]
    if node.op in _FORWARD_FIRST:
        return data[:1]
    return data if node.op == "MakeTuple" else []


def _attr_text(value: Any) -> str:
    """An ``AttrValue`` as text: its string, else protobuf's text form on one line."""
    if value.HasField("s"):
        return str(value.s.decode("utf-8", "replace"))
    return " ".join(str(value).split())


def _attrs(proto: Any) -> dict[str, str]:
    return {k: _attr_text(v) for k, v in sorted(proto.attr.items()) if k not in _HIDDEN_ATTRS}


def _shapes(node: Any) -> list[list[int]]:
    if "_output_shapes" not in node.attr:
        return []
    return [[int(d.size) for d in shape.dim] for shape in node.attr["_output_shapes"].list.shape]


def _parse_input(text: str) -> tuple[str, int, bool]:
    control = text.startswith("^")
    name = text[1:] if control else text
    match = _OUTPUT_INDEX.match(name)
    if match:
        return match.group(1), int(match.group(2)), control
    return name, 0, control


def _scope(name: str) -> str:
    return name.rpartition("/")[0]


def _scopes_of(names: Iterable[str]) -> dict[str, int]:
    """Every scope holding one of ``names`` (at any depth), with how many of them it holds."""
    counts: dict[str, int] = {}
    for name in names:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            counts[prefix] = counts.get(prefix, 0) + 1
    return counts


def _cut(name: str, depth: int) -> str:
    """What shows ``name`` when scopes ``depth`` levels deep are collapsed: that scope, or
    the name itself when it is not that deep."""
    parts = name.split("/")
    return name if len(parts) <= depth else "/".join(parts[:depth])


def _collapse(names: list[str], max_nodes: int) -> tuple[dict[str, str], int | None]:
    """Each name -> what stands for it, at the deepest scope depth where at most
    ``max_nodes`` remain (depth None: nothing collapsed)."""
    deepest = max((n.count("/") for n in names), default=0)
    if len(names) <= max_nodes or deepest == 0:  # small, or no scope to collapse
        return {name: name for name in names}, None
    depth = 1
    for candidate in range(deepest, 0, -1):
        if len({_cut(name, candidate) for name in names}) <= max_nodes:
            depth = candidate
            break
    return {name: _cut(name, depth) for name in names}, depth


def _edges(nodes: dict[str, _Node], shown: dict[str, str]) -> list[dict[str, Any]]:
    """Edges between what is shown (one per pair, none inside a collapsed module), each
    with the shape its producer recorded for the output it carries."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for node in nodes.values():
        target = shown.get(node.id)
        for source, index, control in node.inputs:
            start = shown.get(source)
            if target is None or start is None or start == target or (start, target) in seen:
                continue
            shapes = nodes[source].shapes
            shape = shapes[index] if index < len(shapes) else None
            seen[(start, target)] = {
                "source": start,
                "target": target,
                "shape": shape,
                "control": control,
            }
    return list(seen.values())


def _node_json(
    name: str, count: int, nodes: dict[str, _Node], shown: dict[str, str]
) -> dict[str, Any]:
    """One drawn node: an operator (``count`` 1) or a collapsed module."""
    node = nodes.get(name) if count == 1 else None
    if node is None:  # a module standing for ``count`` nodes
        return {
            "id": name,
            "scope": _scope(name),
            "label": name.rpartition("/")[2],
            "op": "Module",
            "shape": None,
            "shapes": [],
            "count": count,
            "bookkeeping": False,
            "through": [],
            "attrs": {},
        }
    bookkeeping = is_bookkeeping(name, node.op)
    forwards = bookkeeping and not _in_optimizer(name)  # the optimizer's ops forward nothing
    through = [shown[s] for s in _forwarded(node) if s in shown] if forwards else []
    return {
        "id": name,
        "scope": _scope(name),
        "label": name.rpartition("/")[2],
        "op": node.op,
        "shape": node.shapes[0] if node.shapes else None,
        "shapes": node.shapes,
        "count": 1,
        "bookkeeping": bookkeeping,
        "through": list(dict.fromkeys(through)),
        "attrs": node.attrs,
    }


def graph_view(graph: Any, max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """``{"nodes": [{id, scope, label, op, shape, shapes, count, bookkeeping, through,
    attrs}], "edges": [{source, target, shape, control}], "scopes": [{id, parent, label,
    count}], "total_nodes", "collapsed_depth", "truncated"}``. A node's ``shape`` is its
    first output's (None: not recorded), ``shapes`` all its outputs', an edge's the tensor
    it carries; ``attrs`` are the operator's attributes as text; ``bookkeeping`` and
    ``through`` follow the module docstring's rule; a collapsed module is a node of op
    "Module" whose ``count`` is the nodes it holds; ``collapsed_depth`` is None unless the
    graph was collapsed; ``truncated`` says nodes were dropped because even the top level had
    more than ``max_nodes`` (parameters, buffers and constants first)."""
    nodes: dict[str, _Node] = {}  # graph: a TensorBoard GraphDef (``read_graph``)
    for proto in graph.node:
        inputs = [_parse_input(t) for t in proto.input]
        nodes[proto.name] = _Node(proto.name, proto.op, _shapes(proto), inputs, _attrs(proto))
    shown, depth = _collapse(list(nodes), max_nodes)
    members: dict[str, int] = {}
    for stands_for in shown.values():
        members[stands_for] = members.get(stands_for, 0) + 1
    truncated = len(members) > max_nodes
    if truncated:  # operators and modules first (MindSpore lists every weight at the top)
        values = {s for s in members if s in nodes and nodes[s].op in VALUE_OPS}
        ranked = [s for s in members if s not in values] + [s for s in members if s in values]
        kept = set(ranked[:max_nodes])
        shown = {name: s for name, s in shown.items() if s in kept}
        members = {s: n for s, n in members.items() if s in kept}
    visible_scopes = _scopes_of(members)
    scope_counts = _scopes_of(shown)
    return {
        "total_nodes": len(nodes),
        "collapsed_depth": depth,
        "truncated": truncated,
        "nodes": [_node_json(name, count, nodes, shown) for name, count in members.items()],
        "edges": _edges(nodes, shown),
        "scopes": [
            {"id": s, "parent": _scope(s), "label": s.rpartition("/")[2], "count": scope_counts[s]}
            for s in sorted(visible_scopes)
        ],
    }
