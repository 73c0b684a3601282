"""The index in a shared PostgreSQL database (psycopg 3, the ``postgres`` extra).

Why these rules:

- Each base has a schema of its own (``tl_`` + a hash of the base's name, its ``s3://`` URL
  or real path), so one database serves many bases and every statement stays unqualified.
- Statements are written once with ``?`` (``schema.py``); :class:`_Conn` turns them into
  psycopg's ``%s`` and binds large floats exactly (``bind_value``).
- Writers from any number of processes and machines take a transaction-level advisory lock
  per base: write transactions run one at a time, as SQLite's ``BEGIN IMMEDIATE`` does, so
  "delete then insert" of a run and the numbering of dataset marks never race. Readers use
  REPEATABLE READ snapshots and never wait.
- A lost connection (a server restart, a network cut) is reopened and the whole transaction
  run again, for a bounded time: what was committed stays, and every write is idempotent.
- Annotations live in the ``annotations`` table itself: it is shared by everyone and never
  dropped by a migration; the derived rows can be rebuilt from the runs at any time.
- The URL's password never appears in a log line or an error (``index_urls.redact_url``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import random
import time
import urllib.parse
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from trainledger.errors import IndexUnreachableError, LineageQuerySummaryDataError
from trainledger.query import schema
from trainledger.query.backend import IndexDb
from trainledger.query.index_urls import redact_url
from trainledger.query.schema import BIG

__all__ = ["PgDb", "bind_value", "schema_name"]

log = logging.getLogger(__name__)
T = TypeVar("T")
#: how long a lost server is retried before queries fail (``TRAINLEDGER_INDEX_RETRY_SECONDS``)
RETRY_SECONDS = 60.0
CONNECT_TIMEOUT = 10


def schema_name(base_name: str) -> str:
    """The schema of a base: the same name on every machine that names the base alike."""
    return "tl_" + hashlib.sha256(base_name.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _lock_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


def bind_value(value: Any) -> Any:
    """A value as the index binds it: NaN as NULL (as SQLite stores it), and a float of
    magnitude 2**53 or more (integral there) as its exact NUMERIC, as ``_big`` columns and
    their comparisons need (PostgreSQL's own float-to-numeric cast keeps 15 digits)."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if not abs(value) < BIG:
            return Decimal(value)  # (Decimal('Infinity') for inf)
    return value


class _Conn:
    """A psycopg connection that speaks the index's statements (``?``, exact floats)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        import psycopg

        try:
            return self.raw.execute(_pg_sql(sql), [bind_value(v) for v in parameters])
        except psycopg.DataError as exc:  # a value PostgreSQL cannot hold (a NUL in text...)
            raise ValueError(f"PostgreSQL refused a value: {exc}") from exc

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        import psycopg

        rows = [[bind_value(v) for v in row] for row in parameters]
        if not rows:
            return None
        try:
            with self.raw.cursor() as cur:
                cur.executemany(_pg_sql(sql), rows)
        except psycopg.DataError as exc:
            raise ValueError(f"PostgreSQL refused a value: {exc}") from exc
        return None


class PgDb(IndexDb):
    """One base's schema in the PostgreSQL database at ``url``."""

    dialect = schema.POSTGRES
    begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def __init__(
        self,
        url: str,
        base_name: str,
        seed: Callable[[], dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        """``seed`` gives the annotations a new schema starts with (the base's SQLite-era
        ``annotations.json``, so switching a team to the shared index loses none)."""
        try:
            import psycopg
        except ImportError as exc:
            raise LineageQuerySummaryDataError(
                "Query summary data error: a postgresql:// index needs psycopg: "
                f"pip install 'trainledger[postgres]' ({exc})"
            ) from exc
        self.errors = (psycopg.Error,)
        self.url = url
        self.where = redact_url(url)
        try:
            parts = urllib.parse.urlsplit(url)
            given = [parts.password or ""] + urllib.parse.parse_qs(parts.query).get("password", [])
        except ValueError:
            given = []
        self._passwords = [p for p in given if p]
        self.schema = schema_name(base_name)
        self._key = _lock_key(self.schema)
        self._seed = seed
        self._conn: _Conn | None = None
        self._pid = os.getpid()
        self._reached = False  # a server never reached is a mistake to report, not to wait on

    def connection(self) -> _Conn:
        if self._pid != os.getpid():  # inherited through fork: the parent's session, not ours
            self._conn, self._pid = None, os.getpid()  # (dropped, never closed from here)
        if self._conn is not None and not self._conn.raw.closed:
            return self._conn
        import psycopg

        raw = psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT,
            application_name="trainledger",
        )
        try:
            conn = _Conn(raw)
            self._prepare(conn)
        except BaseException:
            raw.close()
            raise
        self._conn = conn
        self._reached = True
        return conn

    def _prepare(self, conn: _Conn) -> None:
        """Create the base's schema or migrate it, one process at a time."""
        conn.execute("SELECT pg_advisory_lock(?)", (self._key,))
        try:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET search_path TO "{self.schema}"')
            # queries are short: compiling one (JIT, for plans estimated costly) took 50-80 ms
            # at 1M runs, more than it saved
            conn.execute("SET jit = off")
            conn.execute("BEGIN")
            try:
                tables = [
                    row[0]
                    for row in conn.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                        (self.schema,),
                    )
                ]
                version = schema.read_meta(conn, "schema_version") if "meta" in tables else None
                schema.migrate(conn, self.dialect, version, tables, rebuild_newer=False)
                if version is None and self._seed is not None:
                    conn.executemany(
                        "INSERT INTO annotations (run_id, tag, remark) VALUES (?, ?, ?) "
                        "ON CONFLICT (run_id) DO NOTHING",
                        [(k, v.get("tag"), v.get("remark")) for k, v in self._seed().items()],
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except schema.NewerSchemaError as exc:
            raise LineageQuerySummaryDataError(
                f"Query summary data error: the lineage index {self.where}: {self._say(exc)}"
            ) from exc
        finally:
            conn.execute("SELECT pg_advisory_unlock(?)", (self._key,))

    def _say(self, exc: BaseException) -> str:
        """An error's text without the URL's password (a driver may echo the DSN)."""
        text = str(exc)
        for password in self._passwords:
            text = text.replace(password, "***")
        return text

    def in_transaction(self, conn: Any) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(conn.raw.info.transaction_status != TransactionStatus.IDLE)

    def rollback(self, conn: Any) -> None:
        import psycopg

        try:
            super().rollback(conn)
        except psycopg.Error:  # the connection is gone: the server rolled back already
            self._drop()

    def lock_writers(self, conn: Any) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (self._key,))

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.raw.close()
            except Exception:  # noqa: BLE001 - closing a broken connection: nothing to keep
                pass
            self._conn = None

    def close(self) -> None:
        self._drop()

    def retrying(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; on a lost connection or a serialization conflict, reconnect and run it
        again with backoff, for at most ``RETRY_SECONDS`` (not before the server was reached
        once: a wrong host or port fails at once)."""
        import psycopg
        from psycopg import errors

        window = float(os.environ.get("TRAINLEDGER_INDEX_RETRY_SECONDS") or RETRY_SECONDS)
        end = time.monotonic() + window
        delay = 0.05
        while True:
            try:
                return fn()
            except (
                psycopg.OperationalError,
                errors.SerializationFailure,
                errors.DeadlockDetected,
            ) as exc:
                lost = self._conn is None or self._conn.raw.closed or self._conn.raw.broken
                if (
                    not self._reached
                    or not lost
                    and not isinstance(exc, (errors.SerializationFailure, errors.DeadlockDetected))
                ):
                    raise
                self._drop()
                if time.monotonic() > end:
                    raise IndexUnreachableError(
                        f"Query summary data error: the lineage index {self.where} stayed "
                        f"unreachable for {window:.0f} s ({self._say(exc)})."
                    ) from exc
                log.info("lineage index %s: %s; reconnecting", self.where, self._say(exc))
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)

    def recovering(self, fn: Callable[[], T]) -> T:
        import psycopg

        try:
            return fn()
        except (psycopg.Error, json.JSONDecodeError) as exc:
            raise LineageQuerySummaryDataError(
                f"Query summary data error: the lineage index {self.where} failed: {self._say(exc)}"
            ) from exc

    # -- annotations ----------------------------------------------------------------------

    def annotate(self, run_id: str, tag: Any, remark: Any) -> dict[str, Any]:
        """Upsert one run's tag and/or remark: concurrent annotators of other runs or other
        fields never overwrite each other."""
        from trainledger.query.annotations import UNSET

        given = (("tag", tag), ("remark", remark))
        sets = [f"{k} = excluded.{k}" for k, v in given if v is not UNSET]
        values = [None if v is UNSET else v for v in (tag, remark)]

        def upsert(conn: Any) -> dict[str, Any]:
            row = conn.execute(
                "INSERT INTO annotations (run_id, tag, remark) VALUES (?, ?, ?) "
                f"ON CONFLICT (run_id) DO UPDATE SET {', '.join(sets)} "
                "RETURNING tag, remark",
                [run_id, *values],
            ).fetchone()
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('annotations_version', 1) "
                "ON CONFLICT (key) DO UPDATE SET value = meta.value + 1"
            )
            return {k: v for k, v in (("tag", row[0]), ("remark", row[1])) if v is not None}

        if not sets:
            return self.annotations().get(run_id, {})
        return self.recovering(lambda: self.write(upsert, bump=False))

    def annotations(self) -> dict[str, dict[str, Any]]:
        def load(conn: Any) -> dict[str, dict[str, Any]]:
            rows = conn.execute("SELECT run_id, tag, remark FROM annotations").fetchall()
            out = {}
            for run_id, tag, remark in rows:
                entry = {k: v for k, v in (("tag", tag), ("remark", remark)) if v is not None}
                if entry:
                    out[run_id] = entry
            return out

        return self.recovering(lambda: self.read(load))

    def annotations_stamp(self) -> object:
        return self.recovering(
            lambda: self.read(lambda conn: schema.read_meta(conn, "annotations_version"))
        )
