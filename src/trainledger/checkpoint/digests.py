"""Per-tensor digests: what a set of weights holds, so a run's starting weights can be
traced to the checkpoint they came from (docs/lineage.md, "Across runs").

A digest is the crc32c of a tensor's bytes with its dtype and shape: cheap (the save already
sums every byte for the file's checksum, so each tensor's own crc comes from the same pass;
about 0.08 s per GiB where sha256 takes 1.35 s) and enough to tell weights apart, since a
match is only claimed for many tensors of the same shapes at once, never for a lone value.
A tensor whose elements are all equal (a norm weight of 1, a zero bias, a step counter) is
marked *constant*: any initialisation has it, so it never shows where weights came from.

Why no names in the match: a checkpoint loaded into a network under other names (a
``model.`` prefix, a backbone inside a new model) holds the same bytes all the same.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import crc32c as _crc32c

from trainledger.storage import DTYPE_SIZES, Digests, kind_of

__all__ = [
    "Digests",
    "kind_of",
    "digests_of",
    "header_digests",
    "note_load",
    "note_loaded",
    "take_loads",
    "file_digests",
    "network_digests",
]


def digests_of(tensors: Iterable[tuple[str, Any]]) -> Digests:
    """The digests of named tensors (torch tensors on any device, or numpy arrays), with
    their constant marks: a network's weights at train begin (one host copy of each, as a
    save makes), a file ``load_checkpoint`` read."""
    crcs, kinds, constant, names = [], [], [], []
    for name, value in tensors:
        raw, same = _raw_and_constant(name, value)
        data = raw.data if isinstance(raw.data, memoryview) else memoryview(bytes(raw.data))
        crcs.append(int(_crc32c.crc32c(data)))
        kinds.append(kind_of(raw.dtype, raw.shape))
        constant.append(same)
        names.append(name)
    return Digests(tuple(crcs), tuple(kinds), tuple(constant), tuple(names))


def _raw_and_constant(name: str, value: Any) -> tuple[Any, bool]:
    """The tensor's bytes as a save writes them (for a GPU tensor, its one host copy: no other
    read of the device), and whether its elements are all equal, told from those bytes."""
    if hasattr(value, "untyped_storage"):  # a torch tensor
        from trainledger.checkpoint.torch_adapter import tensor_to_raw

        raw = tensor_to_raw(name, value)
    else:
        import numpy as np

        from trainledger.checkpoint.format import numpy_to_raw

        raw = numpy_to_raw(np.ascontiguousarray(value))
    return raw, _constant(raw.data, DTYPE_SIZES.get(raw.dtype, 1))


def _constant(data: Any, itemsize: int) -> bool:
    """Whether every element holds the same bytes: the bytes as unsigned integers of the
    element's width, their minimum equal to their maximum (two passes, no mask; -0.0 beside
    0.0 is not constant, a tensor of NaNs is)."""
    import numpy as np

    view = memoryview(data).cast("B")
    width = itemsize if itemsize in (1, 2, 4, 8) and len(view) % itemsize == 0 else 1
    values = np.frombuffer(view, dtype=f"u{width}")
    return bool(values.size == 0 or values.min() == values.max())


def header_digests(info: Mapping[str, Any], entries: Sequence[Any]) -> Digests | None:
    """A checkpoint's digests from its header (``tensor_crc32c``, in data order), or None for
    a file written before digests (or by another writer)."""
    digits = info.get("tensor_crc32c")
    ordered = sorted(entries, key=lambda e: e.begin)
    if not isinstance(digits, str) or len(digits) != 8 * len(ordered) or not ordered:
        return None
    try:
        crcs = tuple(int(digits[i : i + 8], 16) for i in range(0, len(digits), 8))
    except ValueError:
        return None
    kinds = tuple(kind_of(e.dtype, e.shape) for e in ordered)
    return Digests(crcs, kinds, (), tuple(e.name for e in ordered))


_LOADS: list[tuple[str, Digests, float]] = []
_LOADS_LOCK = threading.Lock()


def note_load(path: str, digests: Digests) -> None:
    """``load_checkpoint`` read ``path`` (its public name: an ``s3://`` URL stays one) with
    these digests; the next train begin of this process records it (``take_loads``)."""
    with _LOADS_LOCK:
        _LOADS.append((path, digests, time.time()))
        del _LOADS[:-64]  # (a process that loads in a loop keeps the last few)


def note_loaded(path: str, digests: Digests | None, params: Mapping[str, Any]) -> None:
    """Record what a ``load_checkpoint`` of ``path`` read: the kept tensors' digests (the
    header's, else one pass over a foreign file's bytes), for the lineage of the run it
    starts (docs/lineage.md, "Across runs")."""
    from trainledger.storage import is_object_url, public_path

    tensors = [(k, v) for k, v in params.items() if hasattr(v, "shape")]
    found = digests.only(params) if digests is not None else digests_of(tensors)
    note_load(path if is_object_url(path) else public_path(path), found)


def take_loads() -> list[tuple[str, Digests, float]]:
    """The loads noted since the last call, oldest first (a train begin records them)."""
    with _LOADS_LOCK:
        taken = list(_LOADS)
        _LOADS.clear()
    return taken


def file_digests(path: str | os.PathLike[str]) -> Digests | None:
    """A checkpoint file's digests from its header alone (no tensor byte is read); None for
    an encrypted file (its header needs the key), another writer's file, or one that is not
    readable now."""
    from trainledger.checkpoint import crypto
    from trainledger.checkpoint.header import parse_header, split_prefix
    from trainledger.errors import CheckpointFormatError

    try:
        with open(path, "rb") as fh:
            first = fh.read(8)
            if crypto.is_encrypted_prefix(first):
                return None
            n = split_prefix(first, os.fstat(fh.fileno()).st_size, str(path))
            raw = fh.read(n)
        entries, _, info = parse_header(first, raw, str(path))
    except (OSError, CheckpointFormatError):
        return None
    return header_digests(info, entries)


def network_digests(network: Any) -> Digests | None:
    """A torch network's parameters and buffers, digested as a save would write them (the
    module inside DDP and ``torch.compile`` wrappers); None for anything that is not one. Not
    for an FSDP module: its state dict is a collective (the caller checks, ``is_fsdp``)."""
    if not hasattr(network, "state_dict") or not hasattr(network, "parameters"):
        return None
    from trainledger.checkpoint.torch_adapter import unwrap_network

    state = unwrap_network(network).state_dict()
    return digests_of((k, v) for k, v in state.items() if hasattr(v, "untyped_storage"))
