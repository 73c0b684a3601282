"""MindSpore's own summary files (``events.out.events.summary.<ts>.<rank>.<host>_MS``).

MindSpore's ``SummaryRecord`` frames its events exactly as TensorBoard does (length, masked
CRC32C, payload, CRC), so ``storage.RecordReader`` splits them, but the payload is MindSpore's
``Event`` (``proto/mindspore_summary.proto``): scalars are ``scalar_value``, images keep their
PNG bytes, histograms are ``(left, width, count)`` buckets, tensors are anf_ir ``TensorProto``s
and the graph is an anf_ir ``GraphProto``. This module turns those values into the reader's
records (``summary.media``); ``summary.reader`` decides which files to read.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from trainledger.storage import MS_SUFFIX, file_timestamp, is_mindspore_summary_name, run_files
from trainledger.summary.media import HistogramEvent, ImageEvent, TensorEvent
from trainledger.summary.proto import mindspore_summary_pb2 as ms

__all__ = [
    "MS_SUFFIX",
    "is_mindspore_summary_name",
    "list_mindspore_files",
    "ms_histogram",
    "ms_image",
    "ms_tensor",
    "ms_tensor_array",
]


_DTYPES: dict[int, str] = {
    ms.DT_BOOL: "?",
    ms.DT_INT8: "<i1",
    ms.DT_INT16: "<i2",
    ms.DT_INT32: "<i4",
    ms.DT_INT64: "<i8",
    ms.DT_UINT8: "<u1",
    ms.DT_UINT16: "<u2",
    ms.DT_UINT32: "<u4",
    ms.DT_UINT64: "<u8",
    ms.DT_FLOAT16: "<f2",
    ms.DT_FLOAT32: "<f4",
    ms.DT_FLOAT64: "<f8",
}


def list_mindspore_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """The ``_MS`` files directly in ``run_dir`` in writing order (timestamp, then name).

    Symlinks are ignored (a run directory's files are its own; a link may point anywhere).
    """
    files = run_files(run_dir, is_mindspore_summary_name)
    return [Path(e.path) for e in sorted(files, key=lambda e: (file_timestamp(e.name), e.name))]


def ms_tensor_array(tensor: ms.TensorProto) -> np.ndarray | None:
    """The array of a MindSpore ``TensorProto`` (``raw_data`` bytes or typed lists), or None
    when its dtype or size does not fit its dims."""
    dims = tuple(int(d) for d in tensor.dims)
    dtype = _DTYPES.get(tensor.data_type)
    if tensor.raw_data:
        if dtype is None:
            return None
        arr = np.frombuffer(tensor.raw_data, dtype=dtype)
    elif tensor.float_data:
        arr = np.asarray(tensor.float_data, dtype=np.float32)
    elif tensor.double_data:
        arr = np.asarray(tensor.double_data, dtype=np.float64)
    elif tensor.int32_data:
        arr = np.asarray(tensor.int32_data, dtype=np.int32)
    elif tensor.int64_data:
        arr = np.asarray(tensor.int64_data, dtype=np.int64)
    elif tensor.uint64_data:
        arr = np.asarray(tensor.uint64_data, dtype=np.uint64)
    else:
        arr = np.zeros(0, dtype=dtype or np.float32)
    size = int(np.prod(dims)) if dims else 1
    if arr.size != size:
        return None
    return arr.reshape(dims)


def ms_tensor(step: int, wall_time: float, tensor: ms.TensorProto) -> TensorEvent | None:
    arr = ms_tensor_array(tensor)
    return None if arr is None else TensorEvent(step, wall_time, arr)


def ms_image(step: int, wall_time: float, image: ms.Summary.Image) -> ImageEvent:
    return ImageEvent(
        step, wall_time, image.height, image.width, image.colorspace, image.encoded_image
    )


def ms_histogram(step: int, wall_time: float, hist: ms.Summary.Histogram) -> HistogramEvent:
    """Buckets sorted by their left edge (MindInsight sorts them too); NaN and infinite values
    are counted by MindSpore outside the buckets and are not in ``counts``."""
    buckets = sorted(hist.buckets, key=lambda b: b.left)
    lefts = np.fromiter((b.left for b in buckets), dtype=np.float64, count=len(buckets))
    widths = np.fromiter((b.width for b in buckets), dtype=np.float64, count=len(buckets))
    counts = np.fromiter((b.count for b in buckets), dtype=np.float64, count=len(buckets))
    count = float(hist.count) if hist.HasField("count") else float(counts.sum())
    return HistogramEvent(
        step, wall_time, lefts, lefts + widths, counts, hist.min, hist.max, count, hist.sum
    )
