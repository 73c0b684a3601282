"""Named models (issue 54): registering checkpoints of runs as versions, moving aliases, the
history (who, when, from which version), references, the refusal to archive or delete a run
a version points into, and two processes writing at once; on SQLite and PostgreSQL. Runs
here are lineage files with a checkpoint-named file (no torch); real checkpoints, loading and
families: ``test_model_loading.py``."""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.query.model_workers import register_and_move
from tests.runs import write_run
from trainledger.errors import LineageParamValueError, ModelNotFoundError
from trainledger.query import (
    archive_run,
    delete_run,
    list_models,
    model_checkpoint,
    model_history,
    register_model,
    resolve_model,
    restore_run,
    set_model_alias,
)
from trainledger.query.model_refs import ModelRef, parse_reference
from trainledger.query.model_state import replay


def make_runs(base: Path, *names: str) -> Path:
    for name in names:
        run = write_run(base, name)
        (run / "m.ckpt").write_bytes(b"weights of " + name.encode())
    return base


def test_register_move_aliases_and_the_history(tmp_path: Path, index_url: str | None) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    t0 = time.time()
    assert register_model(base, "clf", "r1/m.ckpt", index=index_url) == 1
    assert register_model(base, "clf", base / "r2" / "m.ckpt", index=index_url) == 2
    assert register_model(base, "other", "r2/m.ckpt", index=index_url) == 1  # numbered per name
    first = set_model_alias(base, "clf", "production", 1, index=index_url)
    assert (first["version"], first["previous"]) == (1, None)
    moved = set_model_alias(base, "clf", "production", 2, index=index_url, actor="ui:ab12cd34ef56")
    assert (moved["version"], moved["previous"], moved["actor"]) == (2, 1, "ui:ab12cd34ef56")
    set_model_alias(base, "clf", "candidate", 2, index=index_url)
    removed = set_model_alias(base, "clf", "candidate", None, index=index_url)
    assert (removed["version"], removed["previous"]) == (None, 2)
    history = model_history(base, "clf", index=index_url)
    assert [(e["action"], e.get("alias"), e["version"], e["previous"]) for e in history] == [
        ("register", None, 1, None),
        ("register", None, 2, 1),
        ("alias", "production", 1, None),
        ("alias", "production", 2, 1),
        ("alias", "candidate", 2, None),
        ("alias", "candidate", None, 2),
    ]
    assert history[0]["run"] == "./r1" and history[0]["checkpoint"] == "r1/m.ckpt"
    assert history[0]["actor"].startswith("cli:") and history[3]["actor"] == "ui:ab12cd34ef56"
    assert all(t0 <= e["time"] <= time.time() for e in history)
    everything = model_history(base, index=index_url)
    assert len(everything) == 7 and [e["seq"] for e in everything] == sorted(
        {e["seq"] for e in everything}
    )
    (clf, other) = list_models(base, index=index_url)
    assert (clf["name"], clf["latest"], clf["aliases"]) == ("clf", 2, {"production": 2})
    assert [(v["version"], v["run"], v["path"], v["aliases"]) for v in clf["versions"]] == [
        (1, "./r1", "r1/m.ckpt", []),
        (2, "./r2", "r2/m.ckpt", ["production"]),
    ]
    assert clf["versions"][0]["checkpoint"] == str(base.resolve() / "r1" / "m.ckpt")
    assert other["name"] == "other" and other["aliases"] == {}
    kept_beside_annotations = (base / ".trainledger" / "models.jsonl").exists()
    assert kept_beside_annotations == (index_url is None)  # else: in the shared database


def test_references_resolve_to_checkpoint_run_lineage_and_family(
    tmp_path: Path, index_url: str | None
) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    register_model(base, "clf", "r1/m.ckpt", index=index_url)
    register_model(base, "clf", "r2/m.ckpt", index=index_url)
    set_model_alias(base, "clf", "production", 1, index=index_url)
    by_alias = resolve_model(base, "clf@production", index=index_url)
    assert (by_alias["version"], by_alias["run"]) == (1, "./r1")
    assert by_alias["aliases"] == ["production"]
    assert by_alias["checkpoint"] == str(base.resolve() / "r1" / "m.ckpt")
    assert by_alias["lineage"]["summary_dir"] == "./r1" and "model_lineage" in by_alias["lineage"]
    assert by_alias["family"]["run"] == "./r1" and by_alias["family"]["ancestors"] == []
    by_version = resolve_model(base, "clf/2", index=index_url)
    assert (by_version["version"], by_version["run"], by_version["aliases"]) == (2, "./r2", [])
    assert model_checkpoint(base, "clf/2", index=index_url) == str(base.resolve() / "r2/m.ckpt")


