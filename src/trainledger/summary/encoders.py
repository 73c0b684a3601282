"""Pure encoders: Python/numpy/torch values -> TensorBoard ``Summary.Value`` messages.

Nothing here touches files or threads (docs/development.md, convention 6): each function
turns one value into one protobuf message, so encoders are tested on their own and the
writer only frames and writes bytes. torch is never imported; tensors are recognised by duck
typing (``detach``).
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainledger.summary.proto import summary_pb2 as pb

__all__ = [
    "FILE_VERSION",
    "session_start_event",
    "to_numpy",
    "scalar",
    "BucketCounts",
    "histogram",
    "make_histogram",
    "image",
    "to_hwc_uint8",
    "encode_png",
    "text",
    "tensor",
    "make_tensor_proto",
    "event",
    "file_version_event",
]

FILE_VERSION = "brain.Event:2"
TEXT_PLUGIN = "text"
DEFAULT_BINS = 30

_DTYPES: dict[str, pb.DataType] = {
    "float32": pb.DT_FLOAT,
    "float64": pb.DT_DOUBLE,
    "float16": pb.DT_HALF,
    "int8": pb.DT_INT8,
    "int16": pb.DT_INT16,
    "int32": pb.DT_INT32,
    "int64": pb.DT_INT64,
    "uint8": pb.DT_UINT8,
    "uint16": pb.DT_UINT16,
    "uint32": pb.DT_UINT32,
    "uint64": pb.DT_UINT64,
    "bool": pb.DT_BOOL,
    "complex64": pb.DT_COMPLEX64,
    "complex128": pb.DT_COMPLEX128,
}


def to_numpy(value: Any) -> np.ndarray:
    """A numpy copy of a number, array, list or torch tensor (any device, bfloat16 included)."""
    if hasattr(value, "detach") and hasattr(
        value, "cpu"
    ):  # a torch tensor, without importing torch
        t = value.detach().cpu()
        if str(getattr(t, "dtype", "")) == "torch.bfloat16":
            t = t.float()
        return np.array(t.numpy(), copy=True)
    if isinstance(value, np.ndarray):
        return value.copy()
    try:
        return np.asarray(value)
    except Exception as exc:  # e.g. ragged lists
        raise TypeError(
            f"expected a number, array or tensor, received: {type(value).__name__}"
        ) from exc


def scalar(tag: str, value: Any) -> pb.Summary.Value:
    """A ``simple_value`` scalar; arrays/tensors must hold exactly one element."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return pb.Summary.Value(tag=tag, simple_value=float(value))
    arr = to_numpy(value)
    if arr.size != 1:
        raise ValueError(
            f"scalar {tag!r} expected one element, received an array of shape {tuple(arr.shape)}"
        )
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"scalar {tag!r} expected a real number, received dtype {arr.dtype}")
    return pb.Summary.Value(tag=tag, simple_value=float(arr.reshape(()).item()))


@dataclass(frozen=True)
class BucketCounts:
    """A histogram already bucketed where its values live (``callbacks/tensor_buckets.py``
    counts a CUDA tensor on its device, so only these numbers reach the host).

    ``limits`` are the buckets' upper edges and ``counts`` their counts, as in
    ``HistogramProto``; ``num`` counts the finite values only.
    """

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    limits: tuple[float, ...]
    counts: tuple[float, ...]


def make_histogram(values: Any, bins: int = DEFAULT_BINS) -> pb.HistogramProto:
    """A ``HistogramProto`` with ``bins`` equal-width buckets between the finite min and max.

    TensorBoard re-buckets for display, so a few dozen even buckets keep files small and the
    shape faithful. Buckets are numpy's: ``[limit[i-1], limit[i])``, the last one closed; NaN
    and +-inf are left out (they have no place on an axis) and are not counted in ``num``.
    A constant input gets numpy's range, its value +-0.5. ``BucketCounts`` are written as
    they are (``bins`` was applied when they were counted).
    """
    if isinstance(values, BucketCounts):
        if values.num == 0:
            return _empty_histogram()
        return pb.HistogramProto(
            min=values.min,
            max=values.max,
            num=values.num,
            sum=values.sum,
            sum_squares=values.sum_squares,
            bucket_limit=values.limits,
            bucket=values.counts,
        )
    if not isinstance(bins, int) or isinstance(bins, bool) or bins <= 0:
        raise ValueError(f"histogram bins expected a positive int, received: {bins!r}")
    arr = to_numpy(values).astype(np.float64, copy=False).ravel()
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return _empty_histogram()
    counts, edges = np.histogram(arr, bins=bins)
    return pb.HistogramProto(
        min=float(arr.min()),
        max=float(arr.max()),
        num=float(arr.size),
        sum=float(arr.sum()),
        sum_squares=float(np.dot(arr, arr)),
        bucket_limit=edges[1:].tolist(),
        bucket=counts.astype(np.float64).tolist(),
    )


