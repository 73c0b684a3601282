"""The query semantics of ``semantics.py`` compiled to SQL, the same text for both engines
(but where a custom value is read from: the ``custom`` rows, or PostgreSQL's JSONB copy).

Why the care: SQL compares across types where Python refuses (``3 < 'a'`` is true in SQLite,
an error in PostgreSQL, a TypeError that MindInsight treated as "no match"), and NULL never
equals anything. Each value is stored as number columns and a text column (``schema.py``):
a number condition reads only the number columns, a text condition only the text one, so a
mismatch is simply false on both engines. A number below 2**53 in magnitude compares with
the float64 column alone (exact: any stored number on the other side of 2**53 keeps its
order as a float64); a larger one with the exact value. Every predicate is two-valued (never
NULL), so ``NOT`` means "does not match". Field names never enter the SQL text: fixed fields
map to fixed columns, custom fields and series tags are looked up by a bound name (a series
statistic picks one of ``series_stats``'s fixed columns).
"""

from __future__ import annotations

from typing import Any

from trainledger.query.conditions import filter_items
from trainledger.query.fields import LOGIC_KEYS
from trainledger.query.numbers import sql_number
from trainledger.query.schema import BIG, SQLITE, VALUE_FIELDS, Dialect
from trainledger.query.semantics import is_match
from trainledger.query.series_fields import parse_series_field
from trainledger.query.series_tables import COLUMNS

_SQL_OPS = {"eq": "=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_TRUE, _FALSE = "1 = 1", "1 = 0"
# fixed field -> (float64, exact number, text) columns of the ``runs`` table
_COLUMNS: dict[str, tuple[str, str, str]] = {
    f: (f"runs.{f}_num", f"runs.{f}_big", f"runs.{f}_txt") for f in VALUE_FIELDS
}
_COLUMNS["summary_dir"] = ("NULL", "NULL", "runs.summary_dir")
# field kind -> (table, alias's join condition on runs, float64, exact number, text)
_CUSTOM = ("custom", "{a}.run_id = runs.id AND {a}.name = ?", "{a}.num", "{a}.big", "{a}.txt")
_TAG = ("annotations", "{a}.run_id = runs.summary_dir", "{a}.tag", "NULL", "NULL")
#: the most custom fields joined on SQLite (it joins at most 64 tables); more are EXISTS tests
_MAX_JOINS = 32


def _joined(word: str, parts: list[str]) -> str:
    """``parts`` joined by ``word`` (AND, OR) as a balanced tree of parentheses, in their
    order: a flat chain of 1,000 terms is 1,000 levels deep, over SQLite's limit ("Expression
    tree is too large"); balanced, it is ten."""
    if len(parts) <= 8:
        return "(" + f" {word} ".join(parts) + ")"
    half = len(parts) // 2
    return f"({_joined(word, parts[:half])} {word} {_joined(word, parts[half:])})"


def reads_annotations(sql: str) -> bool:
    """Whether compiled SQL reads the annotations (a condition on a run's tag): setting a tag
    does not bump the index generation, so what such SQL counted cannot be kept by it."""
    return f" {_TAG[0]} AS " in sql


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float))


def _source(field: str) -> tuple[tuple[str, str, str, str, str], list[Any]]:
    """Where a value outside ``runs`` lives (table, join condition, number, exact number and
    text columns), and the parameter its join condition binds."""
    if field == "tag":
        return _TAG, []
    parsed = parse_series_field(field)
    if parsed is not None:  # (series_tables.COLUMNS names the column of each statistic)
        on = "{a}.summary_dir = runs.summary_dir AND {a}.tag = ?"
        return ("series_stats", on, "{a}." + COLUMNS[parsed[0]], "NULL", "NULL"), [parsed[1]]
    return _CUSTOM, [field]


def _exact(num: str, big: str) -> str:
    """The exact value of a stored number (its float64 is exact below 2**53)."""
    return num if big == "NULL" else f"COALESCE({big}, CAST({num} AS NUMERIC))"


def _in(column: str, items: list[Any]) -> str:
    return f"({column} IS NOT NULL AND {column} IN ({', '.join('?' for _ in items)}))"