def _errors(base: Path) -> list[tuple[Callable[[], Any], type[Exception], str]]:
    word = r"expected a short word: 1 to 64 letters, digits, '_', '-' or '\.', starting with"
    ref = r"a model reference expected NAME@ALIAS or NAME/VERSION .*received: "
    return [
        (lambda: register_model(base, "bad name", "r1/m.ckpt"), LineageParamValueError,
         rf"a model name {word}.*received: 'bad name'"),
        (lambda: register_model(base, "x" * 65, "r1/m.ckpt"), LineageParamValueError, word),
        (lambda: register_model(base, "-x", "r1/m.ckpt"), LineageParamValueError, "'-x'"),
        (lambda: register_model(base, 7, "r1/m.ckpt"), LineageParamValueError, "received: int"),
        (lambda: set_model_alias(base, "clf", "pro duction", 1), LineageParamValueError,
         rf"a model alias {word}.*received: 'pro duction'"),
        (lambda: set_model_alias(base, "clf", "production", 0), LineageParamValueError,
         "a version of model 'clf' expected a number from 1; received: 0"),
        (lambda: set_model_alias(base, "clf", "production", True), LineageParamValueError,
         "expected a number from 1; received: True"),
        (lambda: set_model_alias(base, "clf", "production", 5), ModelNotFoundError,
         r"alias 'production' expected a version of model 'clf' \(versions 1, 2\); "
         "received: version 5"),
        (lambda: set_model_alias(base, "nope", "production", 1), ModelNotFoundError,
         r"a model name expected one registered in the registry of .* \(clf\); received: 'nope'"),
        (lambda: set_model_alias(base, "clf", "staging", None), ModelNotFoundError,
         r"an alias of model 'clf' to remove expected one of its aliases \(production -> 1\); "
         "received: 'staging'"),
        (lambda: resolve_model(base, "clf@staging"), ModelNotFoundError,
         r"an alias of model 'clf' expected one of its aliases \(production -> 1\); "
         "received: 'staging'"),
        (lambda: resolve_model(base, "clf/9"), ModelNotFoundError,
         r"a version of model 'clf' expected one of versions 1, 2; received: 9"),
        (lambda: model_history(base, "nope"), ModelNotFoundError, "received: 'nope'"),
        (lambda: resolve_model(base, "clf"), LineageParamValueError, ref + "'clf'"),
        (lambda: resolve_model(base, "clf@"), LineageParamValueError, ref + "'clf@'"),
        (lambda: resolve_model(base, "clf/0"), LineageParamValueError, ref + r"'clf/0' \("),
        (lambda: resolve_model(base, "clf/x"), LineageParamValueError, ref + "'clf/x'"),
        (lambda: resolve_model(base, "a b@c"), LineageParamValueError, ref + "'a b@c'"),
        (lambda: model_checkpoint(base, 3), LineageParamValueError, ref + "int"),
        (lambda: register_model(base, "clf", "/etc/hostname"), LineageParamValueError,
         r"a checkpoint expected a file inside the base .*; received: '/etc/hostname'"),
        (lambda: register_model(base, "clf", "../outside.ckpt"), LineageParamValueError,
         "expected a file inside the base"),
        (lambda: register_model(base, "clf", "r1/none.ckpt"), LineageParamValueError,
         r"a checkpoint expected an existing file; received: 'r1/none.ckpt' \(no such file\)"),
        (lambda: register_model(base, "clf", "r1"), LineageParamValueError,
         r"received: 'r1' \(a directory\)"),
        (lambda: register_model(base, "clf", "loose.ckpt"), LineageParamValueError,
         r"a checkpoint expected a file in the folder of one of the base's runs \(\./r1, \./r2\) "
         "or one a run's lineage names; received: 'loose.ckpt'"),
        (lambda: register_model(base, "clf", ".trainledger/models.jsonl"), LineageParamValueError,
         "in trainledger's own folder '.trainledger'"),
        (lambda: register_model(base, "clf", f"r1/{next((base / 'r1').glob('*_lineage')).name}"),
         LineageParamValueError, "a checkpoint expected a checkpoint file; received .*, a lineage"),
        (lambda: register_model(base, "clf", None), LineageParamValueError,
         r"a checkpoint expected a path inside the base .*; received: None"),
    ]  # fmt: skip


