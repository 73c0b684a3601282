"""Which hyperparameters matter for a metric, over the runs a query selected.

MindInsight stops at showing runs side by side; a team with a hundred runs wants to know
which knob moved the score. The method is a maintained, assumption-light one: a random forest
(scikit-learn) fitted to predict the metric from the hyperparameters, then permutation
importance (how much the forest's R^2 drops when one hyperparameter's values are shuffled).

Why held-out runs: a forest scored on the runs it learned from finds "importance" in pure
noise (a run counter ranked first at 0.78 over 2,000 runs of a random metric). So the runs are
split in ``FOLDS`` folds; each fold's forest is scored on the runs it did not see, the
importance is the mean over the folds (``spread`` their standard deviation), and the
held-out R^2 says whether the parameters predict the metric at all: below
``EXPLAINS_R2`` the answer says plainly that they do not. Id-like fields (named id, run,
trial, seed, counter, step..., or an integer unique per run that grows with the runs' order in
time) are left out unless asked for: they explain nothing that generalises. Random-searched
values (a log-uniform learning rate, unique per run) stay. Each parameter's direction is the
sign of its rank correlation with the metric (numeric) or its best and worst level
(categorical). Numeric fields are used as they are (a missing value becomes the column's
median), categorical ones as ordinal codes; a field equal in every run is left out. Below
``MIN_RUNS`` runs with the metric, no figure is given, only why.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping
from typing import Any

from trainledger.lazy import missing_extra
from trainledger.query.fields import HYPERPARAMETERS, PARAMETER_PREFIXES
from trainledger.query.table import flatten_object

__all__ = ["EXPLAINS_R2", "MIN_RUNS", "hyperparameter_importance"]

#: fewer runs than this carry too little signal for a forest: the answer says why instead
MIN_RUNS = 8
#: below this held-out R^2 the parameters do not explain the metric (the answer says so)
EXPLAINS_R2 = 0.1
FOLDS = 5
_ID_NAME = re.compile(
    r"(^|[/_.\- ])(id|uid|uuid|run|run_id|trial|trial_id|seed|counter|step|index|idx)$",
    re.IGNORECASE,
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _id_like(name: str, values: list[Any]) -> bool:
    """A name that says it counts runs, or an integer unique per run that follows the runs'
    order in time (``values`` in the result's default order, newest first)."""
    if _ID_NAME.search(name):
        return True
    if len(values) < 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return False
    if len(set(values)) != len(values):
        return False
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    return all(d < 0 for d in steps) or all(d > 0 for d in steps)


def _columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, "numeric" | "categorical") of every parameter that varies across ``rows``."""
    user = sorted({k for r in rows for k in r if k.startswith(PARAMETER_PREFIXES)})
    names = [*HYPERPARAMETERS, *user]
    out = []
    for name in names:
        values = [r.get(name) for r in rows if r.get(name) is not None]
        if len({repr(v) for v in values}) < 2:
            continue
        numeric = all(_number(v) is not None for v in values)
        out.append((name, "numeric" if numeric else "categorical"))
    return out


def same_parameters(
    rows: list[dict[str, Any]], columns: list[tuple[str, str]]
) -> dict[str, list[str]]:
    """{kept name: [its other names]}: columns holding the same value in every row are one
    parameter under several names (``learning_rate`` and ``optimizer/lr``); the first in
    ``columns``' order (the standard field before a prefixed one) is kept. Why: two copies
    of one value split its importance between them, and show one knob as two."""
    kept: dict[tuple[str, ...], str] = {}
    aliases: dict[str, list[str]] = {}
    for name, _ in columns:
        key = tuple(repr(r.get(name)) for r in rows)
        if key in kept:
            aliases[kept[key]].append(name)
        else:
            kept[key] = name
            aliases[name] = []
    return aliases


def log_scaled(values: list[Any]) -> bool:
    """A positive parameter spanning two decades or more (a learning rate, a weight decay):
    its scatter gets a log axis, as the runs page's chart does."""
    numbers = [float(v) for v in values if _number(v) is not None]
    return bool(numbers) and min(numbers) > 0 and max(numbers) / min(numbers) >= 100


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


def _direction(kind: str, values: list[Any], target: list[float]) -> dict[str, Any]:
    """Which way a parameter moves the metric: the sign of the rank correlation (numeric), or
    the levels with the best and worst mean (categorical)."""
    if kind == "numeric":
        from scipy.stats import spearmanr  # noqa: PLC0415 - with scikit-learn, optional

        pairs = [(float(v), t) for v, t in zip(values, target, strict=True) if v is not None]
        rho = float(spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic)
        return {"correlation": None if math.isnan(rho) else round(rho, 3)}
    means: dict[str, list[float]] = {}
    for value, t in zip(values, target, strict=True):
        means.setdefault(str(value), []).append(t)
    ranked = sorted(means, key=lambda k: statistics.fmean(means[k]))
    return {"lowest": ranked[0], "highest": ranked[-1]}


