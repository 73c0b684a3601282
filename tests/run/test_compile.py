"""A ``torch.compile``'d network under the host and every default callback: our hooks cause no
graph break and no extra compilation (the same graphs as a hand loop that trains and then
evaluates), and its checkpoints carry the plain network's names, loading into either form."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

from trainledger import (
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    SummaryCollector,
    TimeMonitor,
    TrainLineage,
    load_checkpoint,
    load_param_into_net,
    save_checkpoint,
)
from trainledger.checkpoint import latest_checkpoint

pytestmark = pytest.mark.slow  # compiling takes seconds


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 8, generator=gen), torch.randint(0, 2, (4,), generator=gen))] * 10


def _graphs() -> tuple[int, dict[str, int]]:
    return counters["stats"]["unique_graphs"], dict(counters["graph_break"])


def test_our_hooks_cause_no_graph_break_or_extra_compilation(tmp_path: Path) -> None:
    torch._dynamo.reset()
    counters.clear()
    net = _net()
    compiled = torch.compile(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in _data():  # the hand loop: train, then evaluate without grad
        opt.zero_grad()
        torch.nn.functional.cross_entropy(compiled(x), y).backward()
        opt.step()
    with torch.no_grad():
        compiled(_data()[0][0])
    hand = _graphs()

    torch._dynamo.reset()
    counters.clear()
    net = _net()
    compiled = torch.compile(net)
    model = Model(
        compiled,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.1),
        metrics={"accuracy", "loss"},
    )
    callbacks = [
        LossMonitor(5),
        TimeMonitor(),
        SummaryCollector(tmp_path / "run", collect_freq=2),  # the graph and histograms too
        TrainLineage(tmp_path / "run"),
        ModelCheckpoint(
            directory=tmp_path / "ckpt", config=CheckpointConfig(save_checkpoint_steps=5)
        ),
    ]
    model.fit(3, _data(), _data()[:2], callbacks=callbacks)
    assert _graphs() == hand
    assert hand[1] == {} and hand[0] >= 1

    # the checkpoints hold the plain network's names and load into either form
    latest = latest_checkpoint(tmp_path / "ckpt")
    assert latest is not None
    params = load_checkpoint(latest)
    assert set(params) >= set(_net().state_dict())
    for target in (_net(), torch.compile(_net())):
        assert load_param_into_net(target, params, strict_load=False) == ([], [])
        torch.testing.assert_close(
            dict(getattr(target, "_orig_mod", target).state_dict()), dict(net.state_dict())
        )


def test_save_checkpoint_of_a_compiled_network_uses_the_plain_names(tmp_path: Path) -> None:
    net = _net()
    save_checkpoint(torch.compile(net), str(tmp_path / "c.ckpt"))
    assert set(load_checkpoint(tmp_path / "c.ckpt")) == set(net.state_dict())
