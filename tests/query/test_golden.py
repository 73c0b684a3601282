"""Our answers equal MindInsight 2.3.1's on the fixture runs (tests/golden/README.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import trainledger.errors as errors
from tests.conftest import GOLDEN
from trainledger.query.lineage_api import filter_summary_lineage

EXPECTED = json.loads((GOLDEN / "mindinsight-expected.json").read_text())
CONDITIONS = json.loads((GOLDEN / "mindinsight-conditions.json").read_text())


def _close(a: Any, b: Any, marks: dict[str, str]) -> bool:
    """Equal, floats to float32 precision; dataset marks compared as a consistent renaming."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        for key in a:
            if key == "dataset_mark" and a[key] is not None:
                if marks.setdefault(b[key], a[key]) != a[key]:
                    return False
            elif not _close(a[key], b[key], marks):
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, marks) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and math.isclose(a, b, rel_tol=1e-6)
        )
    return a == b


def test_conditions_file_and_expected_agree() -> None:
    assert [e["condition"] for e in EXPECTED] == CONDITIONS


@pytest.mark.parametrize("case", EXPECTED, ids=[json.dumps(e["condition"]) for e in EXPECTED])
def test_fixture_answer(golden_base: Path, case: dict[str, Any]) -> None:
    marks: dict[str, str] = {}
    if "error" in case:
        with pytest.raises(getattr(errors, case["error"])) as info:
            filter_summary_lineage(str(golden_base), case["condition"])
        assert type(info.value).__name__ == case["error"]
        assert str(info.value) == case["message"]
        return
    ours = filter_summary_lineage(str(golden_base), case["condition"])
    theirs = case["result"]
    assert ours["count"] == theirs["count"]
    assert ours["customized"] == theirs["customized"]
    assert _close(ours["object"], theirs["object"], marks), (ours["object"], theirs["object"])


def test_dataset_marks_distinct_per_graph(golden_base: Path) -> None:
    objs = filter_summary_lineage(str(golden_base))["object"]
    marks = {o["summary_dir"]: o["model_lineage"]["dataset_mark"] for o in objs}
    graphs = {o["summary_dir"]: json.dumps(o["dataset_graph"], sort_keys=True) for o in objs}
    for a in marks:
        for b in marks:
            assert (marks[a] == marks[b]) == (graphs[a] == graphs[b])
    # numbered from 1 in order of first appearance (oldest first): momentum_lr01 is oldest
    assert marks["./momentum_lr01"] == "1"


def test_adam_lr001_train_lineage_lost(golden_base: Path) -> None:
    """MindSpore truncated adam_lr001's train lineage: only evaluation facts remain."""
    res = filter_summary_lineage(str(golden_base), {"summary_dir": {"eq": "./adam_lr001"}})
    (obj,) = res["object"]
    ml = obj["model_lineage"]
    assert ml["optimizer"] is None and ml["learning_rate"] is None and ml["loss"] is None
    assert ml["test_dataset_count"] == 192
    assert ml["metric"] == {"Accuracy": 0.703125, "Loss": 0.6384837130705515}
    assert ml["user_defined"] == {}
    assert obj["dataset_graph"] == {}
