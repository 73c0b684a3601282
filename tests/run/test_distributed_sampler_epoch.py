"""Model.train calls DistributedSampler.set_epoch each epoch (0-based), as torch DDP loops must."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from trainledger.run import Model


def test_train_sets_distributed_sampler_epoch() -> None:
    data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True, seed=0)
    seen: list[int] = []
    original = sampler.set_epoch

    def record(epoch: int) -> None:
        seen.append(epoch)
        original(epoch)

    sampler.set_epoch = record  # type: ignore[method-assign]
    loader = DataLoader(data, batch_size=2, sampler=sampler)
    net = torch.nn.Linear(3, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))
    model.train(3, loader)
    assert seen == [0, 1, 2]
    assert sampler.epoch == 2
