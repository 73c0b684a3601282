"""The callback tests' model: the shared toy network and data (tests/run/helpers.py)."""

from __future__ import annotations

import torch

from tests.run.helpers import make_data, make_net
from trainledger.run import Model


def data(n: int = 32, batch: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return make_data(n, batch, seed, label_features=1)


def model(lr: float = 0.1, metrics: object = None, loss_fn: object = None) -> Model:
    net = make_net(0)
    return Model(
        net,
        loss_fn or torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=lr),
        metrics=metrics,
    )
