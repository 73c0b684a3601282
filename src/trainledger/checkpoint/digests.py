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

import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import crc32c as _crc32c

from trainledger.checkpoint.header import DTYPE_SIZES

__all__ = [
    "Digests",
    "kind_of",
    "digests_of",
    "header_digests",
    "note_load",
    "note_loaded",
    "take_loads",
]


def kind_of(dtype: str, shape: Sequence[int]) -> str:
    """``"F32:64x3x3x3"``: the dtype (safetensors' name) and shape a digest is matched with."""
    return f"{dtype}:{'x'.join(str(int(d)) for d in shape)}"


def _nbytes(kind: str) -> int:
    dtype, _, dims = kind.partition(":")
    count = math.prod(int(d) for d in dims.split("x")) if dims else 1
    return count * DTYPE_SIZES.get(dtype, 1)


@dataclass(frozen=True)
class Digests:
    """The digests of a set of tensors: parallel tuples, one entry per tensor."""

    crcs: tuple[int, ...]
    kinds: tuple[str, ...]
    constant: tuple[bool, ...] = ()  # empty: not known (a checkpoint's, read from its header)
    names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.crcs)

    def nbytes(self, i: int) -> int:
        return _nbytes(self.kinds[i])

    def keys(self) -> list[tuple[int, str]]:
        """(crc, kind) of each tensor: what a match compares."""
        return list(zip(self.crcs, self.kinds, strict=True))

    def only(self, names: Iterable[str]) -> Digests:
        """These digests for the tensors named (a partial load), in their order."""
        keep = set(names)
        picked = [i for i, n in enumerate(self.names) if n in keep]
        return Digests(
            tuple(self.crcs[i] for i in picked),
            tuple(self.kinds[i] for i in picked),
            tuple(self.constant[i] for i in picked) if self.constant else (),
            tuple(self.names[i] for i in picked),
        )

    def to_message(self, msg: Any) -> None:
        """Fill a ``TensorDigests`` message (lineage schema)."""
        msg.crc32c = b"".join(int(c).to_bytes(4, "big") for c in self.crcs)
        msg.kind.extend(self.kinds)
        if self.constant:
            msg.constant = bytes(int(c) for c in self.constant)
        msg.name.extend(self.names)

    @classmethod
    def from_message(cls, msg: Any) -> Digests | None:
        """A ``TensorDigests`` message's digests; None when it is damaged (lists that disagree
        in length): an unreadable digest never makes a match."""
        raw, kinds = bytes(msg.crc32c), tuple(str(k) for k in msg.kind)
        constant = tuple(bool(b) for b in bytes(msg.constant))
        names = tuple(str(n) for n in msg.name)
        if len(raw) != 4 * len(kinds) or (constant and len(constant) != len(kinds)):
            return None
        if names and len(names) != len(kinds):
            names = ()
        crcs = tuple(int.from_bytes(raw[i : i + 4], "big") for i in range(0, len(raw), 4))
        return cls(crcs, kinds, constant, names)


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
    """The tensor's bytes as a save writes them, and whether its elements are all equal
    (checked where the tensor lives: on a GPU, before its one host copy)."""
    if hasattr(value, "untyped_storage"):  # a torch tensor
        import torch

        from trainledger.checkpoint.torch_adapter import tensor_to_raw

        flat = value.detach().reshape(-1)
        if flat.numel() == 0:
            same = True
        elif flat.dtype.is_floating_point or flat.dtype in (torch.int32, torch.int64):
            low, high = torch.aminmax(flat)  # one pass, no mask (NaN: never constant)
            same = bool(low == high)
        else:
            same = bool((flat == flat[0]).all())
        return tensor_to_raw(name, value), same
    import numpy as np

    from trainledger.checkpoint.format import numpy_to_raw

    array = np.ascontiguousarray(value)
    flat = array.reshape(-1)
    return numpy_to_raw(array), bool(flat.size == 0 or (flat == flat[0]).all())


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
