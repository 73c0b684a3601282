"""Windowed metrics of online_train, against a hand computation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from trainledger.run.callback import Callback, RunContext
from trainledger.run.metrics import ROCAUC, Loss
from trainledger.run.rec_model import RecModel
from trainledger.run.windowed import WindowedMetrics


def _clicks(seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randn(16, 4, generator=g)
        y = (x[:, 0] + 0.5 * torch.randn(16, generator=g) > 0).float()
        yield x, y


class Squeeze(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).squeeze(-1)


class Capture(Callback):
    def __init__(self) -> None:
        self.batches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.losses: list[float] = []
        self.window_at: dict[int, dict[str, float]] = {}
        self.eval_results_at: dict[int, dict[str, float]] = {}
        self.final: dict[str, Any] = {}

    def on_train_step_end(self, rc: RunContext) -> None:
        p = rc.original_args()
        self.batches.append(p.train_dataset_element)
        self.losses.append(float(p.net_outputs.detach()))
        self.window_at[p.cur_step_num] = dict(p.window_metrics)
        self.eval_results_at[p.cur_step_num] = dict(p.eval_results)

    def on_train_end(self, rc: RunContext) -> None:
        self.final = dict(rc.original_args().window_metrics)


def _hand(net: nn.Module, cap: Capture, first: int, last: int) -> dict[str, float]:
    """AUC (sklearn) and mean loss over steps first..last (1-based, inclusive)."""
    with torch.no_grad():
        scores = torch.cat([net(x) for x, _ in cap.batches[first - 1 : last]]).numpy()
    labels = torch.cat([y for _, y in cap.batches[first - 1 : last]]).numpy()
    return {
        "auc": float(roc_auc_score(labels, scores)),
        "logloss": float(np.mean(cap.losses[first - 1 : last])),
    }


def test_window_metrics_match_a_hand_computation() -> None:
    torch.manual_seed(0)
    net = Squeeze()
    # lr=0: the weights stay fixed, so predictions can be recomputed after the run
    model = RecModel(
        net,
        nn.BCEWithLogitsLoss(),
        torch.optim.SGD(net.parameters(), lr=0.0),
        metrics={"auc": ROCAUC(), "logloss": Loss()},
    )
    cap = Capture()
    model.online_train(_clicks(), callbacks=[cap], max_steps=12, metric_window=5, metric_every=5)
    assert cap.window_at[4] == {}  # nothing computed before the first `metric_every`
    assert cap.window_at[9] == cap.window_at[5]  # kept until the next computation
    for step, (first, last) in {5: (1, 5), 10: (6, 10)}.items():
        expected = _hand(net, cap, first, last)
        assert cap.window_at[step] == pytest.approx(expected, rel=1e-6)
        assert cap.eval_results_at[step] == cap.window_at[step]  # what ModelCheckpoint reads
    assert cap.final == pytest.approx(_hand(net, cap, 8, 12), rel=1e-6)  # recomputed at the end


def test_window_computed_when_a_sink_unit_jumps_over_the_multiple() -> None:
    torch.manual_seed(0)
    net = Squeeze()
    model = RecModel(
        net, nn.BCEWithLogitsLoss(), torch.optim.SGD(net.parameters(), lr=0.0), metrics={"loss"}
    )
    cap = Capture()
    model.online_train(
        _clicks(), callbacks=[cap], sink_size=3, max_steps=9, metric_window=4, metric_every=4
    )
    # step_end at 3, 6, 9; only the last batch of each unit is seen by the callback, so check
    # the count of computations instead: 6 crosses 4, 9 crosses 8.
    assert list(cap.window_at) == [3, 6, 9]
    assert cap.window_at[3] == {}
    assert set(cap.window_at[6]) == {"loss"} and cap.window_at[9] != cap.window_at[6]


def test_windowed_metrics_unit() -> None:
    w = WindowedMetrics({"auc": ROCAUC(), "loss": Loss()}, window=2, every=3)
    assert w.compute() == {}
    w.add(torch.tensor(1.0), torch.tensor([0.1, 0.9]), torch.tensor([0, 1]))
    w.add(torch.tensor(3.0), torch.tensor([0.8, 0.2]), torch.tensor([0, 1]))
    w.add(torch.tensor(5.0), torch.tensor([0.3, 0.7]), torch.tensor([0, 1]))
    assert len(w) == 2
    result = w.compute()
    assert result["loss"] == 4.0  # mean of the last two batch losses
    assert result["auc"] == roc_auc_score([0, 1, 0, 1], [0.8, 0.2, 0.3, 0.7])
    assert [s for s in range(1, 12) if w.due(s)] == [3, 6, 9]
    w2 = WindowedMetrics({"loss": Loss()}, window=2, every=4)
    assert [s for s in (3, 6, 7, 9, 13) if w2.due(s)] == [6, 9, 13]
