"""TensorBoard computational graphs: ``GraphDef`` bytes for ``Event.graph_def``.

The nodes follow what ``torch.utils.tensorboard.SummaryWriter.add_graph`` writes, so the
Graphs tab draws them the same way: names are ``/``-separated module scopes
(``Net/Linear[fc1]/linear``, collapsed into one box per module), ``op`` is the operation,
``input`` names the producing nodes, and the ``_output_shapes`` attribute puts shapes on the
edges. Capturing a graph needs torch and an input (``trainledger.callbacks`` does that); this
module only encodes, so it imports neither torch nor anything else of ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GraphNode",
    "checked_graph",
    "graph_def_bytes",
    "module_graph_def",
    "parse_graph_def",
    "PRODUCER",
]

# The GraphDef producer version TensorBoard shows for PyTorch graphs (add_graph writes 22).
PRODUCER = 22


@dataclass(frozen=True)
class GraphNode:
    """One node: ``name`` (scope path), ``op``, the names of its ``inputs``, the shapes of its
    outputs (``None``: unknown), its dtype, and a free-text ``attr`` shown in the node panel."""

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] | None = None
    dtype: str = ""
    attr: str = ""


def graph_def_bytes(nodes: Iterable[GraphNode]) -> bytes:
    """A serialised ``GraphDef`` of ``nodes`` (what ``Event.graph_def`` holds)."""
    from trainledger.summary.proto import summary_pb2 as pb

    protos = []
    for node in nodes:
        attr: dict[str, Any] = {}
        text = node.attr or (f"dtype={node.dtype}" if node.dtype else "")
        if text:
            attr["attr"] = pb.AttrValue(s=text.encode("utf-8"))
        if node.shapes is not None:
            shapes = [
                pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=int(d)) for d in shape])
                for shape in node.shapes
            ]
            attr["_output_shapes"] = pb.AttrValue(list=pb.AttrValue.ListValue(shape=shapes))
        protos.append(pb.NodeDef(name=node.name, op=node.op, input=list(node.inputs), attr=attr))
    graph = pb.GraphDef(node=protos, versions=pb.VersionDef(producer=PRODUCER))
    return graph.SerializeToString()


def checked_graph(name: str, value: Any) -> bytes:
    """``value`` when it is a serialised GraphDef (what ``add_value("graph", ...)`` takes)."""
    if not isinstance(value, bytes):
        raise TypeError(
            f"graph {name!r} expected a serialised GraphDef (bytes, see "
            f"trainledger.summary.graph_def), received: {type(value).__name__}"
        )
    return value


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    try:
        return tuple(int(d) for d in shape) if shape is not None else None
    except TypeError:
        return None


def module_graph_def(network: Any) -> bytes:
    """The structure of a torch-like module without running it: one node per parameter and
    buffer inside its module's scope (``Net/Linear[fc1]/weight``), plus one node per leaf
    module taking its parameters as inputs. Used when no input is at hand to trace with
    (``SummaryRecord.record(step, train_network=net)``); ``SummaryCollector`` traces the
    first batch instead, which also gives the data flow."""
    named_modules = getattr(network, "named_modules", None)
    if named_modules is None:
        raise TypeError(
            "graph expected a torch.nn.Module-like network (with named_modules), received: "
            f"{type(network).__name__}"
        )
    scopes: dict[str, str] = {}
    nodes: list[GraphNode] = []
    root = type(network).__name__
    for path, module in named_modules():
        if not path:
            scope = root
        else:
            parent, _, leaf = path.rpartition(".")
            scope = f"{scopes[parent]}/{type(module).__name__}[{leaf}]"
        scopes[path] = scope
        owned: list[str] = []
        for kind, getter in (("Parameter", "named_parameters"), ("Buffer", "named_buffers")):
            members = getattr(module, getter, None)
            for name, value in members(recurse=False) if members is not None else ():
                node_name = f"{scope}/{name}"
                dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
                shape = _shape(value)
                shapes = (shape,) if shape is not None else None
                nodes.append(GraphNode(node_name, kind, shapes=shapes, dtype=dtype))
                owned.append(node_name)
        if path and not any(True for _ in module.children()):
            nodes.append(GraphNode(f"{scope}/{type(module).__name__}", "Module", tuple(owned)))
    return graph_def_bytes(nodes)


def parse_graph_def(data: bytes) -> Sequence[Any]:
    """The ``NodeDef`` messages of a serialised ``GraphDef`` (for readers and tests)."""
    from trainledger.summary.proto import summary_pb2 as pb

    graph = pb.GraphDef()
    graph.ParseFromString(data)
    return list(graph.node)
