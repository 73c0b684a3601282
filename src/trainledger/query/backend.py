"""What every index backend does alike (``IndexDb``): the seam between the query engine and
the database that holds a base's index.

Why a seam: the index was a SQLite file beside the runs; a team shares one PostgreSQL
database instead (``--index postgresql://...``, ``TRAINLEDGER_INDEX_URL``, or ``index=`` in
the API). Only connecting, transactions, retries and where annotations are kept differ; the
statements are the same (``schema.py``, ``sql.py``, ``index_tables.py``, written with ``?``
placeholders and ``INSERT ... ON CONFLICT``). Which backend a URL names: ``index_urls.py``;
opening it: ``open_index.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from trainledger.query.schema import Connection, Dialect

__all__ = ["IndexDb"]

T = TypeVar("T")


class IndexDb:
    """One base's index on one backend: connection, transactions, annotations.

    ``epoch`` changes when the data may have changed under the caller without a generation
    bump (a new SQLite file), so callers drop what they cached.
    """

    dialect: Dialect
    errors: tuple[type[BaseException], ...] = ()  # the engine's own error classes
    where: str = ""  # for messages: a path, or a redacted URL
    begin_write = "BEGIN"
    begin_read = "BEGIN"
    epoch = 0

    def connection(self) -> Connection:
        raise NotImplementedError

    def retrying(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` again while the engine says the failure is passing (busy, lost)."""
        raise NotImplementedError

    def recovering(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; engine failures become ``LineageQuerySummaryDataError``."""
        raise NotImplementedError

    def in_transaction(self, conn: Connection) -> bool:
        raise NotImplementedError

    def lock_writers(self, conn: Connection) -> None:
        """Serialize write transactions (SQLite's BEGIN IMMEDIATE already does)."""

    def close(self) -> None:
        raise NotImplementedError

    def write(self, fn: Callable[[Connection], T], bump: bool = True) -> T:
        """Run ``fn`` in one short write transaction, retried while busy.

        ``bump`` advances the index generation (runs changed), which tells every process to
        re-read what the index holds.
        """

        def attempt() -> T:
            conn = self.connection()
            conn.execute(self.begin_write)
            try:
                self.lock_writers(conn)
                result = fn(conn)
                if bump:
                    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                conn.execute("COMMIT")
                return result
            except BaseException:
                self.rollback(conn)
                raise

        return self.retrying(attempt)

    def read(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot), retried while busy."""

        def attempt() -> T:
            conn = self.connection()
            conn.execute(self.begin_read)
            try:
                return fn(conn)
            finally:
                self.rollback(conn)  # (reads change nothing: ending it either way is the same)

        return self.retrying(attempt)

    def rollback(self, conn: Connection) -> None:
        if self.in_transaction(conn):
            conn.execute("ROLLBACK")

    # -- annotations (user input: never lost when derived rows are rebuilt) ----------------

    def sync_annotations(self, force: bool = False) -> None:
        """Bring the index's annotations table up to date with where annotations are kept."""

    def annotate(self, run_id: str, tag: Any, remark: Any) -> dict[str, Any]:
        raise NotImplementedError

    def annotations(self) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def annotations_stamp(self) -> object:
        """Changes whenever any process changed an annotation."""
        raise NotImplementedError
