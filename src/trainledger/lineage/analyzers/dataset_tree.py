"""What a dataset is built from, walked one way: the datasets it wraps (``Subset``,
``ConcatDataset``, any ``.dataset`` wrapper) and the paths it, or failing that its children,
exposes.

Why a module of its own: three readers walk the same tree, the dataset graph and path
(``dataset.py``) and the fingerprint (``fingerprint.py``); the walk lives below both so that
each can use it without the other, and they agree on what a child and a path are.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "PATH_ATTRS",
    "dataset_children",
    "dataset_paths",
    "is_dataset",
    "own_paths",
]

#: the attributes a dataset names its files or directory by
PATH_ATTRS: tuple[str, ...] = ("root", "data_dir", "path", "files", "dataset_files")
#: how deep any walk of a dataset (its children, its transforms) goes
MAX_DEPTH: int = 32


def is_dataset(obj: Any) -> bool:
    """Whether ``obj`` is a torch ``Dataset`` or ``IterableDataset`` (False without torch)."""
    data = _torch_data()
    return data is not None and isinstance(obj, (data.Dataset, data.IterableDataset))


def dataset_children(ds: Any) -> list[Any]:
    """Datasets this one is built from (Subset, ConcatDataset, generic ``.dataset`` wrappers)."""
    datasets = getattr(ds, "datasets", None)
    if isinstance(datasets, Sequence) and not isinstance(datasets, (str, bytes)):
        return [d for d in datasets if d is not None]
    inner = getattr(ds, "dataset", None)
    if inner is not None and inner is not ds and (is_dataset(inner) or hasattr(inner, "__len__")):
        return [inner]
    return []


def own_paths(ds: Any) -> list[str]:
    """The absolute paths this dataset itself names (the first of ``PATH_ATTRS`` it has)."""
    for attr in PATH_ATTRS:
        value = getattr(ds, attr, None)
        if isinstance(value, (str, os.PathLike)):
            text = os.fspath(value)
            if isinstance(text, str) and text:
                return [os.path.abspath(text)]
        elif isinstance(value, (list, tuple)) and value:
            if all(isinstance(v, (str, os.PathLike)) for v in value):
                return [os.path.abspath(os.fspath(v)) for v in value]  # type: ignore[arg-type]
    return []


def dataset_paths(ds: Any, depth: int = 0) -> list[str]:
    """Every path the dataset (or, failing that, its children) exposes, as absolute paths."""
    own = own_paths(ds)
    if own or depth > MAX_DEPTH:
        return own
    out: list[str] = []
    for child in dataset_children(ds):
        out.extend(dataset_paths(child, depth + 1))
    return out


def _torch_data() -> Any:
    try:
        import torch.utils.data as data  # lineage itself imports without torch
    except ImportError:  # pragma: no cover - torch is a dependency of the callbacks
        return None
    return data
