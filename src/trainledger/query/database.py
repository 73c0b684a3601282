"""SQLite plumbing for the index: location, connection settings, schema, retries.

Why split from ``index.py``: the concurrency rules live here in one place. The database is in
WAL mode (readers never block the writer), every write is a short ``BEGIN IMMEDIATE``
transaction (so a writer waits on the busy handler instead of failing on a lock upgrade), and
``retrying`` re-runs an operation on "database is locked/busy" with backoff, so that error never
reaches the user. The index is derived data: a damaged file is rebuilt; the schema is
migrated (``schema.py``). ``SqliteDb`` is this backend behind ``backend.IndexDb``.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import random
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from trainledger.errors import LineageQuerySummaryDataError
from trainledger.query import schema
from trainledger.query.annotations import AnnotationFile
from trainledger.query.backend import IndexDb
from trainledger.storage import INDEX_FILE, exclusive_lock

BUSY_TIMEOUT_MS = 20_000
#: the page cache of a connection, KiB (SQLite's default is 2 MiB): a count reads every
#: matching row, so with the default cache each query read the index's pages from the OS
#: again (100,000 runs: 12 MB of runs rows, 11 MB of a custom-value index); memory is
#: taken only as pages are read
CACHE_KIB = 64 * 1024
RETRY_SECONDS = 120.0
T = TypeVar("T")
log = logging.getLogger(__name__)
_MAGIC = b"SQLite format 3\x00"


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retrying(fn: Callable[[], T], deadline: float = RETRY_SECONDS) -> T:
    """Run ``fn``; on a busy/locked database, back off and try again (bounded)."""
    end = time.monotonic() + deadline
    delay = 0.01
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            if time.monotonic() > end:
                raise LineageQuerySummaryDataError(
                    "Query summary data error: the lineage index stayed busy for "
                    f"{deadline:.0f} s ({exc})."
                ) from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)


def _remove_db_files(path: str, main: bool) -> None:
    for suffix in ("", "-wal", "-shm") if main else ("-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def damage(path: str) -> str | None:
    """Why the file at ``path`` cannot be a whole SQLite database, or None if it may be.

    Cheap checks of the header only (the open check): a zero-length file beside a WAL log
    (truncated while a connection was open: SQLite would wait on the stale log), a wrong magic
    string, or, when no connection has it open (no WAL log), a file shorter than the page
    count its header declares (truncated).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    in_use = os.path.exists(path + "-wal") or os.path.exists(path + "-shm")
    if size == 0:
        return "zero-length file beside a WAL log" if in_use else None
    if len(head) < 100 or head[:16] != _MAGIC:
        return "not a SQLite file"
    if in_use:  # a checkpoint may be growing the file right now: leave it to the error path
        return None
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    header_size_valid = head[24:28] == head[92:96]
    if header_size_valid and size < pages * page_size:
        return f"truncated: {size} bytes, its header declares {pages * page_size}"
    return None


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def quarantine(path: str, reason: str) -> None:
    """Move a damaged index aside (``index.db.damaged``, the last one kept) to rebuild it.

    The caller holds the index lock. The index is derived data: the run files rebuild it and
    annotations live in ``annotations.json`` beside it, so nothing is lost.
    """
    log.warning("the lineage index %s is damaged (%s): moved aside, rebuilding", path, reason)
    for old in glob.glob(glob.escape(path) + ".damaged*"):
        os.unlink(old)
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(path + suffix, path + ".damaged" + suffix)
        except FileNotFoundError:
            pass


def connect(path: str, *, damaged: tuple[str, int | None] | None = None) -> sqlite3.Connection:
    """Open (creating if needed) the index with WAL and a busy timeout; rebuild if damaged.

    If ``index.db`` was deleted but its ``-wal``/``-shm`` files remain (a process still had the
    old file open), they are removed first: SQLite would otherwise replay a stale log into the
    new file. A file failing the header checks of :func:`damage`, or ``damaged`` (the reason
    a caller found, given with the inode it saw as ``(reason, inode)``) is moved aside first.
    """
    with exclusive_lock(path + ".lock"):
        if not os.path.exists(path):
            _remove_db_files(path, main=False)
        reason = damage(path)
        if reason is None and damaged is not None and damaged[1] == _inode(path):
            reason = damaged[0]  # (not if another process has replaced the file meanwhile)
        if reason is not None:
            quarantine(path, reason)
        return _connect(path)


