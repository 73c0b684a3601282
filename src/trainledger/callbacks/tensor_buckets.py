"""Histograms of torch tensors counted where the tensors live.

Why: a summary record holds histograms of the network's first parameters. Copying them to the
host and bucketing them with numpy on the writer thread cost about 10 ms a record: the copy
waits for the device, and numpy's histogram holds the interpreter lock for most of its work,
which stalls the training thread (the GIL). Here the buckets are counted by torch: a CPU
tensor at once (``torch.histogram``, which releases the lock), and the tensors of a device in a
fixed number of kernels for all of them together, with no host read (no device sync): only
``5 + 2 + bins`` numbers a tensor come back, in the record's one batched copy
(``StagedValues``). On CUDA those kernels are captured once as a CUDA graph and replayed: about
60 launches cost about 1.2 ms of the training thread a record on an H200, a replay a few
microseconds (BENCHMARKS.md).

Buckets are numpy's (``encoders.make_histogram``): equal widths between the finite min and
max, ``[a, b)`` with the last one closed, a constant tensor spread over its value +-0.5,
NaN and +-inf left out. A value that lies on an edge to within float rounding may fall in the
neighbouring bucket of numpy's.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch

from trainledger.summary import BucketCounts

__all__ = ["cpu_buckets", "DeviceBuckets"]

_HEAD = 7  # min, max, num, sum, sum of squares, first edge, last edge
# The most elements counted by a CUDA graph: its private pool keeps the count's intermediates
# (about 50 bytes an element) for the run; larger sets are counted eagerly each time.
GRAPH_ELEMENTS = 2**21
_GRAPHS_KEPT = 4  # sets of tensors with a graph at a time (a run has one)
_log = logging.getLogger("trainledger.summary")
_NO_VALUES = BucketCounts(0.0, 0.0, 0.0, 0.0, 0.0, (0.0,), (0.0,))  # no finite value


def _flat_real(tensor: torch.Tensor) -> torch.Tensor:
    x = tensor.detach().reshape(-1)
    if x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"histogram expected real numbers, received dtype {x.dtype}")
    return x


def _padded(lo: float, hi: float) -> tuple[float, float]:
    """numpy's range for a constant input: its value +-0.5."""
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _limits(first: float, last: float, bins: int) -> tuple[float, ...]:
    """The upper edges, as ``numpy.linspace(first, last, bins + 1)[1:]``."""
    step = (last - first) / bins
    return tuple(first + i * step if i < bins else last for i in range(1, bins + 1))


def cpu_buckets(tensor: torch.Tensor, bins: int) -> BucketCounts:
    """The buckets of a CPU tensor, counted now (reads on the CPU cost no device wait), by
    ``torch.histogram``, which corrects for rounding against the edges as numpy does."""
    x = _flat_real(tensor).double()
    if x.numel():
        lo, hi = (float(v) for v in torch.aminmax(x))  # NaN propagates: then filter
        if not (math.isfinite(lo) and math.isfinite(hi)):
            x = x[torch.isfinite(x)]
            if x.numel():
                lo, hi = (float(v) for v in torch.aminmax(x))
    if not x.numel():
        return _NO_VALUES
    first, last = _padded(lo, hi)
    counts, _ = torch.histogram(x, bins, range=(first, last))
    total, squares = float(x.sum()), float(x.dot(x))
    return BucketCounts(
        lo, hi, float(x.numel()), total, squares, _limits(first, last, bins),
        tuple(counts.tolist()),
    )  # fmt: skip


