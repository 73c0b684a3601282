"""torch objects <-> the container's raw tensors: the one place that converts between them.

Tensors become byte views (``RawTensor``) without a copy when they are contiguous CPU tensors,
and loaded bytes become tensors that share one buffer (``torch.frombuffer``), so neither
direction pays more than the file I/O. Non-tensor structure (an optimizer's ``param_groups`` and
step counts) becomes a tagged JSON tree whose tensor leaves are stored as tensors under
``OPTIM_PREFIX``: no pickle in either direction.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from trainledger.checkpoint.format import Container, RawTensor
from trainledger.storage import run_chunks

__all__ = [
    "OPTIM_PREFIX",
    "collect_tensors",
    "unwrap_network",
    "copy_all",
    "container_tensors",
    "decode_tree",
    "encode_tree",
    "optimizer_payload",
    "tensor_to_raw",
    "staged_raw",
    "DeviceBytes",
    "DeviceTarget",
    "StagingRing",
]

OPTIM_PREFIX = "__optimizer__/"

_TO_ST: dict[torch.dtype, str] = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
for _name, _st in (
    ("float8_e4m3fn", "F8_E4M3"),
    ("float8_e5m2", "F8_E5M2"),
    ("uint16", "U16"),
    ("uint32", "U32"),
    ("uint64", "U64"),
):
    if hasattr(torch, _name):
        _TO_ST[getattr(torch, _name)] = _st
_FROM_ST = {v: k for k, v in _TO_ST.items()}


def _stored_dtype(name: str, tensor: torch.Tensor) -> str:
    """The safetensors dtype a tensor is stored as, or a TypeError naming what is allowed."""
    dtype = _TO_ST.get(tensor.dtype)
    if dtype is None or tensor.layout != torch.strided or tensor.is_quantized:
        raise TypeError(
            f"tensor {name!r}: {tensor.dtype} ({tensor.layout}) cannot be stored; "
            f"expected a dense tensor of {', '.join(str(d) for d in _TO_ST)}"
        )
    return dtype


class StagingRing:
    """Two host buffers (pinned for CUDA) through which device tensors reach the file: one
    is copied into (a non-blocking copy, an event after it) while the other is written.

    Why: a synchronous save from a GPU used to copy the whole state to pageable memory (about
    1.4 s for 2 GiB on an H200) and only then write it. Bounded: ``2 * chunk`` bytes, freed
    with the ring (torch's host allocator keeps the blocks for the next save)."""

    def __init__(self, device: torch.device, chunk: int = 64 << 20) -> None:
        pinned = device.type == "cuda"
        self.chunk = max(chunk, 1)
        self._bufs = [
            torch.empty(self.chunk, dtype=torch.uint8, pin_memory=pinned) for _ in range(2)
        ]
        self._events = [torch.cuda.Event() for _ in range(2)] if pinned else None
        self._next = 0

    def start(self, src: torch.Tensor) -> tuple[int, int]:
        """Begin copying ``src`` (uint8, at most ``chunk`` bytes) into the next buffer."""
        slot, n = self._next, src.numel()
        self._next ^= 1
        self._bufs[slot][:n].copy_(src, non_blocking=self._events is not None)
        if self._events is not None:
            self._events[slot].record()
        return slot, n

    def wait(self, handle: tuple[int, int]) -> memoryview:
        """The bytes of a started copy, once they are on the host."""
        slot, n = handle
        if self._events is not None:
            self._events[slot].synchronize()
        flat: Any = self._bufs[slot][:n].numpy()
        return memoryview(flat)


class DeviceBytes:
    """A device tensor's bytes for ``write_container``, staged chunk by chunk through a
    ``StagingRing``: the next chunk is copied while the caller writes this one."""

    def __init__(self, tensor: torch.Tensor, ring: StagingRing) -> None:
        self._flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        self._ring = ring
        self.nbytes = self._flat.numel()

    def chunks(self) -> Iterator[memoryview]:
        flat, ring, size = self._flat, self._ring, self._ring.chunk
        if not self.nbytes:
            return
        pending = ring.start(flat[:size])
        for begin in range(0, self.nbytes, size):
            current = pending
            if begin + size < self.nbytes:  # queued before this chunk is handed out
                pending = ring.start(flat[begin + size : begin + 2 * size])
            yield ring.wait(current)


def staged_raw(name: str, tensor: torch.Tensor, ring: StagingRing) -> RawTensor:
    """A device tensor as a ``RawTensor`` whose bytes are staged while they are written."""
    return RawTensor(_stored_dtype(name, tensor), tuple(tensor.shape), DeviceBytes(tensor, ring))


def tensor_to_raw(name: str, tensor: torch.Tensor) -> RawTensor:
    """Byte view of a tensor; copies only when it is not a contiguous CPU tensor."""
    dtype = _stored_dtype(name, tensor)
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    flat: Any = t.reshape(-1).view(torch.uint8).numpy()
    return RawTensor(dtype, tuple(t.shape), memoryview(flat))


# Chunks of the snapshot copy: small enough that a helper thread that is not scheduled holds
# back at most ~1 ms of copying, large enough that handing them out costs nothing.
_COPY_CHUNK = 8 << 20
# Below this total, one thread: starting helpers costs more than they save.
_PARALLEL_MIN_BYTES = 64 << 20


def copy_all(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]], threads: int = 0) -> None:
    """``dst.copy_(src)`` for each same-shape pair, CPU bytes copied in 8 MB chunks by the
    caller's thread and helper threads together (``trainledger.storage``; ``threads``: 0
    means one per core, at most 4).

    Why: this copy is all that an async save blocks training for, and numpy's copy releases
    the GIL. Non-contiguous and non-CPU sources go through torch on the caller's thread.
    """
    chunks: list[tuple[Any, Any]] = []
    for dst, src in pairs:
        src = src.detach()
        if not src.numel():
            continue
        if src.device.type == "cpu" and src.is_contiguous() and dst.is_contiguous():
            d = dst.reshape(-1).view(torch.uint8).numpy()
            s = src.reshape(-1).view(torch.uint8).numpy()
            chunks.extend(
                (d[i : i + _COPY_CHUNK], s[i : i + _COPY_CHUNK])
                for i in range(0, len(d), _COPY_CHUNK)
            )
        else:
            dst.copy_(src)
    if sum(len(d) for d, _ in chunks) < _PARALLEL_MIN_BYTES:
        threads = 1
    run_chunks(len(chunks), lambda i: np.copyto(*chunks[i]), threads)


