"""A mistaken field name answered in Python as the CLI answers it: the unknown field and the
nearest known names on MindInsight's own error (its text kept, the oracle compares it), a
warning for a field no run has, and ``--where`` values that are not numbers named as such."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from trainledger.errors import LineageSearchConditionParamError, UnknownFieldWarning
from trainledger.query import filter_summary_lineage, parse_where
from trainledger.query.field_hints import nearest_fields

MINDINSIGHT = "Search_condition param error: ValueError. The search attribute not supported."


def test_an_unknown_field_keeps_mindinsights_text_and_names_the_field(golden_base: Path) -> None:
    with pytest.raises(LineageSearchConditionParamError) as caught:
        filter_summary_lineage(str(golden_base), {"optimzer": {"eq": "Adam"}})
    assert str(caught.value) == MINDINSIGHT  # what MindInsight answered, word for word
    assert caught.value.field == "optimzer"
    assert caught.value.__notes__ == [
        "the field 'optimzer' is not one a condition takes; did you mean 'optimizer'? "
        "(or metric/<name>, user_defined/<name>, <stat>(<tag>), parent/run, parent/step, "
        "parent/checkpoint, parent/match, parent/count, run/train_dataset_fingerprint)"
    ]


def test_a_field_no_run_has_warns_with_the_nearest(golden_base: Path) -> None:
    """The golden runs record ``metric/Accuracy``: a condition or sort on ``metric/accuracy``
    is valid and answers nothing, so it is said."""
    base = str(golden_base)
    with pytest.warns(
        UnknownFieldWarning, match="'metric/accuracy'.*did you mean 'metric/Accuracy'"
    ):
        assert filter_summary_lineage(base, {"metric/accuracy": {"gt": 0.1}})["count"] == 0
    with pytest.warns(UnknownFieldWarning, match="'user_defined/tem'.*'user_defined/team'"):
        filter_summary_lineage(base, {"sorted_name": "user_defined/tem"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a field some run has: no warning
        assert filter_summary_lineage(base, {"metric/Accuracy": {"gt": 0.1}})["count"] == 3


def test_where_says_a_word_is_not_a_number() -> None:
    for text in ("lr > abc", "metric/Accuracy >= abc", "epoch in [1, abc]", "max(loss) < abc"):
        with pytest.raises(LineageSearchConditionParamError, match="'abc', which is not a number"):
            parse_where([text])
    assert parse_where(["optimizer = abc"]) == {"optimizer": {"eq": "abc"}}


def test_a_misspelt_sort_is_offered_the_base_fields_not_itself() -> None:
    known = ["metric/accuracy", "user_defined/team"]
    with pytest.raises(LineageSearchConditionParamError) as caught:
        parse_where([], sort="-acuracy", known=lambda: known)
    assert "did you mean 'metric/accuracy'?" in str(caught.value)
    assert "acuracy'" not in str(caught.value).replace("sort field 'acuracy'", "")
    assert caught.value.field == "acuracy"


def test_nearest_fields() -> None:
    assert nearest_fields("metric/accuracy", ["metric/Accuracy", "metric/Loss"]) == [
        "metric/Accuracy"
    ]
    assert nearest_fields("acuracy", ["metric/accuracy", "loss"]) == ["metric/accuracy"]
    assert nearest_fields("x", ["x"]) == []  # never the name itself
