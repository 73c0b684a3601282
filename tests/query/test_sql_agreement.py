"""SQL and Python evaluate the same semantics: hypothesis-generated corpora and conditions,
on each index backend (``index_url``: SQLite, then a real PostgreSQL server)."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainledger.errors import LineageSearchConditionParamError
from trainledger.query import page_read
from trainledger.query.conditions import validate_condition
from trainledger.query.fields import RUN_FIELDS
from trainledger.query.index import LineageIndex
from trainledger.query.schema import POSTGRES
from trainledger.query.semantics import evaluate
from trainledger.query.sql import compile_range

NUMS = st.sampled_from([0, 1, 2, 16, 0.05, 0.1, 0.5, 1.0, -3, 2.5])
STRS = st.sampled_from(["Adam", "SGD", "a", "b", "", "Z", "é"])
SCALAR = st.one_of(NUMS, STRS)
MAYBE_NUM = st.one_of(st.none(), NUMS)
MAYBE_INT = st.one_of(st.none(), st.sampled_from([0, 1, 2, 16, 32]))
MAYBE_STR = st.one_of(st.none(), STRS)
GRAPHS = st.sampled_from(
    [{}, {"op_type": "A"}, {"op_type": "B", "batch_size": 2}, {"op_type": "A", "children": []}]
)
INT_FIELDS = [
    "train_dataset_count",
    "test_dataset_count",
    "epoch",
    "batch_size",
    "device_num",
    "model_size",
]
STR_FIELDS = ["loss_function", "train_dataset_path", "test_dataset_path", "network", "optimizer"]
STATUSES = st.sampled_from(["running", "finished", "failed", "stopped", "Finished", ""])
#: tags of series statistics: with a slash, a colon, a space and parentheses of their own
SERIES_TAGS = ["loss", "eval/acc", "a:b (c)"]
SERIES_STATS = st.fixed_dictionaries(
    {
        "last": MAYBE_NUM,
        "min": MAYBE_NUM,
        "max": MAYBE_NUM,
        "count": st.sampled_from([1, 2, 16]),
        "last_step": st.sampled_from([0, 1, 2, 16]),
        "min_step": MAYBE_INT,
        "max_step": MAYBE_INT,
        "nonfinite_step": MAYBE_INT,
    }
)
SERIES_FIELDS = [
    f"{stat}({tag})"
    for stat in ("last", "min", "max", "count", "max_step", "nonfinite_step")
    for tag in SERIES_TAGS
]


@st.composite
def record(draw: Any, i: int) -> dict[str, Any]:
    r: dict[str, Any] = {
        "summary_dir": f"./r{i}",
        "update_time": float(draw(st.sampled_from([1, 2, 3]))),
    }
    for f in INT_FIELDS:
        r[f] = draw(MAYBE_INT)
    for f in STR_FIELDS:
        r[f] = draw(MAYBE_STR)
    r["learning_rate"] = draw(MAYBE_NUM)
    r["loss"] = draw(MAYBE_NUM)
    r["metric"] = draw(st.dictionaries(st.sampled_from(["acc", "f1"]), NUMS, max_size=2))
    r["user_defined"] = draw(
        st.dictionaries(st.sampled_from(["team", "trial"]), SCALAR, max_size=2)
    )
    # the optimizer and scheduler as configured: numbers and words ("true"), absent for some
    optimizer = draw(st.dictionaries(st.sampled_from(["momentum", "betas.0", "nesterov"]), SCALAR))
    if optimizer:
        r["optimizer_settings"] = optimizer
    scheduler = draw(st.dictionaries(st.sampled_from(["type", "T_max"]), SCALAR, max_size=2))
    if scheduler:
        r["scheduler_settings"] = scheduler
    r["dataset_graph"] = draw(GRAPHS)
    r["status"] = draw(st.one_of(st.none(), STATUSES))
    r["duration"] = draw(MAYBE_NUM)
    r["sessions"] = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3])))
    r["series"] = draw(st.dictionaries(st.sampled_from(SERIES_TAGS), SERIES_STATS, max_size=2))
    return r


@st.composite
def corpus(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 8))
    return [draw(record(i)) for i in range(n)]


FIELD = st.sampled_from(
    INT_FIELDS
    + STR_FIELDS
    + [
        "learning_rate",
        "loss",
        "metric/acc",
        "metric/f1",
        "user_defined/team",
        "user_defined/trial",
        "optimizer/momentum",
        "optimizer/betas.0",
        "optimizer/nesterov",
        "scheduler/type",
        "scheduler/T_max",
        "summary_dir",
        "dataset_mark",
        "status",
        "duration",
        "sessions",
        *SERIES_FIELDS,
    ]
)


def _value_for(field: str) -> st.SearchStrategy[Any]:
    if field in INT_FIELDS:
        return st.sampled_from([0, 1, 2, 16, 32])
    if field in STR_FIELDS or field == "summary_dir":
        return STRS if field != "summary_dir" else st.sampled_from(["./r0", "./r1", "r2"])
    if field == "dataset_mark":
        return st.sampled_from(["1", "2", "3"])
    if field == "status":
        return st.one_of(STATUSES, NUMS)  # a number: refused by validation, as on str fields
    if field.startswith(("user_defined/", "optimizer/", "scheduler/")):
        return SCALAR
    if field == "sessions":
        return st.sampled_from([0, 1, 2, 3])
    return NUMS


@st.composite
def filters(draw: Any, depth: int = 0) -> dict[str, Any]:
    """Field conditions, and (two levels at most) ``or``/``and``/``not`` conditions."""
    cond = draw(field_filters(1 if depth else 0))  # (an empty nested condition is refused)
    if depth < 2:
        for key in draw(st.lists(st.sampled_from(["or", "and", "not"]), max_size=2, unique=True)):
            if key == "not":
                cond[key] = draw(filters(depth + 1))
            else:
                cond[key] = draw(st.lists(filters(depth + 1), min_size=1, max_size=3))
    return cond


@st.composite
def condition(draw: Any) -> dict[str, Any]:
    cond = draw(filters())
    if draw(st.booleans()):
        cond["sorted_name"] = draw(st.one_of(FIELD, st.just("tag")))
        cond["sorted_type"] = draw(st.sampled_from(["ascending", "descending", None]))
    if draw(st.booleans()):
        cond["limit"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        cond["offset"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        cond["lineage_type"] = draw(st.sampled_from([{"eq": "model"}, {"in": ["dataset"]}]))
    return cond


@st.composite
def field_filters(draw: Any, min_size: int = 0) -> dict[str, Any]:
    cond: dict[str, Any] = {}
    for field in draw(st.lists(FIELD, min_size=min_size, max_size=3, unique=True)):
        ops: dict[str, Any] = {}
        for op in draw(
            st.lists(
                st.sampled_from(["eq", "lt", "gt", "le", "ge", "in", "not_in"]),
                min_size=1,
                max_size=2,
                unique=True,
            )
        ):
            value = _value_for(field)
            if op in ("in", "not_in"):
                ops[op] = draw(st.lists(st.one_of(value, st.none()), max_size=3))
            else:
                ops[op] = draw(value)
        cond[field] = ops
    return cond


def with_series(stored: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[Any]:
    """The index's records with the series statistics they were added with (``records()``
    leaves them out; queries read them from their own table)."""
    series = {r["summary_dir"]: r.get("series") for r in records}
    return [{**r, "series": series.get(r["summary_dir"])} for r in stored]


def assert_agreement(index: LineageIndex, conds: list[dict[str, Any]]) -> None:
    """Each condition's SQL answer equals the plain-Python semantics over the same records."""
    stored = index.records()
    for cond in conds:
        valid = index._resolve_all(validate_condition(cond))
        assert index.query(cond, refresh=False) == evaluate(stored, valid), cond


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # index_url: one database, a fresh base each time
    ],
)
@given(
    records=corpus(),
    conds=st.lists(condition(), min_size=1, max_size=6),
    tags=st.dictionaries(st.integers(0, 7), st.integers(0, 10), max_size=3),
)
def test_sql_agrees_with_python(
    index_url: str | None,
    records: list[dict[str, Any]],
    conds: list[dict[str, Any]],
    tags: dict[int, int],
) -> None:
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(records)
        for i, tag in tags.items():
            index.set_annotation(f"./r{i}", tag=tag)
        stored = index.records()
        by_dir = {r["summary_dir"]: [r.get(f) for f in RUN_FIELDS] for r in records}
        assert {r["summary_dir"]: [r[f] for f in RUN_FIELDS] for r in stored} == by_dir
        stored = with_series(stored, records)
        checked = 0
        for raw in conds:
            try:
                cond = index._resolve_all(validate_condition(raw))
            except LineageSearchConditionParamError:
                continue  # invalid combination (e.g. lt on a string field): both refuse it
            assert index.query(raw, refresh=False) == evaluate(stored, cond), raw
            checked += 1


