"""The named-model registry as the web UI shows and changes it: each version with its run's
id and main metric, a model's history, a registration from a run's checkpoint table and the
moves of an alias.

Why a module of its own: the registry lives with the base's annotations and is reached
through ``trainledger.query``'s model functions alone (``query/models.py``), over the base
the store serves (its ``s3://`` URL for a copy of one) and its index; the server adds only
what the page needs (run ids, main metrics) and its own rule that no request names a path:
a checkpoint is given as its run's checkpoint table names it, and becomes a path only when
that table lists it and the path stays inside the base (the registry then checks it again).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from trainledger.errors import LineageParamValueError
from trainledger.query import (
    list_models,
    model_history,
    register_model,
    run_id_of,
    set_model_alias,
)
from trainledger.server.run_store import RunStore
from trainledger.server.security import check_run_id
from trainledger.storage import is_object_url, name_of_id

__all__ = ["models", "model", "register", "move_alias"]

#: a model name or alias, as the registry's rule (``query/model_refs.py``) says it; checked
#: here only so that a registration with a malformed alias registers nothing
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_WORD_RULE = (
    "a short word: 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or a digit"
)


def _where(store: RunStore) -> tuple[str, str | None]:
    """The base the registry is kept for (an ``s3://`` base's URL, not its local copy) and
    the index it lives with: those the store's own archive and delete use."""
    remote = getattr(store, "remote", None)
    return (remote or str(store.base)), getattr(store, "index", None)


def main_metric(metric: Any) -> dict[str, Any]:
    """A run's main metric, its first by name (``accuracy`` before ``loss``), as the family
    view picks it (``query/family.py``); {} for none."""
    if not isinstance(metric, Mapping) or not metric:
        return {}
    name = sorted(metric)[0]
    return {name: metric[name]}


def _metrics(store: RunStore, runs: set[str]) -> dict[str, dict[str, Any]]:
    """``summary_dir`` -> main metric of those of ``runs`` the base still holds (one search)."""
    if not runs:
        return {}
    condition = {"summary_dir": {"in": sorted(runs)}, "lineage_type": {"eq": "model"}}
    found = store.search(condition)["object"]
    return {
        str(o.get("summary_dir")): main_metric((o.get("model_lineage") or {}).get("metric"))
        for o in found
    }


def _shown(version: dict[str, Any], metrics: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """A version as the page shows it: its run's id, whether the base still holds the run,
    its main metric; no absolute path (``path`` is relative to the base)."""
    out = {k: v for k, v in version.items() if k != "checkpoint"}
    out["run_id"] = run_id_of(str(version["run"]))
    out["present"] = version["run"] in metrics
    out["metric"] = metrics.get(str(version["run"]), {})
    return out


def models(store: RunStore) -> list[dict[str, Any]]:
    """Every model of the base (``list_models``), each version ``_shown``."""
    base, index = _where(store)
    found = list_models(base, index=index)
    runs = {str(v["run"]) for m in found for v in m["versions"]}
    metrics = _metrics(store, runs)
    for entry in found:
        entry["versions"] = [_shown(v, metrics) for v in entry["versions"]]
    return found


def model(store: RunStore, name: str) -> dict[str, Any]:
    """One model: ``name``, ``latest``, ``aliases``, ``versions`` (as ``models``) and
    ``history``, its registrations and alias moves, oldest first (each with ``run_id`` where
    it names a run). ``ModelNotFoundError`` for an unknown name."""
    base, index = _where(store)
    history = model_history(base, name, index=index)  # (the name's errors, before any search)
    found = next(m for m in list_models(base, index=index) if m["name"] == name)
    metrics = _metrics(store, {str(v["run"]) for v in found["versions"]})
    found["versions"] = [_shown(v, metrics) for v in found["versions"]]
    for event in history:
        if event.get("run"):
            event["run_id"] = run_id_of(str(event["run"]))
    return {**found, "history": history}


def _check_alias(alias: str) -> None:
    if not isinstance(alias, str) or _WORD.fullmatch(alias) is None:
        raise LineageParamValueError(f"a model alias expected {_WORD_RULE}; received: {alias!r}")


def _target(store: RunStore, run_id: str, name: str) -> str:
    """The checkpoint ``name`` of run ``run_id`` (as its checkpoint table lists it) as the
    registry takes it: a path (or an ``s3://`` URL) inside the base, else an error; nothing
    is opened here."""
    listed = {c["name"] for c in store.checkpoints(run_id) if c.get("kind") != "landscape"}
    run_id = check_run_id(run_id)
    if name not in listed:
        shown = ", ".join(sorted(listed)[:5]) + (" ..." if len(listed) > 5 else "")
        raise LineageParamValueError(
            f"a checkpoint expected one of run {run_id!r}'s checkpoints as its checkpoint table "
            f"lists them ({shown or 'none'}); received: {name!r}"
        )
    remote = getattr(store, "remote", None)
    if remote is not None:
        root = remote.rstrip("/")
        target = name if is_object_url(name) else f"{root}/{run_id}/{name}"
        inside = not os.path.isabs(name) and target.startswith(root + "/")
    else:
        root = os.path.realpath(store.base)
        target = os.path.normpath(os.path.join(root, name_of_id(run_id), name))
        inside = target.startswith(root + os.sep)
    if not inside:
        raise LineageParamValueError(
            f"a checkpoint expected a file inside the base; received: {name!r}, which run "
            f"{run_id!r}'s lineage names outside it (register it where the base holds it)"
        )
    return target


def register(
    store: RunStore, name: str, run_id: str, checkpoint: str, alias: str | None, actor: str
) -> dict[str, Any]:
    """Register run ``run_id``'s checkpoint ``checkpoint`` (as its checkpoint table names it)
    as the next version of ``name``, pointing ``alias`` at it when given; the new version as
    ``models`` shows it."""
    if alias is not None:
        _check_alias(alias)
    base, index = _where(store)
    target = _target(store, run_id, checkpoint)
    depth = int(getattr(store, "max_depth", 1))
    version = register_model(base, name, target, actor=actor, index=index, max_depth=depth)
    if alias is not None:
        try:
            set_model_alias(base, name, alias, version, actor=actor, index=index)
        except LineageParamValueError as exc:
            raise LineageParamValueError(
                f"{exc} (version {name}/{version} was registered all the same)"
            ) from exc
    found = model(store, name)
    return next(v for v in found["versions"] if v["version"] == version)


def move_alias(
    store: RunStore, name: str, alias: str, version: int | None, actor: str
) -> dict[str, Any]:
    """Point ``alias`` of ``name`` at ``version`` (None removes it): the history entry, with
    ``run_id``, the run of the version it points at now (or, removed, pointed at)."""
    base, index = _where(store)
    entry = set_model_alias(base, name, alias, version, actor=actor, index=index)
    number = entry["version"] if entry["version"] is not None else entry.get("previous")
    found = next(m for m in list_models(base, index=index) if m["name"] == name)
    runs = [v["run"] for v in found["versions"] if v["version"] == number]
    return {**entry, "run_id": run_id_of(str(runs[0])) if runs else None}
