"""Open a base's index on the backend its URL names (``index_urls.index_url``)."""

from __future__ import annotations

from trainledger.query.backend import IndexDb

__all__ = ["open_db"]


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
