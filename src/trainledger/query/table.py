"""``lineage_table``: the filter result as a pandas DataFrame, one row per run.

Why flat columns: analysis code wants ``df["metric/Accuracy"]``, not nested dicts. Column
order: ``summary_dir``, MindInsight's fields, then every ``metric/<name>`` and
``user_defined/<name>`` of the result (from ``customized``), the series statistics asked for
(``max(eval/accuracy)``), then ``tag`` and ``remark``.
pandas is imported only when ``lineage_table`` is called; ``flatten_result`` (used by the
CLI's csv output) needs no pandas. ``flatten_object`` is also the web UI's row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainledger.query.fields import FIELDS, GROUP_PREFIXES
from trainledger.query.lineage_api import filter_summary_lineage

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["lineage_table", "flatten_result", "flatten_object", "run_id_of"]


def run_id_of(summary_dir: str) -> str:
    """``"./run1"`` (a result's relative summary_dir) -> ``"run1"`` (the web UI's run id)."""
    return summary_dir[2:] if summary_dir.startswith("./") else summary_dir


def flatten_object(obj: Mapping[str, Any], *, scalar_cells: bool = False) -> dict[str, Any]:
    """One result object as a flat row, named as search conditions name fields.

    ``model_lineage``'s ``metric`` and ``user_defined`` become ``metric/<k>`` and
    ``user_defined/<k>`` (``optimizer_settings``: ``optimizer/<k>``, ``fields.GROUPS``), any
    other nested mapping (the web UI's ``run`` extension fields) ``<name>/<k>``;
    ``added_info`` becomes ``tag`` and ``remark`` (None when absent).
    ``scalar_cells=True`` is the web UI's table, chart and CSV row: it starts with ``run_id``,
    leaves out lists and nested mappings (a cell holds one value) and shows a missing
    annotation as tag 0 and remark "".
    """
    summary_dir = obj.get("summary_dir")
    row: dict[str, Any] = {"run_id": run_id_of(str(summary_dir or ""))} if scalar_cells else {}
    row["summary_dir"] = summary_dir
    skipped = (Mapping, list) if scalar_cells else ()  # isinstance(x, ()) is always False
    for key, value in (obj.get("model_lineage") or {}).items():
        if isinstance(value, Mapping):
            prefix = GROUP_PREFIXES.get(key, f"{key}/")
            for sub, subvalue in value.items():
                if not isinstance(subvalue, skipped):
                    row[prefix + str(sub)] = subvalue
        elif not isinstance(value, skipped[1:]):
            row[key] = value
    for field, value in (obj.get("series") or {}).items():  # e.g. "max(eval/accuracy)"
        row[field] = value
    extra = obj.get("run")
    if isinstance(extra, Mapping):
        for sub, subvalue in extra.items():
            if not isinstance(subvalue, (Mapping, list)):
                row.setdefault(f"run/{sub}", subvalue)
    added = obj.get("added_info") or {}
    if scalar_cells:
        row["tag"] = added.get("tag", 0) or 0
        row["remark"] = added.get("remark", "") or ""
    else:
        row["tag"] = added.get("tag")
        row["remark"] = added.get("remark")
    return row


def flatten_result(result: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of a ``filter_summary_lineage`` result."""
    rows = [flatten_object(obj) for obj in result.get("object", [])]
    has_model = any("model_lineage" in obj for obj in result.get("object", []))
    columns = ["summary_dir"]
    if has_model or not rows:
        columns += [f for f in FIELDS if f != "summary_dir"]
        columns += list(result.get("customized", {}))
    columns += list(
        dict.fromkeys(f for obj in result.get("object", []) for f in obj.get("series") or {})
    )
    columns += ["tag", "remark"]
    return columns, rows


def lineage_table(
    summary_base_dir: str | os.PathLike[str],
    search_condition: dict[str, Any] | None = None,
    *,
    max_depth: int = 1,
    series: Sequence[str] = (),
) -> pd.DataFrame:
    """``filter_summary_lineage(...)`` as a DataFrame (one row per run, flattened columns).
    ``series`` adds columns of series statistics (``["max(eval/accuracy)", "min(loss)"]``)
    besides those the condition names.

    Raises what ``filter_summary_lineage`` raises, ``LineageFileNotFoundError`` for a base
    without any lineage file included (a filter that matches nothing gives an empty frame).
    """
    import pandas as pd  # an optional dependency: imported only when a table is asked for

    result = filter_summary_lineage(
        summary_base_dir, search_condition, max_depth=max_depth, series=series
    )
    columns, rows = flatten_result(result)
    return pd.DataFrame([[row.get(c) for c in columns] for row in rows], columns=columns)
