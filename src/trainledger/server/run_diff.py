"""What differs between two or more runs: the rules of the diff view, over flat records.

A run is compared as the flat record the runs table shows (``query.flatten_object``: the
names search conditions use, ``learning_rate``, ``user_defined/team``, ``optimizer/momentum``)
plus its dataset graph and the fields of its run record (``run/git_commit``,
``run/python_version``...). Fields are grouped by namespace, so fields added to the lineage
later (an optimizer's settings, a scheduler's) appear in their group without a change here.

The rules, which the tests check as a table:

- numbers are equal when they are the same float (``1e-3 == 0.001``, ``1 == 1.0``; two NaN
  are the same value); a bool is not a number (``True != 1``); integers are compared exactly
  (two integers past 2**53 that round to one float still differ);
- a field a run does not have (``missing``) differs from a field it holds as null;
- lists and mappings are equal when their items are, by the same rules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from trainledger.lineage import json_float
from trainledger.query import flatten_object, parse_series_field

__all__ = [
    "GROUPS",
    "MAX_DIFF_RUNS",
    "RunFields",
    "diff_runs",
    "field_group",
    "run_fields",
    "same_value",
]

#: the most runs one diff compares (one page of a search)
MAX_DIFF_RUNS = 50
#: the groups of the diff view, in the order it shows them
GROUPS = (
    "Hyper-parameters",
    "Optimizer",
    "Scheduler",
    "User defined",
    "Dataset",
    "Network",
    "Metrics",
    "Environment",
    "Code version",
    "Run",
    "Other",
)
_NAMED = {
    "Hyper-parameters": ("learning_rate", "batch_size", "epoch", "device_num", "loss_function")
    + ("run/seed",),
    "Optimizer": ("optimizer",),
    "Scheduler": ("scheduler",),
    "Dataset": ("train_dataset_path", "train_dataset_count", "test_dataset_path")
    + ("test_dataset_count", "dataset_mark", "dataset_graph", "run/dataset_fingerprint"),
    "Network": ("network", "model_size"),
    "Metrics": ("loss",),
    "Environment": ("run/hostname", "run/python_version", "run/torch_version")
    + ("run/trainledger_version", "run/command", "run/rank", "run/pid"),
    "Code version": ("run/git_commit", "run/git_dirty"),
}
_BY_NAME = {name: group for group, names in _NAMED.items() for name in names}
_PREFIXES = {
    "optimizer/": "Optimizer",
    "scheduler/": "Scheduler",
    "user_defined/": "User defined",
    "metric/": "Metrics",
    "run/": "Run",
}
_MISSING = object()

#: one run as the diff sees it: its id and its flat fields
RunFields = tuple[str, Mapping[str, Any]]


#: run-record fields left out: each run's own files and processes, never a setting
_RUN_SKIPPED = frozenset({"checkpoints", "sessions"})
#: flat-row keys that are not lineage: where the run is and the user's annotation
_ROW_SKIPPED = frozenset({"summary_dir", "run_id", "tag", "remark"})


def run_fields(obj: Mapping[str, Any], run_record: Mapping[str, Any]) -> dict[str, Any]:
    """One run's fields for the diff: its search object (``filter_summary_lineage``) as the
    table's flat row, its dataset graph, and its whole run record as ``run/<name>`` (the
    table's ``run/`` columns hold only a few of them)."""
    row = flatten_object(obj)
    fields = {k: v for k, v in row.items() if k not in _ROW_SKIPPED and not k.startswith("run/")}
    if "dataset_graph" in obj:
        fields["dataset_graph"] = obj["dataset_graph"]
    for name, value in run_record.items():
        if name not in _RUN_SKIPPED:
            fields[f"run/{name}"] = value
    return fields


def field_group(name: str) -> str:
    """The group of the diff view a field belongs to (by name, then by namespace)."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    for prefix, group in _PREFIXES.items():
        if name.startswith(prefix):
            return group
    if parse_series_field(name) is not None:  # a series statistic, ``max(eval/accuracy)``
        return "Metrics"
    return "Other"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_value(a: Any, b: Any) -> bool:
    """Whether two present values are the same, by the rules of the module docstring."""
    if _number(a) and _number(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        fa, fb = float(a), float(b)
        return fa == fb or (math.isnan(fa) and math.isnan(fb))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return bool(a == b)


def _json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as null (JSON has none; ``text`` names them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _text(value: Any) -> str:
    """How a value reads in the view: floats exact (``repr``), containers as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(_json_safe(value), sort_keys=True, separators=(", ", ": "))
    return str(value)


def _cell(value: Any) -> dict[str, Any]:
    """A run's value of a field: ``value`` (a non-finite number as protobuf JSON's string,
    ``"NaN"``, as the runs table gets it; in containers null) and ``text``, its exact form."""
    if value is _MISSING:
        return {"missing": True, "text": "(missing)"}
    if isinstance(value, float) and not math.isfinite(value):
        return {"missing": False, "value": json_float(value), "text": _text(value)}
    return {"missing": False, "value": _json_safe(value), "text": _text(value)}


def _all_same(values: Sequence[Any]) -> bool:
    first = values[0]
    for value in values[1:]:
        if (first is _MISSING) != (value is _MISSING):
            return False
        if first is not _MISSING and not same_value(first, value):
            return False
    return True


def diff_runs(runs: Sequence[RunFields], *, show_all: bool = False) -> dict[str, Any]:
    """``{"runs": [ids], "fields": n, "differing": n, "groups": [{"group", "fields": [{"name",
    "same", "values": [{"missing", "value", "text"}]}]}]}``: one value per run, in the order
    of ``runs``; only the fields that differ unless ``show_all``. Groups keep ``GROUPS``'
    order and leave out the empty ones; fields within a group are sorted by name.

    Raises:
        ValueError: fewer than two runs, or the same run twice.
    """
    ids = [run_id for run_id, _ in runs]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        raise ValueError(f"a diff needs two or more distinct runs; received {len(ids)}: {ids!r}")
    names = sorted({name for _, fields in runs for name in fields})
    grouped: dict[str, list[dict[str, Any]]] = {group: [] for group in GROUPS}
    differing = 0
    for name in names:
        values = [fields.get(name, _MISSING) for _, fields in runs]
        same = _all_same(values)
        differing += not same
        if show_all or not same:
            row = {"name": name, "same": same, "values": [_cell(v) for v in values]}
            grouped[field_group(name)].append(row)
    return {
        "runs": ids,
        "fields": len(names),
        "differing": differing,
        "groups": [{"group": g, "fields": rows} for g, rows in grouped.items() if rows],
    }
