"""Issue 16 item 8: malformed lineage content never hides a run; what is valid is read, the rest
is reported (``LineageRecord.warnings``, ``run["lineage_warnings"]``, a log warning)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainledger.cli.main import cli
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.lineage.reader import read_lineage, read_record
from trainledger.lineage.records import (
    EvalValues,
    RunValues,
    TrainValues,
    eval_event,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.lineage.writer import LineageWriter
from trainledger.query import filter_summary_lineage, get_summary_lineage
from trainledger.storage import frame


def _with_bytes(event: pb.LineageEvent, old: bytes, new: bytes) -> pb.LineageEvent:
    """``event`` with the bytes ``old`` of its encoding replaced (e.g. by invalid UTF-8)."""
    raw = event.SerializeToString()
    assert old in raw and len(old) == len(new)
    damaged = pb.LineageEvent()
    damaged.ParseFromString(raw.replace(old, new))
    return damaged


def _deep_metric(depth: int) -> pb.LineageEvent:
    event = eval_event(EvalValues(metrics={"acc": 0.5}, valid_dataset_path="/v"))
    event.evaluation_lineage.metric = '{"acc": 0.75, "deep": ' + "[" * depth + "]" * depth + "}"
    return event


def _write(run: Path, *events: pb.LineageEvent) -> Path:
    LineageWriter(run).write(
        [train_event(TrainValues(optimizer="Adam", learning_rate=0.1)), *events]
    )
    return run


def test_invalid_utf8_user_defined_key_loses_only_that_item(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = _with_bytes(user_defined_event({"AAAA": 1, "good": 2}), b"AAAA", b"\xff\xfeAA")
    run = _write(tmp_path / "r", bad)
    with caplog.at_level(logging.WARNING, logger="trainledger.lineage.reader"):
        lineage = read_lineage(run)
    assert lineage["user_defined"] == {"good": 2}
    assert lineage["hyper_parameters"]["optimizer"] == "Adam"
    [warning] = lineage["run"]["lineage_warnings"]
    assert "user_defined item 0" in warning
    assert "user_defined item 0" in caplog.text


def test_invalid_utf8_in_a_train_field_loses_only_that_field(tmp_path: Path) -> None:
    event = train_event(TrainValues(optimizer="QQQQ", learning_rate=0.1, batch_size=8))
    run = _write(tmp_path / "r", _with_bytes(event, b"QQQQ", b"Q\xc3(Q"))
    lineage = read_lineage(run)
    assert "optimizer" not in lineage["hyper_parameters"]
    assert lineage["hyper_parameters"]["batch_size"] == 8
    assert any("optimizer" in w for w in lineage["run"]["lineage_warnings"])


def test_deeply_nested_metric_keeps_the_rest(tmp_path: Path) -> None:
    run = _write(tmp_path / "r", _deep_metric(100_000))
    lineage = read_lineage(run)
    assert lineage["metric"] == {}  # not parseable as a whole: nothing of it is trusted
    assert lineage["valid_dataset"] == {"valid_dataset_path": "/v"}
    assert any("metric" in w for w in lineage["run"]["lineage_warnings"])
    json.dumps(lineage)  # and nothing deep reaches the consumers


def test_metric_keys_nested_too_deep_are_left_out(tmp_path: Path) -> None:
    from trainledger.lineage.reader import MAX_JSON_DEPTH

    run = _write(tmp_path / "r", _deep_metric(MAX_JSON_DEPTH + 5))
    record = read_record(run)
    assert record is not None and record.metric == {"acc": 0.75}
    assert record.warnings and "deep" in record.warnings[0]
    shallow = _write(tmp_path / "s", _deep_metric(MAX_JSON_DEPTH - 2))
    assert set(read_lineage(shallow)["metric"]) == {"acc", "deep"}
    assert "lineage_warnings" not in read_lineage(shallow)["run"]


def test_damaged_run_stays_visible_in_queries_and_show(tmp_path: Path) -> None:
    base = tmp_path / "base"
    _write(base / "ok")
    bad_key = _with_bytes(user_defined_event({"AAAA": 1}), b"AAAA", b"\xff\xfeAA")
    _write(base / "bad", bad_key, _deep_metric(50_000), run_event(RunValues(status="finished")))
    found = filter_summary_lineage(str(base))
    dirs = sorted(Path(o["summary_dir"]).name for o in found["object"])
    assert dirs == ["bad", "ok"] and found["count"] == 2
    info = get_summary_lineage(str(base / "bad"))
    assert info["run"]["status"] == "finished" and len(info["run"]["lineage_warnings"]) == 2
    result = CliRunner().invoke(cli, ["show", "--json", str(base / "bad")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hyper_parameters"]["optimizer"] == "Adam"


_STRINGS = [b"Adam", b"CrossEntropy", b"/data/train", b"team", b"finished", b"python"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hits=st.lists(
        st.tuples(st.sampled_from(_STRINGS), st.integers(0, 3), st.sampled_from([0x80, 0xFF])),
        max_size=4,
    ),
    depth=st.one_of(st.none(), st.integers(1, 3000)),
    flips=st.lists(st.tuples(st.integers(0), st.integers(1, 255)), max_size=3),
)
def test_damaged_records_never_raise_nor_hide_the_run(
    tmp_path_factory: pytest.TempPathFactory,
    hits: list[tuple[bytes, int, int]],
    depth: int | None,
    flips: list[tuple[int, int]],
) -> None:
    """Invalid UTF-8 in any string, metric JSON of any depth, flipped bytes (re-framed, so the
    parser sees them): reading never raises, and the run's intact run event keeps it visible."""
    events = [
        train_event(
            TrainValues(
                optimizer="Adam",
                loss_function="CrossEntropy",
                train_dataset_path="/data/train",
                learning_rate=0.1,
            )
        ),
        user_defined_event({"team": "a", "n": 3}),
        _deep_metric(depth) if depth else eval_event(EvalValues(metrics={"acc": 1.0})),
    ]
    payloads = [e.SerializeToString() for e in events]
    for needle, which, byte in hits:
        for i, raw in enumerate(payloads):
            at = raw.find(needle)
            if at >= 0:
                damaged = bytearray(raw)
                damaged[at + which % len(needle)] = byte
                payloads[i] = bytes(damaged)
    for pos, mask in flips:
        i = pos % len(payloads)
        damaged = bytearray(payloads[i])
        damaged[(pos // 3) % len(damaged)] ^= mask
        payloads[i] = bytes(damaged)
    run = tmp_path_factory.mktemp("run")
    path = LineageWriter(run).write([run_event(RunValues(status="finished"))])
    with open(path, "ab") as fh:  # framed as they are: the reader's parser sees the damage
        fh.write(b"".join(frame(raw) for raw in payloads))
    lineage = read_lineage(run)
    assert lineage["run"]["status"] == "finished"
    assert all(isinstance(w, str) for w in lineage["run"].get("lineage_warnings", []))
    json.dumps(lineage)
