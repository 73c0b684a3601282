"""Ask MindInsight 2.3.1 for its answers to a corpus of conditions (run once, output committed).

Usage (the MindInsight venv is built by /work/shared/tools/mindinsight-venv.sh):

    .venv-mindinsight/bin/python tests/query/data/make_mindinsight_oracle.py

Writes ``mindinsight_oracle.json`` next to this file: for each condition, MindInsight's result
over a copy of tests/golden/mindspore-runs (with the mtimes of tests/query/conftest.py) or its
error class and message. Not a test module; the MindInsight venv is not needed to run tests.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ORDER = ["momentum_twice", "sgd_noeval", "adam_lr001", "momentum_lr01"]

STR_FIELDS = [
    "summary_dir",
    "loss_function",
    "train_dataset_path",
    "test_dataset_path",
    "network",
    "optimizer",
    "dataset_mark",
]
INT_FIELDS = [
    "train_dataset_count",
    "test_dataset_count",
    "epoch",
    "batch_size",
    "device_num",
    "model_size",
]
FLOAT_FIELDS = ["learning_rate", "loss"]
OPS = ["eq", "lt", "gt", "le", "ge", "in", "not_in"]


def corpus() -> list:
    conds: list = [None, {}, [], "x", 3]
    for key in ("limit", "offset"):
        for v in (0, 1, 5, 100, 101, 100000, 100001, -1, True, 2.0, "3", None):
            conds.append({key: v})
    for v in (
        "summary_dir",
        "loss",
        "metric/Accuracy",
        "metric/",
        "user_defined/team",
        "user_defined/",
        "tag",
        "bogus",
        5,
        None,
        "metric_Accuracy",
    ):
        conds.append({"sorted_name": v})
        conds.append({"sorted_name": v, "sorted_type": "descending"})
    for v in ("ascending", "descending", None, "up", 1):
        conds.append({"sorted_type": v})
        conds.append({"sorted_name": "batch_size", "sorted_type": v})
    values = {
        "str": ["Momentum", "./sgd_noeval", "SoftmaxCrossEntropyWithLogits", "MLP", "2"],
        "int": [0, 24, 192, 2307, -1, 2**63, True],
        "float": [0.02, 0.05, 1, 0.6674657, True, "0.1"],
    }
    for field in STR_FIELDS + INT_FIELDS + FLOAT_FIELDS:
        kind = "str" if field in STR_FIELDS else "int" if field in INT_FIELDS else "float"
        for op in OPS:
            for v in values[kind][:3]:
                conds.append({field: {op: [v] if op in ("in", "not_in") else v}})
            conds.append({field: {op: "notalist" if op in ("in", "not_in") else [1]}})
        for v in values[kind][3:]:
            conds.append({field: {"eq": v}})
        conds.append({field: "notadict"})
        conds.append({field: {"like": 1}})
        conds.append({field: {"in": ["Momentum", 24, 0.1]}})
    for field in (
        "metric/Accuracy",
        "metric/Loss",
        "user_defined/team",
        "user_defined/trial",
        "metric/",
        "metric_Accuracy",
        "user_defined/missing",
    ):
        for op in OPS:
            for v in (0.75, "a", 1):
                conds.append({field: {op: [v] if op in ("in", "not_in") else v}})
    for lt in (
        {"eq": "dataset"},
        {"eq": "model"},
        {"in": ["model", "dataset"]},
        {"in": []},
        {"eq": "other"},
        "dataset",
        {"gt": "model"},
        {"in": "model"},
    ):
        conds.append({"lineage_type": lt})
    conds += [
        {"batch_size": {"ge": 16, "le": 30}, "sorted_name": "loss"},
        {"batch_size": {"ge": 16}, "optimizer": {"eq": "Momentum"}, "limit": 1},
        {"offset": 1},
        {"limit": 2},
        {"limit": 2, "offset": 1, "sorted_name": "metric/Accuracy", "sorted_type": "descending"},
        {"sorted_name": "user_defined/trial", "sorted_type": "descending"},
        {"sorted_name": "user_defined/team"},
        {"sorted_name": "test_dataset_count", "sorted_type": "descending"},
        {"sorted_name": "dataset_mark"},
        {"optimizer": {"gt": "A"}, "limit": 0},
        {"limit": 0, "optimizer": {"gt": "A"}},
        {"epoch": {"eq": -1}, "batch_size": {"in": 3}},
        {"network": {"lt": "x"}, "batch_size": {"eq": "x"}},
        {"bogus": {"eq": 1}, "limit": 0},
        {"learning_rate": {"like": 1}, "bogus": 1},
        {"lineage_type": "x", "limit": 0},
        {"limit": 0, "lineage_type": "x"},
        {"offset": -1, "limit": 0},
        {"lineage_type": {"eq": "x"}, "batch_size": {"eq": -1}},
        {"optimizer": {"gt": "A"}, "batch_size": {"eq": -1}},
        {"batch_size": {"eq": -1}, "optimizer": {"gt": "A"}},
        {"metric/Accuracy": {"eq": "x"}, "bogus": 1},
        {"sorted_type": "up", "limit": True},
        {"summary_dir": {"in": ["./momentum_lr01", "./sgd_noeval"]}},
        {"summary_dir": {"not_in": ["./momentum_lr01"]}},
        {"dataset_mark": {"in": ["2", "3"]}},
        {"model_size": {"gt": 2000}, "sorted_name": "summary_dir", "sorted_type": "descending"},
    ]
    return conds


def main() -> None:
    logging.disable(logging.CRITICAL)
    from mindinsight.lineagemgr.model import filter_summary_lineage

    tmp = Path(tempfile.mkdtemp())
    base = tmp / "runs"
    shutil.copytree(REPO / "tests" / "golden" / "mindspore-runs", base)
    t0 = 1_795_284_300
    for i, name in enumerate(reversed(ORDER)):
        for path in (base / name).rglob("*"):
            os.utime(path, (t0 + 10 * i, t0 + 10 * i))
    out = []
    for cond in corpus():
        entry: dict = {"condition": cond}
        try:
            entry["result"] = filter_summary_lineage(
                summary_base_dir=str(base), search_condition=cond
            )
        except Exception as exc:  # noqa: BLE001 - recording MindInsight's behaviour
            entry["error"] = type(exc).__name__
            entry["message"] = getattr(exc, "message", str(exc))
        out.append(entry)
    (HERE / "mindinsight_oracle.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    shutil.rmtree(tmp)
    print(f"{len(out)} conditions", file=sys.stderr)


if __name__ == "__main__":
    main()