def _match(num: str, big: str, txt: str, op: str, value: Any) -> tuple[str, list[Any]]:
    """Two-valued SQL for ``<num, big, txt> op value`` over one stored value."""
    if op in ("in", "not_in"):
        items = [sql_number(v) for v in value if v is not None]
        small = [v for v in items if _is_num(v) and abs(v) < BIG]
        large = [v for v in items if _is_num(v) and not abs(v) < BIG]
        txts = [v for v in items if not _is_num(v)]
        parts = [
            _in(column, group)
            for column, group in ((num, small), (_exact(num, big), large), (txt, txts))
            if group
        ]
        if len(items) != len(value):
            parts.append(f"({num} IS NULL AND {txt} IS NULL)")
        member = "(" + " OR ".join(parts) + ")" if parts else _FALSE
        return (member if op == "in" else f"NOT {member}"), small + large + txts
    value = sql_number(value)
    if not _is_num(value):
        col = txt
    else:
        col = num if abs(value) < BIG else _exact(num, big)
    sql = f"({num if _is_num(value) else txt} IS NOT NULL AND {col} {_SQL_OPS[op]} ?)"
    return sql, [value]


def _predicate(field: str, op: str, value: Any) -> tuple[str, list[Any]]:
    """SQL for one comparison; numbers beyond int64 compare as float64 (see numbers.py)."""
    if field in _COLUMNS:
        return _match(*_COLUMNS[field], op, value)
    # a custom value or the tag lives in another table: a run without a row there has the
    # value None, so the test is EXISTS a matching row, or NOT EXISTS a failing one when
    # None itself matches (``not_in`` without None, ``in`` with it)
    source, on_params = _source(field)
    table, on, num, big, txt = (part.format(a="v") for part in source)
    if is_match(op, value, None):
        sql, params = _match(num, big, txt, "not_in" if op == "in" else "in", value)
        return f"NOT EXISTS (SELECT 1 FROM {table} AS v WHERE {on} AND {sql})", on_params + params
    sql, params = _match(num, big, txt, op, value)
    return f"EXISTS (SELECT 1 FROM {table} AS v WHERE {on} AND {sql})", on_params + params


_PICK = "SELECT runs.custom_values -> CAST(? AS TEXT) AS v"


def _json_columns(alias: str) -> tuple[str, str, str]:
    """(float64, exact number, text) of a custom value in ``runs.custom_values`` (PostgreSQL's
    JSONB, ``schema.py``), by the lateral ``alias`` that picked its label; the text compares
    by code point, as the ``custom`` table's column does."""
    return (
        f"CAST({alias}.v ->> 0 AS DOUBLE PRECISION)",
        f"CAST({alias}.v ->> 1 AS NUMERIC)",
        f'({alias}.v ->> 2) COLLATE "C"',
    )


def _compile(
    cond: dict[str, Any], dialect: Dialect, joined: bool, members: bool = False
) -> tuple[str, list[Any]]:
    """(joins then WHERE, parameters in their textual order); ``joined``: custom tests that
    None cannot pass as inner joins on SQLite (see ``compile_matches``), the second and later
    as membership tests when ``members`` (``_member``)."""
    joins: list[str] = []
    parts: list[str] = []
    params: list[Any] = []
    where_params: list[Any] = []
    # one alias per custom field, however many operators test it: a range (ge and le) is then
    # one range scan of the custom values' index, not two joins probing each other
    aliases: dict[str, str] = {}
    tests: dict[str, tuple[list[str], list[Any]]] = {}  # SQLite: field -> its join's tests
    for field, op, value in filter_items(cond):
        if not _is_custom(field) or not (joined or dialect.custom_json):
            sql, p = _predicate(field, op, value)
        elif dialect.custom_json:  # a None value is all three NULL, as an absent label
            alias = aliases.get(field)
            if alias is None:
                alias = aliases[field] = f"c{len(aliases)}"
                joins.append(f"CROSS JOIN LATERAL ({_PICK}) AS {alias}")
                params.append(field)
            sql, p = _match(*_json_columns(alias), op, value)
        elif is_match(op, value, None) or (field not in tests and len(tests) >= _MAX_JOINS):
            sql, p = _predicate(field, op, value)  # (None passes: no join; or joins enough)
        else:
            alias = aliases.setdefault(field, f"c{len(aliases)}")
            _, _, num, big, txt = (part.format(a=alias) for part in _CUSTOM)
            sql, p = _match(num, big, txt, op, value)
            found = tests.setdefault(field, ([], []))
            found[0].append(sql)
            found[1].extend(p)
            continue
        parts.append(sql)
        where_params.extend(p)
    memberships: list[str] = []  # (see ``_member``)
    for k, (field, (sqls, p)) in enumerate(tests.items()):
        alias, test = aliases[field], " AND ".join(sqls)
        if k and members:
            memberships.append(_member(alias, test))
        else:
            table, on, *_ = (part.format(a=alias) for part in _CUSTOM)
            joins.append(f"JOIN {table} AS {alias} ON {on} AND {test}")
        params += [field, *p]
    logic, logic_params = _logic(cond)
    if logic:
        parts.append(logic)
        where_params.extend(logic_params)
    where = _joined("AND", memberships + parts) if memberships or parts else _TRUE
    return " ".join([*joins, f"WHERE {where}"]), params + where_params


