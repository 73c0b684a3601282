"""Write ``baseline_index/``: the golden runs plus an ``index.db`` made by the ORIGINAL code.

Run with the pre-issue-16 package first on the path (commit ad318c0, /work/wt/baseline)::

    PYTHONPATH=/work/wt/baseline/src .venv/bin/python tests/query/data/make_baseline_index.py

It copies ``tests/golden/mindspore-runs``, fixes every file's mtime (git does not keep them, and
the index matches runs by name, size and mtime), builds the index with that version's
``LineageIndex``, sets an annotation, and records that version's answers to a few queries.
``test_baseline_index.py`` checks that today's code reads the same index and answers the same.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import trainledger
from trainledger.query.index import LineageIndex

HERE = Path(__file__).parent
GOLDEN = HERE.parents[1] / "golden" / "mindspore-runs"
OUT = HERE / "baseline_index"
T0_NS = 1_795_284_300 * 10**9
CONDITIONS: list[dict[str, object] | None] = [
    None,
    {"sorted_name": "metric/Accuracy", "sorted_type": "descending"},
    {"learning_rate": {"gt": 0.005}, "sorted_name": "summary_dir"},
    {"optimizer": {"in": ["Momentum"]}, "lineage_type": {"eq": "model"}},
    {"lineage_type": {"eq": "dataset"}, "offset": 0, "limit": 2},
    {"sorted_name": "tag", "sorted_type": "descending"},
]


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    runs = OUT / "runs"
    shutil.copytree(GOLDEN, runs)
    mtimes = {}
    for i, path in enumerate(sorted(p for p in runs.rglob("*") if p.is_file())):
        ns = T0_NS + i * 10**9
        os.utime(path, ns=(ns, ns))
        mtimes[path.relative_to(runs).as_posix()] = ns
    with LineageIndex(runs) as index:
        index.set_annotation("./adam_lr001", tag=5, remark="from the original version")
        answers = [index.query(cond) for cond in CONDITIONS]
    (OUT / "mtimes.json").write_text(json.dumps(mtimes, indent=1, sort_keys=True) + "\n")
    (OUT / "answers.json").write_text(
        json.dumps(
            {
                "written_by": str(Path(trainledger.__file__).parents[2]),
                "conditions": CONDITIONS,
                "answers": answers,
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    for leftover in (runs / ".trainledger").glob("*.lock"):
        leftover.unlink()


if __name__ == "__main__":
    main()
