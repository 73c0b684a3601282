"""A run's parents and its training data as query fields (issue 53 item 4): ``parent/run``,
``parent/step``, ``parent/checkpoint``, ``parent/match``, ``parent/count`` and
``run/train_dataset_fingerprint``, answered by the index in SQL (SQLite, PostgreSQL) as the
Python semantics answer them, and kept in step as runs and checkpoints come and go."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from tests.query.test_family import make_net, train
from trainledger.checkpoint import latest_checkpoint, load_checkpoint
from trainledger.cli.main import cli
from trainledger.errors import LineageSearchConditionParamError, UnknownFieldWarning
from trainledger.query import parse_worker
from trainledger.query.index import LineageIndex
from trainledger.query.lineage_api import filter_summary_lineage
from trainledger.query.semantics import evaluate


def fine_tune(base: Path, name: str, *parents: Path, seed: int = 1, head: int = 2) -> Path:
    """A run started from the latest checkpoints of ``parents`` (the first loaded fully where
    shapes agree, the others over it: a partial load)."""
    net = make_net(seed, head)
    for parent in parents:
        found = latest_checkpoint(parent)
        assert found is not None
        load_checkpoint(found, net)
    return train(base, name, net)


def parents(base: Path | str, cond: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """summary_dir -> its ``parent`` group, for every run matching ``cond``."""
    found = filter_summary_lineage(base, {**cond, "limit": 100}, **kw)
    return {o["summary_dir"]: o["model_lineage"].get("parent") for o in found["object"]}


@pytest.fixture(scope="module")
def family_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre -> fine (full), pre + head-run -> two (two sources: the backbone from pre, the head
    from head-run: a 3-class head that pre's checkpoint cannot fill), and a fresh run."""
    base = tmp_path_factory.mktemp("fam") / "base"
    pre = train(base, "pre", make_net(0))
    head_run = train(base, "head-run", make_net(5, head=3))
    fine_tune(base, "fine", pre)
    fine_tune(base, "two", head_run, pre, seed=2, head=3)
    train(base, "fresh", make_net(7))
    return base


def test_the_parent_fields_find_children_by_run_match_and_count(family_base: Path) -> None:
    ckpt = latest_checkpoint(family_base / "pre")
    found = parents(family_base, {"parent/run": {"eq": "./pre"}})
    assert set(found) == {"./fine", "./two"}
    assert found["./fine"] == {
        "run": "./pre", "step": 8, "checkpoint": ckpt, "match": 1.0, "count": 1,
    }  # fmt: skip
    two = found["./two"]
    assert two["count"] == 2 and 0 < two["match"] < 1 and two["step"] == 8
    assert set(parents(family_base, {"parent/count": {"ge": 2}})) == {"./two"}
    assert set(parents(family_base, {"parent/match": {"lt": 1}})) == {"./two"}
    assert set(parents(family_base, {"parent/checkpoint": {"eq": ckpt}})) == {"./fine", "./two"}
    assert set(parents(family_base, {"parent/step": {"eq": 8}})) == {"./fine", "./two"}
    # no parent: a fresh start, and the roots (a condition on None, as for any field)
    assert set(parents(family_base, {"parent/run": {"in": [None]}})) == {
        "./pre", "./head-run", "./fresh",
    }  # fmt: skip
    every = filter_summary_lineage(family_base, {"limit": 100})["object"]
    (two_obj,) = [o for o in every if o["summary_dir"] == "./two"]
    sources = two_obj["model_lineage"]["parents"]
    assert [s["run"] for s in sources] == ["./pre", "./head-run"]  # largest first
    assert sources[0]["match"] + sources[1]["match"] == pytest.approx(1.0, abs=1e-3)


def test_sorting_and_the_python_semantics_agree(family_base: Path) -> None:
    conds: list[dict[str, Any]] = [
        {"sorted_name": "parent/match", "sorted_type": "descending"},
        {"sorted_name": "parent/run"},
        {"parent/match": {"gt": 0.5}, "sorted_name": "parent/count"},
        {"run/train_dataset_fingerprint": {"not_in": [None]}},
        {"or": [{"parent/count": {"eq": 2}}, {"parent/run": {"eq": "./pre"}}]},
    ]
    with LineageIndex(family_base, watch=False) as index:
        records = index.records(refresh=True)
        for cond in conds:
            sql = index.query({**cond, "limit": 100})
            python = evaluate(records, {**cond, "limit": 100})
            assert [o["summary_dir"] for o in sql["object"]] == [
                o["summary_dir"] for o in python["object"]
            ], cond
    ordered = filter_summary_lineage(
        family_base, {"sorted_name": "parent/match", "sorted_type": "descending"}
    )
    assert [o["summary_dir"] for o in ordered["object"]][:2] == ["./fine", "./two"]


