"""Pure helpers: ANDing conditions, flattening lineage objects, CSV."""

from __future__ import annotations

import pytest

from trainledger.query import flatten_object
from trainledger.server.columns import column_group, to_csv
from trainledger.server.condition_merge import merge_conditions


@pytest.mark.parametrize(
    "parts, merged",
    [
        ([None, {}], {}),
        ([{"a": {"ge": 1}}, {"a": {"ge": 3, "le": 9}}], {"a": {"ge": 3, "le": 9}}),
        ([{"a": {"le": 5}}, {"a": {"lt": 4, "le": 7}}], {"a": {"le": 5, "lt": 4}}),
        ([{"o": {"in": ["A", "B"]}}, {"o": {"in": ["B", "C"]}}], {"o": {"in": ["B"]}}),
        ([{"o": {"not_in": ["A"]}}, {"o": {"not_in": ["B", "A"]}}], {"o": {"not_in": ["A", "B"]}}),
        ([{"o": {"eq": "A"}}, {"o": {"eq": "A"}}], {"o": {"eq": "A"}}),
        (
            [{"a": {"ge": 1}, "limit": 5}, {"b": {"eq": 2}, "limit": 10, "sorted_name": "b"}],
            {"a": {"ge": 1}, "b": {"eq": 2}, "limit": 10, "sorted_name": "b"},
        ),
        ([{"a": {"ge": 1}}, {"a": "junk"}], {"a": "junk"}),  # left for the engine to reject
        # summary_dir/lineage_type take one operation: the selection AND the filter box fold
        # into one list
        (
            [{"summary_dir": {"not_in": ["./b"]}}, {"summary_dir": {"in": ["./a", "./b"]}}],
            {"summary_dir": {"in": ["./a"]}},
        ),
        (
            [{"summary_dir": {"eq": "./a"}}, {"summary_dir": {"in": ["./a", "./b"]}}],
            {"summary_dir": {"in": ["./a"]}},
        ),
        (
            [{"summary_dir": {"eq": "./c"}}, {"summary_dir": {"not_in": ["./c"]}}],
            {"summary_dir": {"in": []}},
        ),
        (
            [{"lineage_type": {"eq": "model"}}, {"lineage_type": {"eq": "model"}}],
            {"lineage_type": {"eq": "model"}},
        ),  # fmt: skip
    ],
)
def test_merge_conditions(parts, merged) -> None:  # type: ignore[no-untyped-def]
    assert merge_conditions(*parts) == merged


@pytest.mark.parametrize(
    "a, b", [({"o": {"eq": "A"}}, {"o": {"eq": "B"}}), ({"x": {"ge": 1}}, {"x": {"ge": "s"}})]
)
def test_contradictions_raise(a, b) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="cannot combine"):
        merge_conditions(a, b)


def test_flatten_and_groups() -> None:
    obj = {
        "summary_dir": "./r1",
        "run_id": "r1",
        "model_lineage": {
            "learning_rate": 0.1,
            "metric": {"acc": 0.9},
            "user_defined": {"team": "a"},
            "optimizer": "Adam",
        },
        "added_info": {"tag": 2},
    }
    row = flatten_object(obj, scalar_cells=True)
    assert row == {
        "run_id": "r1",
        "summary_dir": "./r1",
        "learning_rate": 0.1,
        "metric/acc": 0.9,
        "user_defined/team": "a",
        "optimizer": "Adam",
        "tag": 2,
        "remark": "",
    }
    # the library's row (lineage_table, the CLI): no run id, missing annotations are None
    assert flatten_object(obj) == {
        **{k: v for k, v in row.items() if k != "run_id"},
        "tag": 2,
        "remark": None,
    }
    listed = {"summary_dir": "./r2", "model_lineage": {"metric": {"curve": [1, 2]}, "x": [3]}}
    assert flatten_object(listed) == {
        "summary_dir": "./r2",
        "metric/curve": [1, 2],
        "x": [3],
        "tag": None,
        "remark": None,
    }
    assert flatten_object(listed, scalar_cells=True) == {
        "run_id": "r2",
        "summary_dir": "./r2",
        "tag": 0,
        "remark": "",
    }
    assert [
        column_group(c)
        for c in ("metric/acc", "loss", "user_defined/team", "batch_size", "optimizer")
    ] == ["Metrics", "Metrics", "User defined", "Hyperparameters", "Other"]


def test_csv_is_exact_and_safe() -> None:
    text = to_csv(
        [{"a": 0.1 + 0.2, "b": None, "c": "=1+1", "d": "-x", "e": 3}], ["a", "b", "c", "d", "e"]
    )
    assert text == "a,b,c,d,e\n0.30000000000000004,,'=1+1,'-x,3\n"
