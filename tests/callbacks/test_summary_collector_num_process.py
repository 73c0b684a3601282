"""SummaryCollector's ``num_process``: accepted as MindSpore's argument, and unused.

MindSpore encoded summary data in a pool of ``min(cpu_count, num_process)`` processes; here
one background thread per SummaryRecord writes, whatever the value.
"""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
import torch

from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.run.callback import Callback, RunContext
from trainledger.run.model import Model
from trainledger.summary.reader import read_scalars


class Workers(Callback):
    """Counts summary writer threads and child processes in the middle of training."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def on_train_step_end(self, run_context: RunContext) -> None:
        writers = [t for t in threading.enumerate() if t.name.startswith("trainledger-summary")]
        self.seen.append((len(writers), len(multiprocessing.active_children())))


def _run(directory: Path, num_process: int) -> tuple[list[tuple[int, int]], dict]:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    gen = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, 4, generator=gen), torch.randint(0, 2, (8,))) for _ in range(6)]
    workers = Workers()
    collector = SummaryCollector(
        directory,
        collect_freq=1,
        num_process=num_process,
        collect_specified_data={"collect_input_data": False},
    )
    model.train(2, data, callbacks=[collector, workers])
    return workers.seen, read_scalars(directory)


@pytest.mark.parametrize("num_process", [1, 32, 64])
def test_num_process_changes_nothing(tmp_path: Path, num_process: int) -> None:
    seen, scalars = _run(tmp_path / "run", num_process)
    assert set(seen) == {(1, 0)}  # one writer thread, no process pool, for any value
    _, reference = _run(tmp_path / "ref", 32)
    assert scalars.keys() == reference.keys() and "loss/auto" in scalars
    for tag, (steps, _, values) in scalars.items():
        assert steps.tolist() == reference[tag][0].tolist()
        assert values.tolist() == reference[tag][2].tolist()
