"""``read_status`` (the status alone, skimming the files) answers what ``read_lineage`` does,
and decodes no event but the run events."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GOLDEN
from trainledger.lineage import read_lineage, read_status
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.lineage.records import (
    RUN_STATUSES,
    EvalValues,
    RunValues,
    TrainValues,
    dataset_graph_event,
    eval_event,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.storage import frame, lineage_file_name


def _run_without_status() -> pb.LineageEvent:
    event = pb.LineageEvent(wall_time=1.0)
    event.run.hostname = "host"  # a run record that never said its status
    return event


EVENTS = st.one_of(
    st.builds(lambda: train_event(TrainValues(optimizer="SGD", learning_rate=0.1), 1.0)),
    st.builds(lambda: eval_event(EvalValues(metrics={"acc": 0.5}), 1.0)),
    st.builds(lambda: dataset_graph_event({"op_type": "A", "children": []}, 1.0)),
    st.builds(lambda: user_defined_event({"team": "a"}, 1.0)),
    st.sampled_from(RUN_STATUSES).map(lambda s: run_event(RunValues(status=s), 1.0)),
    st.builds(_run_without_status),
)
# a file: its events, and whether a damaged record (bad CRC) sits among them
FILES = st.lists(st.tuples(st.lists(EVENTS, max_size=5), st.booleans()), max_size=4)


def _write(run_dir: Path, files: list[tuple[list[pb.LineageEvent], bool]]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    for i, (events, damaged) in enumerate(files):
        data = b"".join(frame(e.SerializeToString()) for e in events)
        if damaged:
            record = bytearray(frame(run_event(RunValues(status="failed")).SerializeToString()))
            record[-1] ^= 0xFF  # its CRC no longer matches: the framing skips it
            data += bytes(record)
        (run_dir / lineage_file_name(1_800_000_000 + i, 0, "host", 1, 0)).write_bytes(data)


def _reader_status(run_dir: Path) -> Any:
    return (read_lineage(run_dir).get("run") or {}).get("status")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILES)
def test_the_skim_answers_as_the_reader(files: list[tuple[list[pb.LineageEvent], bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        _write(run_dir, files)
        assert read_status(run_dir) == _reader_status(run_dir)


def test_an_eval_only_file_keeps_the_status_a_newer_training_resets_it(tmp_path: Path) -> None:
    finished = run_event(RunValues(status="finished"))
    evaluation = eval_event(EvalValues(metrics={"acc": 0.9}))
    _write(tmp_path / "a", [([finished], False), ([evaluation], False)])
    assert read_status(tmp_path / "a") == "finished"
    training = train_event(TrainValues(optimizer="SGD"))
    _write(tmp_path / "b", [([finished], False), ([training], False)])
    assert read_status(tmp_path / "b") is None  # a new training without a run record


@pytest.mark.parametrize("name", ["adam_lr001", "momentum_lr01", "momentum_twice", "sgd_noeval"])
def test_mindspore_runs_have_no_status(name: str) -> None:
    assert read_status(GOLDEN / "mindspore-runs" / name) is None


def test_only_run_events_are_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    training = train_event(TrainValues(optimizer="SGD"))
    graph = dataset_graph_event({"op_type": "A", "children": []})
    _write(tmp_path, [([training, graph, run_event(RunValues(status="stopped"))], False)])

    class Refused:
        """Any whole event decoded (constructed, or ``FromString``) fails the test."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("a whole event was decoded")

        @classmethod
        def FromString(cls, data: bytes) -> Any:  # noqa: N802 - protobuf's name
            raise AssertionError("a whole event was decoded")

    monkeypatch.setattr(pb, "LineageEvent", Refused)
    with pytest.raises(AssertionError, match="decoded"):
        read_lineage(tmp_path)  # the reader decodes every event
    assert read_status(tmp_path) == "stopped"
