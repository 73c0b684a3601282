"""The checkpoint header and the checks that every byte of a checkpoint is as written.

Why a module of its own: a loader must never hand out weights from a damaged file. Two crc32c
values live in the trainledger header (the last two keys of its JSON, written as fixed-width
placeholders and patched once known):

- ``crc32c``: the tensor bytes in data order (format 1 and 2), so a flipped weight is caught;
- ``header_crc32c`` (format 2): the 8-byte length prefix and the whole padded JSON header, with
  its own 8 digits read as ``00000000``, so a flipped name, dtype, shape or offset is caught.

A format-2 header without ``header_crc32c`` is damaged (the key itself was hit). Format-1
files (written before the header was covered) still load: their tensor bytes are verified,
their header only checked for structure. Files from other safetensors writers carry neither.
Every way a header can be malformed is a ``CheckpointFormatError``, never a raw ``KeyError``.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import crc32c as _crc32c

from trainledger.errors import CheckpointFormatError
from trainledger.storage import DTYPE_SIZES

__all__ = [
    "DTYPE_SIZES",
    "FORMAT_VERSION",
    "MAX_HEADER",
    "META_KEY",
    "Entry",
    "crc32c_combine",
    "crc_of",
    "tensor_crc",
    "encode_header",
    "parse_header",
    "seal_header",
    "split_prefix",
    "validate_entries",
    "verify_tensor_crc",
]

FORMAT_VERSION = 2  # 2: the header is covered by header_crc32c
META_KEY = "trainledger"
MAX_HEADER = 100 * 1024 * 1024  # the safetensors library's own limit

# safetensors dtype name -> bytes per element


@dataclass(frozen=True)
class Entry:
    """Where one tensor lives inside a container's byte buffer."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


def _token(key: str) -> bytes:
    """How ``"key": "`` (before the 8 digits) of the inner JSON appears escaped inside the
    outer JSON; the last occurrence in a header is ours (nothing user-given comes after)."""
    text = json.dumps(json.dumps({key: "00000000"})[1:-1])[1:-1].encode()
    return text[: text.rindex(b"00000000")]


_CRC_TOKEN = _token("crc32c")
_DIGESTS_TOKEN = _token("tensor_crc32c")
_HEAD_TOKEN = _token("header_crc32c")
# Traces only our writer leaves in a header (keys of the JSON nested inside a metadata string).
# A header that holds one but whose metadata has no trainledger entry is ours with its key
# damaged: loading it as another writer's file would skip every check.
_OUR_TRACES = (_token("format_version")[:-2], _CRC_TOKEN, _HEAD_TOKEN)
_ZERO = b"00000000"
# never taken from the caller's info
_OURS = ("format_version", "tensor_crc32c", "crc32c", "header_crc32c")


def encode_header(
    entries: Sequence[Entry], info: dict[str, Any], extra_metadata: dict[str, str] | None = None
) -> bytes:
    """The length-prefixed, space-padded JSON header, with both crc32c values as placeholders
    (``seal_header`` fills them in)."""
    header: dict[str, Any] = {}
    for e in entries:
        if e.name == "__metadata__":
            raise ValueError("'__metadata__' is reserved by the safetensors format")
        header[e.name] = {
            "dtype": e.dtype,
            "shape": list(e.shape),
            "data_offsets": [e.begin, e.end],
        }
    base = {k: v for k, v in info.items() if k not in _OURS}
    inner = {"format_version": FORMAT_VERSION, **base}
    # each tensor's crc32c, 8 hex digits each in data order: its digest, which later runs'
    # weights are matched against (docs/lineage.md, "Across runs")
    inner["tensor_crc32c"] = "0" * 8 * len(entries)
    inner["crc32c"] = "00000000"
    inner["header_crc32c"] = "00000000"  # the last key: its placeholder is the last token
    metadata = {"format": "pt", **(extra_metadata or {})}
    metadata.pop(META_KEY, None)
    metadata[META_KEY] = json.dumps(inner, allow_nan=True)
    header["__metadata__"] = metadata  # last: nothing user-given follows the placeholders
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-(8 + len(raw)) % 8)
    return struct.pack("<Q", len(raw)) + raw


def _header_crc(head: bytes | bytearray, slot: int) -> int:
    """crc32c of ``head`` (length prefix included) with the 8 digits at ``slot`` as zeros."""
    crc = _crc32c.crc32c(head[:slot])
    crc = _crc32c.crc32c(_ZERO, crc)
    return int(_crc32c.crc32c(head[slot + 8 :], crc))


