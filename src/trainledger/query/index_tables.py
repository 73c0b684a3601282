"""Reading and writing the index's rows (runs, records, custom values, marks, listings).

Why apart from ``index.py``: these are the only statements that touch table layouts; the
index module orchestrates scans, transactions and caching around them. Every function takes
an open connection inside a transaction the caller owns.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from trainledger.query import semantics
from trainledger.query.dir_listing import DirListing
from trainledger.query.discovery import RunFiles
from trainledger.query.fields import RUN_FIELDS, group_values
from trainledger.query.flat_record import graph_hash
from trainledger.query.numbers import sql_number
from trainledger.query.page_read import added_info
from trainledger.query.schema import BIG, SQLITE, VALUE_FIELDS, Connection, Dialect
from trainledger.values import floats_without_nan

log = logging.getLogger(__name__)

_RUN_COLUMNS = "summary_dir, update_time, type_set, " + ", ".join(
    f"{f}_num, {f}_big, {f}_txt" for f in VALUE_FIELDS
)
_RUN_VALUES = "?, ?, ?, " + ", ".join("?, ?, ?" for _ in VALUE_FIELDS)
_INSERT_RUN = f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({_RUN_VALUES}) RETURNING id"
_INSERT_RUN_JSON = (
    f"INSERT INTO runs ({_RUN_COLUMNS}, custom_values) VALUES ({_RUN_VALUES}, "
    "CAST(? AS JSONB)) RETURNING id"
)


_UPSERT = (
    "ON CONFLICT (run_id, name) DO UPDATE SET "
    "num = excluded.num, big = excluded.big, txt = excluded.txt, vtype = excluded.vtype"
)
_INSERT_FLOAT = f"INSERT INTO custom (run_id, name, num, vtype) VALUES (?, ?, ?, 'float') {_UPSERT}"
_INSERT_CUSTOM = (
    f"INSERT INTO custom (run_id, name, num, big, txt, vtype) VALUES (?, ?, ?, ?, ?, ?) {_UPSERT}"
)

_NOTHING: tuple[None, None, None] = (None, None, None)


def split_value(value: Any) -> tuple[float | None, Any, str | None]:
    """(num, big, txt) columns of a value (see ``schema.py``); all None for None and NaN.

    A number is its float64 and, from magnitude 2**53 on, also its exact value (an int, or
    a float that is integral there; numbers beyond int64 count as float64, see numbers.py).
    Other types raise TypeError: such a run is indexed as unreadable. (Called for every
    field of every run: the common types go first.)
    """
    kind = type(value)
    if kind is str:
        return None, None, value
    if kind is float:
        if value != value:  # NaN
            return _NOTHING
        return value, (None if -BIG < value < BIG else value), None
    if value is None:
        return _NOTHING
    if kind is int and -BIG < value < BIG:
        return float(value), None, None
    if isinstance(value, str):
        return None, None, str(value)
    if isinstance(value, (int, float)):
        number = sql_number(int(value) if isinstance(value, bool) else value)
        if isinstance(number, float) and math.isnan(number):
            return _NOTHING
        return float(number), (number if abs(number) >= BIG else None), None
    raise TypeError(f"cannot index a value of type {type(value).__name__}: {value!r}")


def custom_types(pairs: list[tuple[str, Any]]) -> str:
    """A run's (label, type name, kind) triples in one string (its ``type_sets`` entry): the
    count query groups by its number, so it tells the types of the result (``customized``)
    and the size of each sort segment without reading a custom value."""
    return custom_rows(pairs).types


class CustomRows(NamedTuple):
    """A run's ``custom`` rows, split by how they are inserted, and its ``custom_types``.

    Why two kinds of row: a plain float (nearly every metric) binds three parameters (run,
    label, value) where the general row binds six; binding is most of a wide run's insert
    (1,650 rows: 4.7 -> 2.9 ms, issue 34 item 3)."""

    labels: list[str]  #: the labels of the plain float values (|x| < 2**53) ...
    floats: list[float]  #: ... and those values, in the same order
    others: list[tuple[str, float | None, Any, str | None, str]]  #: (label, num, big, txt, vtype)
    types: str


#: ``custom_types`` strings by their runs' labels and non-float types: the runs of one
#: experiment share them, so a wide run's string is built once, not per run
_TYPES_KEPT: dict[tuple[tuple[str, ...], tuple[tuple[str, str, int], ...]], str] = {}
_TYPES_KEPT_MAX = 16


def custom_rows(pairs: list[tuple[str, Any]]) -> CustomRows:
    """A run's ``custom`` rows and its ``custom_types`` string, in one pass over its values.

    Why one pass: a wide run (1,500 metrics) splits each value once here, where the rows and
    the types each splitting it cost a tenth of its indexing (issue 34 item 3)."""
    if pairs:
        names, values = zip(*pairs, strict=True)
        # every value a plain float: checked in C, no row built (NaN first: min and max may
        # pass over it)
        if floats_without_nan(values) and -BIG < min(values) and max(values) < BIG:
            return CustomRows(list(names), list(values), [], _types(names, ()))
    labels: list[str] = []
    floats: list[float] = []
    others: list[tuple[str, float | None, Any, str | None, str]] = []
    odd: list[tuple[str, str, int]] = []  # (label, type name, kind) of every non-plain float
    add_label, add_float = labels.append, floats.append
    for label, value in pairs:
        if type(value) is float and -BIG < value < BIG:  # the common case, inline (NaN fails it)
            add_label(label)
            add_float(value)
            continue
        name = type(value).__name__
        if value is None or isinstance(value, (str, int, float)):
            num, big, txt = split_value(value)
            others.append((label, num, big, txt, name))
            odd.append((label, name, 1 if num is not None else 2 if txt is not None else 0))
        else:  # not a scalar (a list in a metric JSON): typed, never filtered on
            odd.append((label, name, 0))
    every = tuple(labels) if not odd else tuple(label for label, _ in pairs)
    return CustomRows(labels, floats, others, _types(every, tuple(odd)))


def _types(labels: tuple[str, ...], odd: tuple[tuple[str, str, int], ...]) -> str:
    """The ``custom_types`` string of a run's ``labels``, ``odd`` the (label, type name, kind)
    of those that are not plain floats; kept by both (``_TYPES_KEPT``)."""
    key = (labels, odd)
    types = _TYPES_KEPT.get(key)
    if types is None:
        typed = {entry[0]: entry for entry in odd}
        types = json.dumps([typed.get(label) or (label, "float", 1) for label in labels])
        if len(_TYPES_KEPT) >= _TYPES_KEPT_MAX:
            _TYPES_KEPT.clear()
        _TYPES_KEPT[key] = types
    return types


def _as_text(number: Any) -> str | None:
    """A stored number as PostgreSQL reads it back exactly (``float8``/``numeric`` input)."""
    if number is None:
        return None
    if isinstance(number, float):
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        if number.is_integer() and not abs(number) < BIG:
            return str(int(number))
        return repr(number)
    return str(number)


def custom_json(pairs: list[tuple[str, Any]]) -> str | None:
    """A run's custom values as ``runs.custom_values`` holds them (``schema.py``): label ->
    [float64, exact value, text], numbers as text; None for a run without any."""
    values = {}
    for label, value in pairs:
        if value is None or isinstance(value, (str, int, float)):
            num, big, txt = split_value(value)
            values[label] = [_as_text(num), _as_text(big), txt]
    return json.dumps(values, ensure_ascii=False) if values else None


def type_set(conn: Connection, types: str) -> int:
    """The number of a ``custom_types`` string in ``type_sets``, added if new (the caller's
    write transaction serializes writers; a concurrent PostgreSQL writer's equal row wins)."""
    conn.execute(
        "INSERT INTO type_sets (types) VALUES (?) ON CONFLICT (types) DO NOTHING", (types,)
    )
    return int(conn.execute("SELECT id FROM type_sets WHERE types = ?", (types,)).fetchone()[0])


def delete_runs(conn: Connection, summary_dirs: Iterable[str]) -> None:
    """Forget runs (their records, custom values and unreadable markers)."""
    for d in summary_dirs:
        for table in ("custom", "records"):
            conn.execute(
                f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM runs WHERE summary_dir = ?)",
                (d,),
            )
        conn.execute("DELETE FROM runs WHERE summary_dir = ?", (d,))
        conn.execute("DELETE FROM unreadable WHERE summary_dir = ?", (d,))


