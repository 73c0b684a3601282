"""A run's parents as query fields (``parent/run``, ``parent/step``, ``parent/checkpoint``,
``parent/match``, ``parent/count``), kept by every index refresh (docs/queries.md, "Where a
run came from").

Why in the index: "every run fine-tuned from this one" must be one condition answered in SQL
like any other, on SQLite and PostgreSQL, not a read of every run's weights per question
(``family.run_family`` answers one run's whole tree that way). Why after the runs are stored:
a run's parents depend on other runs (a checkpoint that appears in the base after the child
ran makes it a child at the next refresh), so they cannot come from its own lineage alone.

How: ``run_weights`` (schema version 14) keeps each run's weight digests as its lineage
holds them (compact JSON, ``encode``) and the sources found for it. A refresh reads the
weights of the runs it parsed again; only when some run's weights changed (a new run, a new
checkpoint) or a run with
weights is gone are every run's sources found again (``family.find_sources``), and the runs
whose sources changed are stored again with them. A run parsed again meanwhile gets its known
sources at its parse (``extras``), so a condition on ``parent/run`` never misses a run that is
being trained. The record holds the largest source as the ``parent`` group (its fields) and
every source under ``parents``. An evaluation-only run (``EvalLineage`` in a folder of its
own, no training) has the checkpoint it evaluated as its parent.

Cost: finding the sources again decodes every run's digests (about 25 bytes a tensor, each
checkpoint's), once per refresh that saw a checkpoint saved; bases of a few thousand trained
runs, not more, are what this was sized for.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainledger.query.discovery import RunFiles
from trainledger.query.family_schema import FAMILY_BACKFILL
from trainledger.query.record_cache import in_chunks
from trainledger.query.record_groups import store_group
from trainledger.query.schema import Connection, Dialect, read_meta
from trainledger.query.status_fill import Read, Write
from trainledger.storage import Digests

if TYPE_CHECKING:  # (read only when a run changed: a query that parses nothing loads neither)
    from trainledger.lineage import RunWeights
    from trainledger.query.family_match import Source

__all__ = [
    "backfill", "encode", "decode", "extras", "groups_of", "refresh_families",
]  # fmt: skip


def _pack(d: Digests) -> list[Any]:
    return [list(d.crcs), list(d.kinds), [int(c) for c in d.constant]]


def _unpack(p: Sequence[Any]) -> Digests:
    return Digests(tuple(p[0]), tuple(p[1]), tuple(bool(c) for c in p[2]))


def encode(w: RunWeights) -> str:
    """A run's weights as the index keeps them ("" for none): names are left out (a match
    compares digest, dtype and shape only)."""
    if not w:
        return ""
    data = {
        "i": _pack(w.initial) if w.initial is not None else None,
        "l": [[path, _pack(d)] for path, d in w.loaded],
        "c": [[path, step, _pack(d)] for path, (step, d) in w.checkpoints.items()],
        "e": [_pack(d) for d in w.evaluated],
    }
    return json.dumps(data, separators=(",", ":"))


def decode(text: str) -> RunWeights:
    """``encode``'s inverse."""
    from trainledger.lineage import RunWeights

    data = json.loads(text)
    initial = data.get("i")
    return RunWeights(
        _unpack(initial) if initial else None,
        [(path, _unpack(p)) for path, p in data.get("l", [])],
        {path: (step, _unpack(p)) for path, step, p in data.get("c", [])},
        [_unpack(p) for p in data.get("e", [])],
    )


def _sources_json(sources: Sequence[Source]) -> str:
    items = [
        {
            "run": s.run,
            "checkpoint": s.checkpoint,
            "step": s.step,
            "match": round(s.match, 4),
            "tensors": s.tensors,
        }
        for s in sources
    ]
    return json.dumps(items, separators=(",", ":"))


def groups_of(parents_json: str) -> dict[str, Any]:
    """A record's ``parent`` group (the largest source's fields and the number of sources)
    and ``parents`` (every source), from ``run_weights.parents``; {} for no source."""
    sources = json.loads(parents_json) if parents_json else []
    if not sources:
        return {}
    first = sources[0]
    parent = {key: first[key] for key in ("run", "step", "checkpoint", "match")}
    parent["count"] = len(sources)
    return {"parent": {k: v for k, v in parent.items() if v is not None}, "parents": sources}


def extras(conn: Connection) -> dict[str, dict[str, Any]]:
    """summary_dir -> the groups a run's record takes at its parse: its known sources
    (``groups_of``) and its registry fields (``registry_fields.py``)."""
    from trainledger.query.registry_fields import registry_extras

    rows = conn.execute("SELECT summary_dir, parents FROM run_weights WHERE parents <> '[]'")
    out = {d: groups_of(text) for d, text in rows}
    for d, groups in registry_extras(conn).items():
        out.setdefault(d, {}).update(groups)
    return out