def _held_out(
    table: list[list[float]], target: list[float], repeats: int
) -> tuple[float, list[list[float]]]:
    """(the held-out R^2 over ``FOLDS`` folds, each fold's permutation importances): each
    fold's forest learns on the other runs and is scored, and shuffled, on its own."""
    import numpy as np  # noqa: PLC0415 - with scikit-learn
    from sklearn.ensemble import RandomForestRegressor  # noqa: PLC0415
    from sklearn.inspection import permutation_importance  # noqa: PLC0415
    from sklearn.metrics import r2_score  # noqa: PLC0415
    from sklearn.model_selection import KFold  # noqa: PLC0415

    matrix, y = np.asarray(table), np.asarray(target)
    predicted = np.zeros(len(y))
    per_fold: list[list[float]] = []
    folds = KFold(n_splits=min(FOLDS, len(y) // 2), shuffle=True, random_state=0)
    for k, (train, test) in enumerate(folds.split(matrix)):
        forest = RandomForestRegressor(n_estimators=100, random_state=k, min_samples_leaf=2)
        forest.fit(matrix[train], y[train])
        predicted[test] = forest.predict(matrix[test])
        drop = permutation_importance(
            forest, matrix[test], y[test], n_repeats=repeats, random_state=k
        ).importances_mean
        per_fold.append([float(v) for v in drop])
    return float(r2_score(y, predicted)), per_fold


def _parameter(
    name: str,
    kind: str,
    values: list[Any],
    target: list[float],
    means: list[float],
    aliases: list[str],
) -> dict[str, Any]:
    """One parameter of the answer (``hyperparameter_importance`` says what each key holds)."""
    return {
        "name": name,
        "kind": kind,
        "aliases": aliases,
        "log": kind == "numeric" and log_scaled(values),
        "importance": statistics.fmean(means),
        "spread": statistics.pstdev(means),
        "per_fold": means,
        "direction": _direction(kind, values, target),
        "values": values,
        "metric_values": target,
    }


def hyperparameter_importance(
    result: Mapping[str, Any],
    metric: str,
    *,
    repeats: int = 5,
    seeds: int = 3,
    include_ids: bool = False,
) -> dict[str, Any]:
    """Importance of each varying hyperparameter for ``metric`` over a query ``result``.

    ``metric`` is a metric name (``accuracy``) or field (``metric/accuracy``). Returns
    ``{"metric", "runs", "heldout_r2", "explains", "verdict", "left_out", "parameters":
    [{"name", "kind", "aliases", "log", "importance", "spread", "per_fold", "direction",
    "values", "metric_values"}, ...]}`` sorted by importance (the mean drop in held-out R^2 when the
    parameter is shuffled, over the folds x ``repeats`` shuffles; ``spread`` is the standard
    deviation over the folds; ``values`` / ``metric_values`` are the points of a scatter
    plot; ``aliases`` the other names of a parameter holding the same values in every run,
    counted once: ``same_parameters``; ``log``: its scatter wants a log axis), or with
    ``"reason"`` instead of parameters when there is too little data.
    ``include_ids`` keeps id-like fields (see the module's docstring); ``seeds`` is unused
    (kept for callers of the earlier signature: the folds give the spread now).
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
    left_out = (
        [] if include_ids else [n for n, _ in columns if _id_like(n, [r.get(n) for r in rows])]
    )
    columns = [c for c in columns if c[0] not in left_out]
    answer["left_out"] = left_out
    aliases = same_parameters(rows, columns)
    columns = [c for c in columns if c[0] in aliases]
    if not columns:
        answer["reason"] = "every hyperparameter has the same value in all these runs"
        return answer
    target = [float(r[field]) for r in rows]
    if len(set(target)) < 2:
        answer["reason"] = f"{field} is the same in all these runs: nothing to explain"
        return answer
    try:
        import sklearn  # noqa: F401, PLC0415 - optional: the extra [demo]
    except ModuleNotFoundError as exc:
        missing = missing_extra("hyperparameter importance", exc.name or "sklearn")
        if missing is None:
            raise
        raise missing from exc
    r2, per_fold = _held_out(_matrix(rows, columns), target, repeats)
    answer["heldout_r2"] = round(r2, 3)
    answer["explains"] = r2 >= EXPLAINS_R2
    answer["verdict"] = (
        f"held-out R² {r2:.2f}: the parameters predict {field} on runs the forest did not see"
        if r2 >= EXPLAINS_R2
        else f"these parameters do not explain {field}: on runs it did not see, the forest "
        f"predicts it no better than its mean (held-out R² {r2:.2f})"
    )
    for j, (name, kind) in enumerate(columns):
        values = [r.get(name) for r in rows]
        means = [fold_means[j] for fold_means in per_fold]
        answer["parameters"].append(_parameter(name, kind, values, target, means, aliases[name]))
    answer["parameters"].sort(key=lambda p: -p["importance"])
    return answer
