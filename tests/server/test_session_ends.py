"""The run page's last session of a run killed and never resumed ends where its points do
(issue 51 item 11), not at its last epoch-end snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.callbacks.test_resumed_run import _CHILD_FLUSHED, REPO
from trainledger.query import get_summary_lineage
from trainledger.server.run_store import IndexedRunStore


@pytest.mark.slow
def test_a_killed_runs_last_session_ends_at_its_points_on_the_run_page(tmp_path: Path) -> None:
    base = tmp_path / "base"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD_FLUSHED), str(base / "run")],
        cwd=REPO,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert child.returncode == -signal.SIGKILL
    recorded = get_summary_lineage(str(base / "run"))["run"]["sessions"]
    assert [s["last_step"] for s in recorded] == [20]  # the lineage's: its last snapshot
    store = IndexedRunStore(base, background_rescan=False)
    try:
        shown = store.run_detail("run")["lineage"]["run"]["sessions"]
    finally:
        store.close()
    assert [(s["first_step"], s["last_step"]) for s in shown] == [(1, 23)]  # its points'
