"""The registry's state (models, their versions and aliases) as a replay of its events, and
the next event decided from that state: pure functions, no storage.

Why a replay: the events are the only thing stored (``model_log.py``), so the history and
the state can never disagree, and a write decides its version number or an alias's previous
version from the events it read under the same lock it appends under (no lost move). An
event is a plain dict, alike on every backend:

- ``{"action": "register", "name", "version", "previous", "run", "checkpoint", "step",
  "digests"}``: ``previous`` is the model's latest version before (None for the first);
- ``{"action": "alias", "name", "alias", "version", "previous"}``: ``version`` None removes
  the alias, ``previous`` is the version it pointed at before (None: it was not set);

each with ``seq`` (its place in the log), ``time`` and ``actor`` added by the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainledger.errors import ModelNotFoundError

__all__ = [
    "ModelVersion",
    "RegisteredModel",
    "replay",
    "registration",
    "alias_move",
    "find_model",
    "find_version",
]


@dataclass(frozen=True)
class ModelVersion:
    """One registered checkpoint: the run that holds it, its path relative to the base (or
    the base's URL), its global step and its digests' fingerprint where known."""

    version: int
    run: str
    checkpoint: str
    step: int | None
    digests: str | None
    time: float
    actor: str


@dataclass
class RegisteredModel:
    """A name's versions (number -> version) and aliases (alias -> version number)."""

    name: str
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    aliases: dict[str, int] = field(default_factory=dict)

    @property
    def latest(self) -> int | None:
        return max(self.versions) if self.versions else None

    def aliases_of(self, version: int) -> list[str]:
        return sorted(a for a, v in self.aliases.items() if v == version)


def replay(events: Iterable[Mapping[str, Any]]) -> dict[str, RegisteredModel]:
    """Every model the events describe, by name (events in log order; one the state cannot
    take, such as an alias to a version never registered, is skipped)."""
    models: dict[str, RegisteredModel] = {}
    for event in events:
        name = event.get("name")
        if not isinstance(name, str):
            continue
        action, version = event.get("action"), event.get("version")
        if action == "register" and isinstance(version, int):
            model = models.setdefault(name, RegisteredModel(name))
            model.versions[version] = ModelVersion(
                version,
                str(event.get("run")),
                str(event.get("checkpoint")),
                event.get("step") if isinstance(event.get("step"), int) else None,
                event.get("digests") if isinstance(event.get("digests"), str) else None,
                float(event.get("time") or 0.0),
                str(event.get("actor") or ""),
            )
        elif action == "alias" and name in models and isinstance(event.get("alias"), str):
            aliases = models[name].aliases
            if version is None:
                aliases.pop(event["alias"], None)
            elif version in models[name].versions:
                aliases[event["alias"]] = version
    return models


def registration(
    models: Mapping[str, RegisteredModel], name: str, located: Mapping[str, Any]
) -> dict[str, Any]:
    """The event registering ``located`` (``run``, ``checkpoint``, ``step``, ``digests``) as
    the next version of ``name`` (1 for a new name)."""
    model = models.get(name)
    latest = model.latest if model is not None else None
    return {
        "action": "register",
        "name": name,
        "version": (latest or 0) + 1,
        "previous": latest,
        **{k: located.get(k) for k in ("run", "checkpoint", "step", "digests")},
    }


def alias_move(
    models: Mapping[str, RegisteredModel],
    name: str,
    alias: str,
    version: int | None,
    where: str,
) -> dict[str, Any]:
    """The event pointing ``alias`` of ``name`` at ``version`` (None: removing it), with the
    version it pointed at before; an unknown model, version or alias is an error."""
    model = find_model(models, name, where)
    previous = model.aliases.get(alias)
    if version is None and previous is None:
        raise ModelNotFoundError(
            f"an alias of model {name!r} to remove expected one of its aliases "
            f"({_aliases(model)}); received: {alias!r}"
        )
    if version is not None and version not in model.versions:
        raise ModelNotFoundError(
            f"alias {alias!r} expected a version of model {name!r} ({_versions(model)}); "
            f"received: version {version}"
        )
    return {
        "action": "alias",
        "name": name,
        "alias": alias,
        "version": version,
        "previous": previous,
    }


def find_model(models: Mapping[str, RegisteredModel], name: str, where: str) -> RegisteredModel:
    """The model called ``name``, or an error listing the names the registry holds."""
    model = models.get(name)
    if model is None:
        held = ", ".join(sorted(models)[:10]) + (" ..." if len(models) > 10 else "")
        raise ModelNotFoundError(
            f"a model name expected one registered in {where} ({held or 'none yet'}); "
            f"received: {name!r}"
        )
    return model


def find_version(model: RegisteredModel, alias: str | None, version: int | None) -> ModelVersion:
    """The version ``alias`` points at, or version ``version``, or an error listing them."""
    if alias is not None:
        number = model.aliases.get(alias)
        if number is None:
            raise ModelNotFoundError(
                f"an alias of model {model.name!r} expected one of its aliases "
                f"({_aliases(model)}); received: {alias!r}"
            )
        return model.versions[number]
    if version not in model.versions:
        raise ModelNotFoundError(
            f"a version of model {model.name!r} expected one of {_versions(model)}; "
            f"received: {version}"
        )
    return model.versions[version]


def _versions(model: RegisteredModel) -> str:
    numbers = sorted(model.versions)
    if numbers == list(range(1, len(numbers) + 1)) and len(numbers) > 2:
        return f"versions 1 to {numbers[-1]}"
    return "versions " + ", ".join(map(str, numbers)) if numbers else "no versions"


def _aliases(model: RegisteredModel) -> str:
    pairs = [f"{a} -> {v}" for a, v in sorted(model.aliases.items())]
    return ", ".join(pairs) if pairs else "none set"
