"""get_summary_lineage and lineage_table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.runs import write_run
from trainledger import filter_summary_lineage as exported_filter
from trainledger import get_summary_lineage as exported_get
from trainledger.errors import (
    LineageParamSummaryPathError,
    LineageParamTypeError,
    LineageParamValueError,
)
from trainledger.lineage import SUMMARY_KEYS
from trainledger.query.lineage_api import LINEAGE_KEYS, filter_summary_lineage, get_summary_lineage
from trainledger.query.table import lineage_table


def test_public_names_are_exported() -> None:
    assert exported_get is get_summary_lineage and exported_filter is filter_summary_lineage


def test_get_summary_lineage_all_and_keys(golden_base: Path) -> None:
    run = golden_base / "momentum_lr01"
    full = get_summary_lineage(str(run))
    # MindSpore's run has no optimizer settings: MindInsight's keys, then ours, and no more
    assert list(full) == ["summary_dir", *SUMMARY_KEYS]
    assert set(LINEAGE_KEYS) - set(SUMMARY_KEYS) == {"optimizer_settings", "scheduler_settings"}
    assert full["summary_dir"] == str(run.resolve())
    assert full["hyper_parameters"]["optimizer"] == "Momentum"
    assert full["hyper_parameters"]["parallel_mode"] == "stand_alone"
    assert full["user_defined"] == {"team": "a", "trial": 1}
    only = get_summary_lineage(run, keys=["metric", "run"])
    assert list(only) == ["summary_dir", "metric", "run"]
    assert math.isclose(only["metric"]["Accuracy"], 0.9739583333333334)


def test_get_summary_lineage_lost_train_lineage(golden_base: Path) -> None:
    got = get_summary_lineage(str(golden_base / "adam_lr001"))
    assert got["hyper_parameters"] == {} and got["algorithm"] == {}
    assert got["valid_dataset"] == {"valid_dataset_size": 192}


def test_get_summary_lineage_empty_lineage_file_is_empty(tmp_path: Path) -> None:
    (tmp_path / "events.out.events.summary.1800000000.host_lineage").write_bytes(b"")
    assert get_summary_lineage(str(tmp_path)) == {}


@pytest.mark.parametrize(
    ("keys", "error", "match"),
    [
        ("metric", LineageParamTypeError, "Keys must be list"),
        ([1], LineageParamTypeError, "Element of keys must be str"),
        (["metric", "bogus"], LineageParamValueError, "Keys must be in"),
    ],
)
def test_get_summary_lineage_bad_keys(
    tmp_path: Path, keys: object, error: type, match: str
) -> None:
    with pytest.raises(error, match=match) as info:
        get_summary_lineage(str(tmp_path), keys=keys)  # type: ignore[arg-type]
    assert "hyper_parameters" in str(info.value)  # the allowed keys are named


@pytest.mark.parametrize("bad", ["", "x\x00", "a/../b"])
def test_get_summary_lineage_bad_path(bad: str) -> None:
    with pytest.raises(LineageParamSummaryPathError):
        get_summary_lineage(bad)


def test_get_summary_lineage_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(LineageParamSummaryPathError, match="does not exist"):
        get_summary_lineage(str(tmp_path / "nope"))


def test_lineage_table(tmp_path: Path) -> None:
    write_run(
        tmp_path, "a", mtime=100, metrics={"acc": 0.5}, user={"team": "x"}, learning_rate=0.25
    )
    write_run(tmp_path, "b", mtime=200, learning_rate=0.5)
    df = lineage_table(str(tmp_path), {"sorted_name": "learning_rate"})
    assert list(df["summary_dir"]) == ["./a", "./b"]
    assert list(df.columns[:2]) == ["summary_dir", "loss_function"]
    assert {"metric/acc", "user_defined/team", "tag", "remark"} <= set(df.columns)
    assert df["learning_rate"].tolist() == [0.25, 0.5]
    assert df["metric/acc"].iloc[0] == 0.5 and math.isnan(df["metric/acc"].iloc[1])


def test_filter_result_is_json_serializable(golden_base: Path) -> None:
    import json

    result = filter_summary_lineage(str(golden_base))
    assert json.loads(json.dumps(result)) == result
