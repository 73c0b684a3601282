"""The lineage index: a cache of every run's flat record under a base directory, in a
SQLite (WAL) file beside the runs or in a shared PostgreSQL database (``backend.py``).

Why: MindInsight re-parsed every lineage file on every query. Here each query first does a
cheap scan (a directory listing plus a stat of each lineage file) and re-parses only runs whose
lineage files are new or changed; filtering, sorting and paging then run in SQL. The index is
derived from the files: deleting ``index.db`` loses nothing (annotations live in
``annotations.json`` beside it, or in the shared database's own table), a schema change is
migrated (``schema.py``; the runs' status, new in schema 5, is then filled from their run
events alone), and several processes may scan, query and train at once.

``LineageIndex`` is reusable (the web server keeps one per base): it holds one connection,
reopens it if the file was deleted or the server went away, and is safe to share between
threads.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trainledger.query import index_tables, schema, semantics, series_tables
from trainledger.query.annotations import UNSET, check_remark, check_run_id, check_tag
from trainledger.query.conditions import lineage_types, page_bounds, validate_condition
from trainledger.query.database import index_dir
from trainledger.query.discovery import (
    RunFiles,
    Scanner,
    path_error,
    resolve_summary_dir,
    validate_base,
)
from trainledger.query.flat_record import to_record
from trainledger.query.index_urls import index_url
from trainledger.query.open_index import open_db
from trainledger.query.schema import Connection
from trainledger.query.series_fields import check_series, named_series_fields
from trainledger.query.series_index import SeriesState, read_series_state
from trainledger.query.sql import (
    compile_matches,
    compile_order,
    compile_segments,
    compile_where,
)
from trainledger.query.status_fill import fill_statuses

__all__ = ["LineageIndex", "ScanStats"]
log = logging.getLogger(__name__)
_CHUNK = 500


@dataclass
class ScanStats:
    """What one refresh did."""

    runs: int = 0  # run directories found
    parsed: int = 0  # runs (re-)parsed because their lineage files were new or changed
    removed: int = 0  # runs gone from disk
    unreadable: int = 0  # runs whose lineage files held no usable lineage
    statuses: int = 0  # runs of a migrated index whose status was filled from their run events
    series: int = 0  # runs whose series statistics were read (from where the last read stopped)


def _default_reader(run_dir: str) -> dict[str, Any]:
    from trainledger.lineage import read_lineage

    return read_lineage(run_dir)


class LineageIndex:
    """Index of the runs under ``base`` (run dirs up to ``max_depth`` levels below it).

    Main calls: ``query(search_condition)`` (validate, cheap scan, answer in SQL — the same
    result as ``filter_summary_lineage``), ``refresh()``, ``records()``,
    ``set_annotation(run_id, tag=..., remark=...)``, ``get_annotations()``, ``close()``.
    ``index``: where the index lives (``index_urls.index_url``: a ``postgresql://`` URL, or
    None for ``$TRAINLEDGER_INDEX_URL`` else the SQLite file); ``name``: the base's name in a
    shared index (default its real path; the ``s3://`` URL of a base read through a cache).
    """

    def __init__(
        self,
        base: str | os.PathLike[str],
        *,
        max_depth: int = 1,
        reader: Callable[[str], dict[str, Any]] | None = None,
        watch: bool = True,
        index: str | None = None,
        name: str | None = None,
    ) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth expected a non-negative int, received: {max_depth!r}")
        self.base = validate_base(base)
        self.max_depth = max_depth
        self.directory = index_dir(self.base)
        self.db = open_db(self.directory, index_url(index), name or self.base)
        self._epoch: int | None = None
        self._reader = reader or _default_reader
        self._lock = threading.RLock()
        self._scanner = Scanner(self.base, max_depth, watch=watch)
        # summary_dir -> signature of what the index holds, valid while the generation holds
        self._known: dict[str, str] = {}
        self._known_generation: int | None = None
        self._listings_loaded = False
        self._synced: dict[str, RunFiles] = {}
        self._synced_generation: int | None = None
        self._checked: list[RunFiles] | None = None  # last scan result found fully in sync
        self._statuses_filled = False  # no status of a migrated index left to fill
        # summary_dir -> signature of the summary files its statistics hold, per generation
        self._series_known: dict[str, str] = {}
        self._series_generation: int | None = None

    # -- connection -----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """Where the index is: the SQLite file's path, or the database's redacted URL."""
        return self.db.where

    def _fresh(self, conn: Connection) -> Connection:
        """Forget what was cached about the index when the backend says it may have changed
        without a generation bump (a new SQLite file)."""
        if self._epoch != self.db.epoch:
            self._epoch = self.db.epoch
            self._known_generation = None
            self._listings_loaded = False
            self._synced, self._synced_generation, self._checked = {}, None, None
            self._statuses_filled = False
            self._series_generation = None
        return conn

    def _write(self, fn: Callable[[Connection], Any], bump: bool = True) -> Any:
        return self.db.write(lambda conn: fn(self._fresh(conn)), bump)

    def _read(self, fn: Callable[[Connection], Any]) -> Any:
        return self.db.read(lambda conn: fn(self._fresh(conn)))

    def _recovering(self, fn: Callable[[], Any]) -> Any:
        return self.db.recovering(fn)

    def close(self) -> None:
        with self._lock:
            self._scanner.close()  # lets its base watcher go when no one else uses it
            self.db.close()

    def __enter__(self) -> LineageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scanning -------------------------------------------------------------------------

    def refresh(self) -> ScanStats:
        """Cheap scan; re-parse new/changed runs, drop vanished ones, sync annotations."""
        with self._lock:
            return self._recovering(self._refresh)  # type: ignore[no-any-return]

    def _refresh(self) -> ScanStats:
        with self._lock:
            self._sync_annotations()
            if not self._listings_loaded:
                self._scanner.load(self._read(index_tables.load_listings))
                self._listings_loaded = True
            # what the index held before the scan: a run missing from the scan is then really
            # gone, not one that another process wrote and indexed while this scan ran
            seen = self._read(self._known_signatures)
            on_disk = self._scanner.scan()
            if self._scanner.changed:
                self._write(
                    functools.partial(index_tables.save_listings, changed=self._scanner.changed),
                    bump=False,
                )
            stats = ScanStats(runs=len(on_disk))
            if not self._statuses_filled:
                stats.statuses = fill_statuses(self._read, self._write, on_disk)
                self._statuses_filled = True
            if self._synced_generation != self._known_generation:
                self._synced = {}
                self._checked = None
                self._synced_generation = self._known_generation
            synced = self._synced  # runs already matched against this generation of the index
            changed = []
            if on_disk is self._checked:  # the very same scan result, already matched
                return stats
            stats.series = self._refresh_series(on_disk)
            for run in on_disk:
                if synced.get(run.summary_dir) is run:
                    continue
                if seen.get(run.summary_dir) == run.signature:
                    synced[run.summary_dir] = run
                else:
                    changed.append(run)
            if not changed and len(on_disk) == len(seen):
                gone = []  # every known run is on disk (and names are unique)
            else:
                present = {r.summary_dir for r in on_disk}
                gone = [d for d in seen if d not in present]
            stats.removed = len(gone)
            if gone:
                self._write(functools.partial(index_tables.delete_runs, summary_dirs=gone))
            for start in range(0, len(changed), _CHUNK):
                batch = [(run, self._parse(run)) for run in changed[start : start + _CHUNK]]
                stats.parsed += len(batch)
                store = index_tables.store_batch
                stats.unreadable += self._write(
                    functools.partial(store, batch=batch, dialect=self.db.dialect)
                )
            self._checked = None if (changed or gone) else on_disk
            return stats

    def _refresh_series(self, on_disk: list[RunFiles]) -> int:
        """Read the series statistics of runs whose summary files changed (from where the
        last read stopped: ``series_index``); forget those of runs that are gone."""

        def known(conn: Connection) -> dict[str, str]:
            generation = schema.read_meta(conn, "generation")
            if generation != self._series_generation:
                self._series_known = series_tables.series_signatures(conn)
                self._series_generation = generation
            return self._series_known

        seen = self._read(known)
        stale, hits = [], 0
        for run in on_disk:
            signature = seen.get(run.summary_dir)
            hits += signature is not None
            if (signature or "") != run.series_signature:
                stale.append(run)
        if hits < len(seen):
            present = {r.summary_dir for r in on_disk}
            self._write(
                functools.partial(
                    series_tables.delete_series, summary_dirs=[d for d in seen if d not in present]
                )
            )
        for start in range(0, len(stale), _CHUNK):
            batch = stale[start : start + _CHUNK]

            def load(conn: Connection, batch: list[RunFiles] = batch) -> list[SeriesState | None]:
                return [series_tables.load_series(conn, r.summary_dir) for r in batch]

            olds = self._read(load)
            states = [read_series_state(r.path, old) for r, old in zip(batch, olds, strict=True)]

            def store(
                conn: Connection, batch: list[RunFiles] = batch, states: list[SeriesState] = states
            ) -> None:
                for run, state in zip(batch, states, strict=True):
                    series_tables.store_series(conn, run.summary_dir, run.series_signature, state)

            self._write(store)
        return len(stale)

    def _known_signatures(self, conn: Connection) -> dict[str, str]:
        """What the index holds per run, re-read only when another write happened."""
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        if generation != self._known_generation:
            self._known = dict(
                conn.execute(
                    "SELECT runs.summary_dir, r.signature FROM runs "
                    "JOIN records AS r ON r.run_id = runs.id "
                    "UNION ALL SELECT summary_dir, signature FROM unreadable"
                ).fetchall()
            )
            self._known_generation = generation
        return self._known

    def _parse(self, run: RunFiles) -> semantics.Record | None:
        try:
            lineage = self._reader(run.path)
        except Exception as exc:  # a damaged run must not break queries over the others
            log.warning("cannot read lineage of %s: %s", run.path, exc)
            return None
        if not lineage:
            return None
        return to_record(lineage, run.summary_dir, run.update_time)

    def add_records(self, records: Iterable[semantics.Record]) -> None:
        """Insert ready-made records (no files); for tests and benchmarks of the SQL path.

        Records whose run directory does not exist are removed by the next ``refresh()``.
        """
        with self._lock:
            items = sorted(records, key=lambda r: (r.get("update_time", 0.0), r["summary_dir"]))

            def store(conn: Connection) -> None:
                index_tables.delete_runs(conn, [r["summary_dir"] for r in items])
                series_tables.delete_series(conn, [r["summary_dir"] for r in items])
                for rec in items:
                    index_tables.insert_record(conn, rec, "added", self.db.dialect)
                    tags = {
                        t: series_tables.stats_from_dict(s)
                        for t, s in (rec.get("series") or {}).items()
                    }
                    series_tables.store_stats(conn, rec["summary_dir"], tags)

            self._write(store)

    # -- annotations ----------------------------------------------------------------------

    def _sync_annotations(self, force: bool = False) -> None:
        self.db.sync_annotations(force)

    def set_annotation(
        self, run_id: str, *, tag: Any = UNSET, remark: Any = UNSET
    ) -> dict[str, Any]:
        """Set a run's tag (int 0..10) and/or remark (str <= 1000 chars); None clears one.

        Returns the run's annotation afterwards, e.g. ``{"tag": 3, "remark": "baseline"}``.
        """
        check_run_id(run_id)
        if tag is not UNSET:
            check_tag(tag)
        if remark is not UNSET:
            check_remark(remark)
        with self._lock:
            return self.db.annotate(run_id, tag, remark)

    def get_annotations(self) -> dict[str, dict[str, Any]]:
        """All annotations: {run_id: {"tag": int, "remark": str}} (keys present when set)."""
        with self._lock:
            return self.db.annotations()

    def data_stamp(self) -> tuple[Any, object]:
        """Changes whenever any process changed the indexed runs or an annotation (for
        caches of answers): (the index generation, the annotations' stamp)."""
        with self._lock:

            def generation(conn: Connection) -> Any:
                return schema.read_meta(conn, "generation")

            return self._recovering(lambda: (self._read(generation), self.db.annotations_stamp()))

    # -- querying -------------------------------------------------------------------------

    def _resolve(self, cond: dict[str, Any]) -> dict[str, Any]:
        """Map summary_dir condition values to "./rel"; reject paths outside the base."""
        ops = cond.get("summary_dir")
        if not ops:
            return cond

        def one(value: Any) -> Any:
            if not isinstance(value, str):
                return value
            rel = resolve_summary_dir(self.base, value)
            if rel is None:
                raise path_error(
                    f"The summary_dir condition names a path outside the summary_base_dir: "
                    f"{value!r}."
                )
            return rel

        resolved = {
            op: [one(v) for v in value] if op in ("in", "not_in") else one(value)
            for op, value in ops.items()
        }
        return {**cond, "summary_dir": resolved}

    def _resolve_all(self, cond: dict[str, Any]) -> dict[str, Any]:
        """``_resolve`` through the ``or``/``and``/``not`` conditions too."""
        out = self._resolve(cond)
        for key in ("or", "and"):
            if key in out:
                out = {**out, key: [self._resolve_all(sub) for sub in out[key]]}
        if "not" in out:
            out = {**out, "not": self._resolve_all(out["not"])}
        return out

    def query(
        self, search_condition: Any = None, *, refresh: bool = True, series: Sequence[str] = ()
    ) -> dict[str, Any]:
        """``filter_summary_lineage`` over this index: validate, scan, filter/sort/page in SQL.
        ``series``: statistics to add to each object besides those the condition names."""
        cond = self._resolve_all(validate_condition(search_condition))
        start, stop = page_bounds(cond)
        fetch = functools.partial(
            index_tables.fetch,
            where=compile_where(cond, self.db.dialect),
            matches=compile_matches(cond, self.db.dialect),
            order=compile_order(cond),
            limit=None if stop is None else stop - start,
            offset=start,
            segments=compile_segments(cond),
        )

        def answer() -> Any:
            if refresh:
                self._refresh()
            else:
                self._sync_annotations()
            return self._read(fetch)

        asked = [*cond.get("series", []), *check_series(series)]
        fields = list(dict.fromkeys([*named_series_fields(cond), *asked]))

        def answer_with_series() -> Any:
            count, records, types = answer()
            dirs = [r["summary_dir"] for r in records]
            values = self._read(lambda c: series_tables.series_values(c, dirs, fields))
            return count, records, types, values

        with self._lock:
            count, records, types, values = self._recovering(
                answer_with_series if fields else lambda: (*answer(), None)
            )
        parts = lineage_types(cond)
        return {
            "customized": semantics.finish_customized(types),
            "object": [
                semantics.build_object(r, parts, values and values[r["summary_dir"]])
                for r in records
            ],
            "count": count,
        }

    def series_tags(self) -> list[str]:
        """Every scalar tag some run's series statistics hold, sorted (the column chooser's
        ``<stat>(<tag>)`` fields)."""

        with self._lock:
            return self._recovering(lambda: self._read(series_tables.series_tags))  # type: ignore[no-any-return]

    def records(self, *, refresh: bool = False) -> list[semantics.Record]:
        """Every indexed run as a flat record (with dataset_mark and added_info)."""

        def load() -> Any:
            if refresh:
                self._refresh()
            else:
                self._sync_annotations()
            return self._read(index_tables.all_records)

        with self._lock:
            return self._recovering(load)  # type: ignore[no-any-return]
