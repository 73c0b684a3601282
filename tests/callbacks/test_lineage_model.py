"""TrainLineage / EvalLineage inside the real Model loop, with ModelCheckpoint, failures,
stops, and a run killed with SIGKILL mid-training."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainledger.callbacks.checkpoint import ModelCheckpoint
from trainledger.callbacks.lineage import EvalLineage, TrainLineage
from trainledger.checkpoint.config import CheckpointConfig
from trainledger.errors import CallbackError
from trainledger.lineage.reader import read_lineage
from trainledger.lineage.writer import clear_registry
from trainledger.run.callback import Callback, RunContext
from trainledger.run.model import Model
from trainledger.storage import list_lineage_files

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    clear_registry()


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def _data(n: int = 48) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _model(lr: float = 0.05) -> Model:
    torch.manual_seed(0)
    net = MLP()
    return Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=lr), metrics={"accuracy"}
    )


def test_fit_records_train_eval_and_final_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "run"
    ckpt = ModelCheckpoint("mlp", tmp_path / "ckpt", CheckpointConfig(save_checkpoint_steps=5))
    callbacks = [
        TrainLineage(run, user_defined_info={"team": "a"}),
        EvalLineage(run),
        ckpt,  # after TrainLineage: its final save happens after our on_train_end
    ]
    _model(0.12).fit(
        2,
        DataLoader(_data(), batch_size=8),
        DataLoader(_data(16), batch_size=8),
        callbacks=callbacks,
    )
    d = read_lineage(run)
    assert d["hyper_parameters"] == {
        "optimizer": "SGD",
        "learning_rate": 0.12,
        "loss_function": "CrossEntropyLoss",
        "epoch": 2,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 8,
    }
    assert d["algorithm"]["network"] == "MLP" and isinstance(d["algorithm"]["loss"], float)
    assert d["train_dataset"] == {"train_dataset_size": 48}
    assert d["valid_dataset"] == {"valid_dataset_size": 16}
    assert set(d["metric"]) == {"accuracy"}
    assert d["user_defined"] == {"team": "a"}
    latest = ckpt.latest_ckpt_file_name
    assert latest is not None and json.loads(d["model"]["path"]) == {"ckpt": latest}
    assert d["model"]["size"] == os.path.getsize(latest)
    assert d["run"]["status"] == "finished" and d["run"]["total_steps"] == 12
    assert {"path": latest, "size": os.path.getsize(latest), "step": 12} in d["run"]["checkpoints"]
    assert len(list_lineage_files(run)) == 1  # train and eval share the process's file


def test_model_eval_records_eval_lineage(tmp_path: Path) -> None:
    model = _model()
    result = model.eval(DataLoader(_data(20), batch_size=8), callbacks=[EvalLineage(tmp_path)])
    d = read_lineage(tmp_path)
    assert d["metric"] == json.loads(json.dumps(result))
    assert d["valid_dataset"] == {"valid_dataset_size": 20}
    assert d["hyper_parameters"] == {}


class Boom(Callback):
    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == 3:
            raise RuntimeError("boom at step 3")


def test_exception_in_training_is_recorded_as_failed(tmp_path: Path) -> None:
    with pytest.raises(CallbackError):
        _model().train(
            2, DataLoader(_data(), batch_size=8), callbacks=[TrainLineage(tmp_path), Boom()]
        )
    r = read_lineage(tmp_path)["run"]
    assert r["status"] == "failed" and "boom at step 3" in r["error"]
    assert r["total_steps"] == 3


class StopAfter(Callback):
    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == 2:
            run_context.request_stop()


def test_requested_stop_is_recorded_as_stopped(tmp_path: Path) -> None:
    _model().train(
        3, DataLoader(_data(), batch_size=8), callbacks=[TrainLineage(tmp_path), StopAfter()]
    )
    r = read_lineage(tmp_path)["run"]
    assert r["status"] == "stopped" and r["error"] == "requested"


_CHILD = """
import sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from trainledger.callbacks.lineage import TrainLineage
from trainledger.run.callback import Callback
from trainledger.run.model import Model

