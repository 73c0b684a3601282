"""Exporting summary tensors next to the event files (``export_options``).

MindSpore's ``export_options={"tensor_format": "npy"}`` writes every tensor summary to
``<log_dir>/export_<ts>/tensor/<quoted tag>_<step>.npy`` as well, so a tensor can be opened with
numpy alone. Files are written atomically and without pickle (``allow_pickle=False``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from trainledger.storage import atomic_write_bytes

__all__ = ["EXPORT_FORMATS", "process_export_options", "tensor_export_path", "export_tensor"]

EXPORT_FORMATS: dict[str, tuple[str | None, ...]] = {"tensor_format": ("npy", None)}


def process_export_options(export_options: Any) -> dict[str, str] | None:
    """Validate ``export_options``; return only the options that export something, or None."""
    if export_options is None:
        return None
    if not isinstance(export_options, dict):
        raise TypeError(
            f"export_options expected a dict or None, received: {type(export_options).__name__}"
        )
    result: dict[str, str] = {}
    for key, value in export_options.items():
        if key not in EXPORT_FORMATS:
            raise ValueError(
                f"export_options key {key!r} is not supported; expected one of "
                f"{sorted(EXPORT_FORMATS)}"
            )
        if value is not None and not isinstance(value, str):
            raise TypeError(
                f"export_options[{key!r}] expected a str or None, received: {type(value).__name__}"
            )
        if value not in EXPORT_FORMATS[key]:
            raise ValueError(
                f"export_options[{key!r}] expected one of {list(EXPORT_FORMATS[key])}, "
                f"received: {value!r}"
            )
        if value is not None:
            result[key] = value
    return result or None


def tensor_export_path(export_dir: str | os.PathLike[str], tag: str, step: int) -> Path:
    """Where the tensor ``tag`` of ``step`` goes; the tag is URL-quoted so '/' stays in the name."""
    return Path(export_dir) / "tensor" / f"{quote(tag, safe='')}_{step}.npy"


def export_tensor(
    export_dir: str | os.PathLike[str], tag: str, step: int, value: np.ndarray
) -> Path:
    """Write ``value`` as an .npy file (atomically); returns its path."""
    path = tensor_export_path(export_dir, tag, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.asarray(value)
    if arr.dtype == object:
        arr = arr.astype(str)
    atomic_write_bytes(path, lambda fh: np.save(fh, arr, allow_pickle=False))
    return path
