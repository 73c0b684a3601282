"""Per-tensor digests, as data: what a set of weights held (docs/lineage.md, "Across runs").

Why in ``storage``: a checkpoint computes them, the lineage records them and the query
matches them, and those packages may not import each other; this module only holds the
values and their lineage-message form (computing them, with torch or numpy, is
``checkpoint.digests``'s), and the safetensors dtype sizes both sides need.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Digests", "kind_of", "DTYPE_SIZES"]

#: bytes per element of each safetensors dtype
DTYPE_SIZES: dict[str, int] = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "U8": 1,
    "BOOL": 1,
}


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
        msg.name.extend(_text(n) for n in self.names)

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


def _text(name: object) -> str:
    """A tensor name as the lineage's UTF-8 string field takes it: a name that is not valid
    UTF-8 (a foreign file's bytes, a surrogate-escaped str) with its bad bytes replaced."""
    if isinstance(name, bytes):
        return name.decode("utf-8", "replace")
    return str(name).encode("utf-8", "replace").decode("utf-8")
