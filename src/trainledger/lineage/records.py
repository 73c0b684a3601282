"""Lineage records: plain values -> ``LineageEvent`` messages, and the dict forms back.

Pure functions (no torch, no I/O), shared by the writer side (callbacks build plain values, this
module packs them) and the reader (which unpacks to the dicts MindInsight returns). User info
is packed by MindInsight's own rules, as the dataset graph is (``graph.py``, whose two functions
are re-exported here for the reader), so what we write reads back equal, and what MindSpore
wrote reads back as MindInsight shows it.
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainledger.errors import LineageParamTypeError, LineageParamValueError
from trainledger.lineage.dataset_graph import fits_int32, organize_graph, package_graph
from trainledger.lineage.proto import lineage_pb2 as pb

__all__ = [
    "RUN_SCALAR_FIELDS",
    "TrainValues",
    "EvalValues",
    "RunValues",
    "RUN_STATUSES",
    "train_event",
    "train_begin_event",
    "eval_event",
    "run_event",
    "dataset_graph_event",
    "user_defined_event",
    "validate_user_defined_info",
    "package_graph",
    "organize_graph",
    "organize_user_info",
    "shortest_float32",
    "json_float",
]

RUN_STATUSES = ("running", "finished", "failed", "stopped")
_F32 = struct.Struct("<f")


@dataclass
class TrainValues:
    """What a train lineage records; None means "not known" and leaves the field unset."""

    optimizer: str | None = None
    learning_rate: float | None = None
    loss_function: str | None = None
    epoch: int | None = None
    parallel_mode: str | None = None
    device_num: int | None = None
    batch_size: int | None = None
    train_dataset_path: str | None = None
    train_dataset_size: int | None = None
    train_dataset_fingerprint: str | None = None
    network: str | None = None
    loss: float | None = None
    model_path: str | None = None
    model_size: int | None = None
    step: int | None = None
    #: the optimizer and scheduler as configured (``lineage.analyzers.settings``): name ->
    #: number or word; empty records nothing
    optimizer_settings: Mapping[str, int | float | str] = field(default_factory=dict)
    scheduler_settings: Mapping[str, int | float | str] = field(default_factory=dict)


@dataclass
class EvalValues:
    """What an evaluation lineage records."""

    metrics: Mapping[str, Any] | None = None
    valid_dataset_path: str | None = None
    valid_dataset_size: int | None = None
    valid_dataset_fingerprint: str | None = None
    step: int | None = None


@dataclass
class RunValues:
    """A snapshot of the run (our extension event); the last one written wins."""

    status: str = "running"
    start_time: float | None = None
    end_time: float | None = None
    duration: float | None = None
    total_steps: int | None = None
    epochs_done: int | None = None
    hostname: str | None = None
    pid: int | None = None
    rank: int | None = None
    command: Sequence[str] = ()
    python_version: str | None = None
    torch_version: str | None = None
    trainledger_version: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    seed: int | None = None
    dataset_fingerprint: str | None = None
    #: (path, size) or (path, size, global step): the step it was saved at, as the curves
    #: count steps (a file name holds only the step within its epoch)
    checkpoints: Sequence[tuple[str, int | None] | tuple[str, int | None, int | None]] = field(
        default_factory=list
    )
    error: str | None = None
    bad_records: int | None = None
    #: a resumed run's processes, oldest first: dicts of ``SESSION_FIELDS``
    sessions: Sequence[Mapping[str, Any]] = ()
    #: the run's identity (``new_run_uid``), also in the header of each checkpoint it saves
    uid: str | None = None


#: the fields of one session of a run (``RunSession`` in the schema)
SESSION_FIELDS = ("start_time", "end_time", "first_step", "last_step", "hostname", "pid")

# RunInfo fields copied one to one between RunValues and the message, in schema order; the
# reader shows the same fields (plus status and seed, which the writer checks first).
RUN_SCALAR_FIELDS: tuple[str, ...] = (
    "start_time",
    "end_time",
    "duration",
    "total_steps",
    "epochs_done",
    "hostname",
    "pid",
    "rank",
    "python_version",
    "torch_version",
    "trainledger_version",
    "git_commit",
    "git_dirty",
    "dataset_fingerprint",
    "error",
    "bad_records",
    "uid",
)


def _event(wall_time: float | None, step: int | None = None) -> pb.LineageEvent:
    event = pb.LineageEvent(wall_time=time.time() if wall_time is None else wall_time)
    if step is not None:
        event.step = int(step)
    return event


def _set(msg: Any, name: str, value: Any) -> None:
    if value is not None:
        setattr(msg, name, value)


def _int32(value: int | None, name: str) -> int | None:
    """Clamp-free int32 check: a value the MindInsight field cannot hold is left unset."""
    if value is None:
        return None
    value = int(value)
    return value if fits_int32(value) else None


def train_event(values: TrainValues, wall_time: float | None = None) -> pb.LineageEvent:
    """A ``train_lineage`` event; float fields also carry their float64 extension."""
    event = _event(wall_time, values.step)
    _fill_train(event.train_lineage, values)
    return event


def train_begin_event(values: TrainValues, wall_time: float | None = None) -> pb.LineageEvent:
    """A ``train_begin`` event (our extension, field 101): what a training is known to be
    given when it begins, in the train lineage's own layout. Why a kind of its own, not a
    first ``train_lineage``: a reader that does not know it (MindInsight, trainledger before
    0.2) skips it, so it still sees one train lineage per run, the final one; ours shows it
    until that final one lands (``reader.merge_file_lineages``)."""
    event = _event(wall_time, values.step)
    _fill_train(event.train_begin, values)
    return event


def _fill_train(train: pb.TrainLineage, values: TrainValues) -> None:
    hp = train.hyper_parameters
    _set(hp, "optimizer", values.optimizer)
    if values.learning_rate is not None:
        hp.learning_rate = float(values.learning_rate)
        hp.learning_rate_f64 = float(values.learning_rate)
    _set(hp, "loss_function", values.loss_function)
    _set(hp, "epoch", _int32(values.epoch, "epoch"))
    _set(hp, "parallel_mode", values.parallel_mode)
    _set(hp, "device_num", _int32(values.device_num, "device_num"))
    _set(hp, "batch_size", _int32(values.batch_size, "batch_size"))
    _add_settings(hp.optimizer_settings, values.optimizer_settings)
    _add_settings(hp.scheduler_settings, values.scheduler_settings)
    ds = train.train_dataset
    _set(ds, "train_dataset_path", values.train_dataset_path)
    _set(ds, "train_dataset_size", _int32(values.train_dataset_size, "train_dataset_size"))
    _set(ds, "fingerprint", values.train_dataset_fingerprint)
    algo = train.algorithm
    _set(algo, "network", values.network)
    if values.loss is not None:
        algo.loss = float(values.loss)
        algo.loss_f64 = float(values.loss)
    if values.model_path is not None or values.model_size is not None:
        _set(train.model, "path", values.model_path)
        _set(train.model, "size", values.model_size)


def _add_settings(target: Any, settings: Mapping[str, int | float | str]) -> None:
    """Append each setting as a ``Setting`` message (an int that int64 cannot hold is kept
    as its float; any other type is refused: the analyzer hands over plain values only)."""
    for name, value in settings.items():
        item = target.add(name=str(name))
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(
                f"setting {name!r}: expected an int, float or str, received "
                f"{type(value).__name__} {value!r}"
            )
        if isinstance(value, str):
            item.text = value
        elif isinstance(value, int) and -(2**63) <= value < 2**63:
            item.integer = value
        else:
            item.number = float(value)


def eval_event(values: EvalValues, wall_time: float | None = None) -> pb.LineageEvent:
    """An ``evaluation_lineage`` event; metrics are stored as a JSON object string."""
    event = _event(wall_time, values.step)
    ev = event.evaluation_lineage
    ev.metric = json.dumps(dict(values.metrics or {}), default=_json_default)
    vd = ev.valid_dataset
    _set(vd, "valid_dataset_path", values.valid_dataset_path)
    _set(vd, "valid_dataset_size", _int32(values.valid_dataset_size, "valid_dataset_size"))
    _set(vd, "fingerprint", values.valid_dataset_fingerprint)
    return event


def _json_default(value: Any) -> Any:
    """Metric values that are tensors/numpy scalars become numbers; anything else a string."""
    for attr in ("item", "tolist"):
        fn = getattr(value, attr, None)
        if callable(fn):
            try:
                return fn()
            except (TypeError, ValueError, RuntimeError):
                pass
    return str(value)


def run_event(values: RunValues, wall_time: float | None = None) -> pb.LineageEvent:
    """Our ``run`` extension event (MindInsight skips it)."""
    if values.status not in RUN_STATUSES:
        raise LineageParamValueError(
            f"run status expected one of {RUN_STATUSES}, received: {values.status!r}"
        )
    event = _event(wall_time, values.total_steps)
    run = event.run
    run.status = values.status
    for name in RUN_SCALAR_FIELDS:
        _set(run, name, getattr(values, name))
    if values.seed is not None and 0 <= int(values.seed) < 2**64:
        run.seed = int(values.seed)
    run.command.extend(str(a) for a in values.command)
    for path, size, *step in values.checkpoints:
        ckpt = run.checkpoints.add(path=str(path))
        _set(ckpt, "size", size)
        _set(ckpt, "step", step[0] if step else None)
    for session in values.sessions:
        added = run.sessions.add()
        for name in SESSION_FIELDS:
            _set(added, name, session.get(name))
    return event


# ---- user defined info -------------------------------------------------------------------------


def validate_user_defined_info(info: Any) -> dict[str, int | float | str]:
    """A flat dict of str -> int/float/str (bools count as ints), else a clear error.

    Ints must fit MindInsight's int32 field; a larger int is rejected rather than silently
    changed (pass it as a float or a string).
    """
    if not isinstance(info, Mapping):
        raise LineageParamTypeError(
            "user_defined_info expected a dict of str -> int/float/str, received: "
            f"{type(info).__name__}"
        )
    out: dict[str, int | float | str] = {}
    for key, value in info.items():
        if not isinstance(key, str):
            raise LineageParamTypeError(
                f"user_defined_info keys expected str, received: {key!r} ({type(key).__name__})"
            )
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int):
            if not fits_int32(value):
                raise LineageParamValueError(
                    f"user_defined_info[{key!r}] expected an int within int32 range, received: "
                    f"{value} (store it as a float or a str)"
                )
        elif not isinstance(value, (float, str)):
            raise LineageParamTypeError(
                f"user_defined_info[{key!r}] expected int, float or str, received: "
                f"{type(value).__name__}"
            )
        out[key] = value
    return out


def user_defined_event(info: Mapping[str, Any], wall_time: float | None = None) -> pb.LineageEvent:
    """One ``user_defined_info`` event, one ``user_info`` item per key (MindInsight's layout)."""
    info = validate_user_defined_info(info)
    event = _event(wall_time)
    udi = event.user_defined_info
    udi.SetInParent()
    for key, value in info.items():
        item = udi.user_info.add()
        if isinstance(value, int):
            item.map_int32[key] = value
        elif isinstance(value, float):
            item.map_double[key] = value
        else:
            item.map_str[key] = value
    return event


def organize_user_info(message: pb.UserDefinedInfo) -> dict[str, Any]:
    """A ``UserDefinedInfo`` as MindInsight's dict: first entry of each item's first map.

    (A map's first key by ``next(iter(map))``: its ``items()`` view is iterated in Python,
    a third of reading a run of 150 params.)"""
    out: dict[str, Any] = {}
    for item in message.user_info:
        if item.map_dict:
            key = next(iter(item.map_dict))
            out[key] = organize_user_info(item.map_dict[key])
        elif item.map_int32:
            key = next(iter(item.map_int32))
            out[key] = int(item.map_int32[key])
        elif item.map_str:
            key = next(iter(item.map_str))
            out[key] = item.map_str[key]
        elif item.map_double:
            key = next(iter(item.map_double))
            out[key] = json_float(item.map_double[key])
    return out


def dataset_graph_event(
    graph: Mapping[str, Any], wall_time: float | None = None
) -> pb.LineageEvent:
    """A ``dataset_graph`` event from a graph dict (see ``package_graph``)."""
    event = _event(wall_time)
    event.dataset_graph.SetInParent()
    package_graph(graph, event.dataset_graph)
    return event


# ---- floats as MindInsight shows them ----------------------------------------------------------


def shortest_float32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (0.1f -> 0.1), as MindInsight
    showed float fields: a float32 read as a double is e.g. 0.019999999552965164, shown (and
    compared) as 0.02. Doubles that are not exactly a float32 (and NaN, infinities) are
    returned unchanged."""
    if not math.isfinite(value):
        return value
    try:
        packed = _F32.pack(value)
    except OverflowError:  # beyond float32's range: not a float32
        return value
    if _F32.unpack(packed)[0] != value:
        return value
    for digits in range(1, 10):  # 9 significant digits always identify a float32
        candidate = float(f"{value:.{digits}g}")
        try:
            if _F32.pack(candidate) == packed:
                return candidate
        except OverflowError:  # rounded up past float32's largest value
            continue
    return value  # pragma: no cover - unreachable, see above


def json_float(value: float) -> float | str:
    """A double as protobuf's JSON conversion gives it: NaN/Infinity become strings."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value
