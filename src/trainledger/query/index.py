"""The lineage index: a cache of every run's flat record under a base directory, in a
SQLite (WAL) file beside the runs or in a shared PostgreSQL database (``backend.py``).

Why: MindInsight re-parsed every lineage file on every query. Here each query first does a
cheap scan (a directory listing plus a stat of each lineage file) and re-parses only runs whose
lineage files are new or changed; filtering, sorting and paging then run in SQL. The index is
derived from the files: deleting ``index.db`` loses nothing (annotations live in
``annotations.json`` beside it, or in the shared database's own table), a schema change is
migrated (``schema.py``; the runs' status, new in schema 5, is then filled from their run
events alone), and several processes may scan, query and train at once. The refresh that
keeps the index in step with the run directories is ``index_refresh.py``'s.

``LineageIndex`` is reusable (the web server keeps one per base): it holds one connection,
reopens it if the file was deleted or the server went away, and is safe to share between
threads.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trainledger.errors import IndexRebuildingError
from trainledger.query import (
    answer_forms,
    index_tables,
    page_read,
    scan_state,
    schema,
    semantics,
    series_tables,
)
from trainledger.query.annotations import UNSET, check_remark, check_run_id, check_tag
from trainledger.query.conditions import lineage_types, page_bounds, validate_condition
from trainledger.query.count_cache import CountCache
from trainledger.query.database import SqliteDb
from trainledger.query.discovery import Scanner
from trainledger.query.flat_record import restore_nan
from trainledger.query.gc_pause import gc_paused
from trainledger.query.index_location import durable_dir, index_dir
from trainledger.query.index_refresh import IndexRefresh, ScanStats
from trainledger.query.index_urls import index_url
from trainledger.query.open_index import open_db
from trainledger.query.record_cache import RecordCache
from trainledger.query.safe_paths import path_error, resolve_summary_dir, validate_base
from trainledger.query.schema import Connection
from trainledger.query.series_fields import check_series, named_series_fields
from trainledger.query.sql import (
    compile_matches,
    compile_members,
    compile_order,
    compile_range,
    compile_segments,
    compile_where,
)

__all__ = ["LineageIndex", "ScanStats"]


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
        self._built_epoch: int | None = None  # the epoch whose file a full scan completed
        self._lock = threading.RLock()
        self._closed = False
        self._scanner = Scanner(self.base, max_depth, watch=watch)
        self._refresher = IndexRefresh(self._scanner, reader, name or self.base, self.directory)
        self._refresher.on_watch_trusted = self._watch_trusted
        self._records = RecordCache()  # decoded records between queries (record_cache.py)
        self._counts = CountCache()  # a condition's count between its pages (count_cache.py)

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
            self._refresher.forget()
            self._records.forget()
            self._counts.forget()
        return conn

    def _write(self, fn: Callable[[Connection], Any], bump: bool = True) -> Any:
        return self.db.write(lambda conn: fn(self._fresh(conn)), bump)

    def _read(self, fn: Callable[[Connection], Any]) -> Any:
        return self.db.read(lambda conn: fn(self._fresh(conn)))

    def _recovering(self, fn: Callable[[], Any]) -> Any:
        return self.db.recovering(fn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
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

    def apply_registry(self) -> None:
        """Bring the runs' named-model fields in step with the registry's log at once (a
        registry write calls it: ``registry_fields.py``)."""
        from trainledger.query.registry_fields import apply_registry

        with self._lock:
            directory, dialect = self.directory, self.db.dialect
            self._recovering(lambda: self._write(lambda c: apply_registry(c, directory, dialect)))

    def _watch_trusted(self) -> None:
        """The base watcher became trusted: refresh now, on its thread, so that the proof
        that spares later queries any check is in place before the next query (an index
        closed meanwhile is left alone)."""
        if not self._closed:
            self.refresh()

    def _refresh(self) -> ScanStats:
        with self._lock:
            self._sync_annotations()
            self._read(lambda conn: None)  # the file as it is now: a new one is scanned in full
            epoch = self.db.epoch
            stats = self._refresher.refresh(self._read, self._write, self.db.dialect)
            if self.db.epoch == epoch:  # a file replaced mid-scan got only part of it
                self._mark_built()
            return stats

    def _mark_built(self) -> None:
        """Record in the index that a full scan filled it (once per file and process). Only
        a SQLite file can be deleted or replaced under a reader; a shared database cannot."""
        if self._built_epoch != self.db.epoch and isinstance(self.db, SqliteDb):
            self._write(functools.partial(scan_state.mark_built, base=self.base), bump=False)
            self._built_epoch = self.db.epoch

    def _built(self, read: Callable[[Connection], Any]) -> Callable[[Connection], Any]:
        """``read``, in the same transaction after ``_check_built`` (a file replaced between
        two reads would otherwise be checked in the first and answered from in the second)."""

        def checked(conn: Connection) -> Any:
            self._check_built(conn)
            return read(conn)

        return checked

    def _check_built(self, conn: Connection) -> None:
        """Refuse to answer from an index no scan has completed: a deleted or replaced
        ``index.db`` is new and empty until the rebuild commits, and its answer would be
        "no runs". One meta lookup per file; nothing once it was seen built."""
        if self._built_epoch == self.db.epoch or not isinstance(self.db, SqliteDb):
            return
        if not scan_state.is_built(conn, self.base):
            raise IndexRebuildingError(
                f"the lineage index {self.path} is being rebuilt from the run files (it was "
                "deleted or replaced); retry in a few seconds"
            )
        self._built_epoch = self.db.epoch

    def add_records(self, records: Iterable[semantics.Record]) -> None:
        """Insert ready-made records (no files); for tests and benchmarks of the SQL path.

        Records whose run directory does not exist are removed by the next ``refresh()``.
        """
        with self._lock:
            items = sorted(records, key=lambda r: (r.get("update_time", 0.0), r["summary_dir"]))
            # a signature of its own: a run stored again must not match a cached record
            # (``record_cache.py``), and never matches a scan's
            signature = "added " + os.urandom(8).hex()

            def store(conn: Connection) -> None:
                index_tables.delete_runs(conn, [r["summary_dir"] for r in items])
                series_tables.delete_series(conn, [r["summary_dir"] for r in items])
                for rec in items:
                    index_tables.insert_record(conn, rec, signature, self.db.dialect)
                    tags = {
                        t: series_tables.stats_from_dict(s)
                        for t, s in (rec.get("series") or {}).items()
                    }
                    series_tables.store_stats(conn, rec["summary_dir"], tags)

            self._write(store)
            self._mark_built()  # the records given are the whole index (tests, benchmarks)

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
            if isinstance(self.db, SqliteDb):  # the file beside the index: never scratch space
                durable_dir(self.base)
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
        self,
        search_condition: Any = None,
        *,
        refresh: bool = True,
        series: Sequence[str] = (),
        nan_values: bool = False,
    ) -> dict[str, Any]:
        """``filter_summary_lineage`` over this index: validate, scan, filter/sort/page in SQL.
        ``series``: statistics to add to each object besides those the condition names.
        ``nan_values``: a value that was NaN is NaN in the objects (the web UI's answer), not
        None (MindInsight's, and what conditions and sorting see: ``flat_record.nan_fields``)."""
        cond = self._resolve_all(validate_condition(search_condition))
        start, stop = page_bounds(cond)
        fetch = functools.partial(
            page_read.fetch,
            where=compile_where(cond, self.db.dialect),
            matches=compile_matches(cond, self.db.dialect),
            members=compile_members(cond, self.db.dialect),
            run_range=compile_range(cond, self.db.dialect),
            order=compile_order(cond),
            limit=None if stop is None else stop - start,
            offset=start,
            segments=compile_segments(cond),
            cache=self._records,
            counts=self._counts,
        )

        def answer() -> Any:
            if refresh:
                self._refresh()
            else:
                self._sync_annotations()
            with gc_paused():
                return self._read(fetch if refresh else self._built(fetch))

        asked = [*cond.get("series", []), *check_series(series)]
        fields = list(dict.fromkeys([*named_series_fields(cond), *asked]))

        def answer_with_series() -> Any:
            count, records, customized = answer()
            dirs = [r["summary_dir"] for (r, _), _ in records]
            values = self._read(lambda c: series_tables.series_values(c, dirs, fields))
            return count, records, customized, values

        with self._lock:
            count, records, customized, values = self._recovering(
                answer_with_series if fields else lambda: (*answer(), None)
            )
        with gc_paused():
            objects = answer_forms.build_page(records, lineage_types(cond), values)
        if nan_values:
            restore_nan(objects, [record for (record, _), _ in records])
        return {
            "customized": semantics.copied_customized(customized),
            "object": objects,
            "count": count,
        }

    def series_tags(self) -> list[str]:
        """Every scalar tag some run's series statistics hold, sorted (the column chooser's
        ``<stat>(<tag>)`` fields)."""

        with self._lock:
            return self._recovering(lambda: self._read(series_tables.series_tags))  # type: ignore[no-any-return]

    def nonfinite_series(self, summary_dirs: list[str]) -> dict[str, list[dict[str, Any]]]:
        """``series_tables.nonfinite_series`` as the index holds it now (no refresh): the
        series of these runs that went NaN or infinite."""
        read = functools.partial(series_tables.nonfinite_series, summary_dirs=summary_dirs)
        with self._lock:
            return self._recovering(lambda: self._read(read))  # type: ignore[no-any-return]

    def series_overview(self, summary_dir: str, tag: str) -> tuple[str, bytes] | None:
        """(signature of the files it was read from, bytes) of a long series' overview
        (``series_overviews.py``), as the index holds it now (no refresh); None: none."""
        read = functools.partial(series_tables.read_overview, summary_dir=summary_dir, tag=tag)
        with self._lock:
            return self._recovering(lambda: self._read(read))  # type: ignore[no-any-return]

    def records(self, *, refresh: bool = False) -> list[semantics.Record]:
        """Every indexed run as a flat record (with dataset_mark and added_info)."""

        def load() -> Any:
            if refresh:
                self._refresh()
            else:
                self._sync_annotations()
            with gc_paused():
                return self._read(
                    index_tables.all_records if refresh else self._built(index_tables.all_records)
                )

        with self._lock:
            return self._recovering(load)  # type: ignore[no-any-return]
