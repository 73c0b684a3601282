"""Where the network lives: its device, and the process group it trains in."""

from __future__ import annotations

import torch

__all__ = ["device_of", "parallel_info"]


def device_of(network: torch.nn.Module) -> torch.device:
    """The device of the network's first parameter (or buffer); CPU for an empty network."""
    for param in network.parameters():
        return param.device
    for buf in network.buffers():
        return buf.device
    return torch.device("cpu")


def parallel_info() -> tuple[str, int]:
    """MindSpore's ``(parallel_mode, device_number)`` from torch.distributed."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return "data_parallel", dist.get_world_size()
    return "stand_alone", 1
