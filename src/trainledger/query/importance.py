"""Which hyperparameters matter for a metric, over the runs a query selected.

MindInsight stops at showing runs side by side; a team with a hundred runs wants to know
which knob moved the score. The method is a maintained, assumption-light one: a random forest
(scikit-learn) fitted to predict the metric from the hyperparameters, then permutation
importance (how much the forest's R^2 drops when one hyperparameter's values are shuffled),
repeated with several seeds so the spread shows how much to trust each figure. Numeric fields
are used as they are (a missing value becomes the column's median), categorical ones (the
optimizer, a ``user_defined`` string) as ordinal codes; a field equal in every run says
nothing and is left out. Below ``MIN_RUNS`` runs with the metric, no figure is given, only
why.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from trainledger.lazy import missing_extra
from trainledger.query.conditions import HYPERPARAMETERS
from trainledger.query.table import flatten_object

__all__ = ["MIN_RUNS", "hyperparameter_importance"]

#: fewer runs than this carry too little signal for a forest: the answer says why instead
MIN_RUNS = 8


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, "numeric" | "categorical") of every parameter that varies across ``rows``."""
    user = sorted({k for r in rows for k in r if k.startswith("user_defined/")})
    names = [*HYPERPARAMETERS, *user]
    out = []
    for name in names:
        values = [r.get(name) for r in rows if r.get(name) is not None]
        if len({repr(v) for v in values}) < 2:
            continue
        numeric = all(_number(v) is not None for v in values)
        out.append((name, "numeric" if numeric else "categorical"))
    return out


def _matrix(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> list[list[float]]:
    table: list[list[float]] = [[] for _ in rows]
    for name, kind in columns:
        if kind == "numeric":
            present = [float(r[name]) for r in rows if _number(r.get(name)) is not None]
            fill = statistics.median(present)
            cells = [_number(r.get(name)) for r in rows]
            values = [fill if c is None else c for c in cells]
        else:
            codes: dict[str, int] = {}
            values = [float(codes.setdefault(repr(r.get(name)), len(codes))) for r in rows]
        for row, value in zip(table, values, strict=True):
            row.append(value)
    return table


def hyperparameter_importance(
    result: Mapping[str, Any], metric: str, *, repeats: int = 5, seeds: int = 3
) -> dict[str, Any]:
    """Importance of each varying hyperparameter for ``metric`` over a query ``result``.

    ``metric`` is a metric name (``accuracy``) or field (``metric/accuracy``). Returns
    ``{"metric", "runs", "parameters": [{"name", "kind", "importance", "spread", "per_seed",
    "values", "metric_values"}, ...]}`` sorted by importance (the mean drop in R^2 when the
    parameter is shuffled, over ``seeds`` forests x ``repeats`` shuffles; ``spread`` is the
    standard deviation of the per-seed means; ``values`` / ``metric_values`` are the points of
    a scatter plot), or with ``"reason"`` instead of parameters when there is too little data.
    """
    field = metric if metric.startswith("metric/") else f"metric/{metric}"
    rows = [flatten_object(obj) for obj in result.get("object", [])]
    rows = [r for r in rows if _number(r.get(field)) is not None]
    answer: dict[str, Any] = {"metric": field, "runs": len(rows), "parameters": []}
    if len(rows) < MIN_RUNS:
        answer["reason"] = (
            f"{len(rows)} runs have {field}; importance needs at least {MIN_RUNS} "
            "(a forest fitted on fewer says more about chance than about the parameters)"
        )
        return answer
    columns = _columns(rows)
    if not columns:
        answer["reason"] = "every hyperparameter has the same value in all these runs"
        return answer
    target = [float(r[field]) for r in rows]
    if len(set(target)) < 2:
        answer["reason"] = f"{field} is the same in all these runs: nothing to explain"
        return answer
    try:
        from sklearn.ensemble import RandomForestRegressor  # noqa: PLC0415 - optional
        from sklearn.inspection import permutation_importance  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        missing = missing_extra("hyperparameter importance", exc.name or "sklearn")
        if missing is None:
            raise
        raise missing from exc
    matrix = _matrix(rows, columns)
    per_seed: list[list[float]] = []
    for seed in range(seeds):
        forest = RandomForestRegressor(n_estimators=100, random_state=seed, min_samples_leaf=2)
        forest.fit(matrix, target)
        drop = permutation_importance(
            forest, matrix, target, n_repeats=repeats, random_state=seed
        ).importances_mean
        per_seed.append([float(v) for v in drop])
    for j, (name, kind) in enumerate(columns):
        means = [seed_means[j] for seed_means in per_seed]
        answer["parameters"].append(
            {
                "name": name,
                "kind": kind,
                "importance": statistics.fmean(means),
                "spread": statistics.pstdev(means),
                "per_seed": means,
                "values": [r.get(name) for r in rows],
                "metric_values": target,
            }
        )
    answer["parameters"].sort(key=lambda p: -p["importance"])
    return answer