def store_batch(
    conn: Connection,
    batch: Sequence[tuple[RunFiles, semantics.Record | Prepared | None]],
    dialect: Dialect = SQLITE,
) -> int:
    """Replace the given runs with their new records, or their rows made ahead (``prepare``);
    None: no usable lineage.

    Returns how many runs were stored as unreadable (no record, or values it cannot store).
    """
    # dataset marks are numbered in order of first appearance: oldest update first
    ordered = sorted(batch, key=lambda b: (b[0].update_time, b[0].summary_dir))
    delete_runs(conn, [run.summary_dir for run, _ in ordered])
    unreadable = 0
    for run, record in ordered:
        if record is not None and _insert_isolated(conn, run, record, dialect):
            continue
        unreadable += 1
        conn.execute(
            "INSERT INTO unreadable (summary_dir, signature) VALUES (?, ?)",
            (run.summary_dir, run.signature),
        )
    return unreadable


#: what may fail to store a run's values (then it is marked unreadable, ``_insert_isolated``)
UNSTORABLE = (
    sqlite3.InterfaceError,
    sqlite3.DataError,
    ValueError,  # (the PostgreSQL adapter raises ValueError for a value it cannot store)
    TypeError,
    OverflowError,
)


def _insert_isolated(
    conn: Connection, run: RunFiles, record: semantics.Record | Prepared, dialect: Dialect
) -> bool:
    """Insert one run inside a savepoint; False (nothing kept) if its values cannot be stored.

    Why: one run with a value SQLite refuses (a lone surrogate in a name, say) must be marked
    unreadable, not abort the batch and hide every other run of the base.
    """
    conn.execute("SAVEPOINT one_run")
    try:
        prepared = record if isinstance(record, Prepared) else prepare(record, dialect)
        insert_prepared(conn, prepared, run.signature, dialect)
    except UNSTORABLE as exc:
        conn.execute("ROLLBACK TO one_run")
        conn.execute("RELEASE one_run")
        log.warning("cannot index run %s: %s", run.summary_dir, exc)
        return False
    conn.execute("RELEASE one_run")
    return True


