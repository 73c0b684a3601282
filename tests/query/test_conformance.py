"""The lineage API as MindInsight documents it, where MindInsight 2.3.1 itself differed.

Reference answers: tests/golden/conformance/mindinsight.json, made by MindInsight 2.3.1 with
record_mindinsight.py next to it (its error texts, and what 2.3.1 answered).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainledger.errors import (
    LineageFileNotFoundError,
    LineageParamSummaryPathError,
    LineageSearchConditionParamError,
)
from trainledger.query.lineage_api import filter_summary_lineage, get_summary_lineage

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "mindinsight.json"
MI = json.loads(GOLDEN.read_text())


def _shape(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "count": result["count"],
        "summary_dirs": sorted(o["summary_dir"] for o in result["object"]),
        "parts": sorted({k for o in result["object"] for k in o if k != "summary_dir"}),
    }


@pytest.mark.parametrize("kind", ["model", "dataset"])
def test_lineage_type_plain_string_is_eq(golden_base: Path, kind: str) -> None:
    plain = filter_summary_lineage(str(golden_base), {"lineage_type": kind})
    # MindInsight 2.3.1 rejected the documented plain string; its {"eq": ...} answer is the
    # one the documentation describes
    assert MI["answers"][f"lineage_type_plain_{kind}"]["error"] == (
        "LineageSearchConditionParamError"
    )
    assert _shape(plain) == MI["answers"][f"lineage_type_eq_{kind}"]
    assert plain == filter_summary_lineage(str(golden_base), {"lineage_type": {"eq": kind}})


def test_lineage_type_other_string_still_rejected(golden_base: Path) -> None:
    with pytest.raises(LineageSearchConditionParamError, match="should be 'dataset' or 'model'"):
        filter_summary_lineage(str(golden_base), {"lineage_type": "models"})


@pytest.mark.parametrize("case", ["summary_dir_two_ops", "lineage_type_two_ops"])
def test_more_than_one_operation(golden_base: Path, case: str) -> None:
    cond = MI["conditions"][case]
    field = next(iter(cond))
    with pytest.raises(LineageSearchConditionParamError) as info:
        filter_summary_lineage(str(golden_base), cond)
    expected = MI["messages"]["more_than_one_operation"].replace("summary_dir", field)
    assert str(info.value).startswith(expected + " ")  # MindInsight's sentence, then ours
    assert "eq, in" in str(info.value)


def test_get_summary_lineage_without_lineage_file(tmp_path: Path) -> None:
    (tmp_path / "events.out.tfevents.1.host").write_bytes(b"")  # summaries, no lineage
    with pytest.raises(LineageFileNotFoundError) as info:
        get_summary_lineage(str(tmp_path))
    assert str(info.value).startswith(MI["messages"]["no_run_lineage"] + " ")
    assert isinstance(info.value, FileNotFoundError)


def test_filter_over_base_without_summary_files(tmp_path: Path) -> None:
    (tmp_path / "run1").mkdir()  # a directory, but no lineage anywhere
    with pytest.raises(LineageFileNotFoundError) as info:
        filter_summary_lineage(str(tmp_path))
    assert str(info.value).startswith(MI["messages"]["no_base_lineage"] + " ")
    # a condition that matches nothing is still an answer, not this error
    assert MI["empty_base"]["count"] == 0  # what 2.3.1 answered instead (undocumented)


def test_filter_with_empty_lineage_file_is_an_empty_answer(tmp_path: Path) -> None:
    run = tmp_path / "run1"
    run.mkdir()
    (run / "events.out.events.summary.1800000000.host_lineage").write_bytes(b"")
    assert filter_summary_lineage(str(tmp_path))["count"] == 0


def test_no_match_is_not_an_error(golden_base: Path) -> None:
    got = filter_summary_lineage(str(golden_base), {"batch_size": {"gt": 10**6}})
    assert got["count"] == 0 and got["object"] == []


@pytest.mark.parametrize("bad", ["", 3, ["/a", "/b"], None])
@pytest.mark.parametrize("api", [get_summary_lineage, filter_summary_lineage])
def test_invalid_path_message(api: Any, bad: Any) -> None:
    with pytest.raises(LineageParamSummaryPathError) as info:
        api(bad)
    assert "The summary path is invalid. The summary" in str(info.value)
    assert repr(bad) in str(info.value)  # our detail follows MindInsight's sentence


@pytest.mark.parametrize("api", [get_summary_lineage, filter_summary_lineage])
def test_missing_or_file_path_message(api: Any, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for path, detail in ((tmp_path / "nope", "does not exist"), (afile, "is not a directory")):
        with pytest.raises(LineageParamSummaryPathError) as info:
            api(str(path))
        text = str(info.value)
        sentence = "The summary path does not exist or is not a dir. "
        assert sentence + "The summary" in text
        assert detail in text.split(sentence, 1)[1]  # our detail after MindInsight's sentence
