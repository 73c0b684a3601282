"""Lineage messages -> plain values, reading what is valid and reporting the rest.

Why apart from ``reader.py``: a damaged field (a string that is not UTF-8, a metric JSON nested
deeper than ``MAX_JSON_DEPTH``) must cost only itself, never the run. Each function takes the
list of warnings of the file being read and appends one line per part it left out.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Sequence
from typing import Any

from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.lineage.records import (
    RUN_SCALAR_FIELDS,
    SESSION_FIELDS,
    json_float,
    organize_user_info,
    shortest_float32,
)
from trainledger.values import holds_containers

__all__ = ["MAX_JSON_DEPTH", "drop_bytes", "eval_dict", "run_dict", "train_dict", "user_info"]

# Deeper metric JSON is damage: no metric nests this deep, and the readers, the index and the
# UI all walk values recursively.
MAX_JSON_DEPTH = 64


def drop_bytes(value: Any, where: str, warn: list[str]) -> Any:
    """``value`` without the strings that were not UTF-8 (protobuf hands a proto2 string
    field whose bytes do not decode back as ``bytes``), each reported. Recursion is bounded
    by protobuf's own nesting limit (100)."""
    if isinstance(value, bytes):
        warn.append(f"{where}: not UTF-8, left out")
        return None
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, bytes):
                warn.append(f"{where}.{k}: not UTF-8, left out")
            elif isinstance(v, (dict, list)):  # (a scalar is kept as it is: no path to build)
                out[k] = drop_bytes(v, f"{where}.{k}", warn)
            else:
                out[k] = v
        return out
    if isinstance(value, list):
        kept = [drop_bytes(v, f"{where}[{i}]", warn) for i, v in enumerate(value)]
        return [v for v, orig in zip(kept, value, strict=True) if not isinstance(orig, bytes)]
    return value


def user_info(message: pb.UserDefinedInfo, warn: list[str]) -> dict[str, Any]:
    """``organize_user_info``, item by item when the whole fails: a key or value that is not
    UTF-8 loses only its own item."""
    try:
        return dict(drop_bytes(organize_user_info(message), "user_defined", warn))
    except (ValueError, RecursionError):
        pass
    out: dict[str, Any] = {}
    for i, item in enumerate(message.user_info):
        single = pb.UserDefinedInfo()
        single.user_info.add().CopyFrom(item)
        try:
            out.update(drop_bytes(organize_user_info(single), "user_defined", warn))
        except (ValueError, RecursionError) as exc:
            warn.append(f"user_defined item {i}: unreadable, left out ({type(exc).__name__})")
    return out


def _fields(msg: Any, names: Sequence[str], warn: list[str]) -> dict[str, Any]:
    """The fields of ``names`` that were written; one that cannot be read (a string that is
    not UTF-8) is left out and reported."""
    out: dict[str, Any] = {}
    for name in names:
        if msg.HasField(name):
            value = getattr(msg, name)
            if isinstance(value, bytes):
                warn.append(f"{type(msg).__name__}.{name}: not UTF-8, left out")
            else:
                out[name] = value
    return out


def _float_pair(msg: Any, f32: str, f64: str) -> tuple[float | str | None, float | None]:
    """(display, raw): the float64 extension if written, else float32 as protobuf shows it."""
    if msg.HasField(f64):
        raw = getattr(msg, f64)
        return json_float(raw), raw
    if msg.HasField(f32):
        raw = getattr(msg, f32)
        return json_float(shortest_float32(raw)), (
            shortest_float32(raw) if math.isfinite(raw) else raw
        )
    return None, None


def settings_dict(items: Any, where: str, warn: list[str]) -> dict[str, Any]:
    """Repeated ``Setting`` messages as name -> number or word; an entry that cannot be
    read (a name or word that is not UTF-8, no value) is left out and reported."""
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        kind = item.WhichOneof("value")
        name, value = item.name, getattr(item, kind) if kind else None
        if isinstance(name, bytes) or not name or value is None or isinstance(value, bytes):
            warn.append(f"{where}[{i}]: unreadable, left out")
            continue
        out[name] = json_float(value) if kind == "number" else value
    return out


