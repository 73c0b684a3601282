"""A bulk build parsed in other processes (``query/parse_worker.py``) writes exactly what a
build in one process writes, warnings included, and a parse process that dies or answers
nonsense leaves its runs to this process, with a warning, losing none."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runs import write_run
from tests.tb_logdirs import torch_run
from trainledger.lineage.records import EvalValues, TrainValues, eval_event, train_event
from trainledger.lineage.writer import LineageWriter
from trainledger.query import parse_worker
from trainledger.query.index import LineageIndex

TABLES = ("runs", "records", "custom", "type_sets", "marks", "unreadable")


def _base(base: Path) -> None:
    """Runs of two graphs, wide and narrow, text and odd values, a damaged lineage file, a run
    without one, TensorBoard runs, with update times out of name order."""
    for i in range(13):
        metrics: dict[str, Any] = {f"m{k}": (i * 7 + k) / 13 for k in range(40 if i % 3 else 3)}
        metrics["odd"] = [float("nan"), 2**60, "text", None, float("inf")][i % 5]
        write_run(
            base,
            f"r{i:02d}",
            metrics=metrics,
            user={"team": "ab"[i % 2], "trial": i, "big": 2.0**53 + 2 * i},
            graph={"op": "Batch", "size": i % 2},
            mtime=200 - i * 3 % 7,
            optimizer=["SGD", "Adam"][i % 2],
        )
    damaged = base / "damaged"
    damaged.mkdir()
    (damaged / "events.out.events.summary.1.host_lineage").write_bytes(b"\x00not a record")
    (base / "empty").mkdir()
    deep = eval_event(EvalValues(metrics={"acc": 0.5}))
    deep.evaluation_lineage.metric = '{"acc": 0.75, "deep": ' + "[" * 200 + "]" * 200 + "}"
    LineageWriter(base / "warned").write([train_event(TrainValues(optimizer="Adam")), deep])
    for i in range(2):  # (parsed here, in their places among the others)
        torch_run(base / f"tb{i}", {"lr": 0.1 * (i + 1)}, {"acc": 0.5 + i / 4}, [1.0, 0.5])


def _bases(tmp_path: Path) -> None:
    """Two copies of one base (``one``, ``two``), files' times kept: the same signatures."""
    _base(tmp_path / "made")
    for name in ("one", "two"):
        shutil.copytree(tmp_path / "made", tmp_path / name)


def _tables(base: Path) -> dict[str, list[Any]]:
    with sqlite3.connect(base / ".trainledger" / "index.db") as conn:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def _build(
    base: Path, caplog: pytest.LogCaptureFixture
) -> tuple[dict[str, list[Any]], list[tuple[str, int, str]], dict[str, Any]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING), LineageIndex(base) as index:
        index.refresh()
        answer = index.query({"metric/m1": {"gt": 0.3}, "sorted_name": "metric/m2"})
    logs = sorted(
        (r.name, r.levelno, r.getMessage().replace(str(base), "BASE")) for r in caplog.records
    )
    return _tables(base), logs, answer


def test_a_build_parsed_in_other_processes_writes_what_one_process_writes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    small_chunks: list[int],
) -> None:
    _bases(tmp_path)
    monkeypatch.setattr(parse_worker, "MIN_RUNS", 1)
    two = _build(tmp_path / "two", caplog)
    assert small_chunks == [1, 1]  # (two parse processes)
    monkeypatch.setattr(parse_worker, "MIN_RUNS", 10**9)
    one = _build(tmp_path / "one", caplog)
    assert small_chunks == [1, 1]  # (this one parsed here)
    assert two[0] == one[0]  # every row of every table, numbers and marks included
    assert two[1] == one[1] and any("warned" in message for _, _, message in one[1])
    assert two[2] == one[2] and two[2]["count"] > 0
    assert len(one[0]["runs"]) == 16 and len(one[0]["unreadable"]) >= 1
    tensorboard = [row for row in one[0]["records"] if '"lr"' in row[2]]
    assert len(tensorboard) == 2, one[0]["records"]


@pytest.mark.parametrize(
    "child",
    [
        "import sys; sys.stdin.readline()",  # dies before its first answer
        "import sys; print('nonsense', flush=True); sys.stdin.read()",
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    out = json.loads(line)[0]\n"
        "    open(out, 'wb').write(bytes([5, 0, 0, 0, 0, 0, 0, 0]) + b'{}')\n"
        "    print(out, flush=True)",
    ],
    ids=["dies", "answers-nonsense", "writes-bad-frames"],
)
def test_a_failed_parse_process_leaves_its_runs_to_this_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    small_chunks: list[int],
    child: str,
) -> None:
    _bases(tmp_path)
    monkeypatch.setattr(parse_worker, "MIN_RUNS", 10**9)
    one = _build(tmp_path / "one", caplog)
    monkeypatch.setattr(parse_worker, "MIN_RUNS", 1)
    monkeypatch.setattr(
        parse_worker,
        "_start",
        lambda: subprocess.Popen(
            [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        ),
    )
    two = _build(tmp_path / "two", caplog)
    failed = [m for _, _, m in two[1] if "the parse process failed" in m]
    assert len(failed) == 1, two[1]
    assert two[0] == one[0]
    assert [entry for entry in two[1] if "the parse process failed" not in entry[2]] == one[1]


def test_parse_processes_only_for_a_build_worth_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_worker.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert not parse_worker.usable(parse_worker.MIN_RUNS - 1)
    assert parse_worker.usable(parse_worker.MIN_RUNS)
    monkeypatch.setattr(parse_worker.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not parse_worker.usable(10**6)  # one CPU: the two would take turns


def test_a_parse_process_reads_intact_runs_without_numpy(tmp_path: Path) -> None:
    """numpy (about 50-100 ms to import) is left to damaged files and writers: a parse
    process, or a ``trainledger lineage`` call parsing a new run, starts without it."""
    run = write_run(tmp_path, "r0", metrics={"acc": 0.5}, user={"team": "a"})
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from trainledger.query.parse_worker import parse_run\n"
        "from trainledger.query.schema import SQLITE\n"
        f"rows = parse_run({str(run)!r}, './r0', 1.0, SQLITE)\n"
        "print(rows.rows.labels)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "metric/acc" in out.stdout