def _empty_histogram() -> pb.HistogramProto:
    """No finite value: one empty bucket at 0 (TensorBoard needs at least one)."""
    return pb.HistogramProto(
        min=0.0, max=0.0, num=0.0, sum=0.0, sum_squares=0.0, bucket_limit=[0.0], bucket=[0.0]
    )


def histogram(tag: str, values: Any, bins: int = DEFAULT_BINS) -> pb.Summary.Value:
    """A histogram summary of all elements of ``values``."""
    return pb.Summary.Value(tag=tag, histo=make_histogram(values, bins))


# --- images -----------------------------------------------------------------------------


def to_hwc_uint8(value: Any, dataformats: str | None = None) -> np.ndarray:
    """Normalise an image or batch to one ``HxWxC`` uint8 array (C in 1, 3, 4).

    Accepted layouts: ``HW``, ``CHW``, ``HWC``, ``NCHW``, ``NHWC``. Without ``dataformats`` a
    3-D array is CHW when its first axis is 1 or 3 (PyTorch's convention, also when ambiguous),
    else HWC when its last axis is 1, 3 or 4; 4-D arrays likewise (NCHW / NHWC). A batch
    becomes a grid.
    Floats are taken as [0, 1] (clipped); integers must already be in [0, 255].
    """
    arr = to_numpy(value)
    fmt = (dataformats or _guess_format(arr)).upper()
    if fmt not in ("HW", "CHW", "HWC", "NCHW", "NHWC") or len(fmt) != arr.ndim:
        raise ValueError(
            f"image expected HW, CHW, HWC, NCHW or NHWC data, received shape {tuple(arr.shape)}"
            f" with dataformats {fmt!r}"
        )
    if fmt == "HW":
        arr = arr[:, :, None]
    elif fmt == "CHW":
        arr = arr.transpose(1, 2, 0)
    elif fmt == "NCHW":
        arr = _grid(arr.transpose(0, 2, 3, 1))
    elif fmt == "NHWC":
        arr = _grid(arr)
    channels = arr.shape[2]
    if channels not in (1, 3, 4) or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"image expected 1, 3 or 4 channels and a non-empty picture, received HWC shape "
            f"{tuple(arr.shape)}"
        )
    return _to_uint8(arr)


def _guess_format(arr: np.ndarray) -> str:
    if arr.ndim == 2:
        return "HW"
    if arr.ndim == 3:
        return "CHW" if arr.shape[0] in (1, 3) or arr.shape[2] not in (1, 3, 4) else "HWC"
    if arr.ndim == 4:
        return "NCHW" if arr.shape[1] in (1, 3) or arr.shape[3] not in (1, 3, 4) else "NHWC"
    raise ValueError(f"image expected a 2-D, 3-D or 4-D array, received shape {tuple(arr.shape)}")


