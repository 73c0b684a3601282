"""Series statistics as query fields (``max(eval/acc)``...): read from real summary files
(TensorBoard's own writer, MindSpore's files), kept up to date from where the last read
stopped, on SQLite and PostgreSQL, and migrated from schema 7 without re-parsing a run."""

from __future__ import annotations

import math
import os
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import GOLDEN
from tests.runs import write_run
from trainledger.cli.main import cli
from trainledger.errors import LineageSearchConditionParamError
from trainledger.lineage.records import RunValues
from trainledger.query import (
    LineageIndex,
    filter_summary_lineage,
    lineage_table,
    parse_where,
)
from trainledger.query.series_index import read_series_state
from trainledger.storage import event_file_order, is_summary_file_name
from trainledger.summary import read_scalars

FIXTURES = GOLDEN / "mindspore-runs"  # written by MindSpore 2.10 itself
STATS = ("last", "min", "max", "count", "last_step", "min_step", "max_step", "nonfinite_step")


def expected_stats(steps: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """The statistics of a served series, computed here from scratch in plain Python."""
    finite = [(float(v), int(s)) for s, v in zip(steps, values, strict=True) if math.isfinite(v)]
    low = min(finite, key=lambda p: p[0], default=(None, None))
    high = max(finite, key=lambda p: p[0], default=(None, None))
    # (the first occurrence of the extreme: min/max keep the first of equal values)
    low_step = next((s for v, s in finite if v == low[0]), None)
    high_step = next((s for v, s in finite if v == high[0]), None)
    bad = [int(s) for s, v in zip(steps, values, strict=True) if not math.isfinite(v)]
    last = float(values[-1])
    return {
        "last": last if math.isfinite(last) else None,
        "min": low[0],
        "max": high[0],
        "count": len(values),
        "last_step": int(steps[-1]),
        "min_step": low_step,
        "max_step": high_step,
        "nonfinite_step": bad[0] if bad else None,
    }


def served(run_dir: Path) -> dict[str, dict[str, Any]]:
    """{tag: statistics} of what ``read_scalars`` serves (the series rule applied)."""
    return {tag: expected_stats(s, v) for tag, (s, _, v) in read_scalars(run_dir).items()}


def indexed(index: LineageIndex, summary_dir: str, tags: list[str]) -> dict[str, Any]:
    fields = [f"{stat}({tag})" for tag in tags for stat in STATS]
    answer = index.query({"summary_dir": {"eq": summary_dir}}, series=fields)
    (obj,) = answer["object"]
    values = obj["series"]
    return {tag: {stat: values[f"{stat}({tag})"] for stat in STATS} for tag in tags}


def tensorboard_run(base: Path, name: str, losses: list[float], start: int = 1) -> Path:
    """A run: a lineage file, and ``loss`` and ``eval/acc`` written by TensorBoard's writer."""
    from torch.utils.tensorboard import SummaryWriter

    run_dir = write_run(base, name, run=RunValues(status="finished", duration=3.0))
    with SummaryWriter(str(run_dir)) as writer:
        for i, loss in enumerate(losses):
            writer.add_scalar("loss", loss, start + i)
            if (start + i) % 5 == 0:
                writer.add_scalar("eval/acc", 0.5 + 0.01 * i, start + i)
    return run_dir


def test_statistics_of_real_files_are_those_of_the_served_series(tmp_path: Path) -> None:
    losses = [2.0 - 0.05 * i for i in range(30)]
    losses[11], losses[19] = math.nan, math.inf
    run = tensorboard_run(tmp_path, "tb", losses)
    shutil.copytree(FIXTURES / "momentum_twice", tmp_path / "ms")  # two MindSpore sessions
    with LineageIndex(tmp_path) as index:
        got = indexed(index, "./tb", ["loss", "eval/acc"])
        assert got == served(run)
        assert got["loss"]["nonfinite_step"] == 12 and got["loss"]["max"] == 2.0
        ms = indexed(index, "./ms", ["loss/auto"])
        assert ms == served(tmp_path / "ms")
        assert ms["loss/auto"]["count"] == len(read_scalars(tmp_path / "ms")["loss/auto"][0])
        # a filter and a sort on them, the values shown with each object
        answer = index.query({"max(loss/auto)": {"gt": 0.5}, "sorted_name": "min(loss)"})
        assert [o["summary_dir"] for o in answer["object"]] == ["./ms"]
        assert answer["object"][0]["series"] == {
            "max(loss/auto)": ms["loss/auto"]["max"],
            "min(loss)": None,  # the MindSpore run has no such tag
        }


def test_a_growing_file_is_read_from_where_the_last_read_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.utils.tensorboard import SummaryWriter

    run = write_run(tmp_path, "live", run=RunValues(status="running"))
    resumed_from: list[dict[str, int]] = []
    from trainledger.summary import RunReader  # (what series_index reads with)

    original = RunReader.resume

    def spy(self: Any, positions: dict[str, int], scalar_tags: list[str]) -> None:
        resumed_from.append(dict(positions))
        original(self, positions, scalar_tags)

    monkeypatch.setattr(RunReader, "resume", spy)
    with SummaryWriter(str(run)) as writer, LineageIndex(tmp_path) as index:
        for step in range(1, 11):
            writer.add_scalar("loss", 1.0 / step, step)
        writer.flush()
        assert indexed(index, "./live", ["loss"]) == served(run)
        assert resumed_from == []  # the first read starts at 0
        for step in range(11, 21):
            writer.add_scalar("loss", 5.0 if step == 15 else 1.0 / step, step)
        writer.flush()
        assert index.refresh().series == 1
        assert resumed_from and all(v > 0 for v in resumed_from[0].values())
        assert indexed(index, "./live", ["loss"]) == served(run)
        assert indexed(index, "./live", ["loss"])["loss"]["max_step"] == 15
        assert index.refresh().series == 0  # nothing new: nothing read


def test_a_first_index_takes_the_writers_sidecar_and_reads_only_what_came_after(
    tmp_path: Path, decoded_points: list[int]
) -> None:
    from trainledger.summary import SummaryRecord

    run = write_run(tmp_path, "ours", run=RunValues(status="running"))
    decoded = decoded_points
    record = SummaryRecord(run)
    for step in range(1, 301):
        record.add_scalar("loss", float("inf") if step == 7 else 10.0 / step, step)
        record.add_scalar("eval/acc", step / 300, step)
    record.flush()  # (the sidecar is written at each flush)
    (sidecar,) = Path(run).glob("*tlseries*")
    older = sidecar.read_bytes()
    with LineageIndex(tmp_path) as index:
        first = indexed(index, "./ours", ["loss", "eval/acc"])
        assert decoded == [0]  # the sidecar stood for the read
        assert first == served(run)
        for step in range(301, 311):
            record.add_scalar("loss", 0.001, step)
        record.close()
        events = next(Path(run).glob("*tfevents*"))
        sidecar.write_bytes(older)  # an older sidecar (a power loss): it covers the first read
        os.utime(events)  # (a change the scan sees on any clock)
        decoded.clear()
        assert index.refresh().series == 1
        assert decoded == [10]  # the appended points only
        after = indexed(index, "./ours", ["loss", "eval/acc"])
        assert after == served(run)
        assert after["loss"]["nonfinite_step"] == 7 and after["loss"]["count"] == 310


def test_a_sidecar_that_covers_every_byte_is_taken_over_an_earlier_read(
    tmp_path: Path, decoded_points: list[int]
) -> None:
    """Once the writer's sidecar covers the whole file, a refresh reads nothing, even where
    the index had read part of the file before (what lets a copy of object storage leave
    such files in the store: ``query/object_copy.py``). The file's bytes are zeroed to prove
    it: the statistics still equal a read of the real points."""
    from trainledger.summary import SummaryRecord

    run = write_run(tmp_path, "ours", run=RunValues(status="running"))
    record = SummaryRecord(run)
    for step in range(1, 51):
        record.add_scalar("loss", 10.0 / step, step)
    record.flush()
    (events,) = Path(run).glob("*tfevents*")
    (sidecar,) = Path(run).glob("*tlseries*")
    flushed = sidecar.read_bytes()
    with LineageIndex(tmp_path) as index:
        sidecar.write_bytes(flushed.replace(b'"files"', b'"filez"'))  # damaged: read the file
        assert indexed(index, "./ours", ["loss"])["loss"]["count"] == 50
        assert decoded_points == [50]
        for step in range(51, 81):
            record.add_scalar("loss", 0.5 if step == 60 else 1.0 / step, step)
        record.close()
        want = served(run)
        size = events.stat().st_size
        events.write_bytes(bytes(size))  # what a stand-in holds
        decoded_points.clear()
        assert index.refresh().series == 1
        assert decoded_points == [0]
        assert indexed(index, "./ours", ["loss"]) == want
        assert want["loss"]["count"] == 80 and want["loss"]["min_step"] == 80


def test_a_live_runs_refresh_reads_no_table_of_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh after a live run's append reads that run's new points and writes its
    statistics, and re-reads neither the index's signatures of every run nor those of every
    run's series (its own write left them true); another process still answers right."""
    from torch.utils.tensorboard import SummaryWriter

    from trainledger.query import series_tables

    for i in range(3):
        write_run(tmp_path, f"done{i}", run=RunValues(status="finished"))
    run = write_run(tmp_path, "live", run=RunValues(status="running"))
    calls: list[str] = []
    real = series_tables.series_signatures

    def spy(conn: Any) -> dict[str, str]:
        calls.append("series")
        return real(conn)

    monkeypatch.setattr(series_tables, "series_signatures", spy)
    with SummaryWriter(str(run)) as writer, LineageIndex(tmp_path, watch=False) as index:
        writer.add_scalar("loss", 1.0, 0)
        writer.flush()
        index.refresh()  # (the runs' first store: the caches are read again once after it)
        writer.add_scalar("loss", 0.5, 5)
        writer.flush()
        index.refresh()
        known_reads = index._refresher._known_generation
        for round_ in range(1, 4):
            for step in range(round_ * 10, round_ * 10 + 10):
                writer.add_scalar("loss", 1.0 / step, step)
            writer.flush()
            calls.clear()
            assert index.refresh().series == 1
            assert calls == []  # its own write kept the cache true
            assert index._refresher._known_generation == known_reads + round_
            assert indexed(index, "./live", ["loss"]) == served(run)
    with LineageIndex(tmp_path, watch=False) as other:  # a new process: it scans
        assert indexed(other, "./live", ["loss"]) == served(run)
        assert indexed(other, "./live", ["loss"])["loss"]["count"] == 32


def _cuts(source: Path, rng: random.Random) -> list[tuple[str, int]]:
    """(file, length) steps that grow ``source``'s summary files in random byte chunks, file
    by file (mid-record cuts included: a damaged tail must wait)."""
    names = [f.name for f in source.iterdir() if is_summary_file_name(f.name)]
    files = [source / n for n in sorted(names, key=event_file_order)]  # (writing order)
    cuts = []
    for path in files:
        size, done = path.stat().st_size, 0
        while done < size:
            done = min(size, done + rng.randint(1, max(1, size // 6)))
            cuts.append((path.name, done))
    return cuts


def _resumed_run(tmp_path: Path, source: Path) -> None:
    """A run at ``source``: TensorBoard's writer's ``loss`` for 12 steps, then a second
    writer resumed at step 7 (its ``SessionLog.START`` drops the first one's later points)."""
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from torch.utils.tensorboard import SummaryWriter

    tensorboard_run(tmp_path / "src", "one", [1.0 / (i + 1) for i in range(12)])
    (tmp_path / "src" / "one").rename(source)
    with SummaryWriter(str(source), filename_suffix=".2") as writer:
        start = Event(step=7, session_log=SessionLog(status=SessionLog.START))
        writer._get_file_writer().add_event(start)
        for step in range(7, 16):
            writer.add_scalar("loss", 0.3 - 0.01 * step, step)


@pytest.mark.parametrize("kind", ["mindspore", "tensorboard-restarted"])
def test_byte_by_byte_growth_agrees_with_a_read_from_scratch(tmp_path: Path, kind: str) -> None:
    source = tmp_path / "source"
    if kind == "mindspore":
        shutil.copytree(FIXTURES / "momentum_twice", source)  # epoch ends repeat a step
    else:
        _resumed_run(tmp_path, source)
    run = tmp_path / "base" / "run"
    run.mkdir(parents=True)
    for lineage in source.glob("*_lineage"):
        shutil.copy(lineage, run / lineage.name)
    rng = random.Random(7)
    with LineageIndex(tmp_path / "base") as index:
        for name, size in _cuts(source, rng):
            with open(source / name, "rb") as fh:
                (run / name).write_bytes(fh.read(size))
            index.refresh()
            fresh = read_series_state(str(run)).tags
            tags = sorted(fresh)
            if tags:
                got = indexed(index, "./run", tags)
                assert got == {t: fresh[t].as_dict() for t in tags}, (name, size)
        assert indexed(index, "./run", sorted(served(source))) == served(source)


def test_an_earlier_file_that_grows_after_a_later_one_was_read_is_read_again(
    tmp_path: Path,
) -> None:
    """Files that reach a run out of writing order (a copy, a sync, two writers at once): the
    later file is read first, then the earlier one grows. Its new points come before points
    already counted, so the run is read again, never merged at the end."""
    source = tmp_path / "source"
    _resumed_run(tmp_path, source)
    first, later = sorted(
        (f.name for f in source.iterdir() if "tfevents" in f.name), key=event_file_order
    )
    run = tmp_path / "base" / "run"
    run.mkdir(parents=True)
    for lineage in source.glob("*_lineage"):
        shutil.copy(lineage, run / lineage.name)
    shutil.copy(source / later, run / later)  # the later file first, whole
    data = (source / first).read_bytes()
    with LineageIndex(tmp_path / "base") as index:
        for size in range(0, len(data) + 1, max(1, len(data) // 7)):
            (run / first).write_bytes(data[:size])
            index.refresh()
            fresh = read_series_state(str(run)).tags
            got = indexed(index, "./run", sorted(fresh))
            assert got == {t: fresh[t].as_dict() for t in sorted(fresh)}, size
        (run / first).write_bytes(data)
        index.refresh()
        assert indexed(index, "./run", sorted(served(source))) == served(source)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_every_page_of_a_statistic_sort_is_the_reference_order(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """A sort on ``min(loss)`` reads its page along the statistic's index, segment by
    segment (runs with a value, runs without: no tag, or only NaN points); every page, in
    both directions and across the boundary, is the plain-Python order."""
    from trainledger.query.conditions import validate_condition
    from trainledger.query.semantics import evaluate

    url = None if backend == "sqlite" else str(request.getfixturevalue("pg_url"))
    records = []
    for i in range(23):
        stats = {"min": None if i % 5 == 0 else float(i % 7), "count": 3, "last_step": 2}
        records.append(
            {
                "summary_dir": f"./r{i:02d}",
                "update_time": float(i % 4),
                "series": {} if i % 6 == 0 else {"loss": stats},
            }
        )
    with LineageIndex(tmp_path, index=url) as index:
        index.add_records(records)
        series = {r["summary_dir"]: r["series"] for r in records}
        stored = [{**r, "series": series[r["summary_dir"]]} for r in index.records()]
        for direction in ("ascending", "descending"):
            for offset in range(0, 24, 3):
                for limit in (1, 4, 10):
                    raw = {"sorted_name": "min(loss)", "sorted_type": direction}
                    raw |= {"offset": offset, "limit": limit, "max(loss)": {"in": [None]}}
                    for cond in (raw, {k: v for k, v in raw.items() if k != "max(loss)"}):
                        expected = evaluate(stored, validate_condition(cond))
                        assert index.query(cond, refresh=False) == expected, cond


def test_conditions_and_the_cli_grammar(tmp_path: Path) -> None:
    tensorboard_run(tmp_path, "a", [1.0, 0.5, 0.25, 0.2, 0.1])
    tensorboard_run(tmp_path, "b", [1.0, 0.9, 0.8, 0.7, 0.6])
    cond = parse_where(["max(eval/acc) >= 0.5", "min(loss) < 0.5"], sort="-last(loss)")
    assert cond == {
        "max(eval/acc)": {"ge": 0.5},
        "min(loss)": {"lt": 0.5},
        "sorted_name": "last(loss)",
        "sorted_type": "descending",
    }
    answer = filter_summary_lineage(str(tmp_path), cond)
    assert [o["summary_dir"] for o in answer["object"]] == ["./a"]
    assert answer["object"][0]["series"]["min(loss)"] == pytest.approx(0.1)
    frame = lineage_table(str(tmp_path), {"sorted_name": "min(loss)"}, series=["count(loss)"])
    assert list(frame["summary_dir"]) == ["./a", "./b"]
    assert list(frame["count(loss)"]) == [5, 5] and "min(loss)" in frame.columns
    for bad, says in [
        ({"max(loss)": {"gt": "high"}}, "should be a float or a integer"),
        ({"median(loss)": {"gt": 1}}, "search attribute not supported"),
        ({"max()": {"gt": 1}}, "search attribute not supported"),
    ]:
        with pytest.raises(LineageSearchConditionParamError, match=says):
            filter_summary_lineage(str(tmp_path), bad)
    with pytest.raises(LineageSearchConditionParamError, match="series expected fields"):
        filter_summary_lineage(str(tmp_path), {}, series=["loss"])
    result = CliRunner().invoke(
        cli,
        ["lineage", str(tmp_path), "--where", "min(loss) < 0.5", "--sort", "-max(eval/acc)"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "min(loss)" in result.output and "max(eval/acc)" in result.output
    assert "1 of 1 runs" in result.output
    shown = CliRunner().invoke(
        cli, ["lineage", str(tmp_path), "--columns", "count(loss),nonfinite_step(loss)"]
    )
    assert shown.exit_code == 0, shown.output
    assert "count(loss)" in shown.output and "nonfinite_step(loss)" in shown.output


def test_a_schema_7_index_is_migrated_once_without_re_parsing(
    tmp_path: Path, index_url: str | None
) -> None:
    """Schema 8 (the series tables, a run's duration and sessions) from the previous
    release's index, on SQLite and PostgreSQL: no run parsed again, the new run fields
    filled from run events, annotations kept, and a schema-7 client refused."""
    from tests.query.old_layouts import to_schema_7
    from trainledger.query import schema

    sessions = [
        {"start_time": 1.0, "end_time": 6.0, "first_step": 1, "last_step": 24},
        {"start_time": 10.0, "end_time": 17.5, "first_step": 21, "last_step": 40},
    ]
    write_run(
        tmp_path, "resumed", run=RunValues(status="finished", duration=12.5, sessions=sessions)
    )
    tensorboard_run(tmp_path, "plain", [1.0, 0.5])
    shutil.copytree(FIXTURES / "sgd_noeval", tmp_path / "ms")  # no run record at all
    with LineageIndex(tmp_path, index=index_url) as index:
        index.set_annotation("./resumed", tag=3, remark="kept")
        before = index.query({"sorted_name": "summary_dir"})
        index.db.write(lambda c: to_schema_7(c, index.db.dialect), bump=True)
        path = index.path

    def refuse(run_dir: str) -> dict[str, Any]:
        raise AssertionError(f"re-parsed {run_dir}")

    with LineageIndex(tmp_path, index=index_url, reader=refuse) as index:
        stats = index.refresh()
        assert (stats.parsed, stats.statuses) == (0, 2)  # (the MindSpore run has no record)
        assert index.query({"sorted_name": "summary_dir"}) == before
        assert index.get_annotations() == {"./resumed": {"tag": 3, "remark": "kept"}}
        resumed = index.query({"sessions": {"eq": 2}, "duration": {"eq": 12.5}})
        assert [o["summary_dir"] for o in resumed["object"]] == ["./resumed"]
        assert index.query({"sessions": {"in": [None]}})["object"][0]["summary_dir"] == "./ms"
        assert index.query({"max(loss)": {"eq": 1.0}})["count"] == 1
        meta = index.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
        assert meta == [schema.SCHEMA_VERSION, 8]  # (version 9 keeps version 8's readers)

        def as_version_7_client(conn: Any) -> None:
            tables = ["runs"]
            schema.migrate(conn, index.db.dialect, 8, tables, rebuild_newer=False, target=7)

        with pytest.raises(schema.NewerSchemaError, match="upgrade trainledger"):
            index.db.write(as_version_7_client, bump=False)
    if index_url is None:  # and the file itself says so
        conn = sqlite3.connect(path)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        assert {"duration_num", "sessions_num"} <= columns
        conn.close()


def test_saved_positions_never_open_a_file_outside_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared index's saved state is not trusted with file names: one naming a path outside
    the run (a tampered row) makes the run be read from the start, its own files only."""
    from trainledger.query.series_index import SeriesState
    from trainledger.summary import RunReader  # (what series_index reads with)

    run = tensorboard_run(tmp_path, "r", [1.0, 0.5, 0.25])
    outside = tmp_path / "events.out.tfevents.1.host.1.0"
    outside.write_bytes(b"secret")
    opened: list[str] = []
    monkeypatch.setattr(RunReader, "resume", lambda self, positions, tags: opened.extend(positions))
    tampered = SeriesState({}, {"../" + outside.name: 0}, [])
    state = read_series_state(str(run), tampered)
    assert opened == []  # not resumed from the tampered positions
    assert {t: s.as_dict() for t, s in state.tags.items()} == served(run)
    assert all("/" not in name for name in state.positions)
