"""``LossReadout``: a run's training losses read on the host without stalling an accelerator.

Why: on a GPU a host read of the loss (``item()``, ``tolist()``) waits for every kernel queued
before it, so a callback that reads the loss at every step (``LossMonitor``'s NaN check) keeps
the CPU from running ahead and costs up to half of a launch-bound step. Here each step's loss
is queued as a non-blocking copy into a small reused host buffer (pinned on CUDA) with an event
recorded after it, and read ``LAG`` steps later, when the device has long finished that step:
waiting on that event stalls nothing that is still queued. So the NaN/inf check costs no sync,
and training stops at most ``LAG`` steps after the first non-finite loss (``first_nonfinite``
names that step). A print, a record or an epoch end reads the rest at once (``read_all``).

The host builds one per training run whose network is not on the CPU and which has step hooks
(``StepLoop``), and hands it to callbacks as ``cb_params.loss_readout``; on the CPU that field
is None and callbacks read the loss themselves, at the same step, as before.
"""

from __future__ import annotations

from collections import deque
from math import isfinite
from typing import Any

import torch

from trainledger.run.outputs import loss_of

__all__ = ["LAG", "LossReadout"]

LAG = 2  # steps between a loss's computation and its read on the host
_SLOTS = LAG + 2  # host slots in flight at most: LAG queued plus the one being pushed
# The current stream's raw handle, one C call: ``torch.cuda.current_stream()`` builds a Python
# Stream object each time, tens of microseconds a step on a launch-bound loop (an H200 profile).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


class LossReadout:
    """The losses of one run on a non-CPU device, copied to the host ``LAG`` steps behind."""

    __slots__ = (
        "_events",
        "_host",
        "_host_values",
        "_index",
        "_next_slot",
        "_pending",
        "_slots",
        "_stream",
        "first_nonfinite",
        "latest",
    )

    def __init__(self, device: torch.device) -> None:
        cuda = device.type == "cuda"
        # pinned memory makes the copy truly asynchronous on CUDA (pageable copies block)
        self._host = torch.zeros(_SLOTS, dtype=torch.float32, pin_memory=cuda)
        self._slots = [self._host[i] for i in range(_SLOTS)]  # 0-d views, made once
        self._host_values = self._host.numpy()  # read through numpy: a host load, not an op
        # an event per slot says when its copy is done; other devices copy at once
        self._events = [torch.cuda.Event() for _ in range(_SLOTS)] if cuda else None
        index = device.index
        if cuda and index is None:
            index = torch.cuda.current_device()
        self._index = index or 0
        # the stream the copies run on (the current one), looked up again when it changes
        self._stream = torch.cuda.current_stream(self._index) if cuda else None
        self._pending: deque[tuple[int, int]] = deque()  # (step, slot) copied, not yet read
        self._next_slot = 0
        self.latest: tuple[int, float] | None = None  # the newest (step, loss) read
        self.first_nonfinite: tuple[int, float] | None = None  # the first NaN/inf read

    @staticmethod
    def for_device(device: torch.device) -> LossReadout | None:
        """A readout for a run on ``device``; None on the CPU, where a read costs no stall."""
        return None if device.type == "cpu" else LossReadout(device)

    def push(self, step: int, outputs: Any) -> None:
        """Queue the copy of ``step``'s loss (the one rule of ``run.outputs``); read the losses
        that are now ``LAG`` steps old. Outputs without a tensor loss are ignored."""
        loss = loss_of(outputs)
        if not isinstance(loss, torch.Tensor):
            return
        loss = loss.detach()
        if loss.dim():  # a non-scalar loss is averaged, on the device
            loss = loss.reshape(()) if loss.numel() == 1 else loss.float().mean()
        slot = self._next_slot
        self._next_slot = (slot + 1) % _SLOTS
        self._slots[slot].copy_(loss, non_blocking=True)
        if self._events is not None:
            stream = self._stream
            if _raw_stream is None or _raw_stream(self._index) != stream.cuda_stream:  # type: ignore[union-attr]
                stream = self._stream = torch.cuda.current_stream(self._index)
            self._events[slot].record(stream)  # after the copy, on the stream it runs on
        self._pending.append((step, slot))
        while len(self._pending) > LAG:
            self._read_oldest()

    def read_all(self) -> None:
        """Read every queued loss now (a print, a record or an epoch end needs them)."""
        while self._pending:
            self._read_oldest()

    def value_at(self, step: int) -> float | None:
        """The loss of ``step`` when it is the newest step pushed (read now if still queued)."""
        self.read_all()
        latest = self.latest
        return latest[1] if latest is not None and latest[0] == step else None

    def _read_oldest(self) -> None:
        step, slot = self._pending.popleft()
        if self._events is not None:
            self._events[slot].synchronize()  # that step finished long ago: no queue drain
        value = float(self._host_values[slot])
        self.latest = (step, value)
        if self.first_nonfinite is None and not isfinite(value):
            self.first_nonfinite = (step, value)
