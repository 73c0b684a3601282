"""What a training is known to be given at its begin (our ``train_begin`` event, field 101):
a running run is read with its hyperparameters, network and train dataset, and MindInsight
2.3.1 still reads one train lineage per run, the final one (its answers over the runs of
tests/golden/train-begin, recorded by that folder's ``record_mindinsight.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.lineage.mindinsight_schema import mindinsight_pb2
from trainledger.lineage import (
    TrainValues,
    lineage_pb2,
    read_lineage,
    read_run,
    redact_event,
    train_begin_event,
)
from trainledger.lineage.redaction import Redaction
from trainledger.query import filter_summary_lineage
from trainledger.storage import list_lineage_files, read_records

FIXTURE = Path(__file__).resolve().parents[1] / "golden" / "train-begin"
ANSWERS = json.loads((FIXTURE / "mindinsight.json").read_text())
KINDS = ("train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE / "runs", tmp_path / "runs")
    return tmp_path / "runs"


@pytest.mark.parametrize("name", ["finished", "running"])
def test_mindinsight_sees_one_final_train_lineage_at_most(name: str, tmp_path: Path) -> None:
    mi = mindinsight_pb2(tmp_path / "mi")
    (item,) = list_lineage_files(FIXTURE / "runs" / name)
    payloads, corrupt = read_records(item.path)
    counts = dict.fromkeys(KINDS, 0)
    begins = 0
    for payload in payloads:
        theirs, ours = mi.LineageEvent(), lineage_pb2.LineageEvent()
        theirs.ParseFromString(payload)
        ours.ParseFromString(payload)
        for kind in KINDS:
            counts[kind] += theirs.HasField(kind)
        begins += ours.WhichOneof("what") == "train_begin"
    assert corrupt == 0 and begins == 1
    assert counts == ANSWERS[name]["events"]  # what MindInsight's own analyzer counted
    assert counts["train_lineage"] == (name == "finished")


def test_a_finished_run_reads_as_mindinsight_reads_it(base: Path) -> None:
    theirs = ANSWERS["filter_summary_lineage"]["./finished"]
    ours = {o["summary_dir"]: o for o in filter_summary_lineage(str(base))["object"]}
    mine = ours["./finished"]["model_lineage"]
    assert {k: mine[k] for k in theirs if k != "dataset_mark"} == {
        k: v for k, v in theirs.items() if k != "dataset_mark"
    }
    assert read_lineage(base / "finished")["run"]["status"] == "finished"


def test_a_running_run_has_what_was_known_at_train_begin(base: Path) -> None:
    theirs = ANSWERS["filter_summary_lineage"]["./running"]
    assert theirs["optimizer"] is None and theirs["batch_size"] is None  # MindInsight: none
    ours = {o["summary_dir"]: o for o in filter_summary_lineage(str(base))["object"]}
    mine = ours["./running"]["model_lineage"]
    known = ("optimizer", "learning_rate", "batch_size", "epoch", "network", "loss_function")
    assert {k: mine[k] for k in known} == {
        "optimizer": "SGD",
        "learning_rate": 0.05,
        "batch_size": 8,
        "epoch": 2,
        "network": "Sequential",
        "loss_function": "CrossEntropyLoss",
    }
    assert mine["train_dataset_count"] == 40 and mine["device_num"] == 1
    assert mine["loss"] is None and mine["model_size"] is None  # known only at the end
    assert mine["optimizer_settings"]["momentum"] == 0.9
    assert mine["user_defined"] == theirs["user_defined"]
    lineage = read_lineage(base / "running")
    assert lineage["run"]["status"] == "running" and lineage["model"] == {}
    # the skim (run events only) finds the same run record; the reader adds the fingerprint
    # of the train dataset, which the train_begin event holds
    assert lineage["run"].pop("train_dataset_fingerprint").startswith("tensors:")
    assert read_run(base / "running") == lineage["run"]


def test_the_train_begin_event_is_redacted_as_the_train_lineage() -> None:
    event = train_begin_event(TrainValues(optimizer="SGD", train_dataset_path="/home/me/data"))
    redacted = redact_event(event, Redaction.parse("paths"))
    assert redacted.WhichOneof("what") == "train_begin"
    path = redacted.train_begin.train_dataset.train_dataset_path
    assert path != "/home/me/data" and "/home/me" not in path
    assert redacted.train_begin.hyper_parameters.optimizer == "SGD"
