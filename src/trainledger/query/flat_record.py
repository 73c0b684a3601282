"""Turn the lineage reader's answer for one run into a flat query record.

Why here and not in the reader: the reader answers ``get_summary_lineage`` (nested, per run);
queries need MindInsight's flat "filtration" view (``learning_rate``, ``test_dataset_count``,
...). The mapping is MindInsight's FIELD_MAPPING.
"""

from __future__ import annotations

import json
import math
from typing import Any

from trainledger.query.fields import SETTINGS_GROUPS
from trainledger.query.semantics import Record, clean_value
from trainledger.values import floats_without_nan

# flat field -> (section of the reader's dict, key inside it)
FIELD_SOURCES: dict[str, tuple[str, str]] = {
    "loss_function": ("hyper_parameters", "loss_function"),
    "train_dataset_path": ("train_dataset", "train_dataset_path"),
    "train_dataset_count": ("train_dataset", "train_dataset_size"),
    "test_dataset_path": ("valid_dataset", "valid_dataset_path"),
    "test_dataset_count": ("valid_dataset", "valid_dataset_size"),
    "network": ("algorithm", "network"),
    "optimizer": ("hyper_parameters", "optimizer"),
    "learning_rate": ("hyper_parameters", "learning_rate"),
    "epoch": ("hyper_parameters", "epoch"),
    "batch_size": ("hyper_parameters", "batch_size"),
    "device_num": ("hyper_parameters", "device_num"),
    "loss": ("algorithm", "loss"),
    "model_size": ("model", "size"),
}
_FLOAT32_FIELDS = ("learning_rate", "loss")


def graph_hash(graph: Any) -> str:
    """Canonical hash of a dataset graph: equal graphs share a dataset_mark."""
    import hashlib  # (here: a query answered from the index parses no run, hashes nothing)

    text = json.dumps(graph or {}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_STR = {str}


def _clean_dict(value: Any) -> dict[str, Any]:
    """``value``'s items with str keys and NaN as None (``semantics.clean_value``, inline:
    this runs once per value of a run, 1,650 times for a wide one)."""
    if not isinstance(value, dict):
        return {}
    if set(map(type, value)) == _STR and floats_without_nan(value.values()):
        return dict(value)  # (a wide run's 1,500 metrics: checked and copied in C)
    return {
        k if type(k) is str else str(k): None if type(v) is float and v != v else v
        for k, v in value.items()
    }


def to_record(lineage: dict[str, Any], summary_dir: str, update_time: float) -> Record:
    """Flat record of one run (without dataset_mark and added_info, which the index adds)."""
    # (heavy: the lineage records load protobuf, which only parsing a run needs, not a query)
    from trainledger.lineage import shortest_float32

    record: Record = {"summary_dir": summary_dir}
    for field, (section, key) in FIELD_SOURCES.items():
        part = lineage.get(section) or {}
        value = clean_value(part.get(key)) if isinstance(part, dict) else None
        if field in _FLOAT32_FIELDS and isinstance(value, float):
            value = shortest_float32(value)
        if field == "model_size" and isinstance(value, str) and value.isdigit():
            value = int(value)
        record[field] = value
    record["metric"] = _clean_dict(lineage.get("metric"))
    record["user_defined"] = _clean_dict(lineage.get("user_defined"))
    for group in SETTINGS_GROUPS:
        if lineage.get(group):
            record[group] = _clean_dict(lineage.get(group))
    run = lineage.get("run")
    fingerprint = run.get("train_dataset_fingerprint") if isinstance(run, dict) else None
    if isinstance(fingerprint, str) and fingerprint:  # (a query field: ``run/...``)
        record["run"] = {"train_dataset_fingerprint": fingerprint}
    nan = nan_fields(lineage)
    if nan:
        record[NAN_FIELDS] = nan
    record["dataset_graph"] = lineage.get("dataset_graph") or {}
    record["update_time"] = float(update_time)
    record["status"] = status_of(lineage)
    record["duration"], record["sessions"] = run_time_fields(lineage.get("run"))
    return record


#: the record's key listing the fields whose value was NaN (present only when one was)
NAN_FIELDS = "nan_fields"


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def nan_fields(lineage: dict[str, Any]) -> list[list[str]]:
    """Where the run's lineage holds a NaN: ``[field]`` for a fixed field (``learning_rate``),
    ``[group, key]`` in metric, user_defined or a settings group (``["metric", "eval_loss"]``).

    Why: the record stores NaN as None (``semantics.clean_value``: SQL cannot hold NaN, and a
    condition must not match it), so without this list the UI would show a metric that went
    NaN as missing (issue 51 item 1); ``LineageIndex.query(nan_values=True)`` puts the NaN
    back into the answer objects."""
    out: list[list[str]] = []
    for field, (section, key) in FIELD_SOURCES.items():
        part = lineage.get(section)
        if isinstance(part, dict) and _is_nan(part.get(key)):
            out.append([field])
    for group in ("metric", "user_defined", *SETTINGS_GROUPS):
        part = lineage.get(group)
        if isinstance(part, dict) and not floats_without_nan(part.values()):
            out.extend([group, str(k)] for k, v in part.items() if _is_nan(v))
    return out


def restore_nan(objects: list[dict[str, Any]], records: list[Record]) -> None:
    """Set NaN back where each record's ``nan_fields`` say, in its answer object's
    ``model_lineage`` (the objects are fresh copies, ``semantics.build_object``)."""
    for obj, record in zip(objects, records, strict=True):
        where = record.get(NAN_FIELDS)
        lineage = obj.get("model_lineage")
        if not where or not isinstance(lineage, dict):
            continue
        for path in where:
            part = lineage if len(path) == 1 else lineage.get(path[0])
            if isinstance(part, dict) and path[-1] in part and part[path[-1]] is None:
                part[path[-1]] = math.nan


def status_of(lineage: dict[str, Any]) -> str | None:
    """The run record's status (running, finished, ...), None without a run record."""
    run = lineage.get("run")
    status = run.get("status") if isinstance(run, dict) else None
    return status if isinstance(status, str) else None


def run_time_fields(run: Any) -> tuple[float | None, int | None]:
    """(duration in seconds, number of sessions) of a run record; Nones without one. A run
    record that lists no sessions was written by one process."""
    if not isinstance(run, dict):
        return None, None
    duration = run.get("duration")
    sessions = run.get("sessions")
    count = len(sessions) if isinstance(sessions, list) and sessions else 1
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        return None, count
    return clean_value(float(duration)), count
