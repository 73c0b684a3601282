"""Helpers of the training loop that hold no state of ``Model``."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from trainledger.run.callback import RunContext

__all__ = [
    "Cycle",
    "check_frequency",
    "check_int",
    "device_of",
    "parallel_info",
    "should_eval",
    "stdout_is_tty",
]


class Cycle:
    """A dataset iterated across epochs: sink units continue where the last one stopped."""

    def __init__(self, dataset: Iterable[Any]) -> None:
        self._dataset = dataset
        self._it: Iterator[Any] = iter(dataset)

    def take(self, n: int | None) -> Iterator[Any]:
        count = 0
        fresh = False
        while n is None or count < n:
            try:
                batch = next(self._it)
            except StopIteration:
                if fresh or n is None:
                    return
                self._it = iter(self._dataset)
                fresh = True
                continue
            fresh = False
            count += 1
            yield batch


def check_int(value: Any, name: str, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} expected an int >= {minimum}, received: {value!r}")


def check_frequency(freq: Any) -> None:
    if isinstance(freq, list) and all(isinstance(f, int) and f >= 1 for f in freq):
        return
    if isinstance(freq, int) and not isinstance(freq, bool) and freq >= 1:
        return
    raise ValueError(
        f"valid_frequency expected an int >= 1 or a list of epoch numbers, received: {freq!r}"
    )


def should_eval(epoch: int, freq: int | list[int], run_context: RunContext) -> bool:
    if run_context.stop_reason == "signal":
        return False  # the user asked to stop now; evaluation could take long
    return epoch in freq if isinstance(freq, list) else epoch % freq == 0


def device_of(network: torch.nn.Module) -> torch.device:
    for param in network.parameters():
        return param.device
    for buf in network.buffers():
        return buf.device
    return torch.device("cpu")


def parallel_info() -> tuple[str, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return "data_parallel", dist.get_world_size()
    return "stand_alone", 1


def stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
