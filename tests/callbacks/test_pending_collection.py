"""A collection whose device values are still on their way to the host (``run.HostCopy``
on CUDA) is written later, as the same event: the summary is the one an immediate write gives,
in step order, with the user's values staged meanwhile going to the next collection.

On the CPU, copies from ``tests/run/fake_device.py``'s device arrive at once; here the copy is
made to report "not arrived" so the collector's pending path runs: until forced (the next
collection, an evaluation, the epoch's and the run's end), or for one check only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.run.fake_device import move_module, on_device
from trainledger import SummaryCollector
from trainledger.callbacks.collected_values import StagedValues
from trainledger.run import Callback, Model, RunContext
from trainledger.summary.reader import read_histograms, read_scalars


class _Custom(Callback):
    """Stages a value one step after each collection (between a collection and its write)."""

    def __init__(self, collector: SummaryCollector) -> None:
        self.collector = collector

    def on_train_step_end(self, run_context: RunContext) -> None:
        step = run_context.original_args().cur_step_num
        if step % 4 == 1 and step > 1:
            self.collector.add_value("scalar", "custom", float(step))


def _summary(tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    torch.manual_seed(0)
    net = move_module(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)))
    gen = torch.Generator().manual_seed(0)
    data = [
        on_device((torch.randn(5, 4, generator=gen), torch.randint(0, 3, (5,), generator=gen)))
        for _ in range(12)
    ]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"loss"})
    collector = SummaryCollector(tmp, collect_freq=4, collect_specified_data={
        "collect_landscape": None})  # fmt: skip
    model.fit(2, data, data[:3], callbacks=[collector, _Custom(collector)])
    return read_scalars(tmp), read_histograms(tmp)


@pytest.mark.parametrize("arrives", ["when forced", "at the next check"])
def test_a_collection_written_later_is_the_same_summary(tmp_path, monkeypatch, arrives):
    now_scalars, now_histograms = _summary(tmp_path / "now")
    checks: list[int] = []

    def ready(self: StagedValues) -> bool:
        checks.append(1)
        if arrives == "when forced":
            return False
        first = not getattr(self, "_checked", False)
        self._checked = True  # type: ignore[attr-defined]
        return not first

    monkeypatch.setattr(StagedValues, "ready", ready)
    later_scalars, later_histograms = _summary(tmp_path / "later")
    assert checks  # the pending path ran
    assert sorted(later_scalars) == sorted(now_scalars)
    assert {"loss/auto", "learning_rate/auto", "custom", "eval/loss"} <= set(now_scalars)
    for tag, (steps, _, values) in now_scalars.items():
        np.testing.assert_array_equal(later_scalars[tag][0], steps, err_msg=tag)
        np.testing.assert_allclose(later_scalars[tag][2], values, rtol=1e-6, err_msg=tag)
    # staged one step after a collection: written with the next one, not the pending one
    assert now_scalars["custom"][0].tolist() == [8, 12, 16, 20, 24]
    assert later_scalars["custom"][2].tolist() == [5.0, 9.0, 13.0, 17.0, 21.0]
    assert sorted(later_histograms) == sorted(now_histograms)
    for tag, events in now_histograms.items():
        assert [e.step for e in later_histograms[tag]] == [e.step for e in events]
        for mine, theirs in zip(later_histograms[tag], events, strict=True):
            np.testing.assert_array_equal(mine.counts, theirs.counts)
