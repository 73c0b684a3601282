"""The run page's sessions: a session that did not end its training ends where its points do.

Why at read time: when a run is resumed, its killed or failed session is corrected in the
lineage (``callbacks/run_sessions.py``), but a run killed or failed and never resumed keeps,
for its last session, its step count: the last epoch-end snapshot before a kill, or a count
that includes the step that raised. The points its process wrote say where it ended, so the
page shows that (a live run's last session, whose points lead its last snapshot, too).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from trainledger.storage import safe_host
from trainledger.summary import writer_last_steps

__all__ = ["sessions_ending_at_their_points"]

_log = logging.getLogger(__name__)
#: a run in these states has a last session whose count may not be where it ended
_UNSURE = ("running", "failed")


def sessions_ending_at_their_points(run_dir: Path, lineage: dict[str, Any]) -> dict[str, Any]:
    """``lineage`` with its run's last session ending at the last step of the scalar points
    its process (host and pid) wrote, for a run still "running" or "failed"; unchanged when
    that process wrote no point or the summaries cannot be read."""
    run = lineage.get("run")
    if not isinstance(run, dict):
        return lineage
    sessions = run.get("sessions")
    if not sessions or run.get("status") not in _UNSURE or not isinstance(sessions[-1], dict):
        return lineage
    last = sessions[-1]
    host, pid = last.get("hostname"), last.get("pid")
    if not isinstance(host, str) or not isinstance(pid, int):
        return lineage
    try:
        step = writer_last_steps(run_dir).get((safe_host(host), pid))
    except Exception as exc:  # noqa: BLE001 - the recorded count stays
        _log.info("could not read the points of %s: %s", run_dir, exc)
        return lineage
    if step is None:
        return lineage
    fixed = [*sessions[:-1], {**last, "last_step": step}]
    return {**lineage, "run": {**run, "sessions": fixed}}
