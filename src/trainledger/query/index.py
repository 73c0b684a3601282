"""The lineage index: a SQLite (WAL) cache of every run's flat record under a base directory.

Why: MindInsight re-parsed every lineage file on every query. Here each query first does a
cheap scan (a directory listing plus a stat of each lineage file) and re-parses only runs whose
lineage files are new or changed; filtering, sorting and paging then run in SQL. The index is
derived from the files: deleting ``index.db`` loses nothing (annotations live in
``annotations.json`` beside it and are read back), a schema-version change rebuilds it, and
several processes may scan, query and train at once (see ``store.py``).

``LineageIndex`` is reusable (the web server keeps one per base): it holds one connection,
reopens it if the file was deleted, and is safe to share between threads.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trainledger.errors import LineageQuerySummaryDataError
from trainledger.query import index_tables, semantics
from trainledger.query.annotations import (
    UNSET,
    AnnotationFile,
    check_remark,
    check_run_id,
    check_tag,
)
from trainledger.query.conditions import lineage_types, page_bounds, validate_condition
from trainledger.query.database import connect, index_dir, retrying
from trainledger.query.discovery import (
    RunFiles,
    Scanner,
    path_error,
    resolve_summary_dir,
    validate_base,
)
from trainledger.query.flat_record import to_record
from trainledger.query.sql import compile_order, compile_where
from trainledger.storage import INDEX_FILE

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


def _default_reader(run_dir: str) -> dict[str, Any]:
    from trainledger.lineage import read_lineage

    return read_lineage(run_dir)


class LineageIndex:
    """Index of the runs under ``base`` (run dirs up to ``max_depth`` levels below it).

    Main calls: ``query(search_condition)`` (validate, cheap scan, answer in SQL — the same
    result as ``filter_summary_lineage``), ``refresh()``, ``records()``,
    ``set_annotation(run_id, tag=..., remark=...)``, ``get_annotations()``, ``close()``.
    """

    def __init__(
        self,
        base: str | os.PathLike[str],
        *,
        max_depth: int = 1,
        reader: Callable[[str], dict[str, Any]] | None = None,
        watch: bool = True,
    ) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth expected a non-negative int, received: {max_depth!r}")
        self.base = validate_base(base)
        self.max_depth = max_depth
        self.directory = index_dir(self.base)
        self.path = os.path.join(self.directory, INDEX_FILE)
        self._reader = reader or _default_reader
        self._annotations = AnnotationFile(self.directory)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._ino: int | None = None
        self._annotations_seen: int | None | bool = False
        self._scanner = Scanner(self.base, max_depth, watch=watch)
        # summary_dir -> signature of what the index holds, valid while the generation holds
        self._known: dict[str, str] = {}
        self._known_generation: int | None = None
        self._listings_loaded = False
        self._synced: dict[str, RunFiles] = {}
        self._synced_generation: int | None = None
        self._checked: list[RunFiles] | None = None  # last scan result found fully in sync

    # -- connection -----------------------------------------------------------------------

    def _db(self, damaged: str | None = None) -> sqlite3.Connection:
        """The connection, reopened if ``index.db`` was deleted or replaced meanwhile.

        ``damaged`` (a reason) reopens it after moving the file seen so far aside.
        """
        try:
            ino = os.stat(self.path).st_ino
        except FileNotFoundError:
            ino = None
        fresh = self._pid == os.getpid()
        if self._conn is not None and ino == self._ino and fresh and damaged is None:
            return self._conn
        if self._conn is not None and fresh:
            self._conn.close()  # (a connection inherited through fork is dropped, not closed)
        self._conn = None
        self._pid = os.getpid()
        os.makedirs(self.directory, exist_ok=True)
        self._conn = connect(
            self.path, damaged=None if damaged is None else (damaged, self._ino or ino)
        )
        self._ino = os.stat(self.path).st_ino
        self._annotations_seen = False
        self._known_generation = None
        self._listings_loaded = False
        self._synced, self._synced_generation, self._checked = {}, None, None
        return self._conn

    def _damage(self, exc: Exception) -> str | None:
        """Whether an error means the file is damaged (the reason), or is something else.

        A record that does not decode and SQLite's own corruption errors are damage; for any
        other database error ``PRAGMA quick_check`` decides (a full disk or a read-only file
        is not damage: rebuilding would not help).
        """
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, json.JSONDecodeError) or any(
            word in str(exc).lower() for word in ("malformed", "not a database", "corrupt")
        ):
            return text
        try:
            rows = self._db().execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as check:
            return f"{text}; quick_check: {check}"
        if rows != [("ok",)]:
            return f"{text}; quick_check: {rows[:3]}"
        return None

    def _recovering(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn``; if the index file proves damaged, move it aside, rebuild, run it again.

        Why: the index is derived data, so damage (garbage pages, a truncated file, a record
        that no longer decodes) costs a rebuild from the run files, never an error loop.
        """
        try:
            return fn()
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            reason = self._damage(exc)
            if reason is None:
                raise LineageQuerySummaryDataError(
                    f"Query summary data error: the lineage index {self.path} failed: {exc}"
                ) from exc
            self._db(damaged=reason)
        try:
            return fn()
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise LineageQuerySummaryDataError(
                f"Query summary data error: the lineage index {self.path} failed again after "
                f"a rebuild: {exc}"
            ) from exc

    def close(self) -> None:
        with self._lock:
            self._scanner.close()  # lets its base watcher go when no one else uses it
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> LineageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, fn: Callable[[sqlite3.Connection], Any], bump: bool = True) -> Any:
        """Run ``fn`` in one short BEGIN IMMEDIATE transaction, retried while busy.

        ``bump`` advances the index generation (runs changed), which tells every process to
        re-read what the index holds.
        """
        conn = self._db()

        def attempt() -> Any:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                if bump:
                    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                conn.execute("COMMIT")
                return result
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        return retrying(attempt)

    def _read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn`` in one read transaction (a consistent snapshot), retried while busy."""
        conn = self._db()

        def attempt() -> Any:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

        return retrying(attempt)

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
            on_disk = self._scanner.scan()
            if self._scanner.changed:
                self._write(
                    functools.partial(index_tables.save_listings, changed=self._scanner.changed),
                    bump=False,
                )
            stats = ScanStats(runs=len(on_disk))
            seen = self._read(self._known_signatures)
            if self._synced_generation != self._known_generation:
                self._synced = {}
                self._checked = None
                self._synced_generation = self._known_generation
            synced = self._synced  # runs already matched against this generation of the index
            changed = []
            if on_disk is self._checked:  # the very same scan result, already matched
                return stats
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
                stats.unreadable += self._write(
                    functools.partial(index_tables.store_batch, batch=batch)
                )
            self._checked = None if (changed or gone) else on_disk
            return stats

    def _known_signatures(self, conn: sqlite3.Connection) -> dict[str, str]:
        """What the index holds per run, re-read only when another write happened."""
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        if generation != self._known_generation:
            self._known = dict(
                conn.execute(
                    "SELECT summary_dir, signature FROM runs "
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

            def store(conn: sqlite3.Connection) -> None:
                index_tables.delete_runs(conn, [r["summary_dir"] for r in items])
                for rec in items:
                    index_tables.insert_record(conn, rec, "added")

            self._write(store)

    # -- annotations ----------------------------------------------------------------------

    def _sync_annotations(self, force: bool = False) -> None:
        """Mirror ``annotations.json`` into the index table when the file changed."""
        mtime = self._annotations.mtime_ns()
        conn = self._db()
        if not force and mtime == self._annotations_seen:
            return
        stored = conn.execute("SELECT value FROM meta WHERE key = 'annotations_mtime'").fetchone()
        if not force and stored is not None and stored[0] == mtime:
            self._annotations_seen = mtime
            return
        items = self._annotations.load()

        def mirror(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM annotations")
            c.executemany(
                "INSERT INTO annotations (run_id, tag, remark) VALUES (?, ?, ?)",
                [(k, v.get("tag"), v.get("remark")) for k, v in items.items()],
            )
            c.execute(
                "INSERT INTO meta (key, value) VALUES ('annotations_mtime', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (mtime,),
            )

        self._write(mirror)
        self._annotations_seen = mtime

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
            entry = self._annotations.update(run_id, tag=tag, remark=remark)
            self._recovering(functools.partial(self._sync_annotations, force=True))
            return entry

    def get_annotations(self) -> dict[str, dict[str, Any]]:
        """All annotations: {run_id: {"tag": int, "remark": str}} (keys present when set)."""
        with self._lock:
            self._recovering(self._sync_annotations)
            return self._annotations.load()

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

    def query(self, search_condition: Any = None, *, refresh: bool = True) -> dict[str, Any]:
        """``filter_summary_lineage`` over this index: validate, scan, filter/sort/page in SQL."""
        cond = self._resolve(validate_condition(search_condition))
        start, stop = page_bounds(cond)
        fetch = functools.partial(
            index_tables.fetch,
            where=compile_where(cond),
            order=compile_order(cond),
            limit=None if stop is None else stop - start,
            offset=start,
        )

        def answer() -> Any:
            if refresh:
                self._refresh()
            else:
                self._sync_annotations()
            return self._read(fetch)

        with self._lock:
            count, records, types = self._recovering(answer)
        parts = lineage_types(cond)
        return {
            "customized": semantics.finish_customized(types),
            "object": [semantics.build_object(record, parts) for record in records],
            "count": count,
        }

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
