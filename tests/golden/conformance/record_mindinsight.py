"""Ask MindInsight 2.3.1 what it does with the inputs of the conformance tests (run once).

Usage: /work/venvs/mindinsight/bin/python tests/golden/conformance/record_mindinsight.py

Writes ``mindinsight.json`` next to this file: MindInsight's own texts of the errors
trainledger reproduces (built with MindInsight's exception classes), and what 2.3.1's
``filter_summary_lineage`` answered for the cases where its documentation says otherwise
(a plain-string ``lineage_type``, two operations on ``summary_dir``/``lineage_type``, a base
with no summary files). trainledger follows the documentation; tests/query/test_conformance.py
reads this file. Not a test module; tests never need the MindInsight venv.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

for _name, _value in (("PINF", np.inf), ("NINF", -np.inf)):  # MindInsight 2.3.1 on NumPy 2
    setattr(np, _name, _value)

from mindinsight.lineagemgr.common.exceptions.exceptions import (  # noqa: E402
    LineageFileNotFoundError,
    LineageSearchConditionParamError,
)
from mindinsight.lineagemgr.model import filter_summary_lineage  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE.parent / "mindspore-runs"


def answer(base: str, cond: Any) -> dict[str, Any]:
    try:
        got = filter_summary_lineage(summary_base_dir=base, search_condition=cond)
    except Exception as exc:  # the answer is the error
        return {"error": type(exc).__name__, "message": getattr(exc, "message", str(exc))}
    return {
        "count": got["count"],
        "summary_dirs": sorted(o["summary_dir"] for o in got["object"]),
        "parts": sorted({k for o in got["object"] for k in o if k != "summary_dir"}),
    }


def main() -> None:
    empty = tempfile.mkdtemp()
    messages = {
        "no_run_lineage": LineageFileNotFoundError(
            "There is no summary log file under summary_dir."
        ).message,
        "no_base_lineage": LineageFileNotFoundError(
            "There is no summary log file under summary_base_dir."
        ).message,
        "more_than_one_operation": LineageSearchConditionParamError(
            "More than one operation of summary_dir."
        ).message,
    }
    cases = {
        "lineage_type_eq_model": {"lineage_type": {"eq": "model"}},
        "lineage_type_eq_dataset": {"lineage_type": {"eq": "dataset"}},
        "lineage_type_plain_model": {"lineage_type": "model"},
        "lineage_type_plain_dataset": {"lineage_type": "dataset"},
        "summary_dir_two_ops": {"summary_dir": {"in": ["./sgd_noeval"], "eq": "./adam_lr001"}},
        "lineage_type_two_ops": {"lineage_type": {"in": ["model"], "eq": "model"}},
    }
    recorded = json.loads(json.dumps(cases))  # MindInsight edits conditions in place
    out = {
        "mindinsight": "2.3.1",
        "messages": messages,
        "conditions": recorded,
        "answers": {name: answer(str(RUNS), cond) for name, cond in cases.items()},
        "empty_base": answer(empty, None),
    }
    (HERE / "mindinsight.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
