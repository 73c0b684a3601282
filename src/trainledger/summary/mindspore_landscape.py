"""The loss landscapes MindSpore's ``SummaryLandscape`` writes into ``_MS`` summary files.

Only what a landscape needs is decoded, straight from the protobuf wire format (MindSpore's
``summary.proto``: ``Event.summary`` (5) -> ``Summary.value`` (1) -> ``Value.tag`` (1) /
``Value.loss_landscape`` (10) -> ``LossLandscape{landscape, loss_path, metadata,
convergence_point}`` with ``TensorProto{dims (1), data_type (2), float_data (3)}``), so this
does not depend on a full MindSpore schema. Records are framed as TensorBoard's.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from trainledger.storage import MS_SUFFIX, read_records, read_varint, run_files

__all__ = ["MS_SUFFIX", "list_ms_files", "read_ms_landscapes", "decode_loss_landscape"]

logger = logging.getLogger(__name__)

Fields = dict[int, list[Any]]


def _fields(data: bytes) -> Fields:
    """``{field number: [values]}``: ints for varint/fixed fields, bytes for length-delimited."""
    out: Fields = {}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field in a MindSpore summary record")
            value, pos = data[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} in a MindSpore summary")
        out.setdefault(number, []).append(value)
    return out


def _ints(values: list[Any]) -> list[int]:
    """A repeated integer field, packed (bytes of varints) or not (ints)."""
    out: list[int] = []
    for value in values:
        if isinstance(value, int):
            out.append(value)
            continue
        pos = 0
        while pos < len(value):
            number, pos = read_varint(value, pos)
            out.append(number)
    return out


def _tensor(data: bytes) -> np.ndarray:
    """A MindSpore ``TensorProto`` holding float32 ``float_data`` (how landscapes are written)."""
    fields = _fields(data)
    dims = _ints(fields.get(1, []))
    raw = b"".join(fields.get(3, []))  # packed runs and single fixed32 values alike
    values = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    return values.reshape(dims) if dims else values


def _point(data: bytes) -> dict[str, np.ndarray]:
    fields = _fields(data)
    return {
        k: _tensor(fields[n][0]) if n in fields else np.zeros(0) for n, k in enumerate("xyz", 1)
    }


def decode_loss_landscape(tag: str, data: bytes) -> dict[str, Any]:
    """A landscape dict (``summary.landscape``'s keys) from a ``LossLandscape`` message."""
    fields = _fields(data)
    grid = _point(fields[1][0])
    meta = _fields(fields[3][0]) if 3 in fields else {}
    decomposition = meta.get(1, [b""])[0].decode("utf-8")
    kind = "train" if decomposition == "PCA" else "result"
    path = intervals = None
    if 2 in fields:
        loss_path = _fields(fields[2][0])
        intervals = _ints(loss_path.get(1, []))
        if 2 in loss_path:
            points = _point(loss_path[2][0])
            path = {k: points[k].tolist() for k in "xyz"}
    if not intervals:  # a result landscape: its final step is only in the tag
        intervals = [int(n) for n in re.findall(r"-?\d+", tag)]
    convergence = None
    if 4 in fields:
        point = _point(fields[4][0])
        convergence = [float(point[k].ravel()[0]) for k in "xyz" if point[k].size]
    return {
        "tag": tag,
        "kind": kind,
        "decomposition": decomposition or ("PCA" if kind == "train" else "Random"),
        "intervals": intervals,
        "x": grid["x"].ravel(),
        "y": grid["y"].ravel(),
        "z": grid["z"].reshape(grid["y"].size, grid["x"].size),
        "path": path if kind == "train" else None,
        "convergence_point": convergence or None,
        "unit": meta.get(2, [b"step"])[0].decode("utf-8"),
        "step_per_epoch": _ints(meta.get(3, [1]))[0],
        "source": "mindspore",
    }


def list_ms_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """MindSpore summary files (``*summary*_MS``) directly in ``run_dir``, oldest first:
    regular files only (``storage.run_files``: no FIFO, no symlink out of the base)."""
    found = run_files(run_dir, lambda n: n.endswith(MS_SUFFIX) and "summary" in n)
    return [Path(e.path) for e in sorted(found, key=lambda e: e.name)]


def _values(record: bytes) -> Iterator[Fields]:
    event = _fields(record)
    for summary in event.get(5, []):
        for value in _fields(summary).get(1, []):
            yield _fields(value)


def read_ms_landscapes(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every landscape in the ``_MS`` files of ``run_dir``, in file and record order."""
    found = []
    for path in list_ms_files(run_dir):
        records, _ = read_records(path)  # a torn or corrupt record is skipped by the framing
        for record in records:
            try:
                for value in _values(record):
                    if 10 in value and 1 in value:
                        tag = value[1][0].decode("utf-8")
                        found.append(decode_loss_landscape(tag, value[10][0]))
            except (ValueError, IndexError, KeyError, UnicodeDecodeError) as exc:
                logger.warning(
                    "%s: a record that is not a valid MindSpore event skipped (%s)", path, exc
                )
    return found
