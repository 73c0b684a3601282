"""What the readers return for images, histograms and tensors, in one shape for both formats.

TensorBoard event files (``*tfevents*``, which trainledger writes) and MindSpore summary files
(``*_MS``) store these kinds differently; the readers turn both into the small frozen records
below, so views and converters never look at either schema. Decoding helpers for the
TensorBoard side live here too; the MindSpore side is in ``summary.mindspore``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from trainledger.summary.proto import summary_pb2 as pb

__all__ = [
    "TB_NUMPY_DTYPES",
    "HistogramEvent",
    "ImageEvent",
    "TensorEvent",
    "decode_png",
    "tb_histogram",
    "tb_tensor",
]


@dataclass(frozen=True)
class ImageEvent:
    """One image of a tag at a step: the encoded bytes as written (PNG, usually) and its size.

    ``array()`` decodes it to ``height x width x channels`` uint8 (channels = ``colorspace``:
    1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), or None when the bytes are not a PNG we can decode.
    """

    step: int
    wall_time: float
    height: int
    width: int
    colorspace: int
    encoded: bytes = field(repr=False)

    def array(self) -> np.ndarray | None:
        return decode_png(self.encoded)


@dataclass(frozen=True)
class HistogramEvent:
    """One histogram of a tag at a step, as buckets from ``lefts[i]`` to ``rights[i]`` with
    ``counts[i]`` values each (float64 arrays of equal length; MindSpore's buckets include their
    left edge, TensorBoard's their right one), plus the statistics the file recorded (``count``
    values in ``[min, max]`` summing to ``sum``; NaN where the format has none)."""

    step: int
    wall_time: float
    lefts: np.ndarray = field(repr=False)
    rights: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)
    min: float
    max: float
    count: float
    sum: float
    sum_squares: float = float("nan")


@dataclass(frozen=True)
class TensorEvent:
    """One tensor of a tag at a step, as the numpy array written (its dtype and shape)."""

    step: int
    wall_time: float
    value: np.ndarray = field(repr=False)


# --- TensorBoard schema ---------------------------------------------------------------------

#: TensorBoard ``DataType`` -> little-endian numpy dtype of ``tensor_content``.
TB_NUMPY_DTYPES = {
    pb.DT_FLOAT: "<f4",
    pb.DT_DOUBLE: "<f8",
    pb.DT_HALF: "<f2",
    pb.DT_INT8: "<i1",
    pb.DT_INT16: "<i2",
    pb.DT_INT32: "<i4",
    pb.DT_INT64: "<i8",
    pb.DT_UINT8: "<u1",
    pb.DT_UINT16: "<u2",
    pb.DT_UINT32: "<u4",
    pb.DT_UINT64: "<u8",
    pb.DT_BOOL: "?",
}


def tb_histogram(step: int, wall_time: float, histo: pb.HistogramProto) -> HistogramEvent:
    """A TensorBoard ``HistogramProto``: bucket i spans (limit[i-1], limit[i]], the first from
    ``min``."""
    rights = np.asarray(histo.bucket_limit, dtype=np.float64)
    counts = np.asarray(histo.bucket, dtype=np.float64)
    n = min(rights.size, counts.size)
    rights, counts = rights[:n], counts[:n]
    lefts = np.concatenate(([histo.min], rights[:-1])) if n else rights.copy()
    return HistogramEvent(
        step, wall_time, lefts, rights, counts, histo.min, histo.max, histo.num, histo.sum,
        histo.sum_squares,
    )  # fmt: skip


def tb_tensor(tensor: pb.TensorProto) -> np.ndarray | None:
    """The array of a TensorBoard ``TensorProto`` (content bytes or typed value lists), or None
    for a dtype or layout we do not decode (strings give an object array of bytes)."""
    shape = tuple(int(d.size) for d in tensor.tensor_shape.dim)
    if tensor.dtype == pb.DT_STRING:
        return np.array(list(tensor.string_val), dtype=object).reshape(shape or (-1,))
    dtype = TB_NUMPY_DTYPES.get(tensor.dtype)
    if dtype is None:
        return None
    if tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=dtype)
    else:
        values = (
            tensor.float_val or tensor.double_val or tensor.int_val or tensor.int64_val
            or tensor.bool_val or tensor.uint32_val or tensor.uint64_val or tensor.half_val
        )  # fmt: skip
        if tensor.dtype == pb.DT_HALF and tensor.half_val:
            arr = np.asarray(tensor.half_val, dtype=np.uint16).view(np.float16)
        else:
            arr = np.asarray(list(values), dtype=dtype)
    size = int(np.prod(shape)) if shape else 1
    if arr.size == 1 and size > 1:  # a single value fills the whole tensor
        arr = np.full(size, arr[0], dtype=arr.dtype)
    if arr.size != size:
        return None
    return arr.reshape(shape)


# --- PNG ------------------------------------------------------------------------------------

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type -> channels


def decode_png(data: bytes) -> np.ndarray | None:
    """``H x W x C`` uint8 pixels of an 8-bit, non-interlaced gray/RGB(A) PNG (what MindSpore,
    TensorBoard and ``encoders.encode_png`` write); None for anything else or damaged bytes.
    No Pillow needed."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    try:
        pos, idat, header = 8, [], None
        while pos + 8 <= len(data):
            length, kind = struct.unpack(">I4s", data[pos : pos + 8])
            body = data[pos + 8 : pos + 8 + length]
            pos += 12 + length
            if kind == b"IHDR":
                header = struct.unpack(">IIBBBBB", body)
            elif kind == b"IDAT":
                idat.append(body)
            elif kind == b"IEND":
                break
        if header is None:
            return None
        width, height, depth, color, _, _, interlace = header
        if depth != 8 or interlace or color not in _CHANNELS:
            return None
        channels = _CHANNELS[color]
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
        stride = width * channels
        rows = raw[: height * (stride + 1)].reshape(height, stride + 1)
        return _unfilter(rows, channels).reshape(height, width, channels)
    except (zlib.error, struct.error, ValueError):
        return None


def _unfilter(rows: np.ndarray, bpp: int) -> np.ndarray:
    """Undo PNG's per-row filters (None, Sub, Up, Average, Paeth)."""
    height, stride = rows.shape[0], rows.shape[1] - 1
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        elif kind == 1:  # Sub: each byte adds the one bpp to its left, channel by channel
            cur = line.copy()
            for c in range(bpp):
                cur[c::bpp] = np.cumsum(line[c::bpp]) & 0xFF
        elif kind in (3, 4):
            cur = line.copy()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                if kind == 3:
                    cur[i] = (line[i] + ((a + b) >> 1)) & 0xFF
                    continue
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb_, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb_ and pa <= pc else (b if pb_ <= pc else c)
                cur[i] = (line[i] + pred) & 0xFF
        else:
            raise ValueError(f"unknown PNG filter {kind}")
        out[y] = cur
        prev = cur
    return out
