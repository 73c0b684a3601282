"""A child's series continued from its parent's (issue 53 item 6): the scalar comparison's
"Continue from parent" draws a fine-tuned run's curve after its parent's, up to the fork.

The run's parent is its largest source (``query.family`` lists them largest first), when
that is a checkpoint of a run of the base with a recorded step: the fork. The line is the
parent's points at steps up to and including the fork step, then the run's own points, each
drawn at ``fork step + its step``. One generation: the parent's part is the parent's own
points, whatever the parent started from.

Why in the server, as the smoothing and a zoom's range are (the series API's
``continue_parent``): a zoomed chart's range is on the drawn axis, which only the side that
splices can map onto two runs' steps; the whole line is downsampled to ``max_points`` with
the fork's two points kept, so the dashed part always ends at the fork; and the parent is
found from the family the server already keeps per data version (``RunStore.family``). The
answer keeps every point's own step and says how many of its first points are the parent's
(``parent.count``), so the page draws them apart and its hover names each point's run.

Each part is smoothed as its own run's curve is (the average only looks back, so the
parent's points up to the fork keep the values of the parent's own line): turning the option
on moves the child's curve, it never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainledger.server.downsample import keep_indices

__all__ = ["Fork", "Line", "fork_of", "keep_with_fork", "splice"]


@dataclass(frozen=True)
class Fork:
    """Where a run started: run ``run_id``'s checkpoint saved at global step ``step``."""

    run_id: str
    checkpoint: str
    step: int
    match: float

    def answer(self, count: int) -> dict[str, Any]:
        """The series' ``parent``: the fork and how many first points are the parent's."""
        return {
            "run_id": self.run_id,
            "checkpoint": self.checkpoint,
            "step": self.step,
            "match": self.match,
            "count": count,
        }


@dataclass(frozen=True)
class Line:
    """A series' points as arrays, with their smoothed values (None without smoothing)."""

    steps: np.ndarray
    walls: np.ndarray
    values: np.ndarray
    sessions: np.ndarray
    smoothed: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    def take(self, index: np.ndarray) -> Line:
        """The points at ``index`` (a boolean mask or indices)."""
        return Line(
            self.steps[index],
            self.walls[index],
            self.values[index],
            self.sessions[index],
            None if self.smoothed is None else self.smoothed[index],
        )


def fork_of(family: Mapping[str, Any]) -> Fork | None:
    """The fork of a family answer (``family_view.with_run_ids``): its first ancestor at
    depth 1, the largest source, when that is a run of the base's checkpoint with a step;
    None otherwise (a run started from no other, or from a file outside the base)."""
    parents = [a for a in family.get("ancestors", []) if a.get("depth", 1) == 1]
    if not parents:
        return None
    first = parents[0]
    if first.get("run_id") is None or first.get("step") is None:
        return None
    return Fork(
        str(first["run_id"]),
        str(first.get("checkpoint") or ""),
        int(first["step"]),
        float(first.get("match") or 0.0),
    )


def splice(parent: Line, child: Line, fork_step: int) -> tuple[Line, np.ndarray, int]:
    """The continued line: the parent's points at steps up to ``fork_step``, then the
    child's; its drawn steps (the parent's own, the child's shifted by ``fork_step``) and
    how many of its first points are the parent's. Steps stay each run's own."""
    head = parent.take(parent.steps <= fork_step)

    def joined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, b]) if len(a) else b

    smoothed = None
    if head.smoothed is not None and child.smoothed is not None:
        smoothed = joined(head.smoothed, child.smoothed)
    line = Line(
        joined(head.steps, child.steps),
        joined(head.walls, child.walls),
        joined(head.values, child.values),
        joined(head.sessions, child.sessions),
        smoothed,
    )
    drawn = joined(head.steps, child.steps + fork_step)
    return line, drawn, len(head)


def keep_with_fork(values: np.ndarray, count: int, max_points: int) -> np.ndarray:
    """Indices (ascending) of at most ``max_points`` points of a continued line whose first
    ``count`` points are the parent's: ``keep_indices``' first, last, min and max of each
    bucket, and both sides of the fork (the parent's last point, the child's first)."""
    n = len(values)
    if n <= max_points or not 0 < count < n or max_points - 2 < 4:
        return keep_indices(values, max_points)
    kept = keep_indices(values, max_points - 2)
    return np.union1d(kept, np.array([count - 1, count], dtype=np.int64))
