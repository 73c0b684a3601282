"""What the host needs of ``torch.distributed``: who we are, and three small collectives.

Why a module of its own: every rank-aware piece (metrics, stop agreement, callbacks that print
or write once, checkpoints) asks the same questions, and the answers must not cost anything in
one process. Nothing here pickles: ``gather_arrays`` sends safetensors bytes, not
``all_gather_object`` (which unpickles what other ranks send).

Collectives run on the CPU with gloo and on the current CUDA device with nccl.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = [
    "STOP_SYNC_STEPS",
    "agree_stop",
    "any_rank",
    "barrier",
    "gather_arrays",
    "is_distributed",
    "is_main_rank",
    "rank_and_world",
    "is_sharded",
    "shard_samples",
]


def is_distributed() -> bool:
    """Whether this process is one rank of an initialised process group."""
    dist = torch.distributed
    return bool(dist.is_available() and dist.is_initialized())


def rank_and_world() -> tuple[int, int]:
    """``(rank, world_size)``; ``(0, 1)`` outside a process group."""
    if not is_distributed():
        return 0, 1
    return torch.distributed.get_rank(), torch.distributed.get_world_size()


def is_main_rank() -> bool:
    """True on rank 0, and in a process that is not part of a group: the one that prints."""
    return rank_and_world()[0] == 0


def _device() -> torch.device:
    """Where collective tensors live: nccl needs the current CUDA device, gloo the CPU."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def any_rank(flag: int) -> int:
    """The largest ``flag`` over all ranks (every rank must call it at the same point).
    Alone, ``flag`` itself: no collective is run."""
    if not is_distributed():
        return int(flag)
    t = torch.tensor([int(flag)], dtype=torch.int64, device=_device())
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return int(t.item())


#: Steps between two stop agreements inside an epoch (ranks also agree at each epoch end).
STOP_SYNC_STEPS = 50
_STOP_REASONS = ("", "requested", "max_seconds", "signal")  # by rank: the highest wins


def agree_stop(run_context: Any) -> bool:
    """Whether any rank asked to stop; if so, every rank now has a stop request (a collective:
    all ranks call it at the same step). A signal outranks a deadline (``online_train``'s
    ``max_seconds``, measured per rank), which outranks a callback's request, so a SIGTERM
    anywhere is recorded as "signal" everywhere."""
    code = 0
    if run_context.get_stop_requested():
        reason = run_context.stop_reason
        code = _STOP_REASONS.index(reason) if reason in _STOP_REASONS[2:] else 1
    agreed = any_rank(code)
    if agreed and not run_context.get_stop_requested():
        run_context.request_stop(_STOP_REASONS[agreed])
    return bool(agreed)


def barrier() -> None:
    """Wait for every rank (nothing to wait for alone)."""
    if is_distributed():
        torch.distributed.barrier()


def gather_arrays(state: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Every rank's ``state``, in rank order, on every rank. Arrays may differ in shape
    between ranks; they travel as safetensors bytes (lengths first, then padded bytes)."""
    if not is_distributed():
        return [state]
    from safetensors.numpy import load, save

    payload = save({k: np.ascontiguousarray(v) for k, v in state.items()})
    device = _device()
    world = torch.distributed.get_world_size()
    size = torch.tensor([len(payload)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    torch.distributed.all_gather(sizes, size)
    longest = max(int(s.item()) for s in sizes)
    mine = torch.zeros(longest, dtype=torch.uint8, device=device)
    mine[: len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    chunks = [torch.empty_like(mine) for _ in range(world)]
    torch.distributed.all_gather(chunks, mine)
    return [
        load(bytes(chunk[: int(n.item())].cpu().numpy().tobytes()))
        for chunk, n in zip(chunks, sizes, strict=True)
    ]


def _dist_sampler(dataset: Any) -> Any:
    sampler = getattr(dataset, "sampler", None)
    if isinstance(sampler, torch.utils.data.distributed.DistributedSampler):
        return sampler
    return None


def is_sharded(dataset: Any) -> bool:
    """Whether ``dataset`` (a DataLoader) gives each rank its own part of the data, through a
    ``DistributedSampler``: then metrics must be merged across ranks."""
    return is_distributed() and _dist_sampler(dataset) is not None


def shard_samples(dataset: Any) -> int | None:
    """How many of this rank's samples are real when ``dataset`` (a DataLoader) draws from a
    ``DistributedSampler`` that pads (``drop_last=False``); None otherwise.

    The sampler pads the index list to a multiple of the world size by repeating its head;
    padded positions are the last ``total - len(dataset)`` of the list, and rank ``r`` takes
    positions ``r, r + world, ...``, so its real samples are the first
    ``len(range(r, n, world))`` it yields, shuffled or not.
    """
    sampler = _dist_sampler(dataset)
    if sampler is None or sampler.drop_last:
        return None
    n = len(sampler.dataset)  # type: ignore[arg-type]
    return len(range(sampler.rank, n, sampler.num_replicas))
