"""Where a base's index lives, chosen by a URL, and what every index backend does alike.

Why a seam: the index was a SQLite file beside the runs; a team shares one PostgreSQL
database instead (``--index postgresql://...``, ``TRAINLEDGER_INDEX_URL``, or ``index=`` in
the API). Only connecting, transactions, retries and where annotations are kept differ; the
statements are the same (``schema.py``, ``sql.py``, ``index_tables.py``, written with ``?``
placeholders and ``INSERT ... ON CONFLICT``).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from trainledger.errors import LineageParamValueError
from trainledger.query.schema import Connection, Dialect

__all__ = ["ENV", "IndexDb", "index_url", "open_db", "redact_url"]

ENV = "TRAINLEDGER_INDEX_URL"
_PG_SCHEMES = ("postgresql", "postgres")
_SQLITE = ("", "sqlite", "sqlite://")
T = TypeVar("T")


def redact_url(url: str) -> str:
    """``url`` with its password (in the netloc or a ``password=`` parameter) as ``***``:
    URLs are shown in logs and errors, passwords never."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def index_url(index: str | None = None) -> str | None:
    """The chosen index: ``index``, else ``$TRAINLEDGER_INDEX_URL``; None means the SQLite
    file beside the runs (also chosen explicitly by ``sqlite://``)."""
    value = index if index is not None else os.environ.get(ENV, "")
    if not isinstance(value, str):
        raise LineageParamValueError(
            f"ValueError. The index should be a str (a postgresql:// URL), received: "
            f"{type(value).__name__}."
        )
    value = value.strip()
    if value in _SQLITE:
        return None
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if scheme in _PG_SCHEMES:
        return value
    source = "index" if index is not None else ENV
    shown = redact_url(value) if scheme else repr(value)
    raise LineageParamValueError(
        f"ValueError. The {source} should be a postgresql://USER@HOST[:PORT]/DATABASE URL, or "
        f"sqlite:// for the SQLite file beside the runs (the default), received: {shown} "
        f"(scheme {scheme or 'none'!r})."
    )


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


def open_db(directory: str, url: str | None, name: str) -> IndexDb:
    """The index of the base named ``name``: the SQLite file in ``directory`` (url None) or
    the base's own schema in the PostgreSQL database at ``url`` (a new one starts with the
    annotations of ``directory``'s ``annotations.json``)."""
    if url is None:
        from trainledger.query.database import SqliteDb

        return SqliteDb(directory)
    from trainledger.query.annotations import AnnotationFile
    from trainledger.query.postgres import PgDb

    return PgDb(url, name, seed=AnnotationFile(directory).load)
