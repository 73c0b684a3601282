"""Flat rows out of lineage objects, for the table, the chart and CSV export.

The query engine answers with MindInsight's nested objects (``model_lineage.metric.Accuracy``);
a table, a parallel-coordinates axis and a CSV column each want one flat name per value. The
names are the ones search conditions use (``metric/Accuracy``, ``user_defined/team``), so a
column can be sorted and filtered by the name it is shown under.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trainledger.query import FIELDS

# The standard model_lineage fields, in the order MindInsight's table shows them (the
# filterable fields of the query engine).
STANDARD_FIELDS: tuple[str, ...] = FIELDS
# The column chooser's groups (metric/ and user_defined/ columns are grouped by prefix).
HYPERPARAMETERS: tuple[str, ...] = ("learning_rate", "batch_size", "epoch", "device_num")
METRIC_FIELDS: tuple[str, ...] = ("loss",)
# our ``run`` extension fields, as columns (shown, exported; not sortable in the index)
RUN_FIELDS: tuple[str, ...] = (
    "run/status",
    "run/start_time",
    "run/end_time",
    "run/duration",
    "run/total_steps",
    "run/hostname",
    "run/git_commit",
)
NESTED_PREFIXES = {"metric": "metric/", "user_defined": "user_defined/"}


def run_id_of(summary_dir: str) -> str:
    """``"./run1"`` (the engine's relative summary_dir) -> ``"run1"`` (the id in URLs)."""
    return summary_dir[2:] if summary_dir.startswith("./") else summary_dir


def flatten(obj: Mapping[str, Any]) -> dict[str, Any]:
    """One lineage object -> ``{column: scalar}``.

    ``metric`` and ``user_defined`` become ``metric/<k>`` and ``user_defined/<k>``; any other
    nested mapping (our ``run`` extension fields) becomes ``<name>/<k>``; annotations from
    ``added_info`` become ``tag`` and ``remark``.
    """
    row: dict[str, Any] = {"run_id": run_id_of(str(obj.get("summary_dir", "")))}
    row["summary_dir"] = obj.get("summary_dir")
    lineage = obj.get("model_lineage") or {}
    for key, value in lineage.items():
        if isinstance(value, Mapping):
            prefix = NESTED_PREFIXES.get(key, f"{key}/")
            for sub, subvalue in value.items():
                if not isinstance(subvalue, (Mapping, list)):
                    row[prefix + str(sub)] = subvalue
        elif not isinstance(value, list):
            row[key] = value
    extra = obj.get("run")
    if isinstance(extra, Mapping):
        for sub, subvalue in extra.items():
            if not isinstance(subvalue, (Mapping, list)):
                row.setdefault(f"run/{sub}", subvalue)
    added = obj.get("added_info") or {}
    row["tag"] = added.get("tag", 0) or 0
    row["remark"] = added.get("remark", "") or ""
    return row


def column_group(name: str) -> str:
    """Which group of the column chooser a column belongs to."""
    if name.startswith("metric/") or name in METRIC_FIELDS:
        return "Metrics"
    if name.startswith("user_defined/"):
        return "User defined"
    if name in HYPERPARAMETERS:
        return "Hyperparameters"
    return "Other"


def columns_of(rows: Iterable[Mapping[str, Any]], customized: Mapping[str, Any]) -> list[str]:
    """Every column: standard ones first, then customized, then our run extension fields."""
    seen: dict[str, None] = dict.fromkeys(STANDARD_FIELDS)
    seen.update(dict.fromkeys(customized))
    seen.update(dict.fromkeys(RUN_FIELDS))
    for row in rows:
        seen.update(dict.fromkeys(k for k in row if k not in ("run_id", "tag", "remark")))
    return list(seen)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _safe(text: str, value: Any) -> str:
    """Keep spreadsheets from running a remark as a formula (CSV injection)."""
    if isinstance(value, str) and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows -> CSV text with a header; numbers exact (repr), text guarded against formulas."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_safe(_cell(row.get(c)), row.get(c)) for c in columns])
    return out.getvalue()