def seal_header(head: bytes, tensor_crc: int, per_tensor: Sequence[int] = ()) -> bytes:
    """``head`` from ``encode_header`` with each tensor's crc (data order), the whole crc and
    then the header crc filled in."""
    out = bytearray(head)
    if per_tensor:
        slot = out.rindex(_DIGESTS_TOKEN) + len(_DIGESTS_TOKEN)
        digits = "".join(f"{c:08x}" for c in per_tensor).encode()
        if out[slot : slot + len(digits)] != b"0" * len(digits):
            raise ValueError("the header holds no room for these tensor digests")
        out[slot : slot + len(digits)] = digits
    crc_slot = out.rindex(_CRC_TOKEN) + len(_CRC_TOKEN)
    out[crc_slot : crc_slot + 8] = f"{tensor_crc:08x}".encode()
    head_slot = out.rindex(_HEAD_TOKEN) + len(_HEAD_TOKEN)
    out[head_slot : head_slot + 8] = f"{_header_crc(out, head_slot):08x}".encode()
    return bytes(out)


def split_prefix(first: bytes, size: int, where: str) -> int:
    """The header length from the first 8 bytes of a file of ``size`` bytes."""
    if len(first) < 8:
        raise CheckpointFormatError(f"{where}: file too short to be a checkpoint")
    (n,) = struct.unpack("<Q", first[:8])
    if n > MAX_HEADER:  # a limit, not damage: the safetensors library refuses it too
        raise CheckpointFormatError(
            f"{where}: header length {n} bytes is over the limit of {MAX_HEADER} bytes"
        )
    if 8 + n > size:
        raise CheckpointFormatError(
            f"{where}: header length {n} exceeds the file's {size} bytes (truncated?)"
        )
    return int(n)


def _loads(raw: bytes | str, what: str, where: str) -> Any:
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointFormatError(f"{where}: {what} is not valid JSON ({exc})") from exc


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a non-negative integer, received {value!r}")
    return value


