"""What a training/validation dataset is: path, size in samples, batch size, graph, fingerprint.

Walks what PyTorch users pass to ``Model.train``: a ``DataLoader`` (its dataset, batch size,
sampler, drop_last, workers), ``Subset``, ``ConcatDataset``, ``TensorDataset``, any wrapper that
exposes ``.dataset``, and any dataset exposing ``root``, ``data_dir``, ``path``, ``files`` or
``dataset_files``. The path is the dataset's directory (a file path reports its directory, as
MindInsight documents ``train_dataset_path``); several paths report their common directory.

The graph mirrors MindSpore's dataset graph (a tree of operations with their parameters):
loader -> (sampler) -> dataset -> children, with the dataset's transforms as ``operations``.
The walk of a dataset's children and paths is ``dataset_tree.py``'s, the fingerprint
``fingerprint.py``'s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from trainledger.lineage.analyzers.dataset_tree import (
    MAX_DEPTH,
    PATH_ATTRS,
    dataset_children,
    dataset_paths,
    is_dataset,
    own_paths,
)
from trainledger.lineage.analyzers.fingerprint import dataset_fingerprint

__all__ = ["DatasetInfo", "analyze_dataset"]

_TRANSFORM_ATTRS = ("transform", "target_transform", "transforms")
_MAX_PARAMS = 32
_MAX_STR = 256


@dataclass
class DatasetInfo:
    """Plain facts about a dataset; None where unknown."""

    path: str | None = None
    size: int | None = None
    batch_size: int | None = None
    graph: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None


def analyze_dataset(obj: Any) -> DatasetInfo:
    """Analyze a DataLoader, a Dataset, or any sized iterable; never raises for odd objects."""
    if obj is None:
        return DatasetInfo()
    dataset = _loader_dataset(obj)
    if dataset is not None:
        graph = _loader_node(obj, dataset)
        size = _loader_size(obj, dataset)
        batch = _loader_batch_size(obj)
    else:
        dataset = obj
        graph = _dataset_node(obj, 0)
        size = _len(obj)
        batch = _int_attr(obj, "batch_size")
        counted = _count_batches(obj)
        if counted is not None:  # a list of batches: samples, not batches
            size, batch = counted
    paths = dataset_paths(dataset)
    return DatasetInfo(
        path=_common_dir(paths),
        size=size,
        batch_size=batch,
        graph=graph,
        fingerprint=dataset_fingerprint(dataset, paths),
    )


# ---- loader ------------------------------------------------------------------------------------


def _loader_dataset(obj: Any) -> Any | None:
    """The dataset behind a DataLoader (or a DataLoader look-alike), else None."""
    if is_dataset(obj):
        return None
    if hasattr(obj, "dataset") and (hasattr(obj, "batch_size") or hasattr(obj, "batch_sampler")):
        return obj.dataset
    return None


def _loader_node(loader: Any, dataset: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"op_type": type(loader).__name__, "op_module": type(loader).__module__}
    for name in ("batch_size", "drop_last", "num_workers", "pin_memory", "prefetch_factor"):
        value = getattr(loader, name, None)
        if _scalar(value) or value is None and name == "batch_size":
            node[name] = value
    if node.get("batch_size") is None:
        node["batch_size"] = _loader_batch_size(loader)
    sampler = getattr(loader, "sampler", None)
    if sampler is not None:
        node["sampler"] = _sampler_node(sampler)
        node["shuffle"] = type(sampler).__name__ in (
            "RandomSampler",
            "SubsetRandomSampler",
        ) or bool(getattr(sampler, "shuffle", False))
    batch_sampler = getattr(loader, "batch_sampler", None)
    if batch_sampler is not None and type(batch_sampler).__name__ != "BatchSampler":
        node["batch_sampler"] = type(batch_sampler).__name__
    node["children"] = [_dataset_node(dataset, 1)]
    return node


def _loader_batch_size(loader: Any) -> int | None:
    size = _int_attr(loader, "batch_size")
    if size is None:
        size = _int_attr(getattr(loader, "batch_sampler", None), "batch_size")
    return size


def _loader_size(loader: Any, dataset: Any) -> int | None:
    """Samples one pass draws: the sampler's length, except a DistributedSampler (per rank)
    and samplers without a length, which report the dataset's length."""
    sampler = getattr(loader, "sampler", None)
    if sampler is not None and type(sampler).__name__ != "DistributedSampler":
        n = _len(sampler)
        if n is not None:
            return n
    return _len(dataset)


def _sampler_node(sampler: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "sampler_name": type(sampler).__name__,
        "sampler_module": type(sampler).__module__,
    }
    n = _len(sampler)
    if n is not None:
        node["num_samples"] = n
    for name in ("replacement", "shuffle", "num_replicas", "rank", "seed", "drop_last"):
        value = getattr(sampler, name, None)
        if _scalar(value):
            node[name] = value
    return node


# ---- datasets ----------------------------------------------------------------------------------


