"""``trainledger models register | alias | list | show | history`` (issue 54): each
subcommand's lines and its ``--json`` (the API's answer as it is), the errors as one line, and
``archive``/``delete`` refusing a run a version points into unless ``--force``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.query.test_models import make_runs
from trainledger.cli import cli
from trainledger.query import list_models, model_history, resolve_model


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["models", *args])


def registered(tmp_path: Path) -> Path:
    base = make_runs(tmp_path / "b", "r1", "r2")
    assert run("register", str(base), "clf", "r1/m.ckpt").exit_code == 0
    assert run("register", str(base), "clf", "r2/m.ckpt", "--alias", "production").exit_code == 0
    return base


def test_register_prints_the_version_and_json_gives_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    done = run("register", str(base), "clf", "r1/m.ckpt", "--alias", "candidate", "--alias", "x")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [
        "registered clf/1  ./r1  r1/m.ckpt  candidate, x",
        "clf@candidate -> 1 (was unset)",
        "clf@x -> 1 (was unset)",
    ]
    monkeypatch.chdir(tmp_path)  # a path as the shell completes it: from the working directory
    as_json = run("register", "b", "clf", "b/r2/m.ckpt", "--json")
    assert as_json.exit_code == 0, as_json.output
    entry = json.loads(as_json.output)
    typo = run("register", str(base), "clf", "r1/m.ckpt", "--alias", "pro duction")
    assert typo.exit_code == 1
    assert "registered clf/3, but: a model alias expected a short word" in typo.output
    assert entry == list_models(base)[0]["versions"][1]
    assert (entry["version"], entry["run"], entry["path"]) == (2, "./r2", "r2/m.ckpt")


def test_alias_moves_removes_and_says_from_which_version(tmp_path: Path) -> None:
    base = registered(tmp_path)
    moved = run("alias", str(base), "clf", "production", "1")
    assert moved.exit_code == 0 and moved.output == "clf@production -> 1 (was 2)\n"
    as_json = run("alias", str(base), "clf", "production", "2", "--json")
    event = json.loads(as_json.output)
    assert (event["action"], event["version"], event["previous"]) == ("alias", 2, 1)
    assert event["actor"].startswith("cli:")
    removed = run("alias", str(base), "clf", "production", "--remove")
    assert removed.output == "clf@production removed (was 2)\n"
    neither = run("alias", str(base), "clf", "production")
    assert neither.exit_code == 2
    assert "expected a VERSION, or --remove without one" in neither.output
    missing = run("alias", str(base), "clf", "production", "7")
    assert missing.exit_code == 1
    assert "alias 'production' expected a version of model 'clf' (versions 1, 2)" in missing.output


def test_list_and_show(tmp_path: Path) -> None:
    empty = make_runs(tmp_path / "e", "r1")
    assert run("list", str(empty)).output.startswith("no named models in ")
    assert json.loads(run("list", str(empty), "--json").output) == []
    base = registered(tmp_path)
    listed = run("list", str(base))
    assert listed.exit_code == 0
    assert listed.output.splitlines() == [
        "clf  latest 2  production -> 2",
        "  1  ./r1  r1/m.ckpt",
        "  2  ./r2  r2/m.ckpt  production",
    ]
    assert json.loads(run("list", str(base), "--json").output) == list_models(base)
    assert run("show", str(base), "clf").output == listed.output
    assert json.loads(run("show", str(base), "clf", "--json").output) == list_models(base)[0]
    shown = run("show", str(base), "clf@production")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0] == "clf/2  (production)"
    assert lines[1] == f"  checkpoint  {base.resolve() / 'r2' / 'm.ckpt'}"
    assert lines[2] == "  run         ./r2" and lines[3].startswith("  registered  ")
    data = json.loads(run("show", str(base), "clf/1", "--json").output)
    assert data == json.loads(json.dumps(resolve_model(base, "clf/1")))
    assert set(data) >= {"checkpoint", "run", "name", "version", "aliases", "lineage", "family"}
    unknown = run("show", str(base), "nope")
    assert unknown.exit_code == 1 and "received: 'nope'" in unknown.output
    bad = run("show", str(base), "clf@")
    assert bad.exit_code == 1 and "a model reference expected NAME@ALIAS" in bad.output


def test_history_with_who_when_and_from_which_version(tmp_path: Path) -> None:
    base = registered(tmp_path)
    run("alias", str(base), "clf", "production", "1")
    shown = run("history", str(base), "clf")
    assert shown.exit_code == 0
    lines = shown.output.splitlines()
    assert [line.split("  ", 2)[2] for line in lines] == [
        "register  clf/1  r1/m.ckpt",
        "register  clf/2  r2/m.ckpt (latest was 1)",
        "alias     clf@production -> 2 (was unset)",
        "alias     clf@production -> 1 (was 2)",
    ]
    assert all(line.split("  ")[1].startswith("cli:") for line in lines)
    assert json.loads(run("history", str(base), "clf", "--json").output) == model_history(
        base, "clf"
    )
    assert len(json.loads(run("history", str(base), "--json").output)) == 4  # every model


def test_archive_and_delete_refuse_a_registered_run_unless_forced(tmp_path: Path) -> None:
    base = registered(tmp_path)
    refused = CliRunner().invoke(cli, ["archive", str(base), "r2", "--yes"])
    assert refused.exit_code == 1
    assert "expected no model version pointing into it; received 1: clf/2 (production)" in (
        refused.output
    )
    refused = CliRunner().invoke(cli, ["delete", str(base), "r1", "--yes"])
    assert refused.exit_code == 1 and "received 1: clf/1" in refused.output
    forced = CliRunner().invoke(cli, ["archive", str(base), "r2", "--yes", "--force"])
    assert forced.exit_code == 0, forced.output
    gone = run("show", str(base), "clf@production")
    assert gone.exit_code == 1 and "received: no such file" in gone.output
