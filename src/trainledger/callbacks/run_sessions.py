"""A resumed run's sessions: the processes that trained it, so one run record covers them all.

A run killed at step 25 and resumed from its latest checkpoint with ``initial_epoch`` is one
run. Its resuming ``TrainLineage`` reads the sessions the directory's lineage already records
(``read_lineage``), adds its own, and writes them all in trainledger's run record
(``run.sessions``: start, end, first and last step, host, pid; never in MindInsight's fields).
``start_time`` is the first session's start and ``duration`` the sum of the sessions' own
durations. A session whose process was killed ends at its lineage's last write.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from trainledger.lineage import Redaction, read_lineage
from trainledger.storage import list_lineage_files

__all__ = [
    "current_session",
    "earlier_sessions",
    "recorded_run",
    "session_duration",
    "session_start",
]


def recorded_run(run_dir: str | None) -> dict[str, Any]:
    """The run record ``run_dir``'s lineage already holds ({} for a new or damaged one): a
    later process of the same directory keeps its identity and its checkpoints, so deleting
    the run later finds every checkpoint it saved, in any session."""
    if not run_dir or not list_lineage_files(run_dir):
        return {}
    try:
        run = read_lineage(run_dir).get("run")
    except Exception:  # noqa: BLE001 - a damaged earlier record: the run starts anew
        return {}
    return run if isinstance(run, dict) else {}


def earlier_sessions(run_dir: str | None, hostname: str | None) -> list[dict[str, Any]]:
    """The sessions already recorded in ``run_dir`` (oldest first; [] for a new run), less
    this process's own (``hostname`` as this process records it)."""
    if not run_dir:
        return []
    try:
        run = read_lineage(run_dir).get("run") or {}
    except Exception:  # noqa: BLE001 - a damaged earlier record: this session stands alone
        return []
    sessions = [dict(s) for s in run.get("sessions") or ()]
    if not sessions and run.get("start_time") is not None:  # written before sessions existed
        sessions = [
            {
                "start_time": run["start_time"],
                "end_time": run.get("end_time"),
                "last_step": run.get("total_steps"),
                "hostname": run.get("hostname"),
                "pid": run.get("pid"),
            }
        ]
    hosts = {hostname, Redaction.from_env().hostname(hostname)} if hostname else {None}
    sessions = [  # less this process: a sibling callback's record of it (as written)
        s for s in sessions if not (s.get("pid") == os.getpid() and s.get("hostname") in hosts)
    ]
    if sessions and sessions[-1].get("end_time") is None:  # killed: its last write
        files = list_lineage_files(run_dir)
        if files:
            sessions[-1]["end_time"] = max(f.mtime for f in files)
    return sessions


def session_start(sessions: Sequence[dict[str, Any]], fallback: float | None) -> float | None:
    """The run's start: its first session's."""
    first = sessions[0].get("start_time") if sessions else None
    return fallback if first is None else float(first)


def session_duration(sessions: Sequence[dict[str, Any]]) -> float | None:
    """The sum of the sessions' durations (None when none has both ends)."""
    spans = [
        float(s["end_time"]) - float(s["start_time"])
        for s in sessions
        if s.get("end_time") is not None and s.get("start_time") is not None
    ]
    return sum(spans) if spans else None


def current_session(
    start: float | None,
    end: float | None,
    steps: tuple[int | None, int | None],
    hostname: str | None,
) -> dict[str, Any]:
    """This process's session: ``steps`` is (first, last); ``hostname`` as the run records
    it (blurred under ``TRAINLEDGER_REDACT``)."""
    return {
        "start_time": start,
        "end_time": end,
        "first_step": steps[0],
        "last_step": steps[1],
        "hostname": hostname,
        "pid": os.getpid(),
    }
