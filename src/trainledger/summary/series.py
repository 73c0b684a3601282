"""What a run's scalar series is: every point keeps the session that wrote it, and one rule
per file format says which points the series holds, as that format's own reader does.

A *session* is one writer process: a MindSpore ``_MS`` file (MindSpore starts a file per
``SummaryRecord``), or the TensorBoard event files of one host and pid (a writer's rolled-over
files are one session). A resumed run, or a directory that held two trainings, has several.

- **MindSpore** ``_MS`` **files, MindInsight's rule**: when a later session starts a tag at step
  ``s``, the earlier sessions' points of that tag with step ``>= s`` are dropped; a step
  repeated within what is left keeps its last value (MindSpore writes the loss again at an
  epoch's end).
- **TensorBoard files, TensorBoard's rule** (its reader's ``purge_orphaned_data``, on by
  default, for event files of version 2): a ``SessionLog.START`` event at step ``s`` drops
  every tag's earlier points with step ``>= s``; nothing else is dropped (a repeated step keeps
  both points). trainledger's writer writes that event when it resumes a run another process
  wrote (``summary.writer``), at the first step it records, so a run killed at step 25 and
  resumed from step 21 serves 1..40 once, the resumed points winning, here and in
  TensorBoard alike. Files of writers that never write it keep every point, as TensorBoard
  shows them.

The rules run when a series is served (``resolve_series``), never when files are read, so an
incremental reader keeps every raw point with its session and a view may still show sessions
apart (``read_scalar_sessions``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["MINDSPORE", "TENSORBOARD", "mindinsight_keep", "tensorboard_keep", "resolve_series"]

MINDSPORE = "mindspore"
TENSORBOARD = "tensorboard"


def tensorboard_keep(
    steps: np.ndarray, sessions: np.ndarray, starts: Mapping[int, int]
) -> np.ndarray:
    """Which points of one tag (in writing order) TensorBoard's reader keeps (bool mask):
    a session that starts with ``SessionLog.START`` at step ``s`` (``starts``) drops the
    points read before it with step ``>= s``."""
    keep = np.ones(len(steps), dtype=bool)
    for session, step in starts.items():
        mine = np.flatnonzero(sessions == session)
        first = int(mine[0]) if len(mine) else int(np.searchsorted(sessions, session))
        keep[:first] &= steps[:first] < step
    return keep


def mindinsight_keep(steps: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Which points of one tag (in writing order) MindInsight keeps (bool mask)."""
    n = len(steps)
    keep = np.ones(n, dtype=bool)
    if n == 0:
        return keep
    order = list(dict.fromkeys(sessions.tolist()))
    for later in order[1:]:
        first = int(steps[np.argmax(sessions == later)])
        starts = np.flatnonzero(sessions == later)[0]
        keep[:starts] &= ~(steps[:starts] >= first)
    kept = np.flatnonzero(keep)
    if len(kept) > 1:  # a repeated step keeps its last point
        reverse = steps[kept][::-1]
        _, first_in_reverse = np.unique(reverse, return_index=True)
        last = kept[len(kept) - 1 - first_in_reverse]
        keep[:] = False
        keep[last] = True
    return keep


def resolve_series(
    steps: np.ndarray,
    walls: np.ndarray,
    values: np.ndarray,
    sessions: np.ndarray,
    formats: Mapping[int, str],
    starts: Mapping[int, int] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One tag's series by its format's rule: ``(steps, wall_times, values, sessions)`` of
    the points kept, in writing order. ``formats`` maps a session to ``MINDSPORE`` or
    ``TENSORBOARD``, ``starts`` a TensorBoard session to the step of its ``SessionLog.START``;
    a tag written in both formats gets each rule on its own points."""
    if len(steps) == 0:
        return steps, walls, values, sessions
    ms_sessions = [s for s, f in formats.items() if f == MINDSPORE]
    is_ms = np.isin(sessions, ms_sessions) if ms_sessions else np.zeros(len(steps), dtype=bool)
    keep = np.ones(len(steps), dtype=bool)
    if is_ms.any():
        where = np.flatnonzero(is_ms)
        keep[where] = mindinsight_keep(steps[where], sessions[where])
    if not is_ms.all():
        where = np.flatnonzero(~is_ms)
        keep[where] = tensorboard_keep(steps[where], sessions[where], starts or {})
    if keep.all():
        return steps, walls, values, sessions
    return steps[keep], walls[keep], values[keep], sessions[keep]
