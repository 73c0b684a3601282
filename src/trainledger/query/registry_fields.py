"""Named models as query fields (docs/models.md, "In queries"): ``registry/<name>``, the
newest version of model ``<name>`` registered from a run, and ``registry/<name>@<alias>``,
the version alias ``<alias>`` names, on the run that version points into.

Why in the index: "the run behind ``classifier@production``" and "every run with a
registered version" must be conditions like any other, sorted and combined in SQL on SQLite
and PostgreSQL. The registry's events stay where they are kept (``model_log.py``); the index
holds their consequence per run (``run_registry``, schema version 14) and the runs' records
carry it as the group ``registry``. A registry write applies it at once (``models.py`` calls
``LineageIndex.apply_registry``, which bumps the index's generation, so every process's next
query answers with it); a process's first refresh that scans applies whatever the log holds
that the index does not (an index built later, a write whose process died before it applied
it), and a run parsed again takes its fields at its parse (``family_index.extras``).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainledger.query.schema import Connection, Dialect
from trainledger.storage import MODELS_FILE

__all__ = ["fields_by_run", "log_stamp", "apply_registry", "refresh_registry", "registry_extras"]


def fields_by_run(events: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """summary_dir -> its registry group: ``{name: newest version from it, "name@alias":
    version}``; a pure function of the log (``model_state.replay``)."""
    from trainledger.query.model_state import replay

    out: dict[str, dict[str, int]] = {}
    for name, model in replay(events).items():
        for number, version in model.versions.items():
            group = out.setdefault(version.run, {})
            group[name] = max(group.get(name, 0), number)
        for alias, number in model.aliases.items():
            out.setdefault(model.versions[number].run, {})[f"{name}@{alias}"] = number
    return out


def _file(directory: str) -> str:
    return os.path.join(directory, MODELS_FILE)


def log_stamp(conn: Connection, directory: str, dialect: Dialect) -> Any:
    """What changes whenever the registry gains an event: the file's size and time, or the
    table's last number (PostgreSQL); None for no registry."""
    if dialect.name != "sqlite":
        if not conn.execute("SELECT to_regclass('model_events') IS NOT NULL").fetchone()[0]:
            return None
        return conn.execute("SELECT max(seq) FROM model_events").fetchone()[0]
    try:
        st = os.stat(_file(directory))
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _events(conn: Connection, directory: str, dialect: Dialect) -> list[dict[str, Any]]:
    from trainledger.query.model_log import parse_events, pg_events

    if dialect.name != "sqlite":
        return pg_events(conn)
    try:
        with open(_file(directory), "rb") as fh:
            return parse_events(fh.read())
    except FileNotFoundError:
        return []


def registry_extras(conn: Connection) -> dict[str, dict[str, Any]]:
    """summary_dir -> ``{"registry": fields}`` of every run with registry fields."""
    rows = conn.execute("SELECT summary_dir, fields FROM run_registry").fetchall()
    return {d: {"registry": json.loads(text)} for d, text in rows}


def _differences(conn: Connection, directory: str, dialect: Dialect) -> dict[str, str | None]:
    """summary_dir -> its registry fields' JSON as the log says (None: none), for every run
    whose ``run_registry`` row says otherwise."""
    wanted = {
        run: json.dumps(fields, sort_keys=True)
        for run, fields in fields_by_run(_events(conn, directory, dialect)).items()
    }
    stored = dict(conn.execute("SELECT summary_dir, fields FROM run_registry").fetchall())
    return {
        run: wanted.get(run)
        for run in sorted(set(wanted) | set(stored))
        if wanted.get(run) != stored.get(run)
    }


def refresh_registry(
    read: Callable[[Callable[[Connection], Any]], Any],
    write: Callable[[Callable[[Connection], Any], bool], Any],
    directory: str,
    dialect: Dialect,
    last: Any,
) -> Any:
    """Apply what the log holds that the index does not when its stamp is not ``last``,
    writing (and making a new generation) only when some run's fields change; returns the
    stamp now."""
    stamp = read(functools.partial(log_stamp, directory=directory, dialect=dialect))
    if stamp != last and read(
        functools.partial(_differences, directory=directory, dialect=dialect)
    ):
        write(functools.partial(apply_registry, directory=directory, dialect=dialect), True)
    return stamp


def apply_registry(conn: Connection, directory: str, dialect: Dialect) -> int:
    """Bring ``run_registry`` and the runs' ``registry`` groups in step with the log (in the
    caller's write transaction); how many runs were stored again."""
    from trainledger.query.record_groups import store_group

    changed = 0
    for run, text in _differences(conn, directory, dialect).items():
        conn.execute("DELETE FROM run_registry WHERE summary_dir = ?", (run,))
        if text is not None:
            conn.execute(
                "INSERT INTO run_registry (summary_dir, fields) VALUES (?, ?)", (run, text)
            )
        value = json.loads(text) if text is not None else None
        changed += store_group(conn, run, "registry", value, dialect)
    return changed
