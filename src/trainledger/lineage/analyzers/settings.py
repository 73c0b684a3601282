"""The optimizer and the learning-rate scheduler as they were configured, as flat settings.

Why: ``torch.optim.SGD(momentum=0.9)`` and plain SGD are both recorded as "SGD"; a run's
optimizer is only known with its hyper-parameters. These become the query fields
``optimizer/<name>`` and ``scheduler/<name>`` (docs/queries.md), a namespace of their own so
that MindInsight's ``user_defined/`` keeps only the user's keys.

The rules (each is a choice a user can rely on):

- **Which optimizer settings**: the keys of ``optimizer.defaults`` (the constructor's
  hyper-parameters), read from the first param group; keys a scheduler adds to the groups
  (``initial_lr``, ``max_lr``, ...) are not the optimizer's. ``lr`` is the group's
  ``initial_lr`` when a scheduler set one (the rate the run was configured with).
- **Implementation flags are left out**: ``foreach``, ``fused``, ``capturable`` and
  ``differentiable`` choose a kernel, not the mathematics. Flags that change the update
  (``nesterov``, ``amsgrad``, ``maximize``, ``centered``, ``decoupled_weight_decay``) are kept.
- **Several param groups** (a no-decay group, a lower rate for a backbone):
  ``optimizer/param_groups`` is their number; the first group gives ``optimizer/<name>``,
  and each later group adds ``optimizer/groups.<i>.<name>`` for the settings where it differs
  from the first.
- **Values**: numbers stay numbers (a tensor of one element, e.g. a tensor learning rate,
  becomes its float); flags are the words ``"true"``/``"false"`` (a query condition compares
  numbers and text, never bools); a tuple becomes one field per element (``betas.0``,
  ``betas.1``); None and anything else (callables, nested structures) is left out.
- **Scheduler**: ``scheduler/type`` is its class; the other fields are the public entries of
  its ``state_dict()`` minus its progress (``last_epoch``, ``base_lrs``, ``best``, ...).
  ``MultiStepLR``'s milestones are listed in order. ``SequentialLR`` and ``ChainedScheduler``
  record their inner schedulers as ``schedulers.<i>.<name>`` (one level deep) and
  ``SequentialLR`` its ``milestones``. Lambdas (``LambdaLR``'s ``lr_lambdas``) are left out:
  a function is no plain value.

Reading never fails a run: an optimizer or scheduler these rules cannot read gives ``{}``.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainledger.lineage.analyzers.network import config_number, initial_learning_rate

__all__ = ["Configured", "Setting", "configured", "optimizer_settings", "scheduler_settings"]

#: a setting's value as recorded: a number or a word
Setting = int | float | str

#: param-group keys that choose an implementation, not the update (left out)
IMPLEMENTATION_FLAGS = frozenset({"foreach", "fused", "capturable", "differentiable"})
#: scheduler ``state_dict`` entries that are its progress, not its configuration
SCHEDULER_STATE = frozenset(
    {"last_epoch", "base_lrs", "verbose", "best", "num_bad_epochs", "cooldown_counter",
     "mode_worse", "lr_lambdas", "optimizer"}
)  # fmt: skip
_MAX_ITEMS = 16  # a longer tuple is data, not a setting (left out)


def _plain(value: Any) -> Setting | None:
    """A value as recorded: numbers (and one-element tensors) as numbers, bools as words."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        return value
    number = config_number(value)
    if number is None or math.isnan(number):
        return None
    return number


def _flatten(name: str, value: Any, out: dict[str, Setting]) -> None:
    """Add ``name`` (or ``name.<i>`` per element of a short tuple of plain values) to ``out``."""
    if isinstance(value, Counter):  # MultiStepLR's milestones: a multiset of epochs
        value = sorted(value.elements())
    if isinstance(value, (list, tuple)):
        if 0 < len(value) <= _MAX_ITEMS:
            items = [_plain(v) for v in value]
            if all(v is not None for v in items):
                for i, item in enumerate(items):
                    out[f"{name}.{i}"] = item  # type: ignore[assignment]
        return
    plain = _plain(value)
    if plain is not None:
        out[name] = plain


def _unwrap(optimizer: Any) -> Any:
    """The torch optimizer inside Accelerate's or Lightning's wrappers."""
    for _ in range(4):
        if isinstance(getattr(optimizer, "param_groups", None), list):
            return optimizer
        optimizer = getattr(optimizer, "optimizer", None)
    return None


def _group_settings(group: Mapping[str, Any], names: list[str]) -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for name in names:
        value = group.get("initial_lr", group.get("lr")) if name == "lr" else group.get(name)
        _flatten(name, value, out)
    return out


def optimizer_settings(optimizer: Any) -> dict[str, Setting]:
    """The optimizer's settings by field name (without the ``optimizer/`` prefix); see the
    module docstring for the rules. ``{}`` for no optimizer or one that is not torch-like."""
    optimizer = _unwrap(optimizer)
    defaults = getattr(optimizer, "defaults", None)
    if optimizer is None or not isinstance(defaults, Mapping):
        return {}
    groups = [g for g in optimizer.param_groups if isinstance(g, Mapping)]
    if not groups:
        return {}
    names = sorted(str(k) for k in defaults if k not in IMPLEMENTATION_FLAGS and k != "params")
    out = _group_settings(groups[0], names)
    out["param_groups"] = len(groups)
    for i, group in enumerate(groups[1:], start=1):
        for name, value in _group_settings(group, names).items():
            if out.get(name) != value:
                out[f"groups.{i}.{name}"] = value
    return out


def scheduler_settings(scheduler: Any, depth: int = 0) -> dict[str, Setting]:
    """The scheduler's settings by field name (``type`` first); ``{}`` without one. A
    ``SequentialLR`` adds its ``milestones`` and each inner scheduler's settings as
    ``schedulers.<i>.<name>`` (a warm-up then a cosine decay is told apart from either)."""
    if scheduler is None:
        return {}
    out: dict[str, Setting] = {"type": type(scheduler).__name__}
    inner = getattr(scheduler, "_schedulers", None)
    if depth == 0 and isinstance(inner, (list, tuple)) and len(inner) <= _MAX_ITEMS:
        _flatten("milestones", getattr(scheduler, "_milestones", None), out)
        for i, each in enumerate(inner):
            for name, value in scheduler_settings(each, depth + 1).items():
                out[f"schedulers.{i}.{name}"] = value
        return out
    state_dict = getattr(scheduler, "state_dict", None)
    try:
        state = state_dict() if callable(state_dict) else None
    except Exception:  # a scheduler holding unpicklable state may refuse: the type is known
        state = None
    if isinstance(state, Mapping):
        for key in sorted(state, key=str):
            name = str(key)
            if name.startswith("_") or name in SCHEDULER_STATE:
                continue
            _flatten(name, state[key], out)
    return out


@dataclass(frozen=True)
class Configured:
    """The optimizer and scheduler as training began: read once then, because the scheduler
    changes the rate (and ``initial_lr`` appears) as training goes on."""

    learning_rate: float | None = None
    optimizer: dict[str, Setting] = field(default_factory=dict)
    scheduler: dict[str, Setting] = field(default_factory=dict)


def configured(optimizer: Any, scheduler: Any = None) -> Configured:
    """Read the optimizer's initial rate and settings and the scheduler's settings."""
    return Configured(
        initial_learning_rate(optimizer, scheduler),
        optimizer_settings(optimizer),
        scheduler_settings(scheduler),
    )