def collect_tensors(save_obj: Any) -> list[tuple[str, torch.Tensor]]:
    """Named tensors of a Module, a state dict, or a list of ``{"name": ..., "data": ...}``."""
    if isinstance(save_obj, torch.nn.Module):
        items: Iterable[tuple[Any, Any]] = uncompiled(save_obj).state_dict().items()
    elif isinstance(save_obj, Mapping):
        items = save_obj.items()
    elif isinstance(save_obj, (list, tuple)):
        pairs = []
        for i, element in enumerate(save_obj):
            if not isinstance(element, Mapping) or "name" not in element or "data" not in element:
                raise TypeError(
                    f"save_obj[{i}] expected a dict with 'name' and 'data', received: "
                    f"{type(element).__name__}"
                )
            pairs.append((element["name"], element["data"]))
        items = pairs
    else:
        raise TypeError(
            "save_obj expected a torch.nn.Module, a dict of name -> tensor or a list "
            f"of {{'name', 'data'}} dicts, received: {type(save_obj).__name__}"
        )
    out = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, received: {name!r}")
        if name.startswith(OPTIM_PREFIX):
            raise ValueError(f"tensor name {name!r} uses the reserved prefix {OPTIM_PREFIX!r}")
        if not isinstance(value, torch.Tensor):
            try:
                value = torch.as_tensor(value)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise TypeError(
                    f"{name!r}: expected a tensor, received: {type(value).__name__}"
                ) from exc
        out.append((name, value))
    return out


# --- non-tensor structure as tagged JSON --------------------------------------------------


def encode_tree(obj: Any, tensors: list[tuple[str, torch.Tensor]], prefix: str) -> Any:
    """JSON-able form of ``obj``; tensors are appended to ``tensors`` and referenced by name."""
    if isinstance(obj, torch.Tensor):
        name = f"{prefix}{len(tensors)}"
        tensors.append((name, obj))
        return {"T": name}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"f": repr(obj)}
    if isinstance(obj, (list, tuple)):
        return {
            "l" if isinstance(obj, list) else "t": [encode_tree(x, tensors, prefix) for x in obj]
        }
    if isinstance(obj, Mapping):
        return {
            "d": [
                [encode_tree(k, tensors, prefix), encode_tree(v, tensors, prefix)]
                for k, v in obj.items()
            ]
        }
    raise TypeError(
        f"cannot store a {type(obj).__name__} in a checkpoint header; expected "
        "tensors, numbers, str, bool, None, lists, tuples or dicts"
    )