def _stored(conn: Connection, dirs: Sequence[str]) -> dict[str, str]:
    sql = "SELECT summary_dir, weights FROM run_weights WHERE summary_dir IN"
    return dict(in_chunks(conn, sql, dirs))


def refresh_families(
    read: Read,
    write: Write,
    parsed: Sequence[RunFiles],
    gone: Sequence[str],
    root: str,
    dialect: Dialect,
) -> int:
    """Keep ``run_weights`` and the parent fields in step after a refresh stored ``parsed``
    and dropped ``gone`` (module doc); ``root``: the base's name, which the paths of the
    files runs loaded start with. Returns how many runs' sources changed."""
    from trainledger.lineage import read_weights

    lineage_runs = [run for run in parsed if not run.tensorboard]
    new = {run.summary_dir: encode(read_weights(run.path)) for run in lineage_runs}
    dirs = [*new, *gone]
    old = read(functools.partial(_stored, dirs=dirs)) if dirs else {}
    moved = {d: text for d, text in new.items() if text != old.get(d, "")}
    left = [d for d in gone if d in old]
    if not moved and not left:
        return 0
    apply = functools.partial(_apply, moved=moved, gone=left, root=root, dialect=dialect)
    return int(write(apply, True))


def _apply(
    conn: Connection, moved: Mapping[str, str], gone: Sequence[str], root: str, dialect: Dialect
) -> int:
    from trainledger.query.family_match import BaseWeights, find_sources, owner_map

    for d in [*gone, *moved]:
        conn.execute("DELETE FROM run_weights WHERE summary_dir = ?", (d,))
    for d, text in moved.items():
        if text:
            conn.execute(
                "INSERT INTO run_weights (summary_dir, weights, parents) VALUES (?, ?, '[]')",
                (d, text),
            )
    rows = conn.execute("SELECT summary_dir, weights, parents FROM run_weights").fetchall()
    weights = BaseWeights({d: decode(text) for d, text, _ in rows})
    stored = {d: parents for d, _, parents in rows}
    every = [d for (d,) in conn.execute("SELECT summary_dir FROM runs")]
    candidates = weights.candidates(owner_map(root, every))
    changed = 0
    for run, w in weights.runs.items():
        start = w.initial if w.initial is not None else (w.evaluated[0] if w.evaluated else None)
        found = find_sources(start, candidates, own=run) if start is not None else []
        text = _sources_json(found)
        if text == stored[run] and run not in moved:
            continue
        if text != stored[run]:
            conn.execute("UPDATE run_weights SET parents = ? WHERE summary_dir = ?", (text, run))
        changed += _store_groups(conn, run, groups_of(text), dialect)
    return changed


def _store_groups(conn: Connection, run: str, groups: dict[str, Any], dialect: Dialect) -> int:
    """Store ``run`` again with ``groups`` as its parent fields (none: without them)."""
    return store_group(conn, run, "parent", groups.get("parent"), dialect, groups.get("parents"))


def backfill(
    read: Read, write: Write, on_disk: Sequence[RunFiles], root: str, dialect: Dialect
) -> int:
    """Once per index after the migration to version 14: the data fingerprint of each run it
    kept (its training event's, stored with its record) and every run's weights (then its
    parents). The lineage files are read again, the runs not parsed again: only the runs
    that gain a value are stored again. Returns how many did."""
    if read(functools.partial(read_meta, key=FAMILY_BACKFILL)) is None:
        return 0
    from trainledger.lineage import read_lineage

    kept = dict(read(_signatures))  # (a run that changed is parsed whole anyway)
    prints: dict[str, str] = {}
    lineage_runs = [
        run for run in on_disk if not run.tensorboard and kept.get(run.summary_dir) == run.signature
    ]
    for run in lineage_runs:
        try:
            record = read_lineage(run.path).get("run")
        except Exception:  # noqa: BLE001 - a damaged run is one the next parse reports
            continue
        found = record.get("train_dataset_fingerprint") if isinstance(record, dict) else None
        if isinstance(found, str) and found:
            prints[run.summary_dir] = found

    def fill(conn: Connection) -> int:
        stored = 0
        for run, found in prints.items():
            stored += store_group(conn, run, "run", {"train_dataset_fingerprint": found}, dialect)
        conn.execute("DELETE FROM meta WHERE key = ?", (FAMILY_BACKFILL,))
        return stored

    stored = int(write(fill, bool(prints)))
    refresh_families(read, write, lineage_runs, [], root, dialect)
    return stored


def _signatures(conn: Connection) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT runs.summary_dir, r.signature FROM runs JOIN records AS r ON r.run_id = runs.id"
    ).fetchall()
