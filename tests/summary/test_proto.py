"""The committed protobuf code matches the .proto, and the .proto matches TensorBoard's schema."""

from __future__ import annotations

import pytest

from tests.protobuf_compat import is_repeated
from trainledger.summary.proto import summary_pb2 as pb


def test_package_is_our_own():
    assert pb.DESCRIPTOR.package == "trainledger.summary"


def _pairs():
    from tensorboard.compat.proto import (
        event_pb2,
        histogram_pb2,
        summary_pb2,
        tensor_pb2,
        tensor_shape_pb2,
    )

    return [
        (pb.Event, event_pb2.Event),
        (pb.LogMessage, event_pb2.LogMessage),
        (pb.SessionLog, event_pb2.SessionLog),
        (pb.Summary, summary_pb2.Summary),
        (pb.Summary.Value, summary_pb2.Summary.Value),
        (pb.Summary.Image, summary_pb2.Summary.Image),
        (pb.Summary.Audio, summary_pb2.Summary.Audio),
        (pb.SummaryMetadata, summary_pb2.SummaryMetadata),
        (pb.SummaryMetadata.PluginData, summary_pb2.SummaryMetadata.PluginData),
        (pb.HistogramProto, histogram_pb2.HistogramProto),
        (pb.TensorProto, tensor_pb2.TensorProto),
        (pb.TensorShapeProto, tensor_shape_pb2.TensorShapeProto),
        (pb.TensorShapeProto.Dim, tensor_shape_pb2.TensorShapeProto.Dim),
    ]


@pytest.mark.parametrize("ours,theirs", _pairs(), ids=lambda m: getattr(m, "__name__", str(m)))
def test_field_numbers_and_types_match_tensorboard(ours, theirs):
    tb_fields = {f.name: f for f in theirs.DESCRIPTOR.fields}
    for field in ours.DESCRIPTOR.fields:
        tb = tb_fields[field.name]
        assert field.number == tb.number, field.name
        # A sub-message of TensorBoard may be declared as bytes here (same wire type).
        if field.type != tb.type:
            assert (field.type, tb.type) == (field.TYPE_BYTES, tb.TYPE_MESSAGE), field.name
        assert is_repeated(field) == is_repeated(tb), field.name
        assert bool(field.containing_oneof) == bool(tb.containing_oneof), field.name


def test_enum_numbers_match_tensorboard():
    from tensorboard.compat.proto import summary_pb2, types_pb2

    tb_types = {v.name: v.number for v in types_pb2.DataType.DESCRIPTOR.values}
    for v in pb.DataType.DESCRIPTOR.values:
        assert tb_types[v.name] == v.number
    tb_classes = {v.name: v.number for v in summary_pb2.DataClass.DESCRIPTOR.values}
    for v in pb.DataClass.DESCRIPTOR.values:
        assert tb_classes[v.name] == v.number


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("GraphDef", "graph_pb2"),
        ("NodeDef", "node_def_pb2"),
        ("AttrValue", "attr_value_pb2"),
        ("NameAttrList", "attr_value_pb2"),
        ("VersionDef", "versions_pb2"),
    ],
)
def test_graph_messages_have_tensorboards_field_numbers(name: str, module: str) -> None:
    """Every field we declare has TensorBoard's number and type (theirs may have more)."""
    import importlib

    theirs = getattr(importlib.import_module(f"tensorboard.compat.proto.{module}"), name)
    mine = getattr(pb, name)
    for field in mine.DESCRIPTOR.fields:
        other = theirs.DESCRIPTOR.fields_by_name[field.name]
        assert (field.number, field.type) == (other.number, other.type), field.full_name
    for nested in ("ListValue",) if name == "AttrValue" else ():
        for field in mine.DESCRIPTOR.nested_types_by_name[nested].fields:
            other = theirs.DESCRIPTOR.nested_types_by_name[nested].fields_by_name[field.name]
            assert (field.number, field.type) == (other.number, other.type), field.full_name
