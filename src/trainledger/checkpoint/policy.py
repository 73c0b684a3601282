"""Pure checkpoint decisions: save now? which files to keep? (docs/development.md, convention 3).

Nothing here touches the disk or a clock; callers pass plain records and times, so every rule is
a table test. The deleter lives in ``retention.py``.

Retention rules, applied only after a new file is safely on disk:

- ``_breakpoint`` files are never deleted.
- The best ``keep_best_max`` files by score are never deleted; they do not count toward
  ``keep_checkpoint_max`` (Lightning's top-k kept beside the rolling window).
- Pinned files (the file a run resumed from) are never deleted; they do count toward
  ``keep_checkpoint_max``, so a resumed run keeps no more files than an uninterrupted one.
- The newest rolling file is always kept.
- ``keep_checkpoint_max`` = N: the newest N rolling files are kept (pinned ones first).
- else ``keep_checkpoint_per_n_minutes`` = M: the first file of each M-minute window (windows
  aligned to the Unix epoch, so they are stable across restarts) plus the newest are kept.
- Both 0: everything is kept.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["CkptRecord", "best_names", "qualifies_for_best", "select_deletions", "should_save"]


@dataclass(frozen=True)
class CkptRecord:
    """One checkpoint file as the policy sees it."""

    name: str
    epoch: int
    step: int  # step within the epoch, as in the file name
    mtime: float
    breakpoint: bool = False
    score: float | None = None

    @property
    def order(self) -> tuple[int, int, float]:
        return (self.epoch, self.step, self.mtime)


def should_save(
    cur_step: int,
    last_saved_step: int,
    now: float,
    last_saved_time: float,
    steps: int,
    seconds: int,
) -> bool:
    """Whether the step just finished should be saved (steps take precedence over seconds)."""
    if cur_step <= last_saved_step:
        return False
    if steps:
        return cur_step - last_saved_step >= steps
    if seconds:
        return now - last_saved_time >= seconds
    return False


def _valid(score: float | None) -> bool:
    return score is not None and not math.isnan(score)


def best_names(records: Sequence[CkptRecord], keep_best_max: int, mode: str) -> set[str]:
    """Names of the best ``keep_best_max`` scored files; ties keep the older file."""
    if keep_best_max <= 0:
        return set()
    scored = [r for r in records if not r.breakpoint and _valid(r.score)]
    sign = 1.0 if mode == "min" else -1.0
    scored.sort(key=lambda r: (sign * float(r.score), r.order))  # type: ignore[arg-type]
    return {r.name for r in scored[:keep_best_max]}


def qualifies_for_best(
    score: float | None, records: Sequence[CkptRecord], keep_best_max: int, mode: str
) -> bool:
    """Whether a new file with ``score`` would enter the current best ``keep_best_max``."""
    if keep_best_max <= 0 or not _valid(score):
        return False
    scores = sorted(
        r.score
        for r in records
        if not r.breakpoint and r.score is not None and not math.isnan(r.score)
    )
    if mode == "max":
        scores.reverse()
    if len(scores) < keep_best_max:
        return True
    worst = scores[keep_best_max - 1]
    return float(score) < worst if mode == "min" else float(score) > worst  # type: ignore[arg-type]


def select_deletions(
    records: Sequence[CkptRecord],
    *,
    keep_max: int,
    keep_per_n_minutes: int,
    keep_best_max: int = 0,
    mode: str = "min",
    pinned: Collection[str] = (),
) -> list[str]:
    """Names to delete under the rules in the module docstring (oldest first)."""
    best = best_names(records, keep_best_max, mode)
    rolling = sorted(
        (r for r in records if not r.breakpoint and r.name not in best), key=lambda r: r.order
    )
    if not rolling:
        return []
    keep = {rolling[-1].name} | {r.name for r in rolling if r.name in pinned}
    if keep_max > 0:
        budget = keep_max - len(keep)
        for r in reversed(rolling[:-1]):
            if budget <= 0:
                break
            if r.name not in keep:
                keep.add(r.name)
                budget -= 1
    elif keep_per_n_minutes > 0:
        window = 60.0 * keep_per_n_minutes
        seen: set[int] = set()
        for r in sorted(rolling, key=lambda r: (r.mtime, r.order)):
            bucket = math.floor(r.mtime / window)
            if bucket not in seen:
                seen.add(bucket)
                keep.add(r.name)
    else:
        return []
    return [r.name for r in rolling if r.name not in keep]