def _connect(path: str) -> sqlite3.Connection:
    for attempt in range(2):
        conn = sqlite3.connect(
            path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

            def wal(c: sqlite3.Connection = conn) -> None:
                c.execute("PRAGMA journal_mode = WAL").fetchone()

            retrying(wal)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            ensure_schema(conn)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise
            if _environment_error(exc):  # a full disk is not a damaged file: keep it
                raise LineageQuerySummaryDataError(
                    f"Query summary data error: cannot write the lineage index {path}: {exc} "
                    "(free some disk space, or point XDG_CACHE_HOME at another disk)"
                ) from exc
            if attempt:
                raise LineageQuerySummaryDataError(
                    f"Query summary data error: cannot open the lineage index {path}: {exc}"
                ) from exc
            # Not a database (damaged, truncated): it is derived data, start again.
            quarantine(path, str(exc))
    raise AssertionError("unreachable")  # pragma: no cover


def _environment_error(exc: sqlite3.DatabaseError) -> bool:
    """A full disk, a file size limit or an I/O error: the file may be whole, so it is
    never moved aside as damaged (a fresh 0-byte index on a full disk was, before)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return False
    primary = code & 0xFF
    return primary in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN)


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return [row[0] for row in rows]


def _version(conn: sqlite3.Connection) -> tuple[int | None, int | None]:
    """(schema_version, compatible_from) of the file, Nones without a meta table."""
    if "meta" not in _tables(conn):
        return None, None
    return schema.read_meta(conn, "schema_version"), schema.read_meta(conn, "compatible_from")


def ensure_schema(conn: sqlite3.Connection) -> bool:
    """Apply the missing migrations (see ``schema.py``); True if the schema changed.

    An index written by a newer trainledger that this one cannot use is rebuilt: the file
    is private derived data (annotations live in ``annotations.json``).
    """
    if schema.usable(*_version(conn)):
        return False

    def build() -> bool:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version, _ = _version(conn)
            changed = schema.migrate(
                conn, schema.SQLITE, version, _tables(conn), rebuild_newer=True
            )
            conn.execute("COMMIT")
            return changed
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    return retrying(build)


class SqliteDb(IndexDb):
    """The SQLite file ``index.db`` in a base's index directory; annotations in
    ``annotations.json`` beside it (mirrored into the table), because the file is derived
    data that may be deleted or moved aside at any time.

    The connection is reopened if the file was deleted or replaced meanwhile (``epoch``
    then changes), and after a fork.
    """

    dialect = schema.SQLITE
    errors = (sqlite3.Error,)
    begin_write = "BEGIN IMMEDIATE"

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.where = self.path = os.path.join(directory, INDEX_FILE)
        self.epoch = 0
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._ino: int | None = None
        self._file = AnnotationFile(directory)
        self._annotations_seen: int | None | bool = False

    def connection(self, damaged: str | None = None) -> sqlite3.Connection:
        """The connection; ``damaged`` (a reason) reopens it after moving the file aside."""
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
        self.epoch += 1
        return self._conn

    def in_transaction(self, conn: Any) -> bool:
        return bool(conn.in_transaction)

    def retrying(self, fn: Callable[[], T]) -> T:
        return retrying(fn)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
            rows = self.connection().execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as check:
            return f"{text}; quick_check: {check}"
        if rows != [("ok",)]:
            return f"{text}; quick_check: {rows[:3]}"
        return None

    def recovering(self, fn: Callable[[], T]) -> T:
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
            self.connection(damaged=reason)
        try:
            return fn()
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise LineageQuerySummaryDataError(
                f"Query summary data error: the lineage index {self.path} failed again after "
                f"a rebuild: {exc}"
            ) from exc

    # -- annotations ----------------------------------------------------------------------

    def sync_annotations(self, force: bool = False) -> None:
        """Mirror ``annotations.json`` into the index table when the file changed."""
        mtime = self._file.mtime_ns()
        conn = self.connection()
        if not force and mtime == self._annotations_seen:
            return
        stored = conn.execute("SELECT value FROM meta WHERE key = 'annotations_mtime'").fetchone()
        if not force and stored is not None and stored[0] == mtime:
            self._annotations_seen = mtime
            return
        items = self._file.load()

        def mirror(c: Any) -> None:
            c.execute("DELETE FROM annotations")
            c.executemany(
                "INSERT INTO annotations (run_id, tag, remark) VALUES (?, ?, ?)",
                [(k, v.get("tag"), v.get("remark")) for k, v in items.items()],
            )
            schema.set_meta(c, "annotations_mtime", mtime)

        self.write(mirror)
        self._annotations_seen = mtime

    def annotate(self, run_id: str, tag: Any, remark: Any) -> dict[str, Any]:
        entry = self._file.update(run_id, tag=tag, remark=remark)
        self.recovering(lambda: self.sync_annotations(force=True))
        return entry

    def annotations(self) -> dict[str, dict[str, Any]]:
        self.recovering(self.sync_annotations)
        return self._file.load()

    def annotations_stamp(self) -> object:
        return self._file.mtime_ns()
