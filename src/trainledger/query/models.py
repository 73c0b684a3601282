"""Named models: a checkpoint of a run registered as a numbered version of a name, aliases
(``production``, ``candidate``, any word) moved between versions, and references
(``NAME@ALIAS``, ``NAME/VERSION``) resolved to the checkpoint, its run, lineage and family.

Why a registry of events (``model_state``, kept by ``model_log`` with the base's
annotations): scripts and people promote models by name, and must be able to ask who moved
``production`` and from which version; a history derived from the same events as the state
cannot disagree with it. The writer is whoever the audit log names: ``cli:<user>@<host>``
for the command and a script (``audit.cli_actor``), the UI's token fingerprint when it
passes ``actor``. A version points into its run for as long as it exists: archiving or
deleting that run is refused unless forced (``run_admin``), and a reference to a version
whose checkpoint is gone is an error naming it, never another file.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from trainledger.errors import LineageParamValueError
from trainledger.query.audit import cli_actor
from trainledger.query.index_urls import index_url
from trainledger.query.model_checkpoints import BaseSite, locate, site_of
from trainledger.query.model_log import ModelLog, open_log
from trainledger.query.model_refs import check_version, check_word, parse_reference
from trainledger.query.model_state import (
    ModelVersion,
    RegisteredModel,
    alias_move,
    find_model,
    find_version,
    registration,
    replay,
)

__all__ = [
    "register_model",
    "set_model_alias",
    "model_history",
    "list_models",
    "resolve_model",
    "model_checkpoint",
    "versions_in_run",
]

Base = str | os.PathLike[str]


def _registry(base: Base, index: str | None) -> tuple[BaseSite, ModelLog]:
    site = site_of(base)
    shown = site.url or os.fspath(base)
    return site, open_log(site.local, index_url(index), site.name, shown)


def register_model(
    base: Base,
    name: str,
    checkpoint: str | os.PathLike[str],
    *,
    actor: str | None = None,
    index: str | None = None,
    max_depth: int = 1,
) -> int:
    """Register ``checkpoint`` (a file of a run of ``base``: absolute, or relative to the
    base; an ``s3://`` base's by URL or relative key) as the next version of model ``name``
    (1 for a new name); returns the version.

    ``actor`` is who the history names (default ``cli:<user>@<host>``); ``index`` where the
    base's index lives (``filter_summary_lineage``'s), which also keeps the registry;
    ``max_depth`` how deep runs are found under the base.

    Raises:
        LineageParamValueError: a name that is not a short word, a checkpoint outside the
            base, missing, or in no run's folder (each message says what was expected).
    """
    check_word(name)
    from trainledger.query.lineage_api import open_index  # (the index: only to list the runs)

    site, log = _registry(base, index)
    found = open_index(base, max_depth, index)
    runs = [str(r["summary_dir"]) for r in found.records(refresh=True)]
    located = locate(site, checkpoint, runs)
    event = log.append(
        lambda events: registration(replay(events), name, located.as_event()), actor or cli_actor()
    )
    found.apply_registry()  # (the runs' registry/ fields: registry_fields.py)
    return int(event["version"])


def set_model_alias(
    base: Base,
    name: str,
    alias: str,
    version: int | None,
    *,
    actor: str | None = None,
    index: str | None = None,
) -> dict[str, Any]:
    """Point ``alias`` of model ``name`` at ``version`` (None removes the alias); returns the
    history entry, whose ``previous`` is the version the alias pointed at before (None: it
    was not set). Two writers at once both land in the history, one after the other.

    Raises:
        LineageParamValueError: a malformed name, alias or version.
        ModelNotFoundError: no such model or version (or, removing, no such alias).
    """
    check_word(name)
    check_word(alias, "model alias")
    if version is not None:
        check_version(version, name)
    from trainledger.query.lineage_api import open_index

    _, log = _registry(base, index)
    decide = functools.partial(_move, name=name, alias=alias, version=version, where=log.where)
    entry = log.append(decide, actor or cli_actor())
    open_index(base, 1, index).apply_registry()  # (the runs' registry/ fields)
    return entry


def _move(
    events: list[dict[str, Any]], *, name: str, alias: str, version: int | None, where: str
) -> dict[str, Any]:
    return alias_move(replay(events), name, alias, version, f"the registry of {where}")


def model_history(
    base: Base, name: str | None = None, *, index: str | None = None
) -> list[dict[str, Any]]:
    """Every registration and alias move of model ``name`` (None: of every model), oldest
    first: ``seq``, ``time``, ``actor``, ``action`` (``register`` or ``alias``), ``name``,
    ``version`` and ``previous`` (the model's latest version before a registration; the
    version an alias pointed at before a move), ``alias`` for a move, ``run``,
    ``checkpoint`` (relative to the base), ``step`` and ``digests`` for a registration.

    Raises:
        ModelNotFoundError: ``name`` was never registered.
    """
    _, log = _registry(base, index)
    events = log.events()
    if name is None:
        return events
    find_model(replay(events), check_word(name), f"the registry of {log.where}")
    return [e for e in events if e.get("name") == name]


def list_models(base: Base, *, index: str | None = None) -> list[dict[str, Any]]:
    """Every model of the base by name: ``{"name", "latest", "aliases": {alias: version},
    "versions": [...]}``, each version as ``resolve_model`` gives it without ``lineage``
    and ``family`` (``version``, ``run``, ``checkpoint``, ``path``, ``step``, ``digests``,
    ``time``, ``actor``, ``aliases``)."""
    site, log = _registry(base, index)
    models = replay(log.events())
    return [
        {
            "name": model.name,
            "latest": model.latest,
            "aliases": dict(sorted(model.aliases.items())),
            "versions": [_version(site, model, v) for _, v in sorted(model.versions.items())],
        }
        for _, model in sorted(models.items())
    ]


def _version(site: BaseSite, model: RegisteredModel, v: ModelVersion) -> dict[str, Any]:
    return {
        "name": model.name,
        "version": v.version,
        "aliases": model.aliases_of(v.version),
        "run": v.run,
        "checkpoint": site.public(v.checkpoint),
        "path": v.checkpoint,
        "step": v.step,
        "digests": v.digests,
        "time": v.time,
        "actor": v.actor,
    }


def _find(base: Base, ref: Any, index: str | None) -> tuple[BaseSite, dict[str, Any]]:
    parsed = parse_reference(ref)
    site, log = _registry(base, index)
    model = find_model(replay(log.events()), parsed.name, f"the registry of {log.where}")
    return site, _version(site, model, find_version(model, parsed.alias, parsed.version))


def _existing(base: Base, ref: Any, index: str | None) -> dict[str, Any]:
    """``_find``'s version, once its local checkpoint is known to exist."""
    site, found = _find(base, ref, index)
    if site.url is None and not os.path.isfile(found["checkpoint"]):
        raise LineageParamValueError(
            f"model version {found['name']}/{found['version']} ({ref}) expected its "
            f"checkpoint {found['checkpoint']!r} in run {found['run']!r}; received: no such "
            "file (the run was archived or deleted with force: restore it, or move the alias)"
        )
    return found


