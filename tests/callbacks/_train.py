"""A tiny model and data for the built-in callback tests."""

from __future__ import annotations

import torch

from trainledger.run.model import Model


def data(n: int = 32, batch: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen)
    y = (x[:, 0] > 0).long()
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def model(lr: float = 0.1, metrics: object = None, loss_fn: object = None) -> Model:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return Model(
        net,
        loss_fn or torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=lr),
        metrics=metrics,
    )
