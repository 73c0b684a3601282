"""Overviews of long series in the index (schema 11): built where the series statistics are
read, extended by appends as a rebuild would make them, rebuilt when the rule reaches back,
never extended or served once stale, and migrated from schema 10 on both engines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runs import write_run
from trainledger.lineage.records import RunValues
from trainledger.query import LineageIndex, overview_fresh, series_index, series_overviews
from trainledger.query import series_tables as tables
from trainledger.summary import RunReader, SeriesOverview, SummaryRecord, resolve_series

LONG = series_overviews.MIN_POINTS + 5_000


def values_of(n: int, seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).random(n)
    values[n // 3] = 40.0  # a one-step spike
    values[n // 2 : n // 2 + 3_000] = np.nan  # a gap longer than a bucket
    values[2 * n // 3] = -np.inf
    return values


def write_points(record: SummaryRecord, values: np.ndarray, start: int = 0) -> None:
    rows = [(start + i, 1.7e9 + start + i, float(v)) for i, v in enumerate(values.tolist())]
    record.record_scalar_rows(("loss",), rows)


def long_run(base: Path, name: str = "long", n: int = LONG) -> Path:
    run_dir = write_run(base, name, run=RunValues(status="finished", duration=1.0))
    with SummaryRecord(run_dir) as record:
        write_points(record, values_of(n))
    return run_dir


def rebuilt(run_dir: Path, tag: str = "loss") -> SeriesOverview:
    """The overview of the series as the UI serves it, built from all its points at once."""
    reader = RunReader(run_dir)
    raw = reader.read_scalar_sessions()[tag]
    return SeriesOverview.of(*resolve_series(*raw, reader.session_formats, reader.session_starts))


def stored(index: LineageIndex, summary_dir: str, tag: str = "loss") -> SeriesOverview | None:
    found = index.series_overview(summary_dir, tag)
    return None if found is None else SeriesOverview.from_bytes(found[1])


def same(a: SeriesOverview | None, b: SeriesOverview) -> bool:
    return (
        a is not None
        and (a.width, a.count, a.ordered) == (b.width, b.count, b.ordered)
        and (a.buckets.tobytes() == b.buckets.tobytes())
    )


def test_a_long_series_gets_an_overview_a_short_one_none(tmp_path: Path, index_url: Any) -> None:
    """Written by ``SummaryRecord``, so the first index could take the sidecar: a long series
    makes it read the file once, for the overview; a short run still reads nothing."""
    run_dir = long_run(tmp_path)
    short = write_run(tmp_path, "short", run=RunValues(status="finished", duration=1.0))
    with SummaryRecord(short) as record:
        write_points(record, values_of(500))
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        assert same(stored(index, "./long"), rebuilt(run_dir))
        assert stored(index, "./short") is None
        assert index.query({"max(loss)": {"eq": 40.0}})["count"] == 2  # (the statistics too)
        signature, _ = index.series_overview("./long", "loss")  # type: ignore[misc]
    assert overview_fresh(str(run_dir), signature)


def test_appends_extend_the_overview_as_a_rebuild_makes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live writer's appends are read from where the last read stopped (no read from the
    start), and the overview grown by them is bit for bit the one built at once."""
    run_dir = write_run(tmp_path, "live", run=RunValues(status="running", duration=1.0))
    values = values_of(3 * LONG, seed=1)
    starts: list[str] = []
    full = series_index._build_overviews
    monkeypatch.setattr(
        series_index, "_build_overviews", lambda s, p: (starts.append("full"), full(s, p))
    )
    with SummaryRecord(run_dir) as record, LineageIndex(tmp_path) as index:
        cuts = [0, 1_000, LONG, LONG + 7, 2 * LONG + 333, 3 * LONG]  # short, crossing, long
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            write_points(record, values[lo:hi], start=lo)
            record.flush()
            index.refresh()
            overview = stored(index, "./live")
            if hi < series_overviews.MIN_POINTS:
                assert overview is None
            else:
                assert same(overview, rebuilt(run_dir))
            if hi == LONG:  # (read from the start: it grew long without an overview)
                assert starts and starts.pop() == "full"
    assert starts in ([], ["full"])  # no read from the start once the overview exists


