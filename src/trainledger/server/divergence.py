"""Which series flag a run as diverged: its losses and metrics, not every scalar.

Why a rule on the tag's name: the index knows, per series, the first step of a NaN or an
infinity (``series_tables.nonfinite_series``), but a gradient norm or a loss scale that hits
inf is routine under mixed precision (the scaler skips the step and halves the scale), so
flagging a run for it would flag every fp16 run. A loss or a metric going non-finite is
never routine: the table and the run page flag the run (issue 51 item 3).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["diverged", "watched"]

#: a tag is watched when a part of its name (split on "/", "_", "-", ".") is one of these
_WATCHED_PARTS = frozenset(
    {"loss", "losses", "metric", "metrics", "eval", "val", "valid", "validation", "test"}
)
#: ... unless one of these says it is an optimizer's own number
_ROUTINE_PARTS = frozenset({"grad", "grads", "gradient", "norm", "scale", "scaler", "lr"})


def _parts(tag: str) -> set[str]:
    for sep in "/_-.":
        tag = tag.replace(sep, " ")
    return set(tag.lower().split())


def watched(tag: str) -> bool:
    """Whether a non-finite value in the series ``tag`` flags its run (``loss``,
    ``eval/loss``, ``metric/acc``, ``val_loss``: yes; ``grad_norm``, ``loss_scale``: no)."""
    parts = _parts(tag)
    return bool(parts & _WATCHED_PARTS) and not parts & _ROUTINE_PARTS


def diverged(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries (``{"tag", "step", "value"}``) of watched series, as given (by step)."""
    return [e for e in entries if watched(str(e["tag"]))]
