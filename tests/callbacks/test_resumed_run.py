"""A run killed mid-training (SIGKILL) and resumed from its latest checkpoint with
``initial_epoch`` is one run: its record lists both sessions, its duration is their sum, and
its loss series holds every step once (the resumed points win), in trainledger's reader and in
TensorBoard's own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from trainledger.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    load_param_into_net,
)
from trainledger.query import filter_summary_lineage, get_summary_lineage
from trainledger.summary import read_scalar_sessions, read_scalars

REPO = Path(__file__).resolve().parents[2]

_SETUP = """
import torch
from torch import nn
from trainledger.callbacks import ModelCheckpoint, SummaryCollector, TrainLineage
from trainledger.checkpoint import CheckpointConfig
from trainledger.run import Model

def parts(run):
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(5)]
    config = CheckpointConfig(save_checkpoint_steps=5, keep_checkpoint_max=10)
    callbacks = [SummaryCollector(run, collect_freq=1,
                                  collect_specified_data={"collect_landscape": None}),
                 TrainLineage(run), ModelCheckpoint("m", run, config)]
    return net, model, data, callbacks
"""

_CHILD = (
    _SETUP
    + """
import os, signal, sys
from trainledger.run import Callback

class KillAt(Callback):
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 23:
            os.kill(os.getpid(), signal.SIGKILL)  # between checkpoints: steps 21..23 are lost

net, model, data, callbacks = parts(sys.argv[1])
model.train(8, data, callbacks=[*callbacks, KillAt()])
"""
)


@pytest.mark.slow
def test_a_killed_and_resumed_run_is_one_run_with_two_sessions(tmp_path: Path) -> None:
    run = tmp_path / "run"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(run)],
        cwd=REPO,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert child.returncode == -signal.SIGKILL
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(_SETUP), namespace)  # the same network, data and callbacks
    net, model, data, callbacks = namespace["parts"](str(run))  # type: ignore[operator]
    latest = latest_checkpoint(str(run), "m")
    assert latest is not None and latest.endswith("m-4_5.ckpt")  # step 20
    load_param_into_net(net, load_checkpoint(latest))
    model.train(8, data, callbacks=callbacks, initial_epoch=4)

    record = get_summary_lineage(str(run))["run"]
    assert record["status"] == "finished"
    first, second = record["sessions"]
    assert first["last_step"] >= 20 and first["first_step"] == 1
    assert second["first_step"] == 21 and second["last_step"] == 40
    assert record["start_time"] == first["start_time"] < second["start_time"]
    spans = [s["end_time"] - s["start_time"] for s in (first, second)]
    assert record["duration"] == pytest.approx(sum(spans))
    assert record["duration"] > spans[1]  # not just the resumed process
    found = filter_summary_lineage(
        str(tmp_path), {"sessions": {"eq": 2}}, series=["count(loss/auto)", "last_step(loss/auto)"]
    )  # the index knows it: one run of two sessions, its series served once per step
    assert [o["summary_dir"] for o in found["object"]] == ["./run"]
    assert found["object"][0]["series"] == {"count(loss/auto)": 40, "last_step(loss/auto)": 40}
    assert (
        filter_summary_lineage(str(tmp_path), {"duration": {"eq": record["duration"]}})["count"]
        == 1
    )

    steps = read_scalars(run)["loss/auto"][0]
    assert steps.tolist() == list(range(1, 41))  # every step once, in order
    raw = read_scalar_sessions(run, raw=True)["loss/auto"]
    assert len(raw[0]) >= 40 and len(set(raw[3].tolist())) == 2  # both sessions kept raw
    accumulator = ea.EventAccumulator(str(run), size_guidance={ea.SCALARS: 0})
    accumulator.Reload()
    theirs = accumulator.Scalars("loss/auto")
    assert [e.step for e in theirs] == steps.tolist()
    np.testing.assert_allclose([e.value for e in theirs], read_scalars(run)["loss/auto"][2])


_CHILD_FLUSHED = (
    _SETUP
    + """
