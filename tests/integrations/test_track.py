"""``trainledger.track`` around a hand-written loop: the native lineage, summaries, failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from torch import nn

import trainledger
from tests.integrations._common import (
    EPOCHS,
    HPARAMS,
    LR,
    MLP,
    accuracy,
    assert_same_lineage,
    loaders,
    native_run,
)
from trainledger.checkpoint import save_checkpoint
from trainledger.query import get_summary_lineage
from trainledger.summary import read_scalars


def _loop(run_dir: Path, fail_at: int | None = None) -> None:
    torch.manual_seed(0)
    net = MLP()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    train, valid = loaders()
    with trainledger.track(
        run_dir,
        hparams=HPARAMS,
        network=net,
        optimizer=opt,
        loss_fn=loss_fn,
        train_dataset=train,
        valid_dataset=valid,
        epochs=EPOCHS,
    ) as run:
        step = 0
        for epoch in range(EPOCHS):
            for x, y in train:
                step += 1
                if step == fail_at:
                    raise RuntimeError("diverged")
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                run.log(step, loss=loss.item())
            run.log_epoch(epoch + 1)
            run.log_eval({"accuracy": accuracy(net, valid)})
        save_checkpoint(net, os.path.join(run_dir, "final.ckpt"))
        run.checkpoint(os.path.join(run_dir, "final.ckpt"))


def test_track_gives_the_native_lineage(tmp_path: Path) -> None:
    native = native_run(tmp_path / "native")
    _loop(tmp_path / "ours")
    ours = get_summary_lineage(str(tmp_path / "ours"))
    assert_same_lineage(ours, native)
    assert ours["user_defined"] == native["user_defined"] == HPARAMS
    ckpt = str(tmp_path / "ours" / "final.ckpt")
    assert json.loads(ours["model"]["path"]) == {"ckpt": ckpt}
    assert ours["model"]["size"] == os.path.getsize(ckpt)
    assert ours["run"]["total_steps"] == native["run"]["total_steps"] == 12
    scalars = read_scalars(tmp_path / "ours")
    assert list(scalars["loss"][0]) == list(range(1, 13))
    assert len(scalars["eval/accuracy"][0]) == EPOCHS


def test_failing_block_is_recorded_as_failed_and_propagates(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="diverged"):
        _loop(tmp_path, fail_at=5)
    run = get_summary_lineage(str(tmp_path))["run"]
    assert run["status"] == "failed" and "diverged" in run["error"]
    assert run["total_steps"] == 4


def test_log_rejects_a_bad_step(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="received: -1"), trainledger.track(tmp_path) as run:
        run.log(-1, loss=1.0)
    assert get_summary_lineage(str(tmp_path))["run"]["status"] == "failed"


def test_a_fine_tune_in_a_hand_written_loop_finds_its_parent(tmp_path: Path) -> None:
    """Issue 53 item 7: ``track`` records the network's starting digests; a loop that starts
    from another run's checkpoint is that run's child."""
    from trainledger.checkpoint import load_checkpoint

    _loop(tmp_path / "pre")
    torch.manual_seed(3)
    net = MLP()
    load_checkpoint(str(tmp_path / "pre" / "final.ckpt"), net)
    with trainledger.track(tmp_path / "fine", network=net) as run:
        run.log(1, loss=0.5)
    family = trainledger.run_family(tmp_path, "fine")
    (parent,) = family["ancestors"]
    assert (parent["run"], parent["match"]) == ("./pre", 1.0)
    assert parent["step"] == 2 * len(loaders()[0])  # the step the loop had reached