def model_checkpoint(base: Base, ref: str, *, index: str | None = None) -> str:
    """The checkpoint ``ref`` (``NAME@ALIAS`` or ``NAME/VERSION``) names: a local path, or
    an ``s3://`` URL for a base in object storage; what ``load_checkpoint(ref, net,
    base=BASE)`` loads.

    Raises:
        LineageParamValueError: a malformed reference, or a local checkpoint that no longer
            exists (its run was archived or deleted with ``force``).
        ModelNotFoundError: no such model, alias or version.
    """
    return str(_existing(base, ref, index)["checkpoint"])


def resolve_model(
    base: Base, ref: str, *, index: str | None = None, max_depth: int = 1
) -> dict[str, Any]:
    """What ``ref`` (``NAME@ALIAS`` or ``NAME/VERSION``) names: ``name``, ``version``,
    ``aliases`` (all of the version's), ``checkpoint`` (a local path, or the ``s3://`` URL
    its writer named), ``path`` (relative to the base), ``run`` (its ``summary_dir``,
    "./r1"), ``step``, ``digests``, ``time`` and ``actor`` of the registration, ``lineage``
    (the run's object as ``filter_summary_lineage`` gives it) and ``family``
    (``run_family``'s answer for the run).

    Raises:
        LineageParamValueError: a malformed reference, or a version whose checkpoint or run
            the base no longer holds (archived or deleted with ``force``).
        ModelNotFoundError: no such model, alias or version.
    """
    from trainledger.query.family import run_family
    from trainledger.query.lineage_api import filter_summary_lineage

    found = _existing(base, ref, index)
    condition = {"summary_dir": {"in": [found["run"]]}}
    objects = filter_summary_lineage(base, condition, max_depth=max_depth, index=index)["object"]
    if not objects:
        raise LineageParamValueError(
            f"model version {found['name']}/{found['version']} ({ref}) expected its run "
            f"{found['run']!r} in the base; received: no such run (archived or deleted with "
            "force: restore it, or move the alias)"
        )
    family = run_family(base, found["run"], max_depth=max_depth, index=index)
    return {**found, "lineage": objects[0], "family": family}


def versions_in_run(base: Base, run: str, *, index: str | None = None) -> list[str]:
    """The model versions (``"classifier/2 (production)"``) whose checkpoint lies in run
    ``run`` ("./r1") or a run nested in its folder: what archiving or deleting it would
    break."""
    _, log = _registry(base, index)
    wanted = "./" + run.removeprefix("./").strip("/")
    out = []
    for name, model in sorted(replay(log.events()).items()):
        for number, v in sorted(model.versions.items()):
            if v.run == wanted or v.run.startswith(wanted + "/"):
                aliases = model.aliases_of(number)
                out.append(f"{name}/{number}" + (f" ({', '.join(aliases)})" if aliases else ""))
    return out