class DeviceBuckets:
    """Buckets of the tensors of one device, counted there without a host read.

    ``count`` returns one float64 tensor on the device (a row of ``7 + bins`` numbers a
    tensor); ``unpack`` turns its host copy into ``BucketCounts``. The segment index of a set
    of tensor sizes is kept, since a network's parameters keep their sizes.
    """

    def __init__(self, bins: int) -> None:
        self.bins = bins
        self._segments: dict[Any, tuple[torch.Tensor, torch.Tensor]] = {}
        # per set of CUDA tensors (addresses, sizes, dtypes): its graph and output, or None
        # where capture failed (then counted eagerly)
        self._graphs: OrderedDict[Any, tuple[Any, torch.Tensor] | None] = OrderedDict()

    def _segments_of(self, parts: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Each element's tensor index, and each tensor's length, on the device (built once
        per device and set of sizes)."""
        key = (parts[0].device, tuple(p.numel() for p in parts))
        found = self._segments.get(key)
        if found is None:
            ids = [p.new_full((p.numel(),), i, dtype=torch.long) for i, p in enumerate(parts)]
            lengths = [p.new_full((1,), p.numel(), dtype=torch.long) for p in parts]
            found = self._segments[key] = (torch.cat(ids), torch.cat(lengths))
        return found

    def count(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        """The packed buckets of ``tensors`` (all on one device), still on that device.

        On CUDA, contiguous tensors of at most ``GRAPH_ELEMENTS`` elements in all are counted
        by replaying a CUDA graph captured at their first count: a network's parameters keep
        their addresses (optimizers update them in place), so the graph reads their current
        values; a new address is a new set, captured again."""
        key = _graph_key(tensors) if tensors and tensors[0].is_cuda else None
        if key is not None:  # (its dtypes were checked when it was captured)
            if key not in self._graphs:
                self._graphs[key] = self._capture([_flat_real(t) for t in tensors])
                while len(self._graphs) > _GRAPHS_KEPT:
                    self._graphs.popitem(last=False)
            captured = self._graphs[key]
            if captured is not None:
                graph, out = captured
                graph.replay()
                return out.clone()  # the next replay overwrites out
        return self._count([_flat_real(t) for t in tensors])

    def _capture(self, parts: list[torch.Tensor]) -> tuple[Any, torch.Tensor] | None:
        """``_count(parts)`` as a CUDA graph and its output, or None when capture fails
        (an op that cannot be captured on this torch: then the count stays eager)."""
        device = parts[0].device
        current = torch.cuda.current_stream(device)
        side = torch.cuda.Stream(device)
        try:
            side.wait_stream(current)
            with torch.cuda.stream(side):  # a warm-up off the capture, as torch asks
                self._count(parts)
            current.wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            # thread_local: a checkpoint or writer thread's CUDA calls do not break it
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                out = self._count(parts)
        except (RuntimeError, TypeError) as exc:
            _log.debug("histograms counted without a CUDA graph: %s", exc)
            return None
        return graph, out

    def _count(self, parts: list[torch.Tensor]) -> torch.Tensor:
        """The count's kernels (see ``count``).

        Per-tensor statistics are segmented reductions and the buckets one ``histc`` over
        ``tensor index * bins + bucket``, not scatters into a few shared addresses: those
        serialise on a GPU (an earlier version built on them waited about 4 ms a record on
        an H200, BENCHMARKS.md)."""
        n, bins = len(parts), self.bins
        flat = torch.cat(parts).to(torch.float64)
        seg, lengths = self._segments_of(parts)
        bad = ~torch.isfinite(flat)  # masked_fill, not where(): a Python number stays put
        values = flat.masked_fill(bad, 0.0)
        inf = math.inf

        def per_tensor(data: torch.Tensor, how: str, initial: float) -> torch.Tensor:
            return torch.segment_reduce(data, how, lengths=lengths, unsafe=True, initial=initial)

        lo = per_tensor(flat.masked_fill(bad, inf), "min", inf)
        hi = per_tensor(flat.masked_fill(bad, -inf), "max", -inf)
        num = per_tensor((~bad).to(torch.float64), "sum", 0.0)
        total = per_tensor(values, "sum", 0.0)
        squares = per_tensor(values * values, "sum", 0.0)
        pad = (lo == hi).to(torch.float64) * 0.5  # numpy's range for a constant tensor
        first, last = lo - pad, hi + pad
        # numpy's arithmetic: (x - first) / width * bins, then corrected against the edges
        # (first + k * step, as numpy.linspace) so a value on an edge lands where numpy's does
        width = (last - first)[seg]
        start = first[seg]
        pos = (values - start).div_(width).mul_(bins).masked_fill_(bad, 0.0)
        index = pos.floor_().clamp_(0, bins - 1)
        step = width / bins
        index -= (values < index * step + start).to(torch.float64)
        upper = (index + 1) * step + start
        index += ((values >= upper) & (index < bins - 1)).to(torch.float64)
        index = index.clamp_(0, bins - 1) + seg * bins
        index.masked_fill_(bad, -1.0)  # outside histc's range: not counted
        counts = torch.histc(index, bins=n * bins, min=0, max=n * bins)
        head = torch.stack([lo, hi, num, total, squares, first, last], dim=1)
        return torch.cat([head, counts.view(n, bins)], dim=1)

    def unpack(self, host: torch.Tensor) -> list[BucketCounts]:
        """``BucketCounts`` of each tensor from the host copy of ``count``'s result."""
        out = []
        for row in host.tolist():
            lo, hi, num, total, squares, first, last = row[:_HEAD]
            if not num:
                out.append(_NO_VALUES)
                continue
            limits = _limits(first, last, self.bins)
            out.append(BucketCounts(lo, hi, num, total, squares, limits, tuple(row[_HEAD:])))
        return out


def _graph_key(tensors: Sequence[torch.Tensor]) -> Any:
    """What a CUDA graph of ``count`` is valid for (the tensors' device, addresses, sizes and
    dtypes), or None where no graph should be used: non-contiguous tensors (their flat copy
    is new memory each time), too many elements, or a capture already in progress."""
    if sum(t.numel() for t in tensors) > GRAPH_ELEMENTS:
        return None
    if not all(t.is_contiguous() for t in tensors) or torch.cuda.is_current_stream_capturing():
        return None
    return tuple((t.device, t.data_ptr(), t.numel(), t.dtype) for t in tensors)