def test_agreement_on_a_fixed_corpus_with_every_operator(index_url: str | None) -> None:
    recs = [
        {
            "summary_dir": f"./r{i}",
            "update_time": float(i % 3),
            "batch_size": b,
            "optimizer": o,
            "learning_rate": lr,
            "metric": m,
            "user_defined": u,
            "dataset_graph": {"g": i % 2},
            "status": (None, "finished", "failed", "running")[i],
        }
        for i, (b, o, lr, m, u) in enumerate(
            [
                (16, "Adam", 0.1, {"acc": 0.9}, {"t": "x"}),
                (32, "SGD", None, {"acc": 0.5}, {"t": 1}),
                (None, None, 0.05, {}, {"t": 2.5}),
                (16, "Adam", 0.1, {"acc": "n/a"}, {}),
            ]
        )
    ]
    conds = [
        {f: {op: v}}
        for f, vals in {
            "batch_size": [16, [16, None]],
            "learning_rate": [0.1, [0.05]],
            "metric/acc": [0.5, [0.9]],
            "user_defined/t": [1, "x", [1, "x", None]],
            "status": ["finished", ["failed", "running"], ["finished", None]],
        }.items()
        for v in vals
        for op in (["in", "not_in"] if isinstance(v, list) else ["eq", "lt", "gt", "le", "ge"])
        if f != "status" or op in ("eq", "in", "not_in")  # a string field: no ordering
    ]
    conds += [
        {"sorted_name": f, "sorted_type": t}
        for f in (
            "batch_size",
            "metric/acc",
            "user_defined/t",
            "optimizer",
            "dataset_mark",
            "status",
        )
        for t in ("ascending", "descending")
    ]
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(recs)
        assert_agreement(index, conds)
        finished = index.query({"status": {"eq": "finished"}}, refresh=False)
        assert [o["summary_dir"] for o in finished["object"]] == ["./r1"]
        assert "status" not in finished["object"][0]["model_lineage"]  # not MindInsight's