def _is_custom(field: str) -> bool:
    """Whether ``field`` is a custom value (a ``custom`` row or a JSONB key), not a ``runs``
    column, a run's tag or a series statistic."""
    return not (field in _COLUMNS or field == "tag" or parse_series_field(field) is not None)


def _member(alias: str, test: str) -> str:
    """A second (third, ...) joined custom test as membership in its runs: SQLite lists the
    runs of that label's range once (one scan of the value index) and tests each run the
    first join reaches against the list.

    Why, over wide runs only (``page_read`` decides): a join probes that label's row run by
    run through the key ``(run_id, name)``, one descent of the whole ``custom`` tree each,
    which costs with the runs' width (10,000 runs of 1,650 values: 15 -> 7 ms for two
    conditions, issue 34 item 3), where the list costs its whole range: over 100,000
    ordinary runs a third condition that keeps nearly every run went 92 -> 111 ms."""
    inner = f"SELECT {alias}.run_id FROM custom AS {alias} WHERE {alias}.name = ? AND {test}"
    return f"runs.id IN ({inner})"


def _logic(cond: dict[str, Any]) -> tuple[str, list[Any]]:
    """SQL for a condition's ``or``/``and``/``not`` conditions (EXISTS forms throughout: every
    predicate is two-valued, so NOT is "does not match"); "" when it has none."""
    parts: list[str] = []
    params: list[Any] = []
    for key in ("or", "and"):
        if key in cond:
            subs = [_nested(sub) for sub in cond[key]]
            parts.append(_joined(key.upper(), [sql for sql, _ in subs]))
            params += [p for _, sub_params in subs for p in sub_params]
    if "not" in cond:
        sql, sub_params = _nested(cond["not"])
        parts.append(f"NOT {sql}")
        params += sub_params
    return (_joined("AND", parts) if parts else ""), params


def _nested(cond: dict[str, Any]) -> tuple[str, list[Any]]:
    """One nested condition as a parenthesized, two-valued predicate."""
    parts: list[str] = []
    params: list[Any] = []
    for field, op, value in filter_items(cond):
        sql, p = _predicate(field, op, value)
        parts.append(sql)
        params += p
    logic, logic_params = _logic(cond)
    if logic:
        parts.append(logic)
        params += logic_params
    return (_joined("AND", parts) if parts else f"({_TRUE})"), params


