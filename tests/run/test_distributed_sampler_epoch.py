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


def _recording_loader(seen: list[int]) -> DataLoader:
    data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True, seed=0)
    original = sampler.set_epoch

    def record(epoch: int) -> None:
        seen.append(epoch)
        original(epoch)

    sampler.set_epoch = record  # type: ignore[method-assign]
    return DataLoader(data, batch_size=2, sampler=sampler)


def test_sink_mode_sets_the_sampler_epoch_of_each_pass() -> None:
    seen: list[int] = []
    net = torch.nn.Linear(3, 1)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))
    model.train(3, _recording_loader(seen), dataset_sink_mode=True)
    assert seen == [0, 1, 2]


def test_online_train_sets_the_sampler_epoch_of_each_pass() -> None:
    from trainledger.run import RecModel

    seen: list[int] = []
    net = torch.nn.Linear(3, 1)
    model = RecModel(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))
    model.online_train(_recording_loader(seen), max_steps=6)  # 2 steps a pass: 3 passes
    assert seen[:3] == [0, 1, 2]
