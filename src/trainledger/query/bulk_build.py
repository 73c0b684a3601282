"""Building many runs at once: the custom value indexes are dropped, then made at the end.

Why: every custom value (a ``metric/``, ``user_defined/``, ``optimizer/`` field) is a row of
``custom`` and an entry of its value index (``custom_by_value (name, num, run_id)``; a text
value also of ``custom_by_text (name, txt, run_id)``, which holds only rows with text since
schema 12). A run of 1,500 metrics puts entries under 1,500 different names, so inserting it
touches 1,500 pages of the index scattered across the file, and each transaction writes them
all again; building an index once from the finished table is a sort. Measured on 1,000 runs
of 1,650 values each (SQLite, this machine): 14.5 ms a run kept up to date, 5.0 ms a run
inserted plus 1.5 ms a run for the index made at the end (BENCHMARKS.md, issue 34 item 3).

When: a refresh that (re)indexes at least ``BULK_MIN_RUNS`` runs and at least half of the runs
on disk, i.e. a first build or a rebuild, on SQLite. Not on PostgreSQL: dropping an index there
locks the table against every other reader of a shared index until the build ends. Readers of
a SQLite index meanwhile read their snapshot (WAL), so a query during a build is slower, never
wrong. A process killed during the build leaves the indexes missing: the next process to
refresh notices (one look at ``sqlite_master``) and makes them.
"""

from __future__ import annotations

from trainledger.query.schema import TEXT_INDEX, VALUE_INDEX, Connection, Dialect

__all__ = [
    "BULK_MIN_RUNS",
    "drop_value_index",
    "is_bulk",
    "value_index_missing",
    "make_value_index",
]

#: the fewest (re)indexed runs for which a refresh builds the value index at the end
BULK_MIN_RUNS = 200


def is_bulk(dialect: Dialect, changed: int, on_disk: int) -> bool:
    """Whether a refresh that stores ``changed`` of ``on_disk`` runs builds in bulk."""
    return dialect.name == "sqlite" and changed >= BULK_MIN_RUNS and 2 * changed >= on_disk


_NAMES = ("custom_by_value", "custom_by_text")


def drop_value_index(conn: Connection) -> None:
    """Drop the value indexes before a bulk build."""
    for name in _NAMES:
        conn.execute(f"DROP INDEX IF EXISTS {name}")


#: the page cache (KiB) while the value indexes are made: SQLite's sorter sorts a run of
#: entries as large as the cache in one thread, so with the index's usual 64 MiB a build of
#: 1,000 wide runs (1.65 million entries) sorted in one run on one core
SORT_CACHE_KIB = 8 * 1024


def make_value_index(conn: Connection) -> None:
    """Make the value indexes (after a bulk build, or when a killed build left them missing),
    SQLite's sort on helper threads too, in runs of at most ``SORT_CACHE_KIB`` so that they
    share the work: 1,000 wide runs' 1.65 million values 2.2 -> 1.5 s on two cores; 10,000
    runs' 16.5 million 18.7 -> 15.5 s, with either cache (BENCHMARKS.md)."""
    from trainledger.storage import helper_threads  # (here: its module loads what only builds use)

    (cache,) = conn.execute("PRAGMA cache_size").fetchone()
    conn.execute(f"PRAGMA threads = {helper_threads()}")
    conn.execute(f"PRAGMA cache_size = -{SORT_CACHE_KIB}")
    try:
        conn.execute(VALUE_INDEX)
        conn.execute(TEXT_INDEX)
    finally:
        conn.execute(f"PRAGMA cache_size = {int(cache)}")
        conn.execute("PRAGMA threads = 0")


def value_index_missing(conn: Connection) -> bool:
    """Whether a value index is missing (a SQLite index whose bulk build was killed)."""
    (count,) = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN (?, ?)", _NAMES
    ).fetchone()
    return int(count) < len(_NAMES)