def compile_where(cond: dict[str, Any], dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
    """What follows ``FROM runs`` (joins, then WHERE) to read a page of the runs a
    *validated* condition matches, and its parameters.

    On SQLite a custom value is tested with EXISTS: probed only for the runs the page
    reaches, when it is read along an index order (``compile_segments``).
    """
    return _compile(cond, dialect, joined=False)


def compile_matches(cond: dict[str, Any], dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
    """``compile_where``'s form for reading every run a *validated* condition matches (the
    count).

    Why another form: SQLite does not turn an EXISTS into a join, so each run's custom value
    was probed one by one, half a 100,000-run count. Here a custom test that None cannot
    pass is an inner join (one row per run: ``custom``'s key is (run_id, name)), so SQLite
    may start from that name's index instead: a selective ``user_defined/`` filter then
    reads only its runs. On PostgreSQL both forms read ``runs.custom_values`` in the scan.
    """
    return _compile(cond, dialect, joined=True)


def compile_members(cond: dict[str, Any], dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
    """``compile_matches``' form with the second and later joined custom tests as membership
    tests (``_member``): the same runs, read faster over wide runs."""
    return _compile(cond, dialect, joined=True, members=True)


def compile_range(cond: dict[str, Any], dialect: Dialect = SQLITE) -> tuple[str, list[Any]] | None:
    """A statement reading the run numbers a *validated* condition matches from the custom
    values' index alone, and its parameters; None unless the condition tests one custom
    field only, with operators None cannot pass (``metric/Accuracy`` in [0.5, 0.6]), on
    SQLite.

    Why: such a condition is one range scan of ``custom_by_value``; joined to ``runs`` (for
    the order and the type sets) each match also cost a descent of the runs' tree, half of
    reading 10,010 matches of 100,000 runs (issue 34 item 6). ``page_read`` orders them from
    their cached records instead.
    """
    items = filter_items(cond)
    if dialect.custom_json or not items or any(key in cond for key in LOGIC_KEYS):
        return None
    field = items[0][0]
    if any(f != field for f, _, _ in items) or not _is_custom(field):
        return None
    _, _, num, big, txt = (part.format(a="c0") for part in _CUSTOM)
    tests: list[str] = []
    params: list[Any] = [field]
    for _, op, value in items:
        if is_match(op, value, None):
            return None
        sql, p = _match(num, big, txt, op, value)
        tests.append(sql)
        params += p
    return f"SELECT c0.run_id FROM custom AS c0 WHERE c0.name = ? AND {' AND '.join(tests)}", params


DEFAULT_ORDER = "runs.update_time DESC, runs.summary_dir ASC"


def compile_order(cond: dict[str, Any]) -> tuple[str, str, list[Any]]:
    """(LEFT JOIN clause, ORDER BY clause without the keyword, the join's parameters).

    The sort key, then the default order for ties. Ascending is None first, then numbers,
    then text (MindInsight's rule), descending the reverse: a rank column (0 None, 1 number,
    2 text) orders the kinds, then the float64, the exact number (telling apart large numbers
    with one float64) and the text column order within a kind.
    """
    name = cond.get("sorted_name")
    if name is None:
        return "", DEFAULT_ORDER, []
    join, params = "", list[Any]()
    if name in _COLUMNS:
        num, big, txt = _COLUMNS[name]
    else:
        source, params = _source(name)
        table, on, num, big, txt = (part.format(a="s") for part in source)
        join = f"LEFT JOIN {table} AS s ON {on}"
    d = "DESC" if cond.get("sorted_type") == "descending" else "ASC"
    rank = f"CASE WHEN {num} IS NOT NULL THEN 1 WHEN {txt} IS NOT NULL THEN 2 ELSE 0 END"
    keys = [rank] + [c for c in (num, big, txt) if c != "NULL"]
    return join, ", ".join(f"{k} {d}" for k in keys) + f", {DEFAULT_ORDER}", params


#: ``compile_segments``' answer: (the bound name of its joins, the segments in page order as
#: (kind, join, test, ORDER BY), and for a series sort the SQL of "has a value", counted per
#: run to size the segments (None: a custom field's type sets size them))
Segments = tuple[str, list[tuple[int, str, str, str]], str | None]
#: the statistics with an index by tag (schema version 10): a sort on them reads that index
_INDEXED_STATS = ("last", "min", "max")


def compile_segments(cond: dict[str, Any]) -> Segments | None:
    """For a sort on a ``metric/`` or ``user_defined/`` field, or on an indexed series
    statistic (``min(loss)``): its label or tag, the segments in page order as (kind, join,
    test, ORDER BY), and how to size them; None for any other sort.

    Why: ``compile_order``'s single LEFT JOIN makes the engine join every matching run's
    value before it can sort (seconds at a million runs). Split by kind (0 None, 1 number,
    2 text, the rank of ``compile_order``), each segment is in the order of the index on
    ``custom (name, num, ...)`` or ``series_stats (tag, <statistic>)``, so a page reads
    about as many rows as it shows. A custom field's segment sizes come from the count
    query's type sets (``page_read.fetch``); a statistic's from one more probe a run in
    that count (a statistic is a number or None: two segments).
    """
    name = cond.get("sorted_name")
    if name is None or name in _COLUMNS or name == "tag":
        return None
    d = "DESC" if cond.get("sorted_type") == "descending" else "ASC"
    kinds = (2, 1, 0) if d == "DESC" else (0, 1, 2)
    parsed = parse_series_field(name)
    if parsed is not None:
        if parsed[0] not in _INDEXED_STATS:
            return None
        col = "s." + COLUMNS[parsed[0]]
        join = "JOIN series_stats AS s ON s.summary_dir = runs.summary_dir AND s.tag = ?"
        series = {
            0: (f"LEFT {join}", f"{col} IS NULL", DEFAULT_ORDER),
            1: (join, f"{col} IS NOT NULL", f"{col} {d}, {DEFAULT_ORDER}"),
        }
        has = (
            "EXISTS (SELECT 1 FROM series_stats AS z WHERE z.summary_dir = runs.summary_dir "
            f"AND z.tag = ? AND z.{COLUMNS[parsed[0]]} IS NOT NULL)"
        )
        return parsed[1], [(k, *series[k]) for k in kinds if k in series], has
    join = "JOIN custom AS s ON s.run_id = runs.id AND s.name = ?"
    parts = {
        0: (f"LEFT {join}", "s.num IS NULL AND s.txt IS NULL", DEFAULT_ORDER),
        1: (join, "s.num IS NOT NULL", f"s.num {d}, s.big {d}, {DEFAULT_ORDER}"),
        2: (join, "s.txt IS NOT NULL", f"s.txt {d}, {DEFAULT_ORDER}"),
    }
    return name, [(k, *parts[k]) for k in kinds], None
