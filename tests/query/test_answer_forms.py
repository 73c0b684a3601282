"""Answer objects built from a record's form (``answer_forms.py``): the same object as the
copy ``semantics.build_object`` makes, key order included, sharing nothing, and no record
value ever run as code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.runs import write_run
from trainledger.query import answer_forms
from trainledger.query.fields import FIELDS, LINEAGE_TYPES
from trainledger.query.index import LineageIndex
from trainledger.query.semantics import build_object

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_KEYS = st.text(max_size=12)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=24,
)


def _record(**over: Any) -> dict[str, Any]:
    record: dict[str, Any] = {f: None for f in FIELDS}
    record.update(summary_dir="./r", loss=0.5, network="MLP", update_time=1.0)
    record.update(metric={"acc": 0.9}, user_defined={"team": "a"})
    record["dataset_graph"] = {"op_type": "Batch", "children": [{"op_type": "Map", "children": []}]}
    return {**record, **over}


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value``, itself included."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


def _both(record: dict[str, Any], series: dict[str, Any] | None = None) -> tuple[str, str]:
    form = answer_forms.form_of(record)
    assert form is not None
    built = answer_forms.build(form, {"tag": 1}, series)
    copied = build_object(record, list(LINEAGE_TYPES), series, {"tag": 1})
    return json.dumps(built), json.dumps(copied)


@settings(max_examples=150, deadline=None)
@given(
    graph=st.dictionaries(_KEYS, _JSON, max_size=5),
    metric=st.dictionaries(_KEYS, _SCALARS, max_size=6),
    user=st.dictionaries(_KEYS, _JSON, max_size=4),
    optimizer=st.none() | st.dictionaries(_KEYS, _JSON, min_size=1, max_size=4),
)
def test_a_form_builds_the_copy_key_order_included(
    graph: dict[str, Any], metric: dict[str, Any], user: dict[str, Any], optimizer: Any
) -> None:
    record = _record(dataset_graph=graph, metric=metric, user_defined=user)
    if optimizer is not None:
        record["optimizer_settings"] = optimizer
    built, copied = _both(record, {"max(loss)": 0.1})
    assert built == copied


def test_an_answer_shares_no_container_with_its_record_or_another_answer() -> None:
    record = _record(optimizer_settings={"momentum": 0.9, "betas": [0.9, 0.99]})
    form = answer_forms.form_of(record)
    assert form is not None
    first, second = (answer_forms.build(form, {}, None) for _ in range(2))
    held = {id(c) for c in _containers(record)} | {id(c) for c in _containers(list(form[1]))}
    for answer in (first, second):
        assert not {id(c) for c in _containers(answer)} & held
    assert not {id(c) for c in _containers(first)} & {id(c) for c in _containers(second)}
    first["dataset_graph"]["children"][0]["op_type"] = "changed"
    first["model_lineage"]["optimizer_settings"]["betas"].append(1)
    assert answer_forms.build(form, {}, None) == build_object(record, list(LINEAGE_TYPES))


def test_keys_are_written_as_literals_never_run(tmp_path: Path) -> None:
    """A key that would be code if pasted into the constructor's text is only a key."""
    marker = tmp_path / "ran"
    evil = f"'): open({str(marker)!r}, 'w') or ('"
    graph = {evil: 1, "children": [{'"\n\\': 2, "\u00e9\u4e2d": [], evil: {"x": [1]}}]}
    built, copied = _both(_record(dataset_graph=graph))
    assert built == copied
    assert not marker.exists()


def test_shapes_it_leaves_to_copying(monkeypatch: pytest.MonkeyPatch) -> None:
    deep: dict[str, Any] = {"leaf": 1}
    for _ in range(answer_forms.MAX_DEPTH + 2):
        deep = {"next": deep, "children": []}
    assert answer_forms.form_of(_record(dataset_graph=deep)) is None
    wide_graph = {"children": [{"op": i, "children": []} for i in range(answer_forms.MAX_TOKENS)]}
    assert answer_forms.form_of(_record(dataset_graph=wide_graph)) is None
    missing = _record()
    del missing["network"]  # (an older record without a fixed field)
    assert answer_forms.form_of(missing) is None
    monkeypatch.setattr(answer_forms, "_constructors", {})
    monkeypatch.setattr(answer_forms, "MAX_SHAPES", 1)
    assert answer_forms.form_of(_record()) is not None
    assert answer_forms.form_of(_record(dataset_graph={"children": [[]]})) is None
    assert answer_forms.form_of(_record()) is not None  # (a shape already made is kept)


