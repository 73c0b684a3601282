"""The index's rows of series statistics (``series_stats``, ``series_files``: schema 8).

Why apart from ``index_tables.py``: these rows follow a run's summary files, not its
lineage files, and are keyed by the run's directory (``schema.py`` says why); the SQL that
reads them in conditions and sorts is in ``sql.py``. Every function takes an open connection
inside a transaction the caller owns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import astuple
from typing import Any

from trainledger.query.schema import Connection
from trainledger.query.series_fields import parse_series_field
from trainledger.query.series_index import SeriesState, TagStats

__all__ = [
    "COLUMNS",
    "delete_series",
    "load_series",
    "series_signatures",
    "series_tags",
    "series_values",
    "stats_from_dict",
    "store_series",
    "store_stats",
]

#: statistic (``series_fields.STATS``) -> its column of ``series_stats``
COLUMNS: dict[str, str] = {
    "last": "last_value",
    "min": "min_value",
    "max": "max_value",
    "count": "point_count",
    "last_step": "last_step",
    "min_step": "min_step",
    "max_step": "max_step",
    "nonfinite_step": "nonfinite_step",
}
#: TagStats' fields, in their order (rows are built and read with ``astuple``/``TagStats(*)``)
_STAT_COLUMNS = (
    "last_value, last_step, min_value, min_step, max_value, max_step, point_count, "
    "nonfinite_step, top_step"
)
_INSERT = (
    f"INSERT INTO series_stats (summary_dir, tag, {_STAT_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def series_tags(conn: Connection) -> list[str]:
    """Every tag some run's statistics hold, sorted."""
    rows = conn.execute("SELECT DISTINCT tag FROM series_stats ORDER BY tag").fetchall()
    return [str(row[0]) for row in rows]


def series_signatures(conn: Connection) -> dict[str, str]:
    """{summary_dir: the signature of the summary files its statistics were read from}."""
    return dict(conn.execute("SELECT summary_dir, signature FROM series_files").fetchall())


def load_series(conn: Connection, summary_dir: str) -> SeriesState | None:
    """What the index holds of a run's series (None: nothing yet)."""
    row = conn.execute(
        "SELECT state FROM series_files WHERE summary_dir = ?", (summary_dir,)
    ).fetchone()
    if row is None:
        return None
    saved = json.loads(row[0])
    rows = conn.execute(
        f"SELECT tag, {_STAT_COLUMNS} FROM series_stats WHERE summary_dir = ?", (summary_dir,)
    )
    tags = {row[0]: TagStats(*row[1:]) for row in rows}  # (columns in TagStats' field order)
    return SeriesState(tags, dict(saved["positions"]), list(saved["scalar_tags"]))


def store_series(conn: Connection, summary_dir: str, signature: str, state: SeriesState) -> None:
    """Replace a run's statistics and where its files were read up to."""
    delete_series(conn, [summary_dir])
    store_stats(conn, summary_dir, state.tags)
    saved = {"positions": state.positions, "scalar_tags": state.scalar_tags}
    conn.execute(
        "INSERT INTO series_files (summary_dir, signature, state) VALUES (?, ?, ?)",
        (summary_dir, signature, json.dumps(saved, ensure_ascii=False)),
    )


def store_stats(conn: Connection, summary_dir: str, tags: Mapping[str, TagStats]) -> None:
    """Insert a run's statistics (the caller removed the old ones)."""
    conn.executemany(_INSERT, [(summary_dir, tag, *astuple(s)) for tag, s in tags.items()])


def delete_series(conn: Connection, summary_dirs: Iterable[str]) -> None:
    """Forget the series of runs that are gone (or are about to be stored again)."""
    dirs = [(d,) for d in summary_dirs]
    conn.executemany("DELETE FROM series_stats WHERE summary_dir = ?", dirs)
    conn.executemany("DELETE FROM series_files WHERE summary_dir = ?", dirs)


def series_values(
    conn: Connection, summary_dirs: list[str], fields: list[str]
) -> dict[str, dict[str, Any]]:
    """{summary_dir: {series field: value}} of the given runs (a run without the tag: None)."""
    out: dict[str, dict[str, Any]] = {d: dict.fromkeys(fields) for d in summary_dirs}
    wanted: dict[str, list[tuple[str, str]]] = {}
    for field in fields:
        parsed = parse_series_field(field)
        if parsed is not None:
            wanted.setdefault(parsed[1], []).append((field, COLUMNS[parsed[0]]))
    for start in range(0, len(summary_dirs), 500):
        part = summary_dirs[start : start + 500]
        marks = ", ".join("?" for _ in part)
        for tag, picks in wanted.items():
            columns = ", ".join(column for _, column in picks)
            for row in conn.execute(
                f"SELECT summary_dir, {columns} FROM series_stats "
                f"WHERE tag = ? AND summary_dir IN ({marks})",
                [tag, *part],
            ):
                for (field, _), value in zip(picks, row[1:], strict=True):
                    out[row[0]][field] = value
    return out


def stats_from_dict(stats: dict[str, Any]) -> TagStats:
    """A record's ``series`` entry ({statistic: value}) as the index stores it (records
    added without files: ``LineageIndex.add_records``)."""
    steps = [stats.get(k) for k in ("last_step", "min_step", "max_step")]
    return TagStats(
        stats.get("last"),
        stats.get("last_step") or 0,
        stats.get("min"),
        stats.get("min_step"),
        stats.get("max"),
        stats.get("max_step"),
        stats.get("count") or 0,
        stats.get("nonfinite_step"),
        max((s for s in steps if s is not None), default=0),
    )