def _dataset_node(ds: Any, depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"op_type": type(ds).__name__, "op_module": type(ds).__module__}
    n = _len(ds)
    if n is not None:
        node["num_samples"] = n
    own = own_paths(ds)
    if own:
        if len(own) == 1:
            node["dataset_dir"] = own[0]
        else:
            node["dataset_files"] = own[:_MAX_PARAMS]
    tensors = getattr(ds, "tensors", None)
    if isinstance(tensors, (tuple, list)) and all(hasattr(t, "shape") for t in tensors):
        node["tensor_shapes"] = [str(tuple(t.shape)) for t in tensors]
        node["tensor_dtypes"] = [str(getattr(t, "dtype", "")) for t in tensors]
    node.update(_simple_attrs(ds, exclude=node))
    operations = [op for attr in _TRANSFORM_ATTRS for op in _transforms(getattr(ds, attr, None))]
    if operations:
        node["operations"] = operations
    children = dataset_children(ds) if depth < MAX_DEPTH else []
    node["children"] = [_dataset_node(child, depth + 1) for child in children]
    return node


def _simple_attrs(obj: Any, exclude: dict[str, Any]) -> dict[str, Any]:
    """Public scalar attributes (``train=True``, ``download=False``...), a bounded few."""
    out: dict[str, Any] = {}
    try:
        items = list(vars(obj).items())
    except TypeError:
        return out
    for key, value in items:
        if len(out) >= _MAX_PARAMS:
            break
        if key.startswith("_") or key in exclude or key in PATH_ATTRS or key in _TRANSFORM_ATTRS:
            continue
        if isinstance(value, str) and len(value) > _MAX_STR:
            continue
        if _scalar(value):
            out[key] = value
    return out


def _transforms(t: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Transform pipeline as a flat list of operations; Compose-like objects are expanded."""
    if t is None or depth > MAX_DEPTH:
        return
    inner = getattr(t, "transforms", None)
    if isinstance(inner, (list, tuple)):
        for sub in inner:
            yield from _transforms(sub, depth + 1)
        return
    if type(t).__name__ == "StandardTransform":  # torchvision's (transform, target_transform)
        for attr in ("transform", "target_transform"):
            yield from _transforms(getattr(t, attr, None), depth + 1)
        return
    op: dict[str, Any] = {
        "tensor_op_name": getattr(t, "__name__", None) or type(t).__name__,
        "tensor_op_module": getattr(t, "__module__", None) or type(t).__module__,
    }
    try:
        attrs = list(vars(t).items())
    except TypeError:
        attrs = []
    for key, value in attrs[:_MAX_PARAMS]:
        if key.startswith("_") or key == "training":
            continue
        if _scalar(value) and not (isinstance(value, str) and len(value) > _MAX_STR):
            op[key] = value
        elif isinstance(value, (list, tuple)) and all(_scalar(v) for v in value):
            op[key] = json.dumps(list(value))  # one JSON string: MindInsight merges lists
        elif hasattr(value, "tolist") and getattr(value, "ndim", 2) <= 1:
            try:
                op[key] = json.dumps(value.tolist())
            except (TypeError, ValueError):
                pass
    yield op


# ---- path --------------------------------------------------------------------------------------


def _as_dir(path: str) -> str:
    return os.path.dirname(path) if os.path.isfile(path) else path


def _common_dir(paths: list[str]) -> str | None:
    if not paths:
        return None
    dirs = sorted({_as_dir(p) for p in paths})
    if len(dirs) == 1:
        return dirs[0]
    try:
        common = os.path.commonpath(dirs)
    except ValueError:  # different drives
        return dirs[0]
    return common if common not in ("", os.sep) else dirs[0]


# ---- helpers -----------------------------------------------------------------------------------


def _leading_dim(batch: Any) -> int | None:
    """Samples in one batch: the first dimension of its first tensor (x of ``(x, y)``)."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()), None)
    elif isinstance(batch, (list, tuple)):
        batch = batch[0] if batch else None
    shape = getattr(batch, "shape", None)
    if shape is None or not hasattr(shape, "__len__") or len(shape) == 0:
        return None
    return int(shape[0])


def _count_batches(obj: Any) -> tuple[int, int] | None:
    """(samples, batch size) of a list or tuple of batches; None unless every item is one.

    ``Model.train`` takes a plain list of batches; MindSpore records the data set's size in
    samples and its batch size (the first batch's, as ``get_batch_size()``).
    """
    if not isinstance(obj, (list, tuple)) or not obj:
        return None
    sizes = [_leading_dim(batch) for batch in obj]
    if any(n is None for n in sizes):
        return None
    counts = [n for n in sizes if n is not None]
    return sum(counts), counts[0]


def _len(obj: Any) -> int | None:
    try:
        n = len(obj)
    except (TypeError, NotImplementedError, AttributeError, ValueError):
        return None
    return int(n)


def _int_attr(obj: Any, name: str) -> int | None:
    value = getattr(obj, name, None)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str))
