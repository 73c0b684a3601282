"""Named models as query fields (issue 54 item 4): ``registry/<name>`` (the newest version
registered from a run) and ``registry/<name>@<alias>`` (the version an alias names, on its
run), in Python, the CLI's ``-w`` and on PostgreSQL, seen by another process's next query,
kept when a run is parsed again, and clashing with nothing that exists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.query.test_models import make_runs
from tests.runs import write_run
from trainledger.cli.main import cli
from trainledger.query import filter_summary_lineage, register_model, set_model_alias
from trainledger.query.index import LineageIndex
from trainledger.query.registry_fields import fields_by_run
from trainledger.query.semantics import evaluate


def dirs(base: Path, cond: dict[str, Any], index: str | None) -> list[str]:
    found = filter_summary_lineage(base, {**cond, "limit": 100}, index=index)
    return [o["summary_dir"] for o in found["object"]]


def test_the_fields_follow_registrations_and_alias_moves(
    tmp_path: Path, index_url: str | None
) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2", "r3")
    assert register_model(base, "clf", "r1/m.ckpt", index=index_url) == 1
    assert register_model(base, "clf", "r2/m.ckpt", index=index_url) == 2
    set_model_alias(base, "clf", "production", 1, index=index_url)
    behind = {"registry/clf@production": {"ge": 1}}
    assert dirs(base, behind, index_url) == ["./r1"]
    assert sorted(dirs(base, {"registry/clf": {"ge": 1}}, index_url)) == ["./r1", "./r2"]
    set_model_alias(base, "clf", "production", 2, index=index_url)  # promoted
    assert dirs(base, behind, index_url) == ["./r2"]
    found = filter_summary_lineage(base, {"registry/clf@production": {"eq": 2}}, index=index_url)
    assert found["object"][0]["model_lineage"]["registry"] == {"clf": 2, "clf@production": 2}
    assert found["customized"]["registry/clf@production"]["type"] == "int"
    set_model_alias(base, "clf", "production", None, index=index_url)  # removed
    assert dirs(base, behind, index_url) == []
    none = filter_summary_lineage(base, {"registry/clf": {"in": [None]}}, index=index_url)
    assert [o["summary_dir"] for o in none["object"]] == ["./r3"]
    assert "registry" not in none["object"][0]["model_lineage"]


def test_sorting_and_the_python_semantics_agree(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "a", "b", "c")
    for run in ("a", "b", "a"):
        register_model(base, "m", f"{run}/m.ckpt")
    set_model_alias(base, "m", "best", 2)
    conds: list[dict[str, Any]] = [
        {"sorted_name": "registry/m", "sorted_type": "descending"},
        {"registry/m@best": {"not_in": [None]}},
        {"or": [{"registry/m": {"eq": 3}}, {"registry/m@best": {"eq": 2}}]},
    ]
    with LineageIndex(base, watch=False) as index:
        records = index.records(refresh=True)
        for cond in conds:
            sql = [o["summary_dir"] for o in index.query({**cond, "limit": 100})["object"]]
            python = [o["summary_dir"] for o in evaluate(records, {**cond, "limit": 100})["object"]]
            assert sql == python, cond
    assert dirs(base, conds[0], None) == ["./a", "./b", "./c"]  # a: v3, b: v2, c: none


def test_a_run_parsed_again_keeps_its_fields(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1")
    register_model(base, "clf", "r1/m.ckpt")
    set_model_alias(base, "clf", "prod", 1)
    with LineageIndex(base, watch=False) as index:
        index.refresh()
        write_run(base, "r1", metrics={"acc": 0.5}, ts=2_000)  # the run's lineage grows
        assert index.refresh().parsed == 1
        found = index.query({"registry/clf@prod": {"eq": 1}})
    assert [o["summary_dir"] for o in found["object"]] == ["./r1"]


def test_another_process_sees_a_move_at_its_next_query(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    register_model(base, "clf", "r1/m.ckpt")
    register_model(base, "clf", "r2/m.ckpt")
    with LineageIndex(base) as index:  # a long-lived reader (the web UI's), trusted
        assert index.query({"registry/clf@prod": {"ge": 1}})["count"] == 0
        index.query({})
        code = (
            "import sys; from trainledger.query import set_model_alias; "
            "set_model_alias(sys.argv[1], 'clf', 'prod', 2)"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        subprocess.run([sys.executable, "-c", code, str(base)], check=True, env=env)
        found = index.query({"registry/clf@prod": {"ge": 1}})
        assert [o["summary_dir"] for o in found["object"]] == ["./r2"]


def test_an_index_built_later_gains_the_fields_from_the_log(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1")
    register_model(base, "clf", "r1/m.ckpt")
    set_model_alias(base, "clf", "prod", 1)
    (base / ".trainledger" / "index.db").unlink()  # derived data: rebuilt from the runs + log
    for suffix in ("-wal", "-shm"):
        (base / ".trainledger" / f"index.db{suffix}").unlink(missing_ok=True)
    from trainledger.query import lineage_api

    lineage_api._indexes.clear()
    assert dirs(base, {"registry/clf@prod": {"eq": 1}}, None) == ["./r1"]


def test_the_cli_and_the_names_that_must_not_clash(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    register_model(base, "model", "r2/m.ckpt")  # a model named like MindInsight's field
    set_model_alias(base, "model", "prod", 1)
    done = CliRunner().invoke(cli, ["lineage", str(base), "-w", "registry/model@prod = 1"])
    assert done.exit_code == 0, done.output
    assert "r2" in done.output and "1 of 1 runs" in done.output
    sized = filter_summary_lineage(base, {"model_size": {"in": [None]}, "limit": 100})
    assert sized["count"] == 2  # model_size is untouched by the registry


def test_fields_by_run_is_a_pure_function_of_the_log() -> None:
    events = [
        {"action": "register", "name": "m", "version": 1, "run": "./a"},
        {"action": "register", "name": "m", "version": 2, "run": "./a"},
        {"action": "register", "name": "n", "version": 1, "run": "./b"},
        {"action": "alias", "name": "m", "alias": "prod", "version": 1},
        {"action": "alias", "name": "m", "alias": "old", "version": 9},  # no such version
        {"action": "alias", "name": "n", "alias": "prod", "version": 1},
    ]
    assert fields_by_run(events) == {
        "./a": {"m": 2, "m@prod": 1},
        "./b": {"n": 1, "n@prod": 1},
    }


@pytest.mark.parametrize("bad", ["registry/", "registryx/m"])
def test_a_malformed_registry_field_is_refused(tmp_path: Path, bad: str) -> None:
    from trainledger.errors import LineageSearchConditionParamError

    base = make_runs(tmp_path / "b", "r1")
    with pytest.raises(LineageSearchConditionParamError, match="not supported"):
        filter_summary_lineage(base, {bad: {"eq": 1}})
