"""Hyperparameter importance over 2,000 runs, cold (issue 32: <= 5 s, cached per data version).

Generates N runs (``bench/ui_api.py``'s generator: a pseudo-random accuracy, a run counter
``user_defined/trial``, nine varying fields), selects them with ``filter_summary_lineage``,
then times in alternating, paired rounds:

- ours: ``hyperparameter_importance(result, "accuracy")`` from scratch (5 folds, a forest of
  100 trees each, permutation importance on each fold's held-out runs; what the API computes
  once per data version and then answers from its cache);
- the peer: what a user writes by hand with scikit-learn on the same matrix, one
  ``RandomForestRegressor(n_estimators=100)`` fitted on 80 % of the runs and
  ``permutation_importance(n_repeats=5)`` on the other 20 % (one split, no cross-validation).

    .venv/bin/python bench/importance.py --runs 2000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_api import generate  # noqa: E402 (the sibling bench module)

from trainledger.query import filter_summary_lineage, hyperparameter_importance  # noqa: E402
from trainledger.query import importance as engine  # noqa: E402
from trainledger.query.table import flatten_object  # noqa: E402


def by_hand(result: dict[str, Any], field: str) -> None:
    """The peer: one forest, one held-out split, on the columns ours uses (ids included)."""
    import numpy as np
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import train_test_split

    rows = [flatten_object(o) for o in result["object"]]
    rows = [r for r in rows if isinstance(r.get(field), (int, float))]
    columns = engine._columns(rows)  # (the same columns, so both fit the same matrix)
    matrix = np.asarray(engine._matrix(rows, columns))
    y = np.asarray([float(r[field]) for r in rows])
    x_train, x_test, y_train, y_test = train_test_split(matrix, y, test_size=0.2, random_state=0)
    forest = RandomForestRegressor(n_estimators=100, random_state=0).fit(x_train, y_train)
    permutation_importance(forest, x_test, y_test, n_repeats=5, random_state=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="work directory (default: a temp dir)")
    args = parser.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="importance-"))
    base = work / f"runs{args.runs}"
    if not base.exists():
        generate(base, args.runs)
    result = filter_summary_lineage(str(base))
    answer = hyperparameter_importance(result, "accuracy")  # warm-up: imports
    ours: list[float] = []
    theirs: list[float] = []
    for k in range(args.rounds):
        for side in ("ours", "theirs") if k % 2 == 0 else ("theirs", "ours"):
            start = time.perf_counter()
            if side == "ours":
                hyperparameter_importance(result, "accuracy")
            else:
                by_hand(result, "metric/accuracy")
            (ours if side == "ours" else theirs).append(time.perf_counter() - start)
    ratios = sorted(o / t for o, t in zip(ours, theirs, strict=True))
    print(f"{answer['runs']} runs, {len(answer['parameters'])} parameters, held-out R² "
          f"{answer['heldout_r2']}, left out {answer['left_out']}")  # fmt: skip
    for name, times in (("ours (5 folds)", ours), ("by hand (1 split)", theirs)):
        s = sorted(times)
        print(f"{name}: median {statistics.median(s):.2f} s [{s[0]:.2f}-{s[-1]:.2f}]")
    print(f"ratio ours / by hand: median {statistics.median(ratios):.2f} "
          f"[{ratios[0]:.2f}-{ratios[-1]:.2f}] (target: ours <= 5 s cold)")  # fmt: skip


if __name__ == "__main__":
    main()
