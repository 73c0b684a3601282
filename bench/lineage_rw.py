"""Lineage write and read cost.

Write: TrainLineage + EvalLineage around a hand-driven run (begin, 3 epoch snapshots, end,
eval end; every phase fsynced) vs. the same fields dumped as JSON with one fsync (what a user
would write by hand). Read: ``read_lineage`` over N run directories vs. MindInsight's way of
parsing the same files (its schema, ``MessageToDict`` per event), in one process.

    .venv/bin/python bench/lineage_rw.py --runs 300
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from google.protobuf.json_format import MessageToDict
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainledger.callbacks.lineage import EvalLineage, TrainLineage
from trainledger.lineage.reader import read_lineage
from trainledger.run.callback import CallbackParams, RunContext
from trainledger.storage import list_lineage_files, read_records

REPO = Path(__file__).resolve().parents[1]


def _params() -> CallbackParams:
    net = nn.Linear(8, 2)
    data = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
    return CallbackParams(
        network=net,
        train_network=net,
        optimizer=torch.optim.Adam(net.parameters(), lr=1e-3),
        loss_fn=nn.CrossEntropyLoss(),
        epoch_num=3,
        cur_epoch_num=0,
        cur_step_num=0,
        batch_num=8,
        net_outputs=torch.tensor(0.5),
        train_dataset=DataLoader(data, batch_size=32),
        valid_dataset=DataLoader(data, batch_size=64),
        parallel_mode="stand_alone",
        device_number=1,
        list_callback=[],
        latest_ckpt_file=None,
        exception=None,
        stop_reason="completed",
        metrics={"accuracy": 0.9, "loss": 0.3},
    )


def write_ours(run_dir: Path, params: CallbackParams) -> None:
    rc = RunContext(params)
    train = TrainLineage(run_dir, user_defined_info={"team": "a", "trial": 1})
    train.on_train_begin(rc)
    for epoch in (1, 2, 3):
        params.cur_epoch_num, params.cur_step_num = epoch, 8 * epoch
        train.on_train_epoch_end(rc)
    train.on_train_end(rc)
    EvalLineage(run_dir).on_eval_end(rc)


def write_json(run_dir: Path, params: CallbackParams) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "optimizer": type(params.optimizer).__name__,
        "learning_rate": 1e-3,
        "loss_function": "CrossEntropyLoss",
        "epoch": 3,
        "batch_size": 32,
        "train_dataset_size": 256,
        "network": "Linear",
        "loss": 0.5,
        "metric": params.metrics,
        "user_defined": {"team": "a", "trial": 1},
    }
    with open(run_dir / "lineage.json", "w") as fh:
        json.dump(record, fh)
        fh.flush()
        os.fsync(fh.fileno())


def _mindinsight_pb2(tmp: Path):  # type: ignore[no-untyped-def]
    from grpc_tools import protoc

    (tmp / "mindinsight_lineage.proto").write_bytes(
        (REPO / "tests/golden/mindinsight_lineage.proto").read_bytes()
    )
    protoc.main(
        ["protoc", f"-I{tmp}", f"--python_out={tmp}", str(tmp / "mindinsight_lineage.proto")]
    )
    spec = importlib.util.spec_from_file_location(
        "mindinsight_lineage_pb2", tmp / "mindinsight_lineage_pb2.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["mindinsight_lineage_pb2"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def read_mindinsight_way(run_dir: Path, mi) -> dict:  # type: ignore[no-untyped-def]
    out: dict = {}
    for f in list_lineage_files(run_dir):
        for payload in read_records(f.path)[0]:
            event = mi.LineageEvent.FromString(payload)
            kind = event.WhichOneof("what")
            if kind:
                out[kind] = MessageToDict(event, preserving_proto_field_name=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        params = _params()
        t0 = time.perf_counter()
        for i in range(args.runs):
            write_ours(base / "ours" / f"run{i}", _params())
        ours_w = (time.perf_counter() - t0) / args.runs
        t0 = time.perf_counter()
        for i in range(args.runs):
            write_json(base / "json" / f"run{i}", params)
        json_w = (time.perf_counter() - t0) / args.runs
        dirs = sorted((base / "ours").iterdir())
        t0 = time.perf_counter()
        for d in dirs:
            read_lineage(d)
        ours_r = time.perf_counter() - t0
        mi = _mindinsight_pb2(base)
        t0 = time.perf_counter()
        for d in dirs:
            read_mindinsight_way(d, mi)
        mi_r = time.perf_counter() - t0
    print(
        f"write per run: trainledger {ours_w * 1e3:.2f} ms (5 fsynced phases, analyzers, git) "
        f"vs hand-written JSON {json_w * 1e3:.2f} ms (1 fsync): ratio {ours_w / json_w:.1f}"
    )
    print(
        f"read {args.runs} runs: read_lineage {ours_r * 1e3:.0f} ms "
        f"({args.runs / ours_r:.0f} runs/s) vs MindInsight-style MessageToDict "
        f"{mi_r * 1e3:.0f} ms: ratio {ours_r / mi_r:.2f}"
    )


if __name__ == "__main__":
    main()
