"""Metrics merged over parts of the data equal the metric over the whole (what ranks do)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from trainledger.run import Callback, CallbackManager, RunContext
from trainledger.run.distributed import shard_samples
from trainledger.run.eval_shard import EvalShard
from trainledger.run.metrics import F1, MAE, MSE, ROCAUC, Accuracy, Loss, Metric, Precision


@pytest.mark.parametrize("cls", [Accuracy, Precision, F1, ROCAUC])
def test_merged_parts_equal_the_whole(cls: type[Metric]) -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((101, 4))
    labels = rng.integers(0, 4, 101)
    labels[:3] = 3  # the first part alone sees class 3 only at its start
    whole = cls()
    whole.update(scores, labels)
    parts = []
    for chunk in (slice(0, 10), slice(10, 60), slice(60, 101)):
        part = cls()
        part.update(scores[chunk], labels[chunk])
        parts.append(part)
    states = [p.state() for p in parts]
    parts[0].merge(states)  # type: ignore[arg-type]
    assert parts[0].eval() == pytest.approx(whole.eval(), rel=1e-12)


@pytest.mark.parametrize("cls", [Loss, MAE, MSE])
def test_merged_means_equal_the_whole(cls: type[Metric]) -> None:
    values = np.linspace(-1.0, 2.0, 50)
    target = np.zeros(50)
    whole, a, b = cls(), cls(), cls()
    args = (lambda s: (values[s],)) if cls is Loss else (lambda s: (values[s], target[s]))
    whole.update(*args(slice(None)))
    a.update(*args(slice(0, 7)))
    b.update(*args(slice(7, 50)))
    a.merge([a.state(), b.state()])  # type: ignore[list-item]
    assert a.eval() == pytest.approx(whole.eval(), rel=1e-12)


def test_a_user_metric_without_state_is_not_mergeable() -> None:
    class Count(Metric):
        def clear(self) -> None:
            self.n = 0

        def update(self, *inputs: object) -> None:
            self.n += 1

        def eval(self) -> int:
            return self.n

    assert Count().state() is None


@pytest.mark.parametrize(("samples", "world"), [(403, 2), (403, 3), (5, 4), (2, 3), (12, 4)])
def test_shard_samples_counts_only_real_samples(samples: int, world: int) -> None:
    data = TensorDataset(torch.arange(samples))
    real = []
    for rank in range(world):
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=3)
        loader = DataLoader(data, batch_size=4, sampler=sampler)
        count = shard_samples(loader)
        assert count is not None
        drawn = [int(i) for i in sampler]
        real.extend(drawn[:count])  # the padding is the tail of each rank's list
    assert sorted(real) == list(range(samples))  # every sample exactly once


def test_eval_shard_keeps_the_leading_real_samples_of_the_last_batch() -> None:
    shard = EvalShard(real_samples=10)
    assert shard.keep(torch.zeros(4)) is None
    assert shard.keep(torch.zeros(4)) is None
    assert shard.keep(torch.zeros(4)) == 2
    assert shard.keep(torch.zeros(4)) == 0


def test_a_callback_inactive_on_this_rank_gets_no_hook() -> None:
    calls: list[str] = []

    class Probe(Callback):
        def __init__(self, active: bool) -> None:
            self.rank_active = active

        def __enter__(self) -> Probe:
            calls.append(f"enter {self.rank_active}")
            return self

        def on_train_begin(self, run_context: RunContext) -> None:
            calls.append(f"begin {self.rank_active}")

    manager = CallbackManager([Probe(True), Probe(False)])
    with manager:
        manager.call("on_train_begin", RunContext({}))
    assert calls == ["enter True", "begin True"]
