"""``to_host``: device tensors copied to the host together, one copy per device and dtype.

Why: each host copy of a CUDA tensor waits for the device's whole queue; a summary record
that reads the loss, five parameter histograms and an input image one by one waits six times.
Concatenated, they cost one wait (and one transfer) per dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["to_host"]


def to_host(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Detached CPU copies of ``tensors`` (CPU ones are returned detached, not copied), in
    order; the device ones of the same device and dtype travel as one flat copy."""
    out: list[torch.Tensor | None] = [None] * len(tensors)
    groups: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for i, t in enumerate(tensors):
        if t.is_cpu:
            out[i] = t.detach()
        else:
            groups.setdefault((t.device, t.dtype), []).append(i)
    for members in groups.values():
        if len(members) == 1:
            out[members[0]] = tensors[members[0]].detach().to("cpu")
            continue
        flat = torch.cat([tensors[i].detach().reshape(-1) for i in members]).to("cpu")
        offset = 0
        for i in members:
            n = tensors[i].numel()
            out[i] = flat[offset : offset + n].view(tensors[i].shape)
            offset += n
    return [t for t in out if t is not None]