def decode_tree(node: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    """Inverse of ``encode_tree``."""
    if isinstance(node, dict):
        if "T" in node:
            return tensors[node["T"]]
        if "f" in node:
            return float(node["f"])
        if "l" in node:
            return [decode_tree(x, tensors) for x in node["l"]]
        if "t" in node:
            return tuple(decode_tree(x, tensors) for x in node["t"])
        return {decode_tree(k, tensors): decode_tree(v, tensors) for k, v in node["d"]}
    return node


def optimizer_payload(optimizer: Any) -> tuple[Any, list[tuple[str, torch.Tensor]]]:
    """(JSON tree, tensors) of an optimizer's ``state_dict()``."""
    tensors: list[tuple[str, torch.Tensor]] = []
    tree = encode_tree(optimizer.state_dict(), tensors, OPTIM_PREFIX)
    return tree, tensors


class DeviceTarget:
    """A container's tensor bytes read from the file straight to ``device``
    (``read_container``'s ``target``): each reading thread fills its two host buffers (pinned
    for CUDA) in turn, and a filled chunk is copied to the device without blocking while the
    thread reads the next.

    Why: reading the whole file into pinned memory first cost a pinned allocation the size of
    the file, slower than the read itself on a process's first load (about 0.5 s for 2 GiB on
    an H200); here host memory is bounded by two chunks a reading thread, and the copies to
    the device overlap the reads. ``buffer`` holds the bytes on the device."""

    def __init__(self, device: Any, length: int) -> None:
        self.device = torch.device(device)
        self.buffer = torch.empty(length, dtype=torch.uint8, device=self.device)
        self._cuda = self.device.type == "cuda"
        self._local = threading.local()  # per thread: buffers, events, the next one

    def slot(self, position: int, n: int) -> memoryview:
        local = self._local
        if getattr(local, "bufs", None) is None or local.bufs[0].numel() < n:
            local.bufs = [torch.empty(n, dtype=torch.uint8, pin_memory=self._cuda) for _ in "ab"]
            local.events = [torch.cuda.Event() for _ in "ab"] if self._cuda else None
            local.used, local.next = [False, False], 0
        i = local.current = local.next
        if local.used[i] and local.events is not None:
            local.events[i].synchronize()  # its last chunk has reached the device
        return memoryview(local.bufs[i][:n].numpy())

    def place(self, position: int, view: memoryview) -> None:
        local, n = self._local, len(view)
        i = local.current
        self.buffer[position : position + n].copy_(local.bufs[i][:n], non_blocking=self._cuda)
        if local.events is not None:
            local.events[i].record(torch.cuda.current_stream(self.device))
        local.used[i], local.next = True, i ^ 1

    def finish(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)


def container_tensors(container: Container) -> dict[str, torch.Tensor]:
    """Tensors of a read container, as views into its single buffer (no per-tensor copy):
    on the host, or on a device when it was read to one (``DeviceTarget``)."""
    if isinstance(container.owner, DeviceTarget):
        buf = container.owner.buffer
    elif not len(container.data):
        buf = torch.empty(0, dtype=torch.uint8)
    else:
        buf = torch.frombuffer(container.data, dtype=torch.uint8)
    out: dict[str, torch.Tensor] = {}
    for e in container.entries:
        dtype = _FROM_ST.get(e.dtype)
        if dtype is None:
            raise TypeError(f"tensor {e.name!r}: dtype {e.dtype} is not supported by this torch")
        piece = buf[e.begin : e.end]
        size = torch.empty(0, dtype=dtype).element_size()
        if e.begin % size:
            piece = piece.clone()  # a file from another writer with unaligned offsets
        out[e.name] = piece.view(dtype).reshape(e.shape)
    return out


def unwrap_network(network: Any) -> Any:
    """The module inside ``DistributedDataParallel`` and ``torch.compile`` wrappers (its names
    lack ``module.`` and ``_orig_mod.``), so a full-state checkpoint loads into a plain network
    and on any world size, and hooks that run the network do not run the compiled one."""
    for _ in range(4):  # compile(DDP(net)) or DDP(compile(net)): a few layers at most
        network = uncompiled(network)
        if not isinstance(network, torch.nn.parallel.DistributedDataParallel):
            return network
        network = network.module
    return network


def uncompiled(module: Any) -> Any:
    """The module ``torch.compile`` wrapped (its ``OptimizedModule`` prefixes every state name
    with ``_orig_mod.``); other modules as they are."""
    if type(module).__name__ == "OptimizedModule":
        inner = getattr(module, "_orig_mod", None)
        if isinstance(inner, torch.nn.Module):
            return inner
    return module
