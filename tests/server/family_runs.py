"""A base of one family for the server's tests (issue 53 item 6): ``pre`` trained from
scratch (checkpoints at steps 4 and 8), ``fine`` started from its step-8 checkpoint,
``fine-eval`` evaluating ``fine``'s last checkpoint, ``alone`` related to none; ``pre`` and
``fine`` carry a ``loss`` curve of steps 1-8 each. ``make_fork_base`` adds ``early``, started
from ``pre``'s step-4 checkpoint, its ``loss`` at steps 1-4: a fork before the parent's end."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from tests.query.test_family import data, make_net, train
from trainledger.callbacks import EvalLineage, ModelCheckpoint, TrainLineage
from trainledger.checkpoint import CheckpointConfig, latest_checkpoint, load_checkpoint
from trainledger.run import Model
from trainledger.summary.record import SummaryRecord


def make_family_base(base: Path) -> Path:
    pre = train(base, "pre", make_net(0))
    child = make_net(1)
    load_checkpoint(latest_checkpoint(pre), child)
    fine = train(base, "fine", child)
    net = make_net(9)
    load_checkpoint(latest_checkpoint(fine), net)
    evaluator = Model(net, nn.CrossEntropyLoss(), metrics={"accuracy"})
    evaluator.eval(data(3), callbacks=[EvalLineage(base / "fine-eval")])
    train(base, "alone", make_net(3), epochs=1)
    for run, start in ((pre, 2.0), (fine, 1.0)):
        with SummaryRecord(run) as record:
            for step in range(1, 9):
                record.add_scalar("loss", start - 0.1 * step, step, wall_time=1.7e9 + step)
    return base


def make_fork_base(base: Path) -> Path:
    """``make_family_base`` and ``early`` (module doc): ``loss`` 0.5 - 0.1 * step. Trained at
    another learning rate than ``pre``: at the same one, its step-4 weights would be
    ``pre``'s step-8 ones (the same batches, plain SGD), an equal source of ``fine``."""
    make_family_base(base)
    net = make_net(2)
    load_checkpoint(base / "pre" / "m-1_4.ckpt", net)
    early = base / "early"
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.05))
    ckpt = ModelCheckpoint("m", early, CheckpointConfig(save_checkpoint_steps=4))
    model.train(1, data(), callbacks=[ckpt, TrainLineage(early)])
    with SummaryRecord(early) as record:
        for step in range(1, 5):
            record.add_scalar("loss", 0.5 - 0.1 * step, step, wall_time=1.8e9 + step)
    return base
