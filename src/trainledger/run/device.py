"""Where the network lives: its device, and what its allocator holds there."""

from __future__ import annotations

import torch

__all__ = ["device_memory", "device_of"]

_MIB = 1 << 20


def device_of(network: torch.nn.Module) -> torch.device:
    """The device of the network's first parameter (or buffer); CPU for an empty network."""
    for param in network.parameters():
        return param.device
    for buf in network.buffers():
        return buf.device
    return torch.device("cpu")


def device_memory(device: torch.device) -> dict[str, float] | None:
    """MiB allocated, reserved and at peak (since the last call) on a CUDA ``device``, as
    Lightning's ``DeviceStatsMonitor`` reports them; None elsewhere. The caching allocator's
    own counters, kept on the host: reading them never waits for the device."""
    if device.type != "cuda":
        return None
    stats = {
        "memory_allocated_mib": torch.cuda.memory_allocated(device) / _MIB,
        "memory_reserved_mib": torch.cuda.memory_reserved(device) / _MIB,
        "max_memory_allocated_mib": torch.cuda.max_memory_allocated(device) / _MIB,
    }
    torch.cuda.reset_peak_memory_stats(device)  # the next peak is the next interval's
    return stats
