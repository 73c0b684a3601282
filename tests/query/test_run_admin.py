"""Archiving, restoring and deleting runs (with their checkpoints), and the audit log."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
import torch

from tests.runs import make_base, sample_run, write_run
from trainledger.errors import LineageParamValueError
from trainledger.query import (
    append_audit,
    archive_run,
    archived_runs,
    delete_run,
    filter_summary_lineage,
    get_summary_lineage,
    read_audit,
    restore_run,
)


def _dirs(base: Path) -> list[str]:
    return sorted(o["summary_dir"] for o in filter_summary_lineage(str(base))["object"])


def test_archive_takes_a_run_out_of_queries_and_restore_brings_it_back(tmp_path: Path) -> None:
    base = make_base(tmp_path / "b", n=3, scalars=0)
    before = get_summary_lineage(str(base / "run01"))
    moved = archive_run(base, "./run01")
    assert Path(moved) == base.resolve() / ".trainledger-archive" / "run01"
    assert _dirs(base) == ["./run00", "./run02"]
    assert archived_runs(base) == ["./run01"]
    # deeper discovery does not find it either
    assert len(filter_summary_lineage(str(base), max_depth=3)["object"]) == 2
    restore_run(base, "./run01")
    assert _dirs(base) == ["./run00", "./run01", "./run02"]
    after = get_summary_lineage(str(base / "run01"))
    assert after["metric"] == before["metric"] and after["model"] == before["model"]
    assert archived_runs(base) == []


def test_a_running_run_is_refused_unless_forced(tmp_path: Path) -> None:
    base = tmp_path / "b"
    sample_run(base, "live", 0, status="running")
    with pytest.raises(LineageParamValueError, match="still running"):
        archive_run(base, "./live")
    with pytest.raises(LineageParamValueError, match="still running"):
        delete_run(base, "./live")
    assert (base / "live").is_dir()
    delete_run(base, "./live", force=True)
    assert not (base / "live").exists()


def test_delete_never_touches_a_file_outside_the_base(tmp_path: Path) -> None:
    from trainledger.checkpoint import save_checkpoint
    from trainledger.lineage import RunValues, run_uid

    base = tmp_path / "b"
    uid = run_uid(None)
    outside = tmp_path / "elsewhere.ckpt"  # the run's own, by its header, but not under BASE
    save_checkpoint({"w": torch.zeros(2)}, str(outside), info={"run_uid": uid})
    run = RunValues(status="finished", uid=uid, checkpoints=[(str(outside), 1)])
    write_run(base, "r1", model_path=json.dumps({"ckpt": str(outside)}), run=run)
    assert delete_run(base, "./r1") == [str((base / "r1").resolve())]
    assert outside.exists()  # never touched: outside the base
    assert not (base / "r1").exists()


@pytest.mark.parametrize(
    "run_id", ["../b", "./", "", "/etc", "./.trainledger", "./.trainledger-archive", "./a/../.."]
)
def test_ids_that_leave_the_base_or_name_our_own_directories_are_refused(
    tmp_path: Path, run_id: str
) -> None:
    base = make_base(tmp_path / "b", n=1, scalars=0)
    (base / ".trainledger").mkdir(exist_ok=True)
    for action in (archive_run, delete_run):
        with pytest.raises(LineageParamValueError):
            action(base, run_id)
    assert _dirs(base) == ["./run00"]


def _append_many(base: str, worker: int) -> None:
    for i in range(50):
        append_audit(base, f"cli:w{worker}", "annotate", f"./r{i}", after={"remark": "x" * 500})


def test_the_audit_log_keeps_every_line_from_concurrent_writers(tmp_path: Path) -> None:
    base = tmp_path / "b"
    base.mkdir()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(base), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    entries = read_audit(base)
    assert len(entries) == 200
    assert {e["actor"] for e in entries} == {f"cli:w{w}" for w in range(4)}
    log = base / ".trainledger" / "audit.jsonl"
    with log.open("ab") as fh:
        fh.write(b'{"torn": ')  # a crash mid-line
    assert len(read_audit(base)) == 200
    assert read_audit(base, 3) == entries[-3:]
