"""The index's rows of series statistics (``series_stats``, ``series_files``: schema 8) and,
with them, the overviews of long series (``series_overviews.py``: schema 11).

Why apart from ``index_tables.py``: these rows follow a run's summary files, not its
lineage files, and are keyed by the run's directory (``schema.py`` says why); the SQL that
reads them in conditions and sorts is in ``sql.py``. Every function takes an open connection
inside a transaction the caller owns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import astuple
from typing import TYPE_CHECKING, Any

from trainledger.query.schema import Connection
from trainledger.query.series_fields import parse_series_field
from trainledger.query.series_index import SeriesState, TagStats

if TYPE_CHECKING:  # pragma: no cover - the annotations' types
    from trainledger.summary import SeriesOverview

__all__ = [
    "COLUMNS",
    "delete_overviews",
    "delete_series",
    "load_overviews",
    "load_series",
    "nonfinite_series",
    "read_overview",
    "series_signatures",
    "series_tags",
    "series_values",
    "stats_from_dict",
    "store_overviews",
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
    "nonfinite_step, top_step, nonfinite_kind"
)
_INSERT = (
    f"INSERT INTO series_stats (summary_dir, tag, {_STAT_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def series_tags(conn: Connection) -> list[str]:
    """Every tag some run's statistics hold, sorted."""
    rows = conn.execute("SELECT DISTINCT tag FROM series_stats ORDER BY tag").fetchall()
    return [str(row[0]) for row in rows]


def series_signatures(conn: Connection) -> dict[str, str]:
    """{summary_dir: the signature of the summary files its statistics were read from}."""
    return dict(conn.execute("SELECT summary_dir, signature FROM series_files").fetchall())


def load_series(conn: Connection, summary_dir: str, overviews: bool = False) -> SeriesState | None:
    """What the index holds of a run's series (None: nothing yet); ``overviews``: with the
    overviews read from the same files (for a read that extends them)."""
    row = conn.execute(
        "SELECT state, signature FROM series_files WHERE summary_dir = ?", (summary_dir,)
    ).fetchone()
    if row is None:
        return None
    saved = json.loads(row[0])
    rows = conn.execute(
        f"SELECT tag, {_STAT_COLUMNS} FROM series_stats WHERE summary_dir = ?", (summary_dir,)
    )
    tags = {r[0]: TagStats(*r[1:]) for r in rows}  # (columns in TagStats' field order)
    state = SeriesState(tags, dict(saved["positions"]), list(saved["scalar_tags"]))
    if overviews and row[1]:
        state.overviews = load_overviews(conn, summary_dir, row[1])
    return state


def store_series(conn: Connection, summary_dir: str, signature: str, state: SeriesState) -> None:
    """Replace a run's statistics, overviews and where its files were read up to."""
    delete_series(conn, [summary_dir])
    store_stats(conn, summary_dir, state.tags)
    store_overviews(conn, summary_dir, signature, state.overviews)
    saved = {"positions": state.positions, "scalar_tags": state.scalar_tags}
    conn.execute(
        "INSERT INTO series_files (summary_dir, signature, state) VALUES (?, ?, ?)",
        (summary_dir, signature, json.dumps(saved)),
    )


def store_stats(conn: Connection, summary_dir: str, tags: Mapping[str, TagStats]) -> None:
    """Insert a run's statistics (the caller removed the old ones)."""
    conn.executemany(_INSERT, [(summary_dir, tag, *astuple(s)) for tag, s in tags.items()])


def delete_series(conn: Connection, summary_dirs: Iterable[str]) -> None:
    """Forget the series of runs that are gone (or are about to be stored again)."""
    dirs = [(d,) for d in summary_dirs]
    conn.executemany("DELETE FROM series_stats WHERE summary_dir = ?", dirs)
    conn.executemany("DELETE FROM series_files WHERE summary_dir = ?", dirs)
    delete_overviews(conn, summary_dirs=[d for (d,) in dirs])


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


def nonfinite_series(conn: Connection, summary_dirs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """{summary_dir: [{"tag", "step", "value"}] of each series that went NaN or infinite,
    by step} of the given runs (``value``: the kind, ``"nan"``/``"inf"``/``"-inf"``, or None
    when an index of schema 12 stored it). The UI flags a diverged run with it."""
    out: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(summary_dirs), 500):
        part = summary_dirs[start : start + 500]
        marks = ", ".join("?" for _ in part)
        for summary_dir, tag, step, kind in conn.execute(
            "SELECT summary_dir, tag, nonfinite_step, nonfinite_kind FROM series_stats "
            f"WHERE nonfinite_step IS NOT NULL AND summary_dir IN ({marks}) "
            "ORDER BY summary_dir, nonfinite_step, tag",
            part,
        ):
            out.setdefault(summary_dir, []).append({"tag": tag, "step": step, "value": kind})
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
        stats.get("nonfinite_kind"),
    )


def store_overviews(
    conn: Connection, summary_dir: str, signature: str, overviews: Mapping[str, SeriesOverview]
) -> None:
    """Insert a run's overviews (the caller removed the old ones)."""
    conn.executemany(
        "INSERT INTO series_overviews (summary_dir, tag, signature, overview) VALUES (?, ?, ?, ?)",
        [(summary_dir, tag, signature, o.to_bytes()) for tag, o in overviews.items()],
    )


def load_overviews(conn: Connection, summary_dir: str, signature: str) -> dict[str, SeriesOverview]:
    """The run's overviews read from the files ``signature`` names (others are stale)."""
    # (heavy: numpy, for the indexer's reads of long runs only, not a query of the index)
    from trainledger.summary import SeriesOverview

    out = {}
    for tag, data in conn.execute(
        "SELECT tag, overview FROM series_overviews WHERE summary_dir = ? AND signature = ?",
        (summary_dir, signature),
    ):
        found = SeriesOverview.from_bytes(bytes(data))
        if found is not None:
            out[tag] = found
    return out


def read_overview(conn: Connection, summary_dir: str, tag: str) -> tuple[str, bytes] | None:
    """(signature, bytes) of one overview, or None."""
    row = conn.execute(
        "SELECT signature, overview FROM series_overviews WHERE summary_dir = ? AND tag = ?",
        (summary_dir, tag),
    ).fetchone()
    return None if row is None else (str(row[0]), bytes(row[1]))


def delete_overviews(conn: Connection, summary_dirs: Iterable[str]) -> None:
    conn.executemany(
        "DELETE FROM series_overviews WHERE summary_dir = ?", [(d,) for d in summary_dirs]
    )