def assign_mark(conn: Connection, ghash: str) -> str:
    """The dataset mark of a graph: its existing number, or the next unused one.

    Marks are never reused or renumbered, so they cannot collide and stay stable as runs are
    added (the caller's write transaction serializes concurrent assignments).
    """
    conn.execute(
        "INSERT INTO marks (graph_hash, mark) "
        "SELECT CAST(? AS TEXT), COALESCE(MAX(mark), 0) + 1 FROM marks WHERE 1 = 1 "
        "ON CONFLICT (graph_hash) DO NOTHING",  # (WHERE: SQLite's INSERT-SELECT-ON parse)
        (ghash,),
    )
    row = conn.execute("SELECT mark FROM marks WHERE graph_hash = ?", (ghash,)).fetchone()
    return str(row[0])


#: rows a statement of ``_insert_floats`` (2 bound values each and the run: within the 999
#: bound values older SQLite builds allow a statement)
_FLOAT_ROWS = 400


def _insert_floats(conn: Connection, run_id: int, rows: CustomRows) -> None:
    """A run's plain float rows, up to ``_FLOAT_ROWS`` a statement (SQLite), the run number
    bound once a statement.

    Why: one row a step costs a call, a step, a reset and three bindings each; a wide run's
    1,650 rows took 3.6 ms one by one and 1.6 ms 300 a statement (BENCHMARKS.md, issue 34
    item 3). A label given twice keeps its last value, as row by row."""
    pairs: list[Any] = [None] * (2 * len(rows.labels))
    pairs[0::2] = rows.labels
    pairs[1::2] = rows.floats
    for start in range(0, len(pairs), 2 * _FLOAT_ROWS):
        part = pairs[start : start + 2 * _FLOAT_ROWS]
        conn.execute(_floats_statement(len(part) // 2), [run_id, *part])


@functools.lru_cache(maxsize=64)
def _floats_statement(rows: int) -> str:
    """The statement of ``rows`` rows: ``?1`` the run, then each row's label and value."""
    values = ", ".join(f"(?1, ?{2 * i + 2}, ?{2 * i + 3}, 'float')" for i in range(rows))
    return f"INSERT INTO custom (run_id, name, num, vtype) VALUES {values} {_UPSERT}"


class Prepared(NamedTuple):
    """A run's rows made from its record without the database (``prepare``), which
    ``insert_prepared`` writes. Why apart: a bulk build makes them in other processes while
    this one writes (``parse_worker.py``)."""

    graph_hash: str
    run_values: list[Any]  #: summary_dir, update_time, then each value field's (num, big, txt)
    stored: str  #: the record's JSON without its dataset_mark and closing brace
    rows: CustomRows
    custom_json: str | None  #: PostgreSQL's ``runs.custom_values`` (None on SQLite)


#: where the dataset mark's (num, big, txt) go in a ``runs`` row's values (``insert_prepared``)
_MARK_AT = 3 + 3 * VALUE_FIELDS.index("dataset_mark")
#: a record's keys its stored JSON leaves out (its dataset_mark is written last, when known)
_NOT_STORED = frozenset({"added_info", "dataset_mark", *RUN_FIELDS})


def prepare(
    record: semantics.Record, dialect: Dialect = SQLITE, texts: Mapping[str, str] | None = None
) -> Prepared:
    """``record``'s rows, ready for ``insert_prepared``; ``texts``: JSON texts that decode to
    exactly the record's value of their key (``read_lineage_texts``), stored as they are."""
    stored = {k: v for k, v in record.items() if k not in _NOT_STORED}
    text = _stored_json(stored, texts) if texts else _json(stored)
    pairs = group_values(record)
    values = [record["summary_dir"], record["update_time"]]
    values += [part for f in VALUE_FIELDS for part in split_value(record.get(f))]
    return Prepared(
        graph_hash(record.get("dataset_graph")),
        values,
        text[:-1],
        custom_rows(pairs),
        custom_json(pairs) if dialect.custom_json else None,
    )


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def _stored_json(stored: dict[str, Any], texts: Mapping[str, str]) -> str:
    """``stored``'s JSON, the keys in ``texts`` written as their text (in their place)."""
    parts: list[str] = []
    plain: dict[str, Any] = {}
    for key, value in stored.items():
        text = texts.get(key)
        if text is None:
            plain[key] = value
            continue
        if plain:
            parts.append(_json(plain)[1:-1])
            plain = {}
        parts.append(f"{json.dumps(key)}:{text}")
    if plain:
        parts.append(_json(plain)[1:-1])
    return "{" + ",".join(parts) + "}"


def insert_record(
    conn: Connection, record: semantics.Record, signature: str, dialect: Dialect = SQLITE
) -> None:
    """Insert one run: its filterable columns, its JSON record and its custom values."""
    insert_prepared(conn, prepare(record, dialect), signature, dialect)


def insert_prepared(
    conn: Connection, prepared: Prepared, signature: str, dialect: Dialect = SQLITE
) -> None:
    """Insert one run's rows (``prepare``): its dataset mark and type set are numbered here."""
    mark = assign_mark(conn, prepared.graph_hash)
    rows = prepared.rows
    values = [*prepared.run_values[:2], type_set(conn, rows.types), *prepared.run_values[2:]]
    values[_MARK_AT : _MARK_AT + 3] = split_value(mark)
    if prepared.custom_json is not None:
        row = conn.execute(_INSERT_RUN_JSON, [*values, prepared.custom_json]).fetchone()
    else:
        row = conn.execute(_INSERT_RUN, values).fetchone()
    run_id = row[0]
    conn.execute(
        "INSERT INTO records (run_id, signature, record) VALUES (?, ?, ?)",
        (run_id, signature, f'{prepared.stored},"dataset_mark":{json.dumps(mark)}}}'),
    )
    if dialect.name == "sqlite":
        _insert_floats(conn, run_id, rows)
    else:  # (PostgreSQL refuses a key twice in one statement's upsert: {1: .., "1": ..})
        conn.executemany(_INSERT_FLOAT, zip(itertools.repeat(run_id), rows.labels, rows.floats))
    if rows.others:
        conn.executemany(_INSERT_CUSTOM, [(run_id, *row) for row in rows.others])


def stored_record(row: tuple[Any, ...]) -> semantics.Record:
    """A stored record with its annotation and the run fields its columns hold."""
    record: semantics.Record = json.loads(row[0])
    record["added_info"] = added_info(row[1], row[2])
    record["status"] = row[3]
    record["duration"] = row[4]
    record["sessions"] = None if row[5] is None else int(row[5])
    return record


RECORD_SELECT = (
    "SELECT runs.id, r.record, a.tag, a.remark, runs.status_txt, runs.duration_num, "
    "runs.sessions_num FROM runs "
    "JOIN records AS r ON r.run_id = runs.id "
    "LEFT JOIN annotations AS a ON a.run_id = runs.summary_dir"
)


def all_records(conn: Connection) -> list[semantics.Record]:
    """Every indexed run's record (with dataset_mark and added_info)."""
    return [stored_record(tuple(row[1:])) for row in conn.execute(RECORD_SELECT)]


def load_listings(conn: Connection) -> dict[str, DirListing]:
    """The saved directory listings (a damaged entry is skipped: listed again)."""
    rows = conn.execute("SELECT path, data FROM listings").fetchall()
    try:  # one decode for all rows (fast); per row only if some row is damaged
        decoded = json.loads("[" + ",".join(data for _, data in rows) + "]")
    except ValueError:
        decoded = [None] * len(rows)
    out = {}
    for (path, data), item in zip(rows, decoded, strict=True):
        try:
            out[path] = DirListing.from_json(path, item if item is not None else json.loads(data))
        except (ValueError, TypeError):
            continue
    return out


def _storable(path: str) -> bool:
    """Whether a path is valid text (a name that is not UTF-8 holds lone surrogates)."""
    return path.isascii() or path.encode("utf-8", "surrogatepass") == path.encode(
        "utf-8", "replace"
    )


def save_listings(conn: Connection, changed: dict[str, DirListing | None]) -> None:
    """Save (or drop, for None) the listings a scan took. A directory whose path is not
    valid text is listed again by the next process instead (its run is still indexed, under
    the id ``storage.id_of_name`` gives it)."""
    changed = {p: listing for p, listing in changed.items() if _storable(p)}
    conn.executemany(
        "DELETE FROM listings WHERE path = ?",
        [(p,) for p, listing in changed.items() if listing is None],
    )
    conn.executemany(
        "INSERT INTO listings (path, data) VALUES (?, ?) "
        "ON CONFLICT (path) DO UPDATE SET data = excluded.data",
        [(p, json.dumps(listing.to_json())) for p, listing in changed.items() if listing],
    )