def test_the_training_data_fingerprint_is_one_condition(family_base: Path, tmp_path: Path) -> None:
    every = filter_summary_lineage(family_base, {"limit": 100})["object"]
    prints = {o["model_lineage"]["run"]["train_dataset_fingerprint"] for o in every}
    assert len(prints) == 1  # every run trained on the same data
    (fingerprint,) = prints
    same = filter_summary_lineage(
        family_base, {"run/train_dataset_fingerprint": {"eq": fingerprint}, "limit": 100}
    )
    assert same["count"] == 5
    other = tmp_path / "other"
    train(other, "a", make_net(0))
    from tests.query import test_family

    real = test_family.data
    try:  # other data: another fingerprint
        test_family.data = lambda seed=0: real(seed + 40)  # type: ignore[assignment]
        train(other, "b", make_net(0))
    finally:
        test_family.data = real  # type: ignore[assignment]
    found = filter_summary_lineage(other, {"run/train_dataset_fingerprint": {"eq": fingerprint}})
    assert [o["summary_dir"] for o in found["object"]] == ["./a"]


def test_unknown_names_in_the_closed_groups_are_refused(family_base: Path) -> None:
    for name in ("parent/nope", "run/status", "run/hostname"):
        with pytest.raises(LineageSearchConditionParamError, match="not supported") as caught:
            filter_summary_lineage(family_base, {name: {"eq": "x"}})
        assert "parent/run" in "".join(getattr(caught.value, "__notes__", []))


def test_a_checkpoint_copied_in_later_links_at_the_next_refresh(tmp_path: Path) -> None:
    elsewhere, base = tmp_path / "elsewhere", tmp_path / "base"
    pre = train(elsewhere, "pre", make_net(0))
    fine_tune(base, "fine", pre)
    ckpt = latest_checkpoint(pre)
    before = parents(base, {})["./fine"]  # loaded from outside the base: a file, no run
    assert before == {"checkpoint": ckpt, "match": 1.0, "count": 1}
    shutil.copytree(pre, base / "pre")  # (its lineage names the files where they were written)
    assert parents(base, {"parent/run": {"eq": "./pre"}}) == {
        "./fine": {"run": "./pre", "step": 8, "checkpoint": ckpt, "match": 1.0, "count": 1}
    }
    shutil.rmtree(base / "pre")  # gone again: the child keeps the file it loaded, no run
    with pytest.warns(UnknownFieldWarning, match="no run has the field 'parent/run'"):
        assert parents(base, {"parent/run": {"eq": "./pre"}}) == {}
    assert parents(base, {"parent/count": {"eq": 1}}).keys() == {"./fine"}


def test_a_resumed_child_keeps_its_parent_and_is_not_its_own(tmp_path: Path) -> None:
    base = tmp_path / "base"
    pre = train(base, "pre", make_net(0))
    b = fine_tune(base, "b", pre)
    assert parents(base, {"parent/run": {"eq": "./pre"}}).keys() == {"./b"}
    net = make_net(4)
    load_checkpoint(latest_checkpoint(b), net)
    train(base, "b", net, epochs=1)  # resumed into its own folder: parsed again
    assert parents(base, {"parent/run": {"eq": "./pre"}}).keys() == {"./b"}
    assert parents(base, {"parent/run": {"eq": "./b"}}) == {}


def test_a_bulk_build_in_parse_processes_keeps_the_parents(
    family_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks: list[int]
) -> None:
    """Every run parsed again by the parse processes (as after the schema's migration): the
    records take their known parents there, since no weights changed."""
    base = tmp_path / "copy"
    shutil.copytree(family_base, base, ignore=shutil.ignore_patterns(".trainledger"))
    expected = parents(family_base, {})
    # the copy's checkpoints are named where they were written: the copy is another base whose
    # runs loaded files of the first; parents by run stay the same
    assert {d: (p or {}).get("count") for d, p in parents(base, {}).items()} == {
        d: (p or {}).get("count") for d, p in expected.items()
    }
    with sqlite3.connect(base / ".trainledger" / "index.db") as conn:
        conn.execute("UPDATE records SET signature = ''")
    monkeypatch.setattr(parse_worker, "MIN_RUNS", 1)
    from trainledger.query import lineage_api

    lineage_api._indexes.clear()
    again = parents(base, {"parent/count": {"ge": 1}})
    assert small_chunks, "the build did not use the parse processes"
    assert {d: p["count"] for d, p in again.items()} == {"./fine": 1, "./two": 2}


