"""``lineage_table``: the filter result as a pandas DataFrame, one row per run.

Why flat columns: analysis code wants ``df["metric/Accuracy"]``, not nested dicts. Column
order: ``summary_dir``, MindInsight's fields, then every ``metric/<name>`` and
``user_defined/<name>`` of the result (from ``customized``), then ``tag`` and ``remark``.
pandas is imported only when ``lineage_table`` is called; ``flatten_result`` (used by the
CLI's csv output) needs no pandas.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from trainledger.query.conditions import FIELDS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["lineage_table", "flatten_result", "flatten_object"]


def flatten_object(obj: dict[str, Any]) -> dict[str, Any]:
    """One result object as a flat row."""
    row: dict[str, Any] = {"summary_dir": obj.get("summary_dir")}
    model = obj.get("model_lineage")
    if model is not None:
        for key, value in model.items():
            if key in ("metric", "user_defined"):
                for name, item in (value or {}).items():
                    row[f"{key}/{name}"] = item
            else:
                row[key] = value
    added = obj.get("added_info") or {}
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
    columns += ["tag", "remark"]
    return columns, rows


def lineage_table(
    summary_base_dir: str | os.PathLike[str],
    search_condition: dict[str, Any] | None = None,
    *,
    max_depth: int = 1,
) -> pd.DataFrame:
    """``filter_summary_lineage(...)`` as a DataFrame (one row per run, flattened columns)."""
    import pandas as pd

    from trainledger.query.api import filter_summary_lineage

    result = filter_summary_lineage(summary_base_dir, search_condition, max_depth=max_depth)
    columns, rows = flatten_result(result)
    return pd.DataFrame([[row.get(c) for c in columns] for row in rows], columns=columns)
