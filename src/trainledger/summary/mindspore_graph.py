"""MindSpore's computational graph (anf_ir ``GraphProto``) as a TensorBoard ``GraphDef``.

TensorBoard's Graphs tab groups nodes by the ``/``-separated scopes of their names, so each
MindSpore operator becomes a node named by its ``full_name``
(``Default/network-WithLossCell/_backbone-Net/conv1-Conv2d/Conv2D-op5``), which keeps
MindSpore's scopes; parameters (``conv1.weight``, ``inputs0``) keep their names with op
``Parameter``, and inputs that are neither (constants such as ``cst1``) become ``Const``
nodes. Edges follow MindSpore's inputs (control edges as TensorFlow's ``^name``); each node's
output shape, when MindSpore recorded one, is the ``_output_shapes`` attribute TensorBoard
draws on edges. An operator's attributes (``kernel_size``, ``use_nesterov``...) become
string attributes written as Python literals (``(3, 3)``, ``False``, ``['output']``), which
TensorBoard lists with the node and the run page shows in its node details.
"""

from __future__ import annotations

from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.proto import summary_pb2 as pb

__all__ = ["graph_def_from_mindspore"]


def _shape(type_proto: ms.TypeProto) -> pb.TensorShapeProto | None:
    if not type_proto.HasField("tensor_type"):
        return None
    dims = type_proto.tensor_type.shape.dim
    return pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=int(d.size)) for d in dims])


#: attribute names the conversion itself writes; a MindSpore attribute never overwrites them
_OWN_ATTRS = frozenset({"_output_shapes", "scope"})
_CONTAINERS = {ms.DT_TUPLE: ("(", ")"), ms.DT_LIST: ("[", "]")}
_SCALARS = ("bool_val", "int_val", "uint_val", "float_val", "double_val")


def value_text(value: ms.ValueProto, nested: bool = False) -> str:
    """A MindSpore attribute value as a Python literal: ``(3, 3)``, ``['output']``, ``1.0``;
    a tensor as ``Tensor(shape, dtype)``, a type as its name. A string stands bare at the
    top level and quoted inside a container."""
    if value.dtype in _CONTAINERS or value.values:
        opening, closing = _CONTAINERS.get(value.dtype, ("[", "]"))
        items = [value_text(v, nested=True) for v in value.values]
        comma = "," if opening == "(" and len(items) == 1 else ""
        return f"{opening}{', '.join(items)}{comma}{closing}"
    if value.dict_val:
        pairs = (f"{item.key!r}: {value_text(item.value, nested=True)}" for item in value.dict_val)
        return "{" + ", ".join(pairs) + "}"
    if value.dtype == ms.DT_NONE:
        return "None"
    if value.HasField("str_val"):
        return repr(value.str_val) if nested else value.str_val
    if value.HasField("tensor_val"):
        tensor = value.tensor_val
        return f"Tensor({list(tensor.dims)}, {ms.DataType.Name(tensor.data_type)})"
    if value.HasField("type_val"):
        return ms.DataType.Name(value.type_val.data_type)
    for name in _SCALARS:
        if value.HasField(name):  # type: ignore[arg-type]  # one of the scalar fields
            return repr(getattr(value, name))
    return ms.DataType.Name(value.dtype) if value.HasField("dtype") else ""


def _attrs(node: pb.NodeDef, type_proto: ms.TypeProto, scope: str) -> None:
    shape = _shape(type_proto)
    if shape is not None:
        node.attr["_output_shapes"].list.shape.append(shape)
    if scope:
        node.attr["scope"].s = scope.encode("utf-8")


def graph_def_from_mindspore(graph: ms.GraphProto) -> pb.GraphDef:
    """A TensorBoard ``GraphDef`` with one node per MindSpore operator, parameter and constant."""
    out = pb.GraphDef()
    out.versions.producer = 22  # what torch's add_graph writes; TensorBoard needs a version
    taken: set[str] = set()

    def unique(name: str) -> str:
        base, n = name, 1
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        return name

    for param in graph.parameters:
        node = out.node.add(name=unique(param.name), op="Parameter")
        _attrs(node, param.type, "")
    # MindSpore's inputs name other operators by their short ``name`` (a number).
    renamed: dict[str, str] = {}
    for op in graph.node:
        full = op.full_name or (f"{op.scope}/{op.op_type}-{op.name}" if op.scope else op.name)
        renamed[op.name] = unique(full)
    params = {p.name for p in graph.parameters}
    consts: dict[str, str] = {}
    pending: list[pb.NodeDef] = []
    for op in graph.node:
        node = pb.NodeDef(name=renamed[op.name], op=op.op_type or "Unknown")
        for edge in op.input:
            source = renamed.get(edge.name)
            if source is None and edge.name in params:
                source = edge.name
            if source is None:  # a constant (or anything else MindSpore did not list)
                source = consts.get(edge.name)
                if source is None:
                    source = consts[edge.name] = unique(edge.name)
                    out.node.add(name=source, op="Const")
            control = edge.type == ms.InputProto.CONTROL_EDGE
            node.input.append(("^" if control else "") + source)
        _attrs(node, op.output_type, op.scope)
        for attribute in op.attribute:
            if attribute.name not in _OWN_ATTRS:
                node.attr[attribute.name].s = value_text(attribute.value).encode("utf-8")
        pending.append(node)
    out.node.extend(pending)
    return out