def _entry(name: str, spec: Any) -> Entry:
    if not isinstance(spec, dict):
        raise ValueError(f"expected an object, received {type(spec).__name__}")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_SIZES:
        raise ValueError(f"unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not isinstance(offsets, list) or len(offsets) != 2:
        raise ValueError(f"expected a shape list and two data_offsets, received {spec!r}")
    return Entry(name, dtype, tuple(_int(d) for d in shape), _int(offsets[0]), _int(offsets[1]))


def parse_header(
    prefix: bytes, raw: bytes, where: str
) -> tuple[list[Entry], dict[str, str], dict[str, Any]]:
    """(entries, metadata, trainledger info) of a header; ``prefix`` is its 8-byte length."""
    covered = _check_header_crc(prefix + raw, where)
    header = _loads(raw, "header", where)
    if not isinstance(header, dict):
        raise CheckpointFormatError(f"{where}: expected a JSON object header")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointFormatError(f"{where}: __metadata__ must map str to str")
    info: dict[str, Any] = {}
    if META_KEY not in metadata and not covered and any(t in raw for t in _OUR_TRACES):
        raise CheckpointFormatError(
            f"{where}: the header holds trainledger's checksum fields but no {META_KEY!r} "
            "metadata entry; the header is corrupt"
        )
    if META_KEY in metadata:
        info = _loads(metadata[META_KEY], "trainledger header", where)
        if not isinstance(info, dict):
            raise CheckpointFormatError(f"{where}: trainledger header is not a JSON object")
        if not covered:
            _require_header_crc(info, where)
    entries: list[Entry] = []
    for name, spec in header.items():
        try:
            entries.append(_entry(name, spec))
        except (ValueError, TypeError) as exc:
            raise CheckpointFormatError(f"{where}: malformed tensor entry {name!r}: {exc}") from exc
    return entries, metadata, info


def _check_header_crc(head: bytes, where: str) -> bool:
    """Verify the header crc if the header holds one; whether it did. Found in the raw bytes,
    not the parsed JSON, so a flip that renames a key cannot hide the check."""
    slot = head.rfind(_HEAD_TOKEN)
    if slot < 0:
        return False
    slot += len(_HEAD_TOKEN)
    expected = head[slot : slot + 8].decode("ascii", "replace")
    computed = f"{_header_crc(head, slot):08x}"
    if computed != expected:
        raise CheckpointFormatError(
            f"{where}: header crc32c mismatch (expected {expected!r}, computed {computed}); "
            "the header is corrupt"
        )
    return True


def _require_header_crc(info: dict[str, Any], where: str) -> None:
    """A header without a crc must be one written before format 2 (or by another writer)."""
    version = info.get("format_version", 1)
    if "header_crc32c" in info or not isinstance(version, int) or version >= 2:
        raise CheckpointFormatError(
            f"{where}: format version {version!r} requires header_crc32c, which is missing; "
            "the header is corrupt"
        )


def _nbytes(entry: Entry, at_most: int) -> int | None:
    """The bytes ``entry``'s shape and dtype need, or None once past ``at_most``: a crafted
    shape of many huge dims never becomes a big integer."""
    if 0 in entry.shape:
        return 0
    n = DTYPE_SIZES[entry.dtype]
    for dim in entry.shape:
        n *= dim
        if n > at_most:
            return None
    return n


def validate_entries(entries: list[Entry], info: dict[str, Any], data_len: int, where: str) -> None:
    """Every entry fits its shape, and the tensors tile the data bytes exactly, in offset
    order, without a gap or an overlap: the ``safetensors`` library's own rule, so a file it
    refuses is never loaded here (and a crc covers exactly the tensors' bytes)."""
    for e in entries:
        if e.end < e.begin or e.end - e.begin != _nbytes(e, data_len) or e.end > data_len:
            raise CheckpointFormatError(
                f"{where}: tensor {e.name!r} offsets [{e.begin}, {e.end}) do not fit shape "
                f"{e.shape} {e.dtype} in {data_len} data bytes (truncated or corrupt file)"
            )
    expected_len = info.get("tensor_bytes")
    if expected_len is not None and expected_len != data_len:
        raise CheckpointFormatError(
            f"{where}: expected {expected_len} tensor bytes, found {data_len} (truncated?)"
        )
    cursor = 0
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.begin != cursor:
            found = "a gap before it" if e.begin > cursor else "an overlap with the tensor before"
            raise CheckpointFormatError(
                f"{where}: tensor {e.name!r} starts at byte {e.begin}, expected {cursor} "
                f"(found {found}; the safetensors format requires tensors that tile the data)"
            )
        cursor = e.end
    if cursor != data_len:
        raise CheckpointFormatError(
            f"{where}: tensors end at byte {cursor}, expected the data's {data_len} bytes "
            "(bytes no tensor covers; the safetensors format requires tensors that tile the data)"
        )


def verify_tensor_crc(info: dict[str, Any], crc: int, where: str) -> None:
    """Compare the crc32c of the tensor bytes with the one recorded at save time."""
    expected = info.get("crc32c")
    if expected is not None and f"{crc:08x}" != expected:
        raise CheckpointFormatError(
            f"{where}: crc32c mismatch (expected {expected!r}, computed {crc:08x}); "
            "the file is corrupt"
        )


# --- crc32c of concatenated chunks (zlib's crc32_combine, Castagnoli polynomial) -----------

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _multmodp(a: int, b: int) -> int:
    """a * b modulo the polynomial (bit-reflected)."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


_X2N = [1 << 30]  # x^(2^k) modulo the polynomial
for _ in range(31):
    _X2N.append(_multmodp(_X2N[-1], _X2N[-1]))


#: below this many bytes a tensor's bytes are summed twice (its own crc and the whole's), at
#: or above its own crc is combined into the whole (``crc32c_combine``: 3-6 us once its
#: length was seen, up to 40 us the first time; the crc of half a megabyte takes 25 us and,
#: unlike a combine, leaves the GIL to the writing thread): every digest costs a few percent
#: of its tensor's crc at most
COMBINE_FROM = 512 * 1024


def tensor_crc(
    pieces: Iterable[memoryview],
    nbytes: int,
    crc: int,
    each: list[int],
    write: Callable[[memoryview], Any] | None = None,
) -> int:
    """The whole crc ``crc`` continued over one tensor's ``pieces`` (each written first with
    ``write``), its own crc appended to ``each``."""
    one = 0
    small = nbytes < COMBINE_FROM
    for piece in pieces:
        one = _crc32c.crc32c(piece, one)  # releases the GIL for large buffers
        if small:
            crc = _crc32c.crc32c(piece, crc)
        if write is not None:
            write(piece)
    each.append(one)
    return crc if small else crc32c_combine(crc, one, nbytes)


def crc_of(tensors: Sequence[Iterable[memoryview]], sizes: Sequence[int]) -> tuple[int, list[int]]:
    """The crc32c of the tensors' bytes one after another, and of each (its digest), from one
    pass over the bytes."""
    crc, each = 0, list[int]()
    for pieces, nbytes in zip(tensors, sizes, strict=True):
        crc = tensor_crc(pieces, nbytes, crc, each)
    return crc, each


@functools.lru_cache(maxsize=1024)
def _shift(len2: int) -> int:
    """x^(8 * len2) modulo the polynomial: what carries a crc past ``len2`` bytes. Cached: a
    model's tensors (and a reader's chunks) come in a few sizes, and building it takes up to
    30 products where the combine itself is one (about 3 us instead of 12-40)."""
    p = 1 << 31  # x^0
    k = 3  # len2 bytes = len2 * 2^3 bits
    n = len2
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """crc32c(A + B) from crc32c(A), crc32c(B) and len(B): chunks checked in parallel."""
    return _multmodp(_shift(len2), crc1) ^ crc2
