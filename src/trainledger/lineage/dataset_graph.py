"""Dataset graphs: a dict tree <-> the ``DatasetGraph`` message, with MindInsight's rules.

Packing follows MindInsight's ``package_dataset_graph`` and unpacking its ``organize_graph``,
so a graph dict we write reads back equal, and a MindSpore-written graph reads back exactly as
MindInsight shows it (parameters flattened into the node, ``"None"`` -> None, ``children``
always present).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainledger.errors import LineageParamTypeError
from trainledger.lineage.proto import lineage_pb2 as pb

__all__ = ["fits_int32", "package_graph", "organize_graph"]


def fits_int32(value: int) -> bool:
    """Whether MindInsight's int32 fields can hold ``value``."""
    return -(2**31) <= value <= 2**31 - 1


def package_graph(graph: Mapping[str, Any], message: pb.DatasetGraph) -> None:
    """Pack a graph dict into ``message`` with MindInsight's rules.

    A node is a dict: ``children`` (list of nodes), ``operations`` (list of dicts),
    ``sampler`` (dict), and parameters: str/bool/int/float/None or a list of strings. In an
    operation or sampler, a list of ints goes to ``size`` and any other list to ``weights``,
    as MindInsight packs them; prefer scalars (or JSON strings) there.
    """
    for key, value in graph.items():
        if key == "children":
            for child in value or ():
                if child:
                    package_graph(child, message.children.add())
        elif key == "operations":
            for op in value or ():
                _package_operation(op, message.operations.add())
        elif key == "sampler":
            if value:
                _package_operation(value, message.sampler)
        else:
            _package_parameter(key, value, message.parameter)


def _package_operation(operation: Mapping[str, Any], message: pb.Operation) -> None:
    message.SetInParent()
    for key, value in operation.items():
        if isinstance(value, (list, tuple)):
            if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                message.size.extend(int(v) for v in value)
            else:
                message.weights.extend(float(v) for v in value)
        else:
            _package_parameter(key, value, message.operationParam)


def _package_parameter(key: str, value: Any, message: pb.OperationParameter) -> None:
    if isinstance(value, str):
        message.mapStr[key] = value
    elif isinstance(value, bool):
        message.mapBool[key] = value
    elif isinstance(value, int):
        if fits_int32(value):
            message.mapInt[key] = value
        else:
            message.mapStr[key] = str(value)
    elif isinstance(value, float):
        message.mapDouble[key] = value
    elif isinstance(value, (list, tuple)):
        if value:
            message.mapStrList[key].strValue.extend("" if v is None else str(v) for v in value)
    elif value is None:
        message.mapStr[key] = "None"
    else:
        raise LineageParamTypeError(
            f"dataset graph parameter {key!r} expected str, bool, int, float, list or None, "
            f"received: {type(value).__name__}"
        )


def organize_graph(message: pb.DatasetGraph) -> dict[str, Any]:
    """A ``DatasetGraph`` as the dict MindInsight returns (parameters flattened into the node)."""
    node = _organize_current(message)
    node["children"] = [organize_graph(child) for child in message.children]
    return node


def _organize_current(message: pb.DatasetGraph) -> dict[str, Any]:
    node: dict[str, Any] = {}
    if message.HasField("parameter"):
        node.update(_organize_parameter(message.parameter))
    if message.operations:
        node["operations"] = [_organize_operation(op) for op in message.operations]
    if message.HasField("sampler"):
        sampler = _organize_operation(message.sampler)
        if sampler:
            node["sampler"] = sampler
    return node


def _organize_operation(message: pb.Operation) -> dict[str, Any]:
    op = _organize_parameter(message.operationParam)
    # MindInsight accumulates both repeated fields into one list (its quirk, kept on purpose).
    values: list[Any] = []
    for key in ("size", "weights"):
        for v in getattr(message, key):
            values.append(v)
        if values:
            op[key] = list(values)
    return op


def _organize_parameter(message: pb.OperationParameter) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in ("mapStr", "mapBool", "mapInt", "mapDouble"):
        for key, value in getattr(message, attr).items():
            out[key] = None if value == "None" else value
    for key, value in message.mapStrList.items():
        out[key] = [None if s == "" else s for s in value.strValue]
    return out
