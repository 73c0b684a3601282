"""``roc_auc``: the exact binary area under the ROC curve, by ranks.

Why its own module: it is the one piece of statistics among the metrics (``run/metrics.py``
holds MindSpore's metric protocol and the accumulators); ``ROCAUC`` and any caller with plain
arrays use it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["roc_auc"]


def roc_auc(scores: np.ndarray, positives: np.ndarray) -> float:
    """Exact binary ROC-AUC by ranks (Mann-Whitney U, ties get their average rank).

    NaN when only one class is present: the area is undefined there.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    positives = np.asarray(positives).reshape(-1).astype(bool)
    n_pos = int(positives.sum())
    n_neg = positives.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(scores.size, dtype=np.float64)
    # average ranks of tied groups
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [scores.size]))
    avg = (starts + ends + 1) / 2.0  # 1-based mean rank of each group
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[positives].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))