def test_every_error_says_what_was_expected_and_what_was_received(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2")
    (base / "loose.ckpt").write_bytes(b"no run's")
    (tmp_path / "outside.ckpt").write_bytes(b"")
    register_model(base, "clf", "r1/m.ckpt")
    register_model(base, "clf", "r2/m.ckpt")
    set_model_alias(base, "clf", "production", 1)
    for call, kind, message in _errors(base):
        with pytest.raises(kind, match=message):
            call()
    assert len(model_history(base)) == 3  # no refused write left a trace
    assert issubclass(ModelNotFoundError, LookupError)


def test_a_run_a_version_points_into_is_not_archived_or_deleted_unless_forced(
    tmp_path: Path, index_url: str | None
) -> None:
    base = make_runs(tmp_path / "b", "r1", "r2", "free")
    register_model(base, "clf", "r1/m.ckpt", index=index_url)
    set_model_alias(base, "clf", "production", 1, index=index_url)
    message = r"run '\./r1' expected no model version pointing into it; received 1: clf/1 \(prod"
    with pytest.raises(LineageParamValueError, match=message):
        archive_run(base, "./r1", index=index_url)
    with pytest.raises(LineageParamValueError, match=message):
        delete_run(base, "r1", index=index_url)
    assert (base / "r1" / "m.ckpt").exists()
    archive_run(base, "./free", index=index_url)  # no version in it
    archive_run(base, "./r1", index=index_url, force=True)
    gone = r"expected its checkpoint .*m\.ckpt' in run '\./r1'; received: no such file"
    with pytest.raises(LineageParamValueError, match=gone):
        model_checkpoint(base, "clf@production", index=index_url)
    with pytest.raises(LineageParamValueError, match=gone):
        resolve_model(base, "clf/1", index=index_url)
    restore_run(base, "./r1")
    assert resolve_model(base, "clf@production", index=index_url)["run"] == "./r1"
    with pytest.raises(LineageParamValueError, match="received 1: clf/1"):
        delete_run(base, "./r1", index=index_url)
    delete_run(base, "./r1", index=index_url, force=True)
    assert not (base / "r1").exists()


def test_a_version_in_a_nested_run_keeps_its_parent_folder(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "outer")
    make_runs(base / "outer", "inner")
    assert register_model(base, "clf", "outer/inner/m.ckpt", max_depth=2) == 1
    assert list_models(base)[0]["versions"][0]["run"] == "./outer/inner"  # the deepest run
    with pytest.raises(LineageParamValueError, match="received 1: clf/1"):
        archive_run(base, "./outer")  # would move ./outer/inner with it


def test_two_processes_writing_at_once_land_in_one_history(
    tmp_path: Path, index_url: str | None
) -> None:
    base = make_runs(tmp_path / "b", "w0", "w1")
    n = 10
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [
        ctx.Process(target=register_and_move, args=(str(base), index_url, w, n, start))
        for w in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    history = model_history(base, "clf", index=index_url)
    registered = [e for e in history if e["action"] == "register"]
    assert sorted(e["version"] for e in registered) == list(range(1, 2 * n + 1))  # none twice
    assert [e["previous"] for e in registered] == [None, *range(1, 2 * n)]
    moves = [e for e in history if e["action"] == "alias"]
    assert len(moves) == 2 * n  # no move lost
    assert [m["previous"] for m in moves] == [None, *(m["version"] for m in moves[:-1])]
    assert {e["actor"] for e in history} == {"w0", "w1"}
    (model,) = list_models(base, index=index_url)
    assert model["aliases"] == {"production": moves[-1]["version"]}


def test_a_line_torn_by_a_crash_is_skipped_then_cut_off(tmp_path: Path) -> None:
    base = make_runs(tmp_path / "b", "r1")
    register_model(base, "clf", "r1/m.ckpt")
    log = base / ".trainledger" / "models.jsonl"
    with log.open("ab") as fh:
        fh.write(b'{"action": "register", "name": "clf", "vers')  # killed mid-line
    assert [e["version"] for e in model_history(base, "clf")] == [1]
    assert register_model(base, "clf", "r1/m.ckpt") == 2
    lines = log.read_bytes().splitlines()
    assert [json.loads(line)["version"] for line in lines] == [1, 2]


def test_references_and_the_replay_are_pure() -> None:
    assert parse_reference("clf@production") == ModelRef("clf", "production")
    assert parse_reference("my.model-v2/12") == ModelRef("my.model-v2", None, 12)
    assert str(parse_reference("clf/3")) == "clf/3"
    events = [
        {"action": "register", "name": "a", "version": 1, "run": "./r", "checkpoint": "r/m"},
        {"action": "alias", "name": "a", "alias": "p", "version": 2},  # never registered
        {"action": "alias", "name": "b", "alias": "p", "version": 1},  # no such model
        {"action": "rename", "name": "a"},  # an action of a later release
        {"action": "alias", "name": "a", "alias": "p", "version": 1},
    ]
    (model,) = replay(events).values()
    assert model.aliases == {"p": 1} and model.latest == 1