class Hang(Callback):
    def on_train_epoch_end(self, run_context):
        if run_context.original_args().cur_epoch_num == 2:
            print("READY", flush=True)
            time.sleep(120)

net = nn.Linear(4, 2)
data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
model = Model(net, nn.CrossEntropyLoss(), torch.optim.Adam(net.parameters(), lr=0.003))
model.train(5, DataLoader(data, batch_size=8), callbacks=[TrainLineage(sys.argv[1]), Hang()])
"""


@pytest.mark.timeout(120)
def test_sigkill_mid_training_leaves_a_readable_running_record(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(run)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    d = read_lineage(run)
    r = d["run"]
    assert r["status"] == "running" and r["pid"] == proc.pid
    assert r["epochs_done"] == 2 and r["total_steps"] == 8  # our epoch-2 snapshot ran first
    assert d["dataset_graph"]["batch_size"] == 8
    # what was known at train begin (our train_begin event); loss and checkpoint at the end
    assert d["hyper_parameters"] == {
        "optimizer": "Adam",
        "learning_rate": 0.003,
        "loss_function": "CrossEntropyLoss",
        "epoch": 5,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 8,
    }
    assert d["algorithm"] == {"network": "Linear"} and d["model"] == {}
    assert d["train_dataset"] == {"train_dataset_size": 32}


def test_a_run_queried_mid_fit_has_its_hyperparameters(tmp_path: Path) -> None:
    from trainledger.query import filter_summary_lineage, get_summary_lineage

    seen: list[dict[str, object]] = []

    class Query(Callback):  # asks the index while the run trains, as the web UI does
        def on_train_step_end(self, run_context: RunContext) -> None:
            if run_context.original_args().cur_step_num == 6:
                (found,) = filter_summary_lineage(str(tmp_path))["object"]
                seen.append(found["model_lineage"])
                seen.append(get_summary_lineage(str(tmp_path / "run"))["run"])

    net = nn.Linear(4, 2)
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    opt = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.5)
    model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"})
    train, valid = DataLoader(data, batch_size=8), DataLoader(data, batch_size=16)
    run = str(tmp_path / "run")
    model.fit(3, train, valid, callbacks=[TrainLineage(run), EvalLineage(run), Query()])
    during, run_record = seen
    assert run_record["status"] == "running"
    assert {k: during[k] for k in ("optimizer", "learning_rate", "batch_size", "epoch")} == {
        "optimizer": "SGD",
        "learning_rate": 0.2,
        "batch_size": 8,
        "epoch": 3,
    }
    assert during["network"] == "Linear" and during["train_dataset_count"] == 32
    assert during["loss"] is None and during["metric"]["accuracy"] >= 0  # epoch 1's evaluation
    assert during["optimizer_settings"]["momentum"] == 0.5  # type: ignore[index]
    (after,) = filter_summary_lineage(str(tmp_path))["object"]
    final = after["model_lineage"]
    assert final["loss"] is not None and final["optimizer"] == "SGD" and final["epoch"] == 3


def test_checkpoints_are_recorded_with_the_global_step_they_hold(tmp_path: Path) -> None:
    """The lineage's checkpoint list says the global step each file was saved at, the step
    the curves use (issue 51 item 10): the file name holds only the step within its epoch
    (``mlp-2_4.ckpt`` is step 10 of 6-step epochs), and on ``s3://`` no header is read."""
    run = tmp_path / "run"
    ckpt = ModelCheckpoint("mlp", tmp_path / "ckpt", CheckpointConfig(save_checkpoint_steps=5))
    _model(0.12).fit(2, DataLoader(_data(), batch_size=8), callbacks=[ckpt, TrainLineage(run)])
    recorded = {
        Path(c["path"]).name: c.get("step") for c in read_lineage(run)["run"]["checkpoints"]
    }
    assert recorded == {"mlp-1_5.ckpt": 5, "mlp-2_4.ckpt": 10, "mlp-2_6.ckpt": 12}
