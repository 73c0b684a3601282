"""TFRecord framing shared by summary and lineage files.

A record is ``uint64 length | uint32 masked_crc32c(length) | payload | uint32
masked_crc32c(payload)``, little-endian. This module only frames bytes: building payloads and
writing files live elsewhere (docs/development.md, convention 6).

The reader is built for files that are still being written and for files that were damaged:
it stops cleanly at a truncated tail (and remembers where, so the next read resumes there),
and it skips a record whose checksum fails, counting it, then resynchronises on the next valid
header so that intact records after the damage are still returned.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import crc32c as _crc32c

if TYPE_CHECKING:  # (numpy is imported where used: reading an intact file needs none, and a
    # process that only reads lineage, a parse process of the index, starts 50 ms sooner)
    import numpy as np

__all__ = [
    "masked_crc32c",
    "frame",
    "frame_equal_length",
    "masked_row_crcs",
    "RecordReader",
    "read_records",
    "read_varint",
    "HEADER_SIZE",
    "FOOTER_SIZE",
    "MAX_RECORD_BYTES",
]

_MASK_DELTA = 0xA282EAD8
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_HEADER = struct.Struct("<QI")
HEADER_SIZE = 12
FOOTER_SIZE = 4
# A length above this is treated as damage rather than a huge record still being written.
MAX_RECORD_BYTES = 1 << 31

_crc = _crc32c.crc32c


def masked_crc32c(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC32C, so a CRC of data holding CRCs is not itself a valid CRC."""
    crc = _crc(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One framed record holding ``payload``."""
    length = _U64.pack(len(payload))
    return b"".join(
        (length, _U32.pack(masked_crc32c(length)), payload, _U32.pack(masked_crc32c(payload)))
    )


def frame_equal_length(payloads: np.ndarray) -> bytes:
    """The framed records of ``n`` payloads of the same length ``L`` (a C-contiguous
    ``(n, L)`` uint8 array), concatenated: ``b"".join(frame(p) for p in rows)``.

    Rows of scalars differ only in a few bytes and share one length, so the header (and its
    CRC) is computed once, the payload CRCs from the first row's (``_row_crcs``), and the
    records are assembled in one array.
    """
    import numpy as np

    n, length = payloads.shape
    if n == 0:
        return b""
    out = np.empty((n, HEADER_SIZE + length + FOOTER_SIZE), np.uint8)
    header = _U64.pack(length)
    out[:, :8] = np.frombuffer(header, np.uint8)
    out[:, 8:HEADER_SIZE] = np.frombuffer(_U32.pack(masked_crc32c(header)), np.uint8)
    out[:, HEADER_SIZE : HEADER_SIZE + length] = payloads
    masked = masked_row_crcs(payloads)
    out[:, HEADER_SIZE + length :] = masked.astype("<u4").view(np.uint8).reshape(n, 4)
    return out.tobytes()


def masked_row_crcs(payloads: np.ndarray) -> np.ndarray:
    """The masked crc32c of each row of an ``(n, L)`` uint8 array (uint32): the footer each
    row's record has, so a reader checks a run of records without framing them again."""
    import numpy as np

    crcs = _row_crcs(payloads)
    return ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + np.uint32(_MASK_DELTA)


def _row_crcs(payloads: np.ndarray) -> np.ndarray:
    """crc32c of each row of an ``(n, L)`` uint8 array.

    CRC32C is affine: for equal-length messages ``crc(a ^ d) = crc(a) ^ lin(d)``, with
    ``lin`` linear, so ``lin(d)`` is the XOR of one table lookup per nonzero byte of ``d``.
    Rows of scalar events differ from the first row in a few columns (step, time, values),
    so a batch costs one C call and a handful of numpy operations (a fixed number: this runs
    on the writer thread between training steps, where each call is slow) instead of one C
    call per row. Rows that differ in many columns are checksummed one by one.
    """
    import numpy as np

    n, length = payloads.shape
    if n <= _LINEAR_MIN_ROWS:
        return _each_row_crc(payloads)
    first = payloads[0]
    varying = np.flatnonzero((payloads != first).any(axis=0))
    if len(varying) > _LINEAR_MAX_COLUMNS:
        return _each_row_crc(payloads)
    crc = np.uint32(_crc(first.tobytes()))
    if not len(varying):  # all rows alike
        return np.full(n, crc, np.uint32)
    tables = _lin_tables(length, varying)
    lookups = tables[np.arange(len(varying)), payloads[:, varying] ^ first[varying]]
    return np.bitwise_xor.reduce(lookups, axis=1) ^ crc


def _each_row_crc(payloads: np.ndarray) -> np.ndarray:
    import numpy as np

    n, length = payloads.shape
    view = memoryview(np.ascontiguousarray(payloads).reshape(-1).data)
    crcs = (_crc(view[i : i + length]) for i in range(0, n * length, length))
    return np.fromiter(crcs, np.uint32, n)


_LINEAR_MIN_ROWS = 16  # below this, one C call per row is cheaper
_LINEAR_MAX_COLUMNS = 32  # scalar rows vary in ~20 columns (time, step, two values)
_LIN_TABLES: dict[int, np.ndarray] = {}  # trailing bytes -> lin() of each byte value
_LIN_STACKS: dict[tuple[int, bytes], np.ndarray] = {}  # (L, varying columns) -> (k, 256)


def _lin_tables(length: int, varying: np.ndarray) -> np.ndarray:
    """The ``lin`` tables of the ``varying`` columns of ``length``-byte rows, stacked."""
    import numpy as np

    key = (length, varying.tobytes())
    stack = _LIN_STACKS.get(key)
    if stack is None:
        stack = np.stack([_lin_table(length - 1 - column) for column in varying.tolist()])
        if len(_LIN_STACKS) < 256:  # bounded (<= 8 MB): scalar batches repeat a few layouts
            _LIN_STACKS[key] = stack
    return stack


def _lin_table(trailing: int) -> np.ndarray:
    """``lin`` of a message whose only nonzero byte is followed by ``trailing`` zero bytes,
    for each of the 256 byte values (bytes before it do not matter: ``lin`` of zeros is 0)."""
    import numpy as np

    table = _LIN_TABLES.get(trailing)
    if table is None:
        zeros = bytes(trailing)
        offset = _crc(bytes(trailing + 1))
        table = np.array([_crc(bytes((b,)) + zeros) ^ offset for b in range(256)], np.uint32)
        if len(_LIN_TABLES) < 4096:  # bounded: one per column position seen
            _LIN_TABLES[trailing] = table
    return table


# crc32c of an 8-byte little-endian length whose high four bytes are zero, by byte: the crc
# of the length ``b0 b1 b2 b3 0 0 0 0`` is t0[b0] ^ t1[b1] ^ t2[b2] ^ t3[b3] (the crc of eight
# zero bytes folded into t0)
@functools.cache
def _length_tables() -> tuple[np.ndarray, ...]:
    import numpy as np

    return tuple(_lin_table(7 - k) ^ np.uint32(_crc(bytes(8)) if k == 0 else 0) for k in range(4))


@dataclass
class RecordReader:
    """Reads the records of one file incrementally: each ``read()`` returns only new records.

    ``offset`` is the byte position after the last complete record consumed; ``corrupt`` counts
    records skipped because a checksum failed. A truncated tail is not an error: it is left for
    the next ``read()``, when the writer may have finished it.
    """

    path: str | os.PathLike[str]
    offset: int = 0
    corrupt: int = 0

    def read(self, limit: int | None = None) -> list[bytes]:
        """Payloads of the complete records added since the last call; ``limit``: read at
        most that many bytes (a record cut by it is left for a later call, like a truncated
        tail), for readers that need only a file's first records."""
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < self.offset:  # the file was replaced or truncated: start over
                    self.offset = 0
                if size == self.offset:
                    return []
                fh.seek(self.offset)
                left = size - self.offset
                data = fh.read(left if limit is None else min(limit, left))
        except FileNotFoundError:
            return []
        payloads, consumed, corrupt = _parse(data)
        self.offset += consumed
        self.corrupt += corrupt
        return payloads

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.read())


