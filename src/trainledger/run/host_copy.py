"""``HostCopy`` and ``to_host``: device tensors copied to the host together, one copy per
device and dtype, and on CUDA without waiting for the device.

Why: each host copy of a CUDA tensor waits for the device's whole queue; a summary record
that reads the loss, five parameter histograms and an input image one by one waits six times.
Concatenated, they cost one transfer per dtype. On CUDA that transfer goes into pinned host
memory with ``non_blocking=True`` and an event after it, so the training thread can go on
launching the next steps and read the values once the event says they arrived: a record
then costs the device no idle time (a wait drains the queue, and the device idles while the
host does the record's work and launches the next step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["HostCopy", "to_host"]


class HostCopy:
    """Host copies of ``tensors``, started at construction: CUDA ones as non-blocking copies
    into pinned memory (``ready`` says when they arrived), other devices' at once (blocking),
    CPU ones detached, not copied. ``tensors()`` gives them in order."""

    __slots__ = ("_events", "_groups", "_out", "_shapes")

    def __init__(self, tensors: Sequence[torch.Tensor]) -> None:
        self._out: list[torch.Tensor | None] = [None] * len(tensors)
        self._shapes = [t.shape for t in tensors]
        self._events: list[Any] = []
        members: dict[tuple[torch.device, torch.dtype], list[int]] = {}
        for i, t in enumerate(tensors):
            if t.is_cpu:
                self._out[i] = t.detach()
            else:
                members.setdefault((t.device, t.dtype), []).append(i)
        self._groups: list[tuple[list[int], torch.Tensor]] = []
        for (device, dtype), group in members.items():
            parts = [tensors[i].detach().reshape(-1) for i in group]
            flat = parts[0] if len(parts) == 1 else torch.cat(parts)
            if device.type == "cuda":
                host = torch.empty(flat.shape, dtype=dtype, pin_memory=True)
                host.copy_(flat, non_blocking=True)
                event = torch.cuda.Event()
                event.record(torch.cuda.current_stream(device))
                self._events.append(event)
            else:  # other devices' non-blocking copies are not safe to read unsynchronised
                host = flat.to("cpu")
            self._groups.append((group, host))

    def ready(self) -> bool:
        """Whether every copy has arrived (never waits)."""
        return all(event.query() for event in self._events)

    def tensors(self) -> list[torch.Tensor]:
        """The host copies, in the order given; waits for the copies still on their way."""
        for event in self._events:
            event.synchronize()
        self._events = []
        out = self._out
        for group, host in self._groups:
            offset = 0
            for i in group:
                n = self._shapes[i].numel()
                out[i] = host[offset : offset + n].view(self._shapes[i])
                offset += n
        self._groups = []
        return [t for t in out if t is not None]


def to_host(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Detached CPU copies of ``tensors`` (CPU ones are returned detached, not copied), in
    order, now; the device ones of the same device and dtype travel as one flat copy."""
    return HostCopy(tensors).tensors()
