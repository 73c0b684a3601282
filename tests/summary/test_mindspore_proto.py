"""Our MindSpore schemas keep MindSpore's field numbers and types.

The reference is a snapshot of MindSpore 2.10's own descriptors
(tests/golden/mindspore-full/mindspore-schema.json, written by make_fixtures.py from
``mindspore.train.summary_pb2`` / ``anf_ir_pb2`` / ``checkpoint_pb2``), so the test needs no
MindSpore installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from tests.protobuf_compat import is_repeated
from trainledger.checkpoint.proto import mindspore_checkpoint_pb2 as ckpt_pb
from trainledger.summary.proto import mindspore_summary_pb2 as pb

SCHEMA = json.loads(
    (Path(__file__).parents[1] / "golden" / "mindspore-full" / "mindspore-schema.json").read_text()
)


def _ours(module: object) -> dict[str, Descriptor]:
    out: dict[str, Descriptor] = {}

    def walk(desc: Descriptor, prefix: str) -> None:
        out[prefix + desc.name] = desc
        for nested in desc.nested_types:
            walk(nested, prefix + desc.name + ".")

    for desc in module.DESCRIPTOR.message_types_by_name.values():  # type: ignore[attr-defined]
        walk(desc, "")
    return out


# (our message, MindSpore file, MindSpore message)
_CASES = [
    *((name, "summary.proto") for name in _ours(pb) if name in SCHEMA["summary.proto"]["messages"]),
    *((name, "anf_ir.proto") for name in _ours(pb) if name in SCHEMA["anf_ir.proto"]["messages"]),
]


def test_every_message_of_ours_is_mindspores() -> None:
    known = set(SCHEMA["summary.proto"]["messages"]) | set(SCHEMA["anf_ir.proto"]["messages"])
    assert set(_ours(pb)) <= known
    assert set(_ours(ckpt_pb)) <= set(SCHEMA["checkpoint.proto"]["messages"])
    assert pb.DESCRIPTOR.package == "trainledger.mindspore"


def _check(desc: Descriptor, theirs: dict[str, list]) -> None:
    assert desc.fields, desc.full_name
    for field in desc.fields:
        number, ftype, repeated, in_oneof = theirs[field.name]
        assert field.number == number, field.name
        if field.type != ftype:  # a sub-message we do not decode may be declared as bytes
            assert (field.type, ftype) == (FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE)
        assert is_repeated(field) == repeated, field.name
        assert (field.containing_oneof is not None) == in_oneof, field.name


@pytest.mark.parametrize(("name", "proto_file"), _CASES, ids=[c[0] for c in _CASES])
def test_summary_fields_match_mindspore(name: str, proto_file: str) -> None:
    _check(_ours(pb)[name], SCHEMA[proto_file]["messages"][name])


@pytest.mark.parametrize("name", sorted(_ours(ckpt_pb)))
def test_checkpoint_fields_match_mindspore(name: str) -> None:
    _check(_ours(ckpt_pb)[name], SCHEMA["checkpoint.proto"]["messages"][name])


def test_data_type_numbers_match_mindspore() -> None:
    theirs = SCHEMA["anf_ir.proto"]["enums"]["DataType"]
    for value in pb.DataType.DESCRIPTOR.values:
        assert theirs[value.name] == value.number
    edge = pb.InputProto.EdgeType.DESCRIPTOR.values_by_name
    assert edge["CONTROL_EDGE"].number == 1