def read_records(path: str | os.PathLike[str]) -> tuple[list[bytes], int]:
    """All intact payloads of a file and the number of corrupt records skipped."""
    reader = RecordReader(path)
    payloads = reader.read()
    return payloads, reader.corrupt


def _parse(data: bytes) -> tuple[list[bytes], int, int]:
    """Split ``data`` into payloads; returns (payloads, bytes consumed, corrupt count)."""
    view = memoryview(data)
    end = len(data)
    pos = 0
    out: list[bytes] = []
    corrupt = 0
    unpack_header = _HEADER.unpack_from
    unpack_u32 = _U32.unpack_from
    crc = _crc  # the mask is inlined below: this loop runs once per record of every read
    while end - pos >= HEADER_SIZE:
        length, length_crc = unpack_header(data, pos)
        c = crc(view[pos : pos + 8])
        if length_crc != ((((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF) or (
            length > MAX_RECORD_BYTES
        ):
            corrupt += 1
            nxt = _resync(data, view, pos + 1)
            if nxt < 0:
                # No valid header follows: everything left is damage, unless it is a header
                # still being written at the very end of the file.
                return out, (end if end - pos > HEADER_SIZE + FOOTER_SIZE else pos), corrupt
            pos = nxt
            continue
        body = pos + HEADER_SIZE
        stop = body + length
        if stop + FOOTER_SIZE > end:
            break  # truncated tail: resume here on the next read
        payload = data[body:stop]
        c = crc(payload)
        if unpack_u32(data, stop)[0] != ((((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF):
            corrupt += 1
        else:
            out.append(payload)
        pos = stop + FOOTER_SIZE
    return out, pos, corrupt


def _resync(data: bytes, view: memoryview, start: int) -> int:
    """Position of the next plausible record header at or after ``start``, or -1.

    A plausible header: a length <= ``MAX_RECORD_BYTES`` followed by its masked crc32c. The
    positions are scanned with numpy in blocks (growing from 4 KiB, so a header just after a
    small damage is found at once), as four interleaved ``uint32`` views (``_first_header``),
    cheap tests first: the length's four high bytes are zero (rare in garbage); a window of
    twelve zero bytes is never a header (the masked crc of eight zero bytes is not zero); the
    positions left get their crc from four 256-entry tables (crc32c is affine). Same answer
    as trying every position in turn.
    """
    import numpy as np

    del view  # kept in the signature: the simple per-position version needed it
    last = len(data) - HEADER_SIZE  # the last position a header fits at
    arr = np.frombuffer(data, np.uint8)
    pos, block = start, _RESYNC_FIRST_BLOCK
    while pos <= last:
        stop = min(last + 1, pos + block)
        hit = _first_header(arr, pos, stop)
        if hit >= 0:
            return hit
        pos, block = stop, min(block * 2, _RESYNC_MAX_BLOCK)
    return -1


_RESYNC_FIRST_BLOCK = 4 << 10
_RESYNC_MAX_BLOCK = 1 << 20
# masked_crc32c(bytes(8)) is not 0 (tests/storage/test_resync.py): twelve zero bytes are
# never a header, which makes runs of zeros skippable


def _first_header(arr: np.ndarray, lo: int, hi: int) -> int:
    """The first header position in ``[lo, hi)`` (``arr`` holds 12 bytes past each), or -1.

    The positions are taken four at a time, one alignment after the other: for alignment
    ``a`` the little-endian words at ``lo + a + 4j`` are one contiguous ``uint32`` view, so the
    length, its high half and the stored crc of every position are plain slices, not gathers.
    """
    import numpy as np

    n = hi - lo
    window = arr[lo : hi + HEADER_SIZE - 1]
    tables = _length_tables()
    best = -1
    for a in range(4):
        m = (n - a + 3) // 4  # positions lo + a + 4j, j < m
        if m <= 0 or (best >= 0 and best <= a):
            continue
        words = window[a : a + 4 * (m + 2)].view("<u4")
        length, high, stored = words[:m], words[1 : m + 1], words[2 : m + 2]
        plausible = high == 0  # rare in garbage: most blocks stop here
        if not plausible.any():
            continue
        plausible &= length <= MAX_RECORD_BYTES
        plausible &= (length | stored) != 0  # twelve zero bytes: never a header (see above)
        cand = np.flatnonzero(plausible)
        if not len(cand):
            continue
        lc = length[cand]
        crc = tables[0][lc & 0xFF] ^ tables[1][(lc >> 8) & 0xFF]
        crc ^= tables[2][(lc >> 16) & 0xFF] ^ tables[3][lc >> 24]
        masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)
        match = np.flatnonzero(masked == stored[cand])
        if len(match):
            pos = a + 4 * int(cand[match[0]])
            best = pos if best < 0 else min(best, pos)
    return -1 if best < 0 else lo + best


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the protobuf varint at ``pos``: the payloads of both
    file kinds are protobuf, and readers that skim them decode tags and lengths by hand.
    ``ValueError`` for a truncated or over-long varint."""
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
