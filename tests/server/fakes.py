"""An in-memory RunStore for route tests that need no files (the query semantics are real)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainledger.query.conditions import validate_condition
from trainledger.query.semantics import evaluate
from trainledger.server.security import RunNotFound, check_run_id
from trainledger.summary import SessionSeries


def make_record(i: int, **over: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "summary_dir": f"./run{i:03d}",
        "loss_function": "CrossEntropyLoss",
        "train_dataset_path": "/data/train",
        "train_dataset_count": 1000,
        "test_dataset_path": "/data/test",
        "test_dataset_count": 200,
        "network": "MLP",
        "optimizer": ["Adam", "SGD", "Momentum"][i % 3],
        "learning_rate": round(0.001 * (i + 1), 6),
        "epoch": 1 + i % 4,
        "batch_size": [16, 32, 64][i % 3],
        "device_num": 1,
        "loss": 1.0 / (i + 1),
        "model_size": 1000 + i,
        "dataset_mark": str(1 + i % 2),
        "metric": {"accuracy": 0.5 + i / 100},
        "user_defined": {"team": "ab"[i % 2]},
        "dataset_graph": {
            "op_type": "DataLoader",
            "batch_size": [16, 32, 64][i % 3],
            "children": [{"op_type": "TensorDataset", "children": []}],
        },
        "update_time": 1000.0 + i,
        "added_info": {},
    }
    record.update(over)
    return record


class FakeStore:
    """Records in memory; scalars are synthetic lines (value = run index + step / 1000)."""

    def __init__(self, base: Path, n: int = 5, points: int = 50) -> None:
        self.base = base
        self.records = {f"run{i:03d}": make_record(i) for i in range(n)}
        self.points = points
        self.closed = False
        self.archived_records: dict[str, dict[str, Any]] = {}
        self.audit_entries: list[dict[str, Any]] = []

    def _get(self, run_id: str) -> dict[str, Any]:
        run_id = check_run_id(run_id)
        if run_id not in self.records:
            raise RunNotFound(run_id)
        return self.records[run_id]

    def search(self, condition: Mapping[str, Any] | None) -> dict[str, Any]:
        result = evaluate(self.records.values(), validate_condition(condition))
        for obj in result["object"]:
            obj["run_id"] = obj["summary_dir"][2:]
        return result

    def stamp(self, scan: bool = True) -> dict[str, Any]:
        return {"stamp": str(len(self.records)), "count": len(self.records)}

    def run_ids(self) -> frozenset[str]:
        return frozenset(self.records)

    def run_detail(self, run_id: str) -> dict[str, Any]:
        record = self._get(run_id)
        return {
            "run_id": run_id,
            "summary_dir": record["summary_dir"],
            "status": "finished",
            "lineage": {
                "metric": record["metric"],
                "user_defined": record["user_defined"],
                "dataset_graph": record["dataset_graph"],
            },
            "added_info": {"tag": 0, "remark": "", **record["added_info"]},
        }

    def run_info(self, run_id: str) -> dict[str, Any]:
        self._get(run_id)
        return {"status": "finished"}

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        self._get(run_id)
        return [{"name": "net-1_10.ckpt", "size": 10, "epoch": 1, "step": 10, "time": 1.0}]

    def annotate(
        self, run_id: str, *, tag: int | None = None, remark: str | None = None
    ) -> dict[str, Any]:
        info = self._get(run_id)["added_info"]
        if tag is not None:
            info["tag"] = tag
        if remark is not None:
            info["remark"] = remark
        return {"run_id": run_id, "tag": info.get("tag", 0), "remark": info.get("remark", "")}

    def archive(self, run_id: str, *, force: bool = False) -> str:
        self.archived_records[run_id] = self.records.pop(check_run_id(run_id))
        return f".trainledger-archive/{run_id}"

    def restore(self, run_id: str) -> None:
        self.records[run_id] = self.archived_records.pop(run_id)

    def archived(self) -> list[str]:
        return sorted(self.archived_records)

    def delete(self, run_id: str, *, force: bool = False) -> list[str]:
        self._get(run_id)
        del self.records[run_id]
        return [run_id]

    def audit(self, actor: str, action: str, run_id: str, **detail: Any) -> None:
        self.audit_entries.append({"actor": actor, "action": action, "run": run_id, **detail})

    def audit_log(self, limit: int) -> list[dict[str, Any]]:
        return self.audit_entries[-limit:]

    def compile_where(self, expressions: Sequence[str]) -> dict[str, Any]:
        cond: dict[str, Any] = {}
        for text in expressions:
            field, op, value = text.split()
            ops = {"=": "eq", ">": "gt", "<": "lt", ">=": "ge", "<=": "le"}
            if op not in ops:
                raise ValueError(f"unknown operator {op!r}")
            cond.setdefault(field, {})[ops[op]] = _number(value)
        return cond

    def scalar_tags(self, run_id: str) -> list[str]:
        self._get(run_id)
        return ["loss", "accuracy"]

    def nonfinite(self, run_id: str) -> list[dict[str, Any]]:
        return []  # (no index: no series went non-finite)

    def scalar_overview(self, run_id: str, tag: str) -> None:
        return None  # (no index: every series is read as points)

    def scalar_series(self, run_id: str, tag: str, view: str = "merged") -> SessionSeries:
        index = int(self._get(run_id)["summary_dir"][5:])
        steps = np.arange(self.points, dtype=np.int64)
        return steps, 1000.0 + steps, index + steps / 1000, np.zeros(self.points, np.int32)

    def media(self, run_id: str, kind: str) -> dict[str, list[Any]]:
        self._get(run_id)
        return {}

    def landscapes(self, run_id: str) -> list[dict[str, Any]]:
        self._get(run_id)
        return []

    def graph(self, run_id: str, max_nodes: int) -> dict[str, Any] | None:
        self._get(run_id)
        return None

    def family(self, run_id: str) -> dict[str, Any]:
        self._get(run_id)
        return {
            "run": f"./{run_id}",
            "run_id": run_id,
            "metric": {},
            "ancestors": [],
            "descendants": [],
            "evaluations": [],
        }

    def close(self) -> None:
        self.closed = True


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
