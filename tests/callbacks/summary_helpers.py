"""A hand-driven training loop for SummaryCollector tests (no Model needed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.summary.reader import iter_events


def tiny_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def drive(
    collector: Callback,
    epochs: int = 2,
    batch_num: int = 5,
    sink: bool = False,
    sink_size: int = 4,
    batch: Any = None,
    outputs: Callable[[int], Any] | None = None,
    on_step: Callable[[int], None] | None = None,
    extra: list[Callback] | None = None,
    net: torch.nn.Module | None = None,
) -> CallbackParams:
    """Call the train hooks as a host would, with the context manager around them."""
    net = net or tiny_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    params = CallbackParams(
        train_network=net,
        network=net,
        optimizer=optimizer,
        loss_fn=torch.nn.CrossEntropyLoss(),
        epoch_num=epochs,
        cur_epoch_num=0,
        cur_step_num=0,
        batch_num=sink_size if sink else batch_num,
        net_outputs=None,
        train_dataset=list(range(batch_num)),
        train_dataset_element=None,
        list_callback=[collector, *(extra or [])],
        mode="train",
        dataset_sink_mode=sink,
        sink_size=sink_size if sink else -1,
    )
    rc = RunContext(params)
    with collector:
        collector.on_train_begin(rc)
        for ep in range(1, epochs + 1):
            params.cur_epoch_num = ep
            collector.on_train_epoch_begin(rc)
            units = 1 if sink else batch_num
            for _ in range(units):
                params.cur_step_num += sink_size if sink else 1
                step = params.cur_step_num
                params.train_dataset_element = (
                    batch
                    if batch is not None
                    else (torch.randn(3, 4), torch.zeros(3, dtype=torch.long))
                )
                collector.on_train_step_begin(rc)
                if on_step is not None:
                    on_step(step)
                params.net_outputs = outputs(step) if outputs else torch.tensor(1.0 / step)
                collector.on_train_step_end(rc)
            collector.on_train_epoch_end(rc)
        collector.on_train_end(rc)
    return params


def steps_of(log_dir: str | Path, tag: str) -> list[int]:
    return [e.step for e in iter_events(log_dir) for v in e.summary.value if v.tag == tag]


def tags_of(log_dir: str | Path) -> set[str]:
    return {v.tag for e in iter_events(log_dir) for v in e.summary.value}