def test_the_cli_filters_on_parent_fields(family_base: Path) -> None:
    done = CliRunner().invoke(cli, ["lineage", str(family_base), "-w", "parent/run = './pre'"])
    assert done.exit_code == 0, done.output
    rows = [line.split()[0] for line in done.output.splitlines()[2:4]]
    assert sorted(rows) == ["fine", "two"] and "2 of 2 runs" in done.output
    assert "parent/run=./pre" in done.output  # (the same in both: under the table)


def test_on_postgresql(family_base: Path, pg_url: str) -> None:
    found = parents(family_base, {"parent/match": {"lt": 1}}, index=pg_url)
    assert found.keys() == {"./two"} and found["./two"]["count"] == 2
    ordered = filter_summary_lineage(
        family_base, {"sorted_name": "parent/count", "sorted_type": "descending"}, index=pg_url
    )
    assert ordered["object"][0]["summary_dir"] == "./two"


def test_in_a_bucket_with_postgresql(
    s3_bucket: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers and the child's load on ``s3://``: the index of the copy names the parent by
    the run the bucket's files belong to."""
    from tests.query.test_family import data
    from trainledger.callbacks import ModelCheckpoint, TrainLineage
    from trainledger.checkpoint import CheckpointConfig
    from trainledger.run import Model
    from trainledger.storage import flush_mirrors

    base = f"s3://{s3_bucket}/team"
    for name, net, load in (("pre", make_net(0), None), ("fine", make_net(1), "pre")):
        if load is not None:
            load_checkpoint(f"{base}/{load}/m-2_4.ckpt", net)
        model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
        ckpt = ModelCheckpoint("m", f"{base}/{name}", CheckpointConfig(save_checkpoint_steps=4))
        model.train(2, data(), callbacks=[ckpt, TrainLineage(f"{base}/{name}")])
        flush_mirrors()
    monkeypatch.setenv("TRAINLEDGER_INDEX_URL", pg_url)
    assert parents(base, {"parent/run": {"eq": "./pre"}}) == {
        "./fine": {
            "run": "./pre",
            "step": 8,
            "checkpoint": f"{base}/pre/m-2_4.ckpt",
            "match": 1.0,
            "count": 1,
        }
    }


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_schema_13_index_gains_the_fields_without_parsing_a_run(
    family_base: Path, tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    """The previous release's index: the runs it kept gain their parents and fingerprints
    from their files at the next scan, none parsed again, the answers as a new build's."""
    from tests.query.old_layouts import to_schema_13
    from trainledger.query import schema

    base = tmp_path / "base"
    shutil.copytree(family_base, base, ignore=shutil.ignore_patterns(".trainledger"))
    url = request.getfixturevalue("pg_url") if engine == "postgresql" else None
    questions: list[dict[str, Any]] = [
        {"parent/match": {"lt": 1}},
        {"sorted_name": "parent/count", "sorted_type": "descending", "limit": 100},
        {"run/train_dataset_fingerprint": {"not_in": [None]}, "limit": 100},
    ]
    with LineageIndex(base, index=url, watch=False) as index:
        before = [index.query(q) for q in questions]
        index.db.write(lambda c: to_schema_13(c, index.db.dialect), bump=True)
        assert index.query({"parent/count": {"ge": 1}})["count"] == 0  # the old layout

    def refuse(run_dir: str) -> dict[str, Any]:
        raise AssertionError(f"re-parsed {run_dir}")

    with LineageIndex(base, index=url, reader=refuse, watch=False) as index:
        assert index.refresh().parsed == 0
        assert [index.query(q) for q in questions] == before
        version = index.db.read(lambda c: schema.read_meta(c, "schema_version"))
        assert version == schema.SCHEMA_VERSION == 14
    assert before[0]["count"] == 1 and before[2]["count"] == 5
