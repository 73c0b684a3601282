"""Our lineage schema: generated code in sync, and MindInsight's field numbers kept."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import unknown_fields
from google.protobuf.descriptor import Descriptor

from tests.lineage.mindinsight_schema import mindinsight_pb2
from tests.protobuf_compat import is_repeated
from trainledger.lineage.proto import lineage_pb2 as ours
from trainledger.lineage.reader import parse_lineage_file
from trainledger.storage import read_records

RUNS = Path(__file__).resolve().parents[1] / "golden" / "mindspore-runs"


def _compare(theirs: Descriptor, mine: Descriptor, path: str, seen: set[str] | None = None) -> None:
    seen = set() if seen is None else seen
    if theirs.full_name in seen:
        return
    seen.add(theirs.full_name)
    for f in theirs.fields:
        assert f.name in mine.fields_by_name, f"{path}.{f.name} missing"
        g = mine.fields_by_name[f.name]
        assert (g.number, g.type) == (f.number, f.type), f"{path}.{f.name}"
        assert is_repeated(g) == is_repeated(f), f"{path}.{f.name}"
        if f.message_type is not None:
            _compare(f.message_type, g.message_type, f"{path}.{f.name}", seen)
    for g in mine.fields:
        if g.name not in theirs.fields_by_name:
            assert g.number >= 100, f"{path}.{g.name}: extension numbers must be >= 100"


def test_every_mindinsight_field_number_is_kept(tmp_path: Path) -> None:
    mi = mindinsight_pb2(tmp_path)
    _compare(mi.LineageEvent.DESCRIPTOR, ours.LineageEvent.DESCRIPTOR, "LineageEvent")
    assert ours.LineageEvent.DESCRIPTOR.fields_by_name["train_lineage"].number == 6
    assert ours.LineageEvent.DESCRIPTOR.fields_by_name["evaluation_lineage"].number == 7
    assert ours.LineageEvent.DESCRIPTOR.fields_by_name["dataset_graph"].number == 9
    assert ours.LineageEvent.DESCRIPTOR.fields_by_name["user_defined_info"].number == 10
    assert ours.TrainLineage.HyperParameters.DESCRIPTOR.fields_by_name["batch_size"].number == 8
    assert ours.TrainLineage.Model.DESCRIPTOR.fields_by_name["path"].number == 3
    assert ours.TrainLineage.Model.DESCRIPTOR.fields_by_name["size"].number == 4
    assert ours.EvaluationLineage.DESCRIPTOR.fields_by_name["metric"].number == 2


def test_fixture_records_decode_identically_with_both_schemas(tmp_path: Path) -> None:
    mi = mindinsight_pb2(tmp_path)
    seen = set()
    for path in sorted(RUNS.glob("*/*_lineage")):
        payloads, corrupt = read_records(path)
        assert corrupt == 0 and payloads
        for payload in payloads:
            a, b = mi.LineageEvent(), ours.LineageEvent()
            a.ParseFromString(payload)
            b.ParseFromString(payload)
            seen.add(b.WhichOneof("what"))
            assert a.WhichOneof("what") == b.WhichOneof("what")
            assert a.SerializeToString(deterministic=True) == b.SerializeToString(
                deterministic=True
            )
            assert len(unknown_fields.UnknownFieldSet(b)) == 0
        assert parse_lineage_file(path).has_lineage
    assert seen == {"train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info"}