def test_agreement_on_numbers_each_engine_could_round(index_url: str | None) -> None:
    """Exact comparisons of ints with floats (PostgreSQL binds floats as exact NUMERICs),
    int64 limits, infinities, float64 near-ties and text ordered by code point (not by
    locale), in the fixed columns and in custom values (PostgreSQL's JSONB copy included)."""
    values: list[Any] = [
        0.3,
        0.1 + 0.2,
        2**53,
        2**53 + 1,
        float(2**53),
        2**63 - 1,
        -(2**63),
        1e308,
        float("inf"),
        float("-inf"),
        "B",
        "a",
        "é",
        "Z",
        "",
        None,
    ]
    recs = [
        {"summary_dir": f"./r{i}", "update_time": 1.0, "metric": {"m": v} if v is not None else {}}
        | {"user_defined": {"u": v}, "learning_rate": v}
        for i, v in enumerate(values)
    ]
    probes = [0.3, 0.1 + 0.2, 2**53, 2**53 + 1, float(2**53), 2**63 - 1, float("inf")]
    probes += ["a", "Z", "é"]
    conds: list[dict[str, Any]] = [
        {field: {op: v}}
        for field in ("user_defined/u", "learning_rate", "metric/m")
        for v in probes
        for op in ("eq", "lt", "ge")
        if not (field != "user_defined/u" and isinstance(v, str))
    ]
    conds += [
        {"sorted_name": f, "sorted_type": t}
        for f in ("user_defined/u", "learning_rate", "metric/m")
        for t in ("ascending", "descending")
    ]
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(recs)
        assert_agreement(index, conds)