def test_the_index_answers_runs_with_and_without_a_form_alike(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"op_type": "Leaf"}
    for i in range(answer_forms.MAX_DEPTH + 2):
        deep = {"op_type": f"op{i}", "children": [deep]}
    write_run(tmp_path, "deep", metrics={"acc": 0.5}, graph=deep, mtime=100)
    write_run(tmp_path, "flat", metrics={"acc": 0.6}, user={"team": "x"}, mtime=200)
    every = {"sorted_name": "summary_dir"}
    with LineageIndex(tmp_path) as index:
        answers = [index.query(every) for _ in range(3)]  # (forms from the second on)
        records = {r["summary_dir"]: r for r in index.records()}
        kinds = {r["summary_dir"]: answer_forms.form_of(r) is None for r in records.values()}
    assert kinds == {"./deep": True, "./flat": False}
    assert records["./deep"]["dataset_graph"]["children"][0]["op_type"] == "op32"
    copied = [build_object(records[d], list(LINEAGE_TYPES), None, {}) for d in ("./deep", "./flat")]
    for answer in answers:
        assert json.dumps(answer["object"]) == json.dumps(copied)


def test_words_and_integers_are_held_once_across_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal words and integers in two forms' templates are one instance (copying touches
    fewer places), a float, a bool and -0.0 stay as they are, and the memo is bounded."""
    monkeypatch.setattr(answer_forms, "_memo", {})
    first, second = (
        _record(network="".join(["M", "LP"]), epoch=int("123456"), loss=-0.0, device_num=True)
        for _ in range(2)
    )
    assert first["network"] is not second["network"] and first["epoch"] is not second["epoch"]
    forms = [answer_forms.form_of(r) for r in (first, second)]
    templates = [form[1][1] for form in forms if form is not None]
    assert templates[0]["network"] is templates[1]["network"]
    assert templates[0]["epoch"] is templates[1]["epoch"]
    for template, record in zip(templates, (first, second), strict=True):
        assert template["loss"] is record["loss"] and template["device_num"] is True
    monkeypatch.setattr(answer_forms, "MAX_SHARED", len(answer_forms._memo))
    held = dict(answer_forms._memo)
    third = _record(network="CNN", epoch=int("654321"))
    form = answer_forms.form_of(third)
    assert form is not None and answer_forms._memo == held
    built, copied = _both(third)
    assert built == copied and '"network": "CNN"' in built


def test_runs_of_one_dataset_graph_share_its_form_and_unequal_graphs_never_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two runs of one dataset graph share its templates; 1, 1.0 and True, or 0.0 and -0.0,
    stay apart, so each answer keeps its own values and types; the memo is bounded."""
    monkeypatch.setattr(answer_forms, "_graphs", {})

    def graph(size: Any) -> dict[str, Any]:
        return {"op_type": "Batch", "batch_size": size, "children": [{"op": "Map", "x": []}]}

    forms = []
    for size in (32, 32, 32.0, True, 0.0, -0.0, -0.0):
        form = answer_forms.form_of(_record(dataset_graph=graph(size)))
        assert form is not None
        forms.append(form)
        built, copied = _both(_record(dataset_graph=graph(size)))
        assert built == copied
        assert json.loads(built)["dataset_graph"] == graph(size)
    templates = [form[1][4] for form in forms]  # (the graph's own template)
    assert templates[0] is templates[1]
    assert len({id(t) for t in templates[1:4]}) == 3  # 32, 32.0 and True apart
    assert templates[4] is not templates[5] and templates[5] is templates[6]  # 0.0, -0.0
    assert str(answer_forms.build(forms[5], {}, None)["dataset_graph"]["batch_size"]) == "-0.0"
    monkeypatch.setattr(answer_forms, "MAX_GRAPHS", len(answer_forms._graphs))
    held = dict(answer_forms._graphs)
    assert answer_forms.form_of(_record(dataset_graph=graph(64))) is not None
    assert answer_forms._graphs == held
    deep: Any = []
    for _ in range(5000):  # (its repr would recurse past Python's limit)
        deep = [deep]
    assert answer_forms.form_of(_record(dataset_graph={"children": deep})) is None