def train_dict(train: pb.TrainLineage, warn: list[str]) -> dict[str, Any]:
    hp_msg, algo_msg = train.hyper_parameters, train.algorithm
    hp = _fields(
        hp_msg,
        ("optimizer", "loss_function", "epoch", "parallel_mode", "device_num", "batch_size"),
        warn,
    )
    lr, raw_lr = _float_pair(hp_msg, "learning_rate", "learning_rate_f64")
    if lr is not None:
        hp["learning_rate"] = lr
    hp = _ordered(
        hp,
        (
            "optimizer",
            "learning_rate",
            "loss_function",
            "epoch",
            "parallel_mode",
            "device_num",
            "batch_size",
        ),
    )
    algo = _fields(algo_msg, ("network",), warn)
    loss, raw_loss = _float_pair(algo_msg, "loss", "loss_f64")
    if loss is not None:
        algo["loss"] = loss
    return {
        "hyper_parameters": hp if train.HasField("hyper_parameters") else {},
        "algorithm": algo if train.HasField("algorithm") else {},
        "train_dataset": _fields(
            train.train_dataset, ("train_dataset_path", "train_dataset_size"), warn
        ),
        "model": _fields(train.model, ("path", "size"), warn),
        "fingerprint": _fields(train.train_dataset, ("fingerprint",), warn).get("fingerprint")
        or None,
        "raw_loss": raw_loss,
        "raw_learning_rate": raw_lr,
        "optimizer_settings": settings_dict(hp_msg.optimizer_settings, "optimizer", warn),
        "scheduler_settings": settings_dict(hp_msg.scheduler_settings, "scheduler", warn),
    }


def _ordered(d: dict[str, Any], order: Sequence[str]) -> dict[str, Any]:
    return {k: d[k] for k in order if k in d}


def eval_dict(ev: pb.EvaluationLineage, warn: list[str]) -> dict[str, Any]:
    """The evaluation's values, and ``metric_json``: the event's metric text where it decodes
    to exactly ``metric`` and is ASCII, else None. Why: an index stores the metric as JSON,
    and encoding a wide run's 1,500 floats again costs more than the rest of its parse
    (``query/index_tables.prepare``)."""
    metric, whole = _metric(ev, warn)
    return {
        "metric": metric,
        "metric_json": ev.metric if whole and metric and ev.metric.isascii() else None,
        "valid_dataset": (
            _fields(ev.valid_dataset, ("valid_dataset_path", "valid_dataset_size"), warn)
            if ev.HasField("valid_dataset")
            else None
        ),
        "fingerprint": _fields(ev.valid_dataset, ("fingerprint",), warn).get("fingerprint") or None,
    }


def _metric(ev: pb.EvaluationLineage, warn: list[str]) -> tuple[dict[str, Any], bool]:
    """The metric JSON object, and whether it is the whole text's value; what is not one (or
    nests deeper than ``MAX_JSON_DEPTH``) is left out and reported: the whole when it does
    not parse, else the keys too deep."""
    try:
        if isinstance(ev.metric, bytes):
            raise ValueError("not UTF-8")
        metric = json.loads(ev.metric) if ev.metric else {}
    except (ValueError, RecursionError) as exc:
        warn.append(f"metric: not valid JSON, left out ({type(exc).__name__})")
        return {}, False
    if not isinstance(metric, dict):
        warn.append(f"metric: expected a JSON object, received {type(metric).__name__}")
        return {}, False
    # (scalars, nearly every value, skip the walk: a wide run has thousands of metrics)
    if not holds_containers(metric.values()):
        return metric, True
    deep = [
        k
        for k, v in metric.items()
        if isinstance(v, (dict, list)) and not _shallow(v, MAX_JSON_DEPTH - 1)
    ]
    if not deep:
        return metric, True
    warn.append(f"metric: {deep!r} nested deeper than {MAX_JSON_DEPTH}, left out")
    return {k: v for k, v in metric.items() if k not in deep}, False


def _shallow(value: Any, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` containers deep (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


_RUN_SCALARS = ("status", *RUN_SCALAR_FIELDS, "seed")


def run_dict(run: pb.RunInfo, warn: list[str]) -> dict[str, Any]:
    out = _fields(run, _RUN_SCALARS, warn)
    command = list(run.command)
    if any(isinstance(part, bytes) for part in command):
        warn.append("run.command: not UTF-8, left out")
    elif command:
        out["command"] = shlex.join(command)
    checkpoints = [
        {
            "path": c.path,
            "size": c.size if c.HasField("size") else None,
            **({"step": c.step} if c.HasField("step") else {}),
        }
        for c in run.checkpoints
    ]
    if checkpoints:
        out["checkpoints"] = drop_bytes(checkpoints, "run.checkpoints", warn)
    sessions = [
        {name: getattr(s, name) for name in SESSION_FIELDS if s.HasField(name)}
        for s in run.sessions
    ]
    if sessions:
        out["sessions"] = drop_bytes(sessions, "run.sessions", warn)
    return dict(drop_bytes(out, "run", warn))
