"""Real torchrun jobs (2 CPU processes, gloo) of ``RecModel.online_train`` on a DDP network:
a stop that starts on one rank (its own ``max_seconds``, or a callback's request while
``max_steps`` is set) or on each rank at its own step (SIGTERM, with sources a signal would
close in one process) stops every rank at the same step, so no rank leaves the others waiting
in DDP's all-reduce. The worker is ``tests/run/online_ddp_worker.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.online_ddp_worker import SAFETY_STEPS
from tests.run.test_ddp import ROOT, _env, sigterm_once_started
from trainledger.run.distributed import STOP_SYNC_STEPS

WORKER = ROOT / "tests" / "run" / "online_ddp_worker.py"
pytestmark = pytest.mark.slow


def _command(mode: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(WORKER),
        mode,
        str(out),
    ]


def _ranks(out: Path) -> list[dict[str, float | str]]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _run(mode: str, out: Path) -> list[dict[str, float | str]]:
    done = subprocess.run(
        _command(mode, out), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return _ranks(out)


def _check_stopped_together(ranks: list[dict[str, float | str]], reason: str) -> None:
    first, second = ranks
    assert first["step"] == second["step"]
    step = first["step"]
    assert isinstance(step, int) and 0 < step < SAFETY_STEPS
    assert step % STOP_SYNC_STEPS == 0  # where the ranks agree
    assert first["reason"] == second["reason"] == reason
    assert first["weights"] == pytest.approx(second["weights"])


@pytest.mark.parametrize(
    ("mode", "reason"), [("deadline", "max_seconds"), ("request", "requested")]
)
def test_a_stop_on_one_rank_stops_every_rank_of_online_train_at_the_same_step(
    tmp_path: Path, mode: str, reason: str
) -> None:
    _check_stopped_together(_run(mode, tmp_path), reason)


def test_sigterm_stops_every_rank_of_online_train_at_the_same_step(tmp_path: Path) -> None:
    """Each rank's ``QueueStream`` stays open (in one process a signal closes it, to end a
    wait for data): the ranks go on to the step where they agree."""
    sigterm_once_started(_command("signal", tmp_path), tmp_path, after=0.5)
    _check_stopped_together(_ranks(tmp_path), "signal")


@pytest.mark.parametrize(
    ("mode", "step", "epoch", "reason"),
    [("uneven", 7, 1, "completed"), ("uneven_passes", 10, 4, "max_steps")],
)
def test_uneven_streams_end_every_rank_where_the_first_stream_ends(
    tmp_path: Path, mode: str, step: int, epoch: int, reason: str
) -> None:
    """``uneven_streams=True``: one-shot streams of 7 and 12 batches stop both ranks after 7;
    passes of 3 and 5 batches last 3 steps on both ranks, until ``max_steps``."""
    first, second = _run(mode, tmp_path)
    for rank in (first, second):
        assert (rank["step"], rank["epoch"], rank["reason"]) == (step, epoch, reason)
    assert first["weights"] == pytest.approx(second["weights"])


def test_a_batch_read_after_another_ranks_stream_ended_is_not_committed(tmp_path: Path) -> None:
    """Rank 1 reads its third batch before the ranks agree that rank 0's stream (2 batches)
    has ended: that batch is not trained, so its source commits the first two only, and a
    restart reads it again."""
    first, second = _run("uneven_tail", tmp_path)
    assert first["step"] == second["step"] == 2
    for rank, seen in enumerate((first, second)):
        lines = (tmp_path / f"data{rank}" / "part.jsonl").read_bytes().splitlines(keepends=True)
        assert seen["offsets"] == {"part.jsonl": len(b"".join(lines[:16]))}
