"""Where the network lives: its device."""

from __future__ import annotations

import torch

__all__ = ["device_of"]


def device_of(network: torch.nn.Module) -> torch.device:
    """The device of the network's first parameter (or buffer); CPU for an empty network."""
    for param in network.parameters():
        return param.device
    for buf in network.buffers():
        return buf.device
    return torch.device("cpu")