def _grid(batch: np.ndarray, pad: int = 2) -> np.ndarray:
    """Tile an NHWC batch into one picture, about square, with ``pad`` pixels between images."""
    n, h, w, c = batch.shape
    if n == 0:
        raise ValueError("image expected at least one picture in the batch, received 0")
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    canvas = np.zeros((rows * (h + pad) - pad, cols * (w + pad) - pad, c), dtype=batch.dtype)
    for i in range(n):
        r, col = divmod(i, cols)
        canvas[r * (h + pad) : r * (h + pad) + h, col * (w + pad) : col * (w + pad) + w] = batch[i]
    return canvas


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8) * 255
    if arr.dtype.kind == "f":
        clean = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=1.0, neginf=0.0)
        return (np.clip(clean, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if arr.dtype.kind in "iu":
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise ValueError(
                f"image with integer dtype {arr.dtype} expected values in [0, 255], received "
                f"[{arr.min()}, {arr.max()}]"
            )
        return arr.astype(np.uint8)
    raise TypeError(f"image expected a float, integer or bool array, received dtype {arr.dtype}")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(hwc: np.ndarray, level: int = 6) -> bytes:
    """PNG bytes of an ``HxWxC`` uint8 array (C: 1 gray, 3 RGB, 4 RGBA); no Pillow needed."""
    h, w, c = hwc.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    rows = np.empty((h, 1 + w * c), dtype=np.uint8)
    rows[:, 0] = 0  # filter type "None" for every scanline
    rows[:, 1:] = hwc.reshape(h, w * c)
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), level)),
            _png_chunk(b"IEND", b""),
        )
    )


def image(tag: str, value: Any, dataformats: str | None = None) -> pb.Summary.Value:
    """An image summary (PNG) of a picture or of a batch tiled into a grid."""
    hwc = to_hwc_uint8(value, dataformats)
    h, w, c = hwc.shape
    img = pb.Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=encode_png(hwc))
    return pb.Summary.Value(tag=tag, image=img)


# --- tensors and text -------------------------------------------------------------------


def make_tensor_proto(value: Any) -> pb.TensorProto:
    """A ``TensorProto`` holding ``value`` (numbers in little-endian ``tensor_content``)."""
    if isinstance(value, (str, bytes)):
        value = np.asarray(value, dtype=object)
    arr = to_numpy(value)
    shape = pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=int(d)) for d in arr.shape])
    if arr.dtype.kind in "OUS":
        strings = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in arr.ravel()]
        return pb.TensorProto(dtype=pb.DT_STRING, tensor_shape=shape, string_val=strings)
    dtype = _DTYPES.get(arr.dtype.name)
    if dtype is None:
        raise TypeError(
            f"tensor expected a numeric, bool or string array, received dtype {arr.dtype}"
        )
    content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return pb.TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=content)


def tensor(tag: str, value: Any) -> pb.Summary.Value:
    """A raw tensor summary (shown by TensorBoard's tensor-aware plugins and our reader)."""
    return pb.Summary.Value(tag=tag, tensor=make_tensor_proto(value))


def text(tag: str, value: str) -> pb.Summary.Value:
    """A text summary: a string tensor tagged with the text plugin, as TensorBoard expects."""
    if not isinstance(value, str):
        raise TypeError(f"text {tag!r} expected a str, received: {type(value).__name__}")
    meta = pb.SummaryMetadata(
        plugin_data=pb.SummaryMetadata.PluginData(
            plugin_name=TEXT_PLUGIN, content=pb.TextPluginData(version=0).SerializeToString()
        ),
        data_class=pb.DATA_CLASS_TENSOR,
    )
    proto = pb.TensorProto(
        dtype=pb.DT_STRING, tensor_shape=pb.TensorShapeProto(), string_val=[value.encode("utf-8")]
    )
    return pb.Summary.Value(tag=tag, metadata=meta, tensor=proto)


# --- events -----------------------------------------------------------------------------


def event(step: int, wall_time: float, values: list[pb.Summary.Value]) -> pb.Event:
    """One event carrying ``values`` for ``step``."""
    return pb.Event(wall_time=wall_time, step=step, summary=pb.Summary(value=values))


def file_version_event(wall_time: float) -> pb.Event:
    """The first event of every file: TensorBoard checks it to know the format version."""
    return pb.Event(wall_time=wall_time, step=0, file_version=FILE_VERSION)


def session_start_event(step: int, wall_time: float) -> pb.Event:
    """``SessionLog.START`` at ``step``: a writer resuming a run another process wrote, so
    TensorBoard's reader (and ``summary.series``) drops the earlier points at and after it."""
    return pb.Event(
        wall_time=wall_time, step=step, session_log=pb.SessionLog(status=pb.SessionLog.START)
    )
