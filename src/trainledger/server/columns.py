"""The web UI's columns: their order, the column chooser's groups, and CSV export.

Rows come from ``trainledger.query.flatten_object(obj, scalar_cells=True)``: one flat name per
value, the names search conditions use (``metric/Accuracy``, ``user_defined/team``), so a
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
from trainledger.query import RUN_FIELDS as QUERY_RUN_FIELDS

# The standard model_lineage fields, in the order MindInsight's table shows them (the
# filterable fields of the query engine).
STANDARD_FIELDS: tuple[str, ...] = FIELDS
# The column chooser's groups (metric/ and user_defined/ columns are grouped by prefix).
HYPERPARAMETERS: tuple[str, ...] = ("learning_rate", "batch_size", "epoch", "device_num")
METRIC_FIELDS: tuple[str, ...] = ("loss",)
# our ``run`` extension fields, as columns (shown, exported; sortable and filterable only when
# the index holds them too: ``SORTABLE_RUN_FIELDS``)
RUN_FIELDS: tuple[str, ...] = (
    "run/status",
    "run/start_time",
    "run/end_time",
    "run/duration",
    "run/total_steps",
    "run/hostname",
    "run/git_commit",
)
#: run columns the index sorts by: ``run/<field>`` for the query fields ``query.RUN_FIELDS``
#: (the page sorts ``run/status`` by ``status``)
SORTABLE_RUN_FIELDS: tuple[str, ...] = tuple(f"run/{f}" for f in QUERY_RUN_FIELDS)


#: the column chooser's groups, in the order it shows them (``column_group``)
COLUMN_GROUPS: tuple[str, ...] = (
    "Metrics",
    "User defined",
    "Optimizer and scheduler",
    "Hyperparameters",
    "Family",
    "Other",
)


def column_group(name: str) -> str:
    """Which group of the column chooser a column belongs to."""
    if name.startswith("metric/") or name in METRIC_FIELDS:
        return "Metrics"
    if name.startswith("user_defined/"):
        return "User defined"
    if name.startswith(("optimizer/", "scheduler/")):
        return "Optimizer and scheduler"
    if name in HYPERPARAMETERS:
        return "Hyperparameters"
    if name.startswith("parent/") or name == "run/train_dataset_fingerprint":
        return "Family"  # (where a run's weights and data came from)
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


def to_csv(
    rows: Iterable[Mapping[str, Any]], columns: Sequence[str], *, header: bool = True
) -> str:
    """Rows -> CSV text (with a header line unless ``header=False``, for a streamed part);
    numbers exact (repr), text guarded against formulas."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(columns)
    for row in rows:
        writer.writerow([_safe(_cell(row.get(c)), row.get(c)) for c in columns])
    return out.getvalue()
