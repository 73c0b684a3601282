"""The dataset fingerprint: a stable hash that identifies the data a run trained on, of its
files (names, sizes, mtimes) or of its in-memory tensors (dtypes, shapes, bytes).

Why a module of its own: the fingerprint is a second question about a dataset, answered by
reading the files or the tensors, where ``dataset.py`` describes the dataset's shape (path,
size, graph) from its attributes; both walk the dataset the same way (``dataset_tree.py``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

from trainledger.lineage.analyzers.dataset_tree import MAX_DEPTH, dataset_children, dataset_paths

__all__ = ["dataset_fingerprint"]

_MAX_FILES = 100_000
_MAX_TENSOR_BYTES = 256 * 1024 * 1024


def dataset_fingerprint(ds: Any, paths: list[str] | None = None) -> str | None:
    """A stable hash identifying the data: of file names, sizes and mtimes for file-backed
    datasets; of the tensors' dtypes, shapes and bytes for in-memory tensor datasets."""
    paths = dataset_paths(ds) if paths is None else paths
    if paths:
        return _files_fingerprint(paths)
    return _tensor_fingerprint(ds)


def _files_fingerprint(paths: list[str]) -> str | None:
    h = hashlib.sha256()
    count = 0
    for path in sorted(set(paths)):
        for rel, st in _walk(path):
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
            count += 1
            if count >= _MAX_FILES:
                h.update(b"[truncated]")
                return "files:" + h.hexdigest()[:32]
    return "files:" + h.hexdigest()[:32] if count else None


def _walk(path: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        if os.path.isfile(path):
            yield os.path.basename(path), os.stat(path)
            return
    except OSError:
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            yield os.path.relpath(full, path), st


def _tensor_fingerprint(ds: Any) -> str | None:
    tensors = _find_tensors(ds, 0)
    if not tensors:
        return None
    total = 0
    h = hashlib.sha256()
    for t in tensors:
        try:
            flat = t.detach().cpu().contiguous().reshape(-1)
            total += flat.numel() * flat.element_size()
            if total > _MAX_TENSOR_BYTES:
                return None
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(memoryview(flat.view(_uint8()).numpy()))
        except (AttributeError, RuntimeError, TypeError, ValueError):
            return None
    return "tensors:" + h.hexdigest()[:32]


def _find_tensors(ds: Any, depth: int) -> list[Any]:
    tensors = getattr(ds, "tensors", None)
    if (
        isinstance(tensors, (tuple, list))
        and tensors
        and all(hasattr(t, "detach") for t in tensors)
    ):
        indices = getattr(ds, "indices", None)
        return list(tensors) if indices is None else []
    if depth > MAX_DEPTH:
        return []
    out: list[Any] = []
    children = dataset_children(ds)
    if getattr(ds, "indices", None) is not None and children:  # Subset: hash which rows too
        return _subset_tensors(ds, children[0], depth)
    for child in children:
        found = _find_tensors(child, depth + 1)
        if not found:
            return []
        out.extend(found)
    return out


def _subset_tensors(subset: Any, child: Any, depth: int) -> list[Any]:
    base = _find_tensors(child, depth + 1)
    if not base:
        return []
    import torch  # torch objects only: lineage itself imports without torch

    try:
        idx = torch.as_tensor(list(subset.indices), dtype=torch.long)
    except (TypeError, ValueError):
        return []
    return [idx, *base]


def _uint8() -> Any:
    import torch  # torch objects only: lineage itself imports without torch

    return torch.uint8
