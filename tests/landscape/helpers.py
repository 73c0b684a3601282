"""A small classification run with weight snapshots for landscape tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.run.model import Model


def data(n: int = 96, batch: int = 16, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=gen)
    y = (x[:, 0] - x[:, 1] > 0).long()
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 12)
        self.bn = torch.nn.BatchNorm1d(12)
        self.fc2 = torch.nn.Linear(12, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def model() -> tuple[Model, Net]:
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
    return Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"loss"}), net


def train_run(
    run_dir: Path, landscape: dict[str, Any] | None, epochs: int = 2
) -> tuple[Model, Net]:
    """Train 6 steps per epoch with ``collect_landscape=landscape``."""
    m, net = model()
    specified = {"collect_landscape": landscape}
    m.train(epochs, data(), callbacks=[SummaryCollector(run_dir, collect_specified_data=specified)])
    return m, net
