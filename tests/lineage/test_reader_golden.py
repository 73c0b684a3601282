"""Reading real MindSpore 2.10 lineage files gives what MindInsight 2.3.1 reported for them."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from trainledger.lineage.reader import (
    lineage_files,
    merge_file_lineages,
    parse_lineage_file,
    read_lineage,
    read_record,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUNS = GOLDEN / "mindspore-runs"
RUN_NAMES = ["momentum_lr01", "adam_lr001", "sgd_noeval", "momentum_twice"]


def _expected() -> dict[str, dict]:
    answers = json.loads((GOLDEN / "mindinsight-expected.json").read_text())
    unfiltered = next(a for a in answers if a["condition"] is None)
    return {Path(o["summary_dir"]).name: o for o in unfiltered["result"]["object"]}


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _same(ours: object, theirs: object) -> bool:
    if isinstance(ours, float) and isinstance(theirs, float):
        return _f32(ours) == _f32(theirs)
    return ours == theirs


@pytest.mark.parametrize("name", RUN_NAMES)
def test_fixture_reads_as_mindinsight_reports(name: str) -> None:
    expected = _expected()[name]
    record = read_record(RUNS / name)
    assert record is not None
    fields = record.model_lineage_fields()
    for key, value in expected["model_lineage"].items():
        if key == "dataset_mark":  # depends on the other runs: the query engine's job
            continue
        assert _same(fields[key], value), (key, fields[key], value)
    assert record.dataset_graph == expected["dataset_graph"]
    assert fields["dataset_graph"] == expected["dataset_graph"]


def test_summary_lineage_shape() -> None:
    d = read_lineage(RUNS / "momentum_lr01")
    assert d["summary_dir"] == str((RUNS / "momentum_lr01").resolve())
    assert set(d) == {
        "summary_dir",
        "metric",
        "hyper_parameters",
        "algorithm",
        "train_dataset",
        "model",
        "valid_dataset",
        "dataset_graph",
        "user_defined",
        "run",
    }
    assert d["hyper_parameters"] == {
        "optimizer": "Momentum",
        "learning_rate": 0.1,
        "loss_function": "SoftmaxCrossEntropyWithLogits",
        "epoch": 2,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 16,
    }
    assert d["algorithm"] == {"network": "MLP", "loss": 0.08898517}
    assert d["train_dataset"] == {"train_dataset_size": 192}  # MindSpore wrote no path
    assert json.loads(d["model"]["path"]) == {
        "ckpt": "/tmp/msfix-dev/momentum_lr01/ckpt/mlp-2_8.ckpt"
    }
    assert d["model"]["size"] == 2307
    assert d["valid_dataset"] == {"valid_dataset_size": 192}
    assert d["metric"] == {"Accuracy": 0.9739583333333334, "Loss": 0.11112564460684855}
    assert d["user_defined"] == {"team": "a", "trial": 1}
    assert d["run"] == {}


def test_lost_train_lineage_reads_as_eval_only() -> None:
    """adam_lr001: MindSpore's eval writer truncated the train file; report exactly that."""
    d = read_lineage(RUNS / "adam_lr001")
    assert d["hyper_parameters"] == {} and d["algorithm"] == {} and d["model"] == {}
    assert d["train_dataset"] == {} and d["dataset_graph"] == {} and d["user_defined"] == {}
    assert d["metric"] == {"Accuracy": 0.703125, "Loss": 0.6384837130705515}
    assert d["valid_dataset"] == {"valid_dataset_size": 192}


def test_no_lineage_reads_as_empty(tmp_path: Path) -> None:
    assert read_lineage(tmp_path / "missing") == {}
    assert read_lineage(tmp_path) == {}
    (tmp_path / "events.out.events.summary.1.0.h_lineage").write_bytes(b"")
    assert read_lineage(tmp_path) == {}
    assert read_record(tmp_path) is None


def test_files_listing_and_incremental_merge(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUNS / "momentum_lr01", run)
    files = lineage_files(run)
    assert [f.timestamp for f in files] == [1795284213, 1795284214]
    assert all(f.size > 0 and f.mtime > 0 for f in files)
    parsed = [parse_lineage_file(f.path) for f in files]
    merged = merge_file_lineages(run, files, parsed)
    assert merged is not None
    assert merged.to_summary_lineage() == read_lineage(run)
    assert merged.update_time == files[-1].mtime
    assert merged.loss == pytest.approx(0.08898517)
    assert merged.learning_rate == 0.1
    assert merged.model_size == 2307
    assert merged.train_dataset_count == 192 and merged.test_dataset_count == 192


def test_keys_subset() -> None:
    record = read_record(RUNS / "sgd_noeval")
    assert record is not None
    assert record.to_summary_lineage(["hyper_parameters"]) == {
        "summary_dir": record.summary_dir,
        "hyper_parameters": record.hyper_parameters,
    }
