"""Ask MindInsight 2.3.1 what it reads of this fixture's runs (run once, output committed).

Usage, from the repository root, with the venv of ``/work/shared/tools/mindinsight-venv.sh``
(MindInsight 2.3.1, NumPy < 2)::

    /tmp/venv-mi/bin/python tests/golden/train-begin/record_mindinsight.py

Writes ``mindinsight.json`` next to this file: for each run of ``runs/``, how many events of
each lineage kind MindInsight's own ``LineageSummaryAnalyzer`` finds in its lineage file (the
``train_begin`` event is none of them); and ``filter_summary_lineage`` over ``runs/`` (each
run's ``model_lineage``; 2.3.1 has no ``get_summary_lineage``). Not a test module;
tests/lineage/test_train_begin.py reads the answers, the tests never need MindInsight.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

if int(np.__version__.split(".")[0]) >= 2:
    sys.exit(f"MindInsight 2.3.1 needs NumPy < 2 (found {np.__version__}): mindinsight-venv.sh")

from mindinsight.lineagemgr.model import filter_summary_lineage  # noqa: E402
from mindinsight.lineagemgr.summary.lineage_summary_analyzer import (  # noqa: E402
    LineageSummaryAnalyzer,
)

HERE = Path(__file__).resolve().parent
KINDS = ("train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info")


def main() -> None:
    import mindinsight

    runs = HERE / "runs"
    answers: dict[str, object] = {}
    for run in sorted(p for p in runs.iterdir() if p.is_dir()):
        (path,) = run.glob("*_lineage")
        counts = dict.fromkeys(KINDS, 0)
        for event in LineageSummaryAnalyzer(str(path)).load_events():
            for kind in KINDS:
                if event.HasField(kind):
                    counts[kind] += 1
        answers[run.name] = {"events": counts}
    found = filter_summary_lineage(summary_base_dir=str(runs))
    answers["filter_summary_lineage"] = {
        o["summary_dir"]: o["model_lineage"] for o in found["object"]
    }
    answers["recorded_with"] = {"mindinsight": mindinsight.__version__, "numpy": np.__version__}
    text = json.dumps(answers, indent=1, sort_keys=True, default=str)
    (HERE / "mindinsight.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