import os, signal, sys
from trainledger.run import Callback

class KillAt(Callback):
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 23:
            # steps 21..23 written out (as a long epoch's rows are, every second), no snapshot
            collector = callbacks[0]
            collector._rows.flush(collector._record)
            collector._record.flush(fsync=False)
            os.kill(os.getpid(), signal.SIGKILL)

net, model, data, callbacks = parts(sys.argv[1])
model.train(8, data, callbacks=[*callbacks, KillAt()])
"""
)


@pytest.mark.slow
def test_each_session_of_a_resumed_run_ends_at_the_last_step_of_its_points(
    tmp_path: Path,
) -> None:
    """Killed at step 23 after its snapshot of step 20, with its points up to 23 written, the
    first session ends at 23 (not at its snapshot's 20); the resumed one, 21..40, overlaps it."""
    run = tmp_path / "run"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD_FLUSHED), str(run)],
        cwd=REPO,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert child.returncode == -signal.SIGKILL
    killed = get_summary_lineage(str(run))["run"]["sessions"]
    assert killed[0]["last_step"] == 20  # its last snapshot: the epoch end before the kill
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(_SETUP), namespace)
    net, model, data, callbacks = namespace["parts"](str(run))  # type: ignore[operator]
    latest = latest_checkpoint(str(run), "m")
    assert latest is not None and latest.endswith("m-4_5.ckpt")
    load_param_into_net(net, load_checkpoint(latest))
    # event files name their second and writer: two sessions begun within one second are
    # ordered by pid, not by time (a known edge, CHANGELOG); a real resume takes longer
    time.sleep(max(0.0, 1.05 - (time.time() % 1)))
    model.train(8, data, callbacks=callbacks, initial_epoch=4)

    sessions = get_summary_lineage(str(run))["run"]["sessions"]
    steps, _, _, of_session = read_scalar_sessions(run, raw=True)["loss/auto"]
    ends = [int(steps[of_session == k].max()) for k in sorted(set(of_session.tolist()))]
    assert [s["last_step"] for s in sessions] == ends == [23, 40]
    assert [s["first_step"] for s in sessions] == [1, 21]  # 21..23 trained twice
    assert read_scalars(run)["loss/auto"][0].tolist() == list(range(1, 41))  # resumed win


_CHILD_FAILING = (
    _SETUP
    + """
import sys
from trainledger.run import Callback

class Boom(Callback):
    def on_train_step_begin(self, run_context):
        if run_context.original_args().cur_step_num == 7:
            raise RuntimeError("boom")

net, model, data, callbacks = parts(sys.argv[1])
model.train(3, data, callbacks=[*callbacks, Boom()])
"""
)


@pytest.mark.slow
def test_a_session_that_failed_in_a_step_ends_at_its_last_point_once_resumed(
    tmp_path: Path,
) -> None:
    """The step count includes the step that raised (it was begun), which wrote no point: the
    resumed run's record ends that session at its last point, one step earlier."""
    run = tmp_path / "run"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD_FAILING), str(run)],
        cwd=REPO,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
    )
    assert child.returncode == 1 and b"boom" in child.stderr
    failed = get_summary_lineage(str(run))["run"]
    assert failed["status"] == "failed" and failed["sessions"][0]["last_step"] == 7  # counted
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(_SETUP), namespace)
    _, model, data, callbacks = namespace["parts"](str(run))  # type: ignore[operator]
    model.train(3, data, callbacks=callbacks, initial_epoch=1)
    sessions = get_summary_lineage(str(run))["run"]["sessions"]
    steps, _, _, of_session = read_scalar_sessions(run, raw=True)["loss/auto"]
    ends = [int(steps[of_session == k].max()) for k in sorted(set(of_session.tolist()))]
    assert [s["last_step"] for s in sessions] == ends == [6, 15]
    assert [s["first_step"] for s in sessions] == [1, 6]