def test_a_restart_that_reaches_back_rebuilds_it(tmp_path: Path) -> None:
    """A resumed writer restarts at an earlier step: TensorBoard's rule drops the points at
    or after it, which an append cannot do, so the series is read from the start."""
    run_dir = long_run(tmp_path)
    with LineageIndex(tmp_path) as index:
        index.refresh()
        from torch.utils.tensorboard import SummaryWriter

        with SummaryWriter(str(run_dir), purge_step=LONG - 3_000) as writer:  # (SessionLog.START)
            for step in range(LONG - 3_000, LONG - 2_970):
                writer.add_scalar("loss", 7.0, step)
        for path in run_dir.glob("events.out.tfevents.*"):  # (another writer process)
            if path.stat().st_size < 10_000:
                path.rename(path.with_name(path.name.replace(f".{os.getpid()}.", ".999999.")))
        index.refresh()
        overview = stored(index, "./long")
    assert overview is not None and overview.count == LONG - 2_970
    assert same(overview, rebuilt(run_dir))


def test_an_overview_a_version_10_client_left_stale_is_not_extended(tmp_path: Path) -> None:
    """A client of version 10 stores series without overviews: the overview it leaves names
    other files than the statistics, so the next read starts over and builds it again."""
    run_dir = long_run(tmp_path)
    with LineageIndex(tmp_path) as index:
        index.refresh()

        def as_version_10(conn: Any) -> None:
            state = tables.load_series(conn, "./long")
            conn.execute("DELETE FROM series_stats WHERE summary_dir = ?", ("./long",))
            conn.execute("DELETE FROM series_files WHERE summary_dir = ?", ("./long",))
            tables.store_stats(conn, "./long", state.tags)
            conn.execute(
                "INSERT INTO series_files (summary_dir, signature, state) VALUES (?, ?, ?)",
                ("./long", "other", '{"positions": {}, "scalar_tags": []}'),
            )

        index.db.write(as_version_10, bump=True)
        state = index.db.read(lambda c: tables.load_series(c, "./long", True))
        assert state is not None and state.overviews == {}  # (stale: not loaded)
        index.refresh()
        assert same(stored(index, "./long"), rebuilt(run_dir))


def test_overview_fresh_follows_the_files(tmp_path: Path) -> None:
    run_dir = long_run(tmp_path)
    with LineageIndex(tmp_path) as index:
        index.refresh()
        signature, _ = index.series_overview("./long", "loss")  # type: ignore[misc]
    assert overview_fresh(str(run_dir), signature)
    with SummaryRecord(run_dir) as record:
        write_points(record, np.ones(3), start=LONG)
    assert not overview_fresh(str(run_dir), signature)
    assert not overview_fresh(str(run_dir), "")
    assert not overview_fresh(str(run_dir), "events.out.tfevents.1:x:y")


def test_a_schema_10_index_gets_overviews_of_its_long_runs_only(
    tmp_path: Path, index_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Schema 11 from the previous release's index, on SQLite and PostgreSQL: the table
    added, only the runs holding a long series read again (once), and version 10 code can
    still use the index."""
    from tests.query.old_layouts import to_schema_10
    from trainledger.query import schema

    long_run(tmp_path)
    short = write_run(tmp_path, "short", run=RunValues(status="finished", duration=1.0))
    with SummaryRecord(short) as record:
        write_points(record, values_of(500))
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        before = index.query({"sorted_name": "summary_dir"})
        index.db.write(lambda c: to_schema_10(c, index.db.dialect), bump=True)
    read: list[str] = []
    real = series_index.read_series_state
    monkeypatch.setattr(
        "trainledger.query.index_refresh.read_series_state",
        lambda run_dir, *a, **k: (read.append(Path(run_dir).name), real(run_dir, *a, **k))[1],
    )
    with LineageIndex(tmp_path, index=index_url) as index:
        index.refresh()
        # (short too: it holds a NaN, and schema 13 reads such runs again for its kind)
        assert read == ["long", "short"]
        assert stored(index, "./long") is not None and stored(index, "./short") is None
        assert index.query({"sorted_name": "summary_dir"}) == before
        meta = index.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
        assert meta[0] == schema.SCHEMA_VERSION
        assert schema.usable(meta[0], meta[1], known=10)  # version 10 code keeps using it
        index.refresh()
        assert read == ["long", "short"]
