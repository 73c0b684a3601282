"""A resumed run's sessions: the processes that trained it, so one run record covers them all.

A run killed at step 25 and resumed from its latest checkpoint with ``initial_epoch`` is one
run. Its resuming ``TrainLineage`` reads the sessions the directory's lineage already records
(``read_lineage``), adds its own, and writes them all in trainledger's run record
(``run.sessions``: start, end, first and last step, host, pid; never in MindInsight's fields).
``start_time`` is the first session's start and ``duration`` the sum of the sessions' own
durations. A session whose process was killed ends at its lineage's last write, and at the
last step of the points it wrote (``ended_at_its_points``), as does one that failed: its step
count is either the last epoch-end snapshot or counts the step that raised.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from trainledger.lineage import Redaction, read_lineage
from trainledger.storage import list_lineage_files, safe_host
from trainledger.summary import writer_last_steps

__all__ = [
    "current_session",
    "earlier_sessions",
    "ended_at_its_points",
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
    if sessions and run.get("status") in _UNSURE_END:
        sessions[-1] = ended_at_its_points(run_dir, sessions[-1])
    return sessions


#: the statuses whose last session's step count may not be where it ended: "running" (the
#: process was killed: its count is its last epoch-end snapshot) and "failed" (the count
#: includes the step that raised, which wrote no point)
_UNSURE_END = ("running", "failed")


def ended_at_its_points(run_dir: str, session: dict[str, Any]) -> dict[str, Any]:
    """``session`` ending at the last step of the scalar points its process wrote in
    ``run_dir`` (its event files' host and pid are the session's), when it wrote any.

    Why: the lineage counts steps apart from the summaries, and for a process that did not
    end its training the count is not where it ended; its points are (a resumed run's first
    session killed at step 23 after its snapshot of step 20 ends at 23, its points' last
    step, which the resumed session's 21..23 then overlap). Its count stays when it wrote no
    point (no summaries, or MindSpore's ``_MS`` files, which name no process)."""
    host, pid = session.get("hostname"), session.get("pid")
    if not isinstance(host, str) or not isinstance(pid, int):
        return session
    try:
        last = writer_last_steps(run_dir).get((safe_host(host), pid))
    except Exception:  # noqa: BLE001 - unreadable summaries: the recorded count stays
        return session
    if last is None:
        return session
    return {**session, "last_step": last}


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