def test_tags_filter_and_sort_alike_on_both_paths(index_url: str | None) -> None:
    """``tag`` (the UI's stars) is a filter as well as a sort key; an untagged run has none."""
    recs = [{"summary_dir": f"./r{i}", "update_time": float(i)} for i in range(5)]
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(recs)
        index.set_annotation("./r1", tag=1)
        index.set_annotation("./r3", tag=3)
        conds: list[dict[str, Any]] = [
            {"tag": {"eq": 3}},
            {"tag": {"ge": 1}},
            {"tag": {"in": [1, None]}},
            {"tag": {"not_in": [3]}},
            {"tag": {"gt": 0}, "sorted_name": "tag", "sorted_type": "descending"},
        ]
        assert_agreement(index, conds)
        got = index.query({"tag": {"ge": 1}, "sorted_name": "tag"}, refresh=False)
        assert [o["summary_dir"] for o in got["object"]] == ["./r1", "./r3"]
    with pytest.raises(LineageSearchConditionParamError, match="tag is invalid"):
        validate_condition({"tag": {"eq": "three"}})


@pytest.mark.parametrize("wide", [False, True], ids=["joins", "members"])
def test_several_custom_fields_agree_in_every_combination(
    index_url: str | None, wide: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Conditions on two or three custom fields (on SQLite one inner join each, in the count's
    form, ``sql.compile_matches``, or as membership tests after the first, the form read over
    wide runs, ``sql.compile_members``): runs without a field, a text value among numbers, a
    range on one field, limited pages and every match, both engines."""
    chosen: list[bool] = []
    real_wide = page_read._wide
    monkeypatch.setattr(page_read, "WIDE_RUN", 1 if wide else 10**9)
    monkeypatch.setattr(page_read, "_wide", lambda c: chosen.append(real_wide(c)) or chosen[-1])
    recs = [
        {
            "summary_dir": f"./r{i}",
            "update_time": float(i % 4),
            "metric": {k: v for k, v in (("a", i / 10), ("b", (i * 7 % 10) / 10)) if i % 5 != k}
            if i != 6
            else {"a": "n/a"},
            "user_defined": {} if i % 3 == 0 else {"u": i % 4, "s": "x" if i % 2 else "y"},
        }
        for i in range(12)
    ]
    tests = {
        "metric/a": [{"gt": 0.25}, {"ge": 0.2, "le": 0.8}, {"le": 0.3}],
        "metric/b": [{"lt": 0.65}, {"in": [0.1, 0.3, 0.9]}],
        "user_defined/u": [{"ge": 1}, {"in": [0, 3]}],
    }
    conds: list[dict[str, Any]] = []
    fields = list(tests)
    for i, first in enumerate(fields):
        for second in fields[i + 1 :]:
            for x in tests[first]:
                for y in tests[second]:
                    pair = {first: x, second: y}
                    conds += [pair, {**pair, "sorted_name": "metric/b", "limit": 2, "offset": 1}]
    conds.append({**{f: tests[f][0] for f in fields}, "user_defined/s": {"eq": "x"}})
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(recs)
        assert_agreement(index, conds)
        both = index.query({"metric/a": {"gt": 0.25}, "user_defined/u": {"ge": 1}}, refresh=False)
        assert 0 < both["count"] < len(recs)
    # SQLite reads the membership form only over wide runs; PostgreSQL reads the JSONB copy
    assert set(chosen) == (set() if index_url else {wide})


RANGE_FIELDS = st.sampled_from(["metric/acc", "user_defined/trial", "optimizer/momentum"])
RANGE_OPS = st.dictionaries(
    st.sampled_from(["eq", "lt", "gt", "le", "ge"]), NUMS, min_size=1, max_size=2
)


def _calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """A list that grows by one at each call of ``page_read.<name>`` (which still runs)."""
    calls: list[int] = []
    real = getattr(page_read, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(page_read, name, counted)
    return calls


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    records=corpus(),
    field=RANGE_FIELDS,
    ops=RANGE_OPS,
    tags=st.dictionaries(st.integers(0, 7), st.integers(0, 10), max_size=8),
)
def test_every_match_of_a_one_field_range_agrees(
    index_url: str | None,
    records: list[dict[str, Any]],
    field: str,
    ops: dict[str, Any],
    tags: dict[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every match of a one-field custom range (no page, the default order) is read from the
    value index and ordered from the cached records on SQLite (``page_read._range_page``):
    the same answer as Python's, ties in update time (1, 2 or 3 here) ordered by
    summary_dir, annotations read whole or run by run (more tags than matches, or fewer)."""
    ranged = _calls(monkeypatch, "_range_page")
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(records)
        for i, tag in tags.items():
            index.set_annotation(f"./r{i}", tag=tag, remark=f"note {i}")
        for _ in range(2):  # (the second from the cached records and count)
            assert_agreement(index, [{field: ops}])
        assert_agreement(index, [{field: ops, "lineage_type": {"eq": "model"}}])
    assert len(ranged) == (0 if index_url else 3)


@pytest.mark.parametrize("tagged", [1, 6], ids=["fewer-notes-than-matches", "more"])
def test_a_one_field_range_orders_ties_by_summary_dir_and_keeps_every_note(
    index_url: str | None, tagged: int
) -> None:
    """Runs stored in two batches, so run numbers (the value index's order among equal
    values) disagree with summary_dir among equal update times; the notes are read whole
    (fewer than the matches) or run by run (more)."""
    late = [
        {"summary_dir": f"./r{i}", "update_time": 1.0, "metric": {"acc": acc}}
        for i, acc in ((5, 0.2), (4, 0.4))
    ]
    early = [
        {"summary_dir": f"./r{i}", "update_time": float(i % 2), "metric": {"acc": i / 10}}
        for i in range(4)
    ]
    with tempfile.TemporaryDirectory() as base, LineageIndex(base, index=index_url) as index:
        index.add_records(late)
        index.add_records(early)
        for i in range(tagged):
            index.set_annotation(f"./r{5 - i}", tag=i, remark=f"note {i}")
        cond = {"metric/acc": {"ge": 0.1, "le": 0.5}}
        for _ in range(2):
            answer = index.query(cond, refresh=False)
            assert [o["summary_dir"] for o in answer["object"]] == [
                "./r1",
                "./r3",
                "./r4",
                "./r5",
                "./r2",
            ]
            assert_agreement(index, [cond])
        notes = {o["summary_dir"]: o["added_info"] for o in answer["object"]}
        assert notes["./r5"] == {"tag": 0, "remark": "note 0"}


def test_a_one_field_range_keeps_its_order_until_a_write_and_reads_notes_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The range's run order is made once a generation (``page_read._range_order``): asked
    again it is reused; a run stored since (newer, or moved by a new update
    time) is in the next answer in its place; a note set since shows (notes are read each
    time: on PostgreSQL setting one bumps no generation)."""
    made = _calls(monkeypatch, "_range_order")
    records = [
        {"summary_dir": f"./r{i}", "update_time": float(i), "metric": {"acc": i / 10}}
        for i in range(8)
    ]
    cond = {"metric/acc": {"ge": 0.2, "le": 0.6}}

    def dirs(answer: dict[str, Any]) -> list[str]:
        return [o["summary_dir"] for o in answer["object"]]

    with tempfile.TemporaryDirectory() as base, LineageIndex(base) as index:
        index.add_records(records)
        assert dirs(index.query(cond, refresh=False)) == ["./r6", "./r5", "./r4", "./r3", "./r2"]
        assert dirs(index.query(cond, refresh=False)) == ["./r6", "./r5", "./r4", "./r3", "./r2"]
        assert len(made) == 1
        index.set_annotation("./r4", tag=3)
        assert index.query(cond, refresh=False)["object"][2]["added_info"] == {"tag": 3}
        index.query(cond, refresh=False)
        before = len(made)
        index.add_records(
            [
                {"summary_dir": "./new", "update_time": 9.0, "metric": {"acc": 0.25}},
                {"summary_dir": "./r2", "update_time": 8.5, "metric": {"acc": 0.2}},
            ]
        )
        assert dirs(index.query(cond, refresh=False)) == [
            "./new",
            "./r2",
            "./r6",
            "./r5",
            "./r4",
            "./r3",
        ]
        assert len(made) == before + 1
        assert_agreement(index, [cond])


def test_only_a_one_field_custom_range_is_read_from_the_value_index_alone() -> None:

    def ranged(cond: dict[str, Any], dialect: Any = None) -> bool:
        valid = validate_condition(cond)
        return (
            compile_range(valid) if dialect is None else compile_range(valid, dialect)
        ) is not None

    assert ranged({"metric/acc": {"ge": 0.5, "le": 0.6}})
    assert ranged({"user_defined/team": {"in": ["a", "b"]}})
    assert not ranged({"metric/acc": {"ge": 0.5}}, POSTGRES)  # (custom values in JSONB)
    for other in (
        {"metric/acc": {"ge": 0.5}, "metric/f1": {"lt": 1}},  # two fields
        {"metric/acc": {"not_in": [0.5]}},  # a run without the value matches
        {"metric/acc": {"in": [None, 0.5]}},
        {"learning_rate": {"lt": 0.1}},  # a fixed field
        {"max(loss)": {"lt": 0.1}},  # a series statistic
        {"tag": {"eq": 1}},
        {"or": [{"metric/acc": {"ge": 0.5}}, {"metric/acc": {"lt": 0.1}}]},
        {"metric/acc": {"ge": 0.5}, "not": {"metric/acc": {"eq": 0.7}}},
    ):
        assert not ranged(other), other


def test_a_range_reads_its_runs_row_by_row_where_sqlite_has_no_json_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SQLite built without JSON1 (before 3.38) has no ``json_group_array``: the range page
    reads the same run numbers row by row."""
    import sqlite3

    records = [
        {"summary_dir": f"./r{i}", "update_time": float(i), "metric": {"acc": i / 10}}
        for i in range(6)
    ]
    cond = {"metric/acc": {"ge": 0.2, "le": 0.4}}
    with tempfile.TemporaryDirectory() as base, LineageIndex(base) as index:
        index.add_records(records)
        conn = index.db.connection()
        statement = compile_range(validate_condition(cond))
        assert statement is not None
        assert sorted(page_read._run_ids(conn, statement)) == [3, 4, 5]

        class NoJson:
            def execute(self, sql: str, params: Any = ()) -> Any:
                if "json_group_array" in sql:
                    raise sqlite3.OperationalError("no such function: json_group_array")
                return conn.execute(sql, params)

        assert sorted(page_read._run_ids(NoJson(), statement)) == [3, 4, 5]  # type: ignore[arg-type]
        assert page_read._run_ids(conn, (statement[0], ["metric/acc", 5.0, 6.0])) == []
