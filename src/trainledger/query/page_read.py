"""Reading a page of the runs a condition matches: the count, the types of the custom
values, the sort segments' sizes, the page's run ids in order, and their records.

Why apart from ``index_tables.py`` (which writes and reads rows): this is the query's hot
path, tuned to SQLite's plans (``sql.py`` says which): a page reads about as many rows as it
shows, and what costs a probe a run (a series sort's segment sizes) is counted only when the
page needs it.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from trainledger.query.count_cache import CountCache
from trainledger.query.record_cache import Cached, RecordCache, in_chunks
from trainledger.query.schema import Connection
from trainledger.query.semantics import Customized, finish_customized
from trainledger.query.sql import DEFAULT_ORDER, Segments, reads_annotations

__all__ = ["Page", "added_info", "fetch"]


_ANNOTATED = "LEFT JOIN annotations AS a ON a.run_id = runs.summary_dir"
#: a page's (record with its answer form, added_info) in order
Page = list[tuple[Cached, dict[str, Any]]]


def fetch(
    conn: Connection,
    where: tuple[str, list[Any]],
    matches: tuple[str, list[Any]],
    order: tuple[str, str, list[Any]],
    limit: int | None,
    offset: int,
    segments: Segments | None = None,
    cache: RecordCache | None = None,
    counts: CountCache | None = None,
    members: tuple[str, list[Any]] | None = None,
    run_range: tuple[str, list[Any]] | None = None,
) -> tuple[int, Page, Customized]:
    """(count before paging, the page's ((record, answer form), added_info) pairs in order,
    the answer's ``customized`` entries). The records and the entries are shared with
    ``cache`` and ``counts`` (read-only); the records lack the run fields (status, duration,
    sessions): they are what an answer shows.

    ``where`` is ``sql.compile_where``'s (for a page), ``matches`` ``sql.compile_matches``'
    (for every match), both what follows ``FROM runs`` (joins, then WHERE) and its
    parameters; ``order`` ``sql.compile_order``'s (join, ORDER BY, join parameters);
    ``segments`` ``sql.compile_segments``' (used when every run's type set tells its
    segment); ``limit`` None: every run from ``offset``. A page's count (with the customized entries
    and segment sizes) comes from ``counts`` when it holds it for this generation. ``members``:
    ``sql.compile_members``' form of ``matches``, read instead over wide runs (``_wide``);
    ``run_range`` ``sql.compile_range``'s statement, read instead of ``matches`` for every
    match in the default order (``_range_page``).
    """
    join, osql, oparams = order
    if members is not None and members[0] != matches[0] and _wide(conn):
        matches = members
    if limit is None and run_range is not None and cache is not None and osql == DEFAULT_ORDER:
        return _range_page(conn, run_range, matches, offset, cache, counts)
    if limit is None:
        # every match is on the page: one read in the join form (``compile_matches``: a
        # range scan of a custom value's index, not a probe of every run) gives the page in
        # order, the count and the custom types
        rows = conn.execute(
            f"SELECT runs.id, runs.type_set, a.tag, a.remark FROM runs {join} {_ANNOTATED} "
            f"{matches[0]} ORDER BY {osql}",
            oparams + matches[1],
        ).fetchall()
        count, customized, _ = _tally(conn, Counter(row[1] for row in rows).items(), None)
        page = [(run_id, tag, remark) for run_id, _, tag, remark in rows[offset:]]
    else:
        # a series sort's sizes cost a probe a run: counted first only when the page starts
        # in the segment of the runs without the statistic (ascending), else when needed
        lazy = segments is not None and segments[2] is not None and segments[1][0][0] != 0
        count, customized, sizes = _count(conn, matches, None if lazy else segments, counts)
        if lazy and segments is not None:
            recount = functools.partial(_series_sizes, conn, matches, segments)
            ids = _page_ids(conn, where, segments, recount, limit, offset)
        elif segments is not None and sizes is not None:
            ids = _page_ids(conn, where, segments, sizes, limit, offset)
        else:
            wsql, wparams = where
            ids = [
                row[0]
                for row in conn.execute(
                    f"SELECT runs.id FROM runs {join} {wsql} ORDER BY {osql} LIMIT ? OFFSET ?",
                    oparams + wparams + [limit, offset],
                )
            ]
        sql = f"SELECT runs.id, a.tag, a.remark FROM runs {_ANNOTATED} WHERE runs.id IN"
        added = {row[0]: row for row in in_chunks(conn, sql, ids)}
        page = [added[run_id] for run_id in ids]
    records = (RecordCache(0) if cache is None else cache).records(conn, [row[0] for row in page])
    answers = [(records[run_id], added_info(tag, remark)) for run_id, tag, remark in page]
    return count, answers, customized


def _range_page(
    conn: Connection,
    run_range: tuple[str, list[Any]],
    matches: tuple[str, list[Any]],
    offset: int,
    cache: RecordCache,
    counts: CountCache | None,
) -> tuple[int, Page, Customized]:
    """``fetch``'s answer for every match of a one-field range, in the default order: the
    run numbers in order (``_range_order``, kept in ``counts`` for the generation), the count
    and customized entries from ``counts`` (by type set), and the annotations of the page's
    runs, which are read each time (setting one does not bump the generation)."""
    count, customized, _ = _count(conn, matches, None, counts)
    made: list[Cached] = []  # (the records in order, when the order was made now)

    def order() -> array[int]:
        ids, made[:] = _range_order(conn, run_range, cache)
        return array("q", ids)

    if counts is None:
        ids = order().tolist()
    else:
        ids = counts.get(conn, ("range order", run_range[0], *run_range[1]), order).tolist()
    if made:
        cached = made[offset:]
    else:
        found = cache.records(conn, ids[offset:])
        cached = list(map(found.__getitem__, ids[offset:]))
    notes = _annotations(conn, len(cached), lambda: [c[0]["summary_dir"] for c in cached])
    if not notes:
        return count, [(c, {}) for c in cached], customized
    none = (None, None)
    dirs = map(_SUMMARY_DIR, map(_RECORD, cached))
    return (
        count,
        [(c, added_info(*notes.get(d, none))) for c, d in zip(cached, dirs, strict=True)],
        customized,
    )


def _range_order(
    conn: Connection, run_range: tuple[str, list[Any]], cache: RecordCache
) -> tuple[list[int], list[Cached]]:
    """(run numbers, their cached records) of every run ``run_range`` reads, newest first,
    then by summary_dir: the numbers from the value index alone (``sql.compile_range``), the
    order from the cached records. The keys are read in C (Python key functions took half
    this page's time), and summary_dir only where update times tie."""
    ids = _run_ids(conn, run_range)
    found = cache.records(conn, ids)
    ids = list(found)
    cached = list(found.values())
    records = list(map(_RECORD, cached))
    times = list(map(_UPDATE_TIME, records))
    order = sorted(range(len(cached)), key=times.__getitem__, reverse=True)
    ordered_times = [times[i] for i in order]
    if any(map(operator.eq, ordered_times, ordered_times[1:])):
        order.sort(key=list(map(_SUMMARY_DIR, records)).__getitem__)
        order.sort(key=times.__getitem__, reverse=True)  # (stable: summary_dir in ties)
    return [ids[i] for i in order], [cached[i] for i in order]


_RECORD = operator.itemgetter(0)
_SUMMARY_DIR = operator.itemgetter("summary_dir")
_UPDATE_TIME = operator.itemgetter("update_time")


def _run_ids(conn: Connection, run_range: tuple[str, list[Any]]) -> list[int]:
    """The run numbers ``run_range`` reads, as one JSON array made in SQLite (2.3 against
    4.2 ms for 10,010 rows, each a tuple when fetched); row by row where SQLite has no JSON
    functions (built without JSON1, before 3.38)."""
    sql, params = run_range
    try:
        row = conn.execute(f"SELECT json_group_array(run_id) FROM ({sql})", params).fetchone()
    except sqlite3.OperationalError:
        return [row[0] for row in conn.execute(sql, params)]
    return json.loads(row[0]) if row[0] else []  # type: ignore[no-any-return]


def _annotations(
    conn: Connection, runs: int, dirs: Callable[[], list[str]]
) -> dict[str, tuple[Any, Any]]:
    """{summary_dir: (tag, remark)} of the annotated runs among ``dirs()`` (``runs`` of them):
    the whole table when it holds fewer rows (a few, mostly: then ``dirs`` is not called,
    which reads every record again), else looked up in chunks."""
    sql = "SELECT run_id, tag, remark FROM annotations"
    bound = "SELECT count(*) < ? FROM (SELECT 1 FROM annotations LIMIT ?)"
    if conn.execute(bound, (runs, runs)).fetchone()[0]:
        rows = conn.execute(sql).fetchall()
    else:
        rows = in_chunks(conn, f"{sql} WHERE run_id IN", dirs())
    return {summary_dir: (tag, remark) for summary_dir, tag, remark in rows}


#: the custom values a run holds, on average, from which runs are wide (``sql._member``)
WIDE_RUN = 256


def _wide(conn: Connection) -> bool:
    """Whether the runs are wide: the first and the last stored run hold ``WIDE_RUN`` custom
    values or more on average (a look at two runs' keys: tens of microseconds, where
    counting every row of ``custom`` would read the whole table)."""
    total = 0
    for way in ("ASC", "DESC"):
        row = conn.execute(f"SELECT run_id FROM custom ORDER BY run_id {way} LIMIT 1").fetchone()
        if row is None:
            return False
        sql = "SELECT count(*) FROM (SELECT 1 FROM custom WHERE run_id = ? LIMIT ?)"
        total += conn.execute(sql, (row[0], WIDE_RUN)).fetchone()[0]
    return total >= 2 * WIDE_RUN


def _count(
    conn: Connection,
    matches: tuple[str, list[Any]],
    segments: Segments | None,
    counts: CountCache | None = None,
) -> tuple[int, Customized, dict[int, int] | None]:
    """``_tally`` of every match; a series sort's segment sizes counted with it (whether a
    run has the statistic: one probe a run, ``sql.compile_segments``). What was read is
    kept in ``counts`` (not for a condition on tags, which the generation does not track)."""

    def kept(key: tuple[Any, ...], read: Callable[[], Any]) -> Any:
        if counts is None or reads_annotations(matches[0]):
            return read()
        return counts.get(conn, (matches[0], tuple(matches[1]), *key), read)

    if segments is None or segments[2] is None:  # (a sort on a custom field: its type sets)
        counted = kept((), functools.partial(_by_type_set, conn, matches))
        return _tally(conn, counted, segments and segments[0])

    def series() -> tuple[int, Customized, dict[int, int] | None]:
        by_set: Counter[int] = Counter()
        sizes = _series_sizes(conn, matches, segments, by_set)
        count, customized, _ = _tally(conn, by_set.items(), None)
        return count, customized, sizes

    return kept((segments[0], segments[2]), series)  # type: ignore[no-any-return]


def _by_type_set(conn: Connection, matches: tuple[str, list[Any]]) -> list[tuple[int, int]]:
    """(type set, matches of it) pairs of every match."""
    return conn.execute(
        f"SELECT runs.type_set, count(*) FROM runs {matches[0]} GROUP BY 1", matches[1]
    ).fetchall()


def _series_sizes(
    conn: Connection,
    matches: tuple[str, list[Any]],
    segments: Segments,
    by_set: Counter[int] | None = None,
) -> dict[int, int]:
    """{segment: matches in it} of a series sort (0: without the statistic, 1: with it);
    ``by_set`` gets the matches per type set."""
    rows = conn.execute(
        f"SELECT runs.type_set, {segments[2]}, count(*) FROM runs {matches[0]} GROUP BY 1, 2",
        [segments[0], *matches[1]],
    ).fetchall()
    sizes = {0: 0, 1: 0}
    for type_set, has, n in rows:
        if by_set is not None:
            by_set[type_set] += n
        sizes[1 if has else 0] += n
    return sizes


def _page_ids(
    conn: Connection,
    where: tuple[str, list[Any]],
    segments: Segments,
    sizes: dict[int, int] | Callable[[], dict[int, int]],
    limit: int,
    offset: int,
) -> list[int]:
    """The page's run ids, read segment by segment (``sql.compile_segments``): only the
    segments the page overlaps, each in the order an index on its values gives. ``sizes``:
    the segments' sizes, or how to count them, called only when a segment the page starts
    in shows nothing of it and the page goes on (a segment read from its start, or showing
    some rows, tells its size itself)."""
    wsql, wparams = where
    name, parts, _ = segments
    ids: list[int] = []
    first = 0
    for kind, join, test, osql in parts:
        size = sizes.get(kind, 0) if isinstance(sizes, dict) else None
        lo = max(offset, first)
        hi = offset + limit if size is None else min(offset + limit, first + size)
        if lo < hi:
            got = [
                row[0]
                for row in conn.execute(
                    f"SELECT runs.id FROM runs {join} {wsql} AND {test} "
                    f"ORDER BY {osql} LIMIT ? OFFSET ?",
                    [name, *wparams, hi - lo, lo - first],
                )
            ]
            ids += got
            if size is None and len(got) == hi - lo:
                return ids
            if size is None and (got or lo == first):
                size = lo - first + len(got)
        if size is None:
            sizes = sizes() if callable(sizes) else sizes
            size = sizes.get(kind, 0)
        first += size
    return ids


def _tally(
    conn: Connection, counted: Iterable[tuple[int, int]], label: str | None
) -> tuple[int, Customized, dict[int, int] | None]:
    """(count, the answer's shared ``customized`` entries, sort segment -> size) from (type
    set, runs) pairs; the sizes are those of the sort on custom field ``label`` (None: no
    sizes, and None when a type set is of an index converted from version 4, which does not
    say). The entries are shared by every tally of the same type sets (``_customized_of``):
    read-only."""
    counted = list(counted)
    combos = _type_sets(conn, [type_id for type_id, _ in counted])
    count = 0
    sizes: dict[int, int] = {}
    for type_id, n in counted:
        count += n
        kind = 0 if label is None else _kinds(combos[type_id]).get(label, 0)
        sizes[kind] = sizes.get(kind, 0) + n
    customized = _customized_of(tuple(sorted({combos[type_id] for type_id, _ in counted})))
    return count, customized, (None if label is None or -1 in sizes else sizes)


@functools.lru_cache(maxsize=32)
def _customized_of(strings: tuple[str, ...]) -> Customized:
    """The answer's ``customized`` entries over the ``custom_types`` strings of a result's
    runs, made once per set of strings (runs of one experiment share one) and shared:
    read-only, copied for each answer. A wide run's 1,650 labels took about 3 ms a query to
    gather and make (issue 34 item 3)."""
    types: dict[str, set[str]] = {}
    for string in strings:
        for entry_label, vtype, _ in _entries(string):
            types.setdefault(entry_label, set()).add(vtype)
    return finish_customized(types)


@functools.lru_cache(maxsize=32)
def _entries(types: str) -> tuple[tuple[str, str, int], ...]:
    """(label, type name, sort kind; -1: not said, an index converted from version 4) of a
    ``custom_types`` string, parsed once: a wide run's string holds 1,650 entries, and a
    string never changes meaning (``index_tables.custom_types``). At most 32 are kept (a
    wide one with its string takes about 0.3 MB)."""
    return tuple(
        (entry[0], entry[1], entry[2] if len(entry) > 2 else -1) for entry in json.loads(types)
    )


@functools.lru_cache(maxsize=32)
def _kinds(types: str) -> dict[str, int]:
    """Label -> sort kind of a ``custom_types`` string (``_entries``)."""
    return {entry_label: kind for entry_label, _, kind in _entries(types)}


def _type_sets(conn: Connection, ids: list[int]) -> dict[int, str]:
    """{type set number: its custom_types string} for ``ids``."""
    return dict(in_chunks(conn, "SELECT id, types FROM type_sets WHERE id IN", ids))


def added_info(tag: Any, remark: Any) -> dict[str, Any]:
    """A run's ``added_info`` from its annotation's columns."""
    added = {}
    if tag is not None:
        added["tag"] = tag
    if remark is not None:
        added["remark"] = remark
    return added
