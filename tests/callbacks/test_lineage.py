"""TrainLineage / EvalLineage driven by hand through RunContext (every field, hooks, errors)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainledger.callbacks.lineage as lineage_mod
from trainledger.callbacks.lineage import EvalLineage, TrainLineage
from trainledger.errors import (
    LineageError,
    LineageParamTypeError,
    LineageParamValueError,
    LineageWriteError,
)
from trainledger.lineage.reader import read_lineage, read_record
from trainledger.lineage.writer import clear_registry
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.storage import list_lineage_files


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    clear_registry()


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class WithLoss(nn.Module):
    def __init__(self, net: nn.Module, loss: nn.Module) -> None:
        super().__init__()
        self._backbone = net
        self._loss_fn = loss


class FakeCheckpoint(Callback):
    """Stands in for ModelCheckpoint: only its ``latest_ckpt_file_name`` property is read."""

    def __init__(self, path: str | None) -> None:
        self._path = path

    @property
    def latest_ckpt_file_name(self) -> str | None:
        return self._path


def _params(tmp_path: Path, **over: Any) -> CallbackParams:
    net = MLP()
    opt = torch.optim.SGD(net.parameters(), lr=0.12)
    data = TensorDataset(torch.randn(40, 3), torch.randint(0, 2, (40,)))
    params = CallbackParams(
        train_network=WithLoss(net, nn.CrossEntropyLoss()),
        network=net,
        optimizer=opt,
        loss_fn=nn.CrossEntropyLoss(),
        epoch_num=2,
        cur_epoch_num=0,
        cur_step_num=0,
        batch_num=10,
        net_outputs=None,
        train_dataset=DataLoader(data, batch_size=4, shuffle=True),
        valid_dataset=None,
        parallel_mode="stand_alone",
        device_number=1,
        mode="train",
        list_callback=[],
        latest_ckpt_file=None,
        last_save_ckpt_step=0,
        exception=None,
        stop_reason=None,
    )
    params.update(over)
    return params


def _ckpt(tmp_path: Path, name: str = "net-2_10.ckpt", size: int = 1234) -> str:
    path = tmp_path / "ckpt" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\0" * size)
    return str(path)


def _drive(cb: Callback, params: CallbackParams, *, old_names: bool = False) -> RunContext:
    rc = RunContext(params)
    (cb.begin if old_names else cb.on_train_begin)(rc)  # type: ignore[attr-defined]
    for epoch in (1, 2):
        params.cur_epoch_num = epoch
        params.cur_step_num = 10 * epoch
        params.net_outputs = (torch.tensor(0.5 / epoch), torch.zeros(4, 2))
        (cb.epoch_end if old_names else cb.on_train_epoch_end)(rc)  # type: ignore[attr-defined]
    params.stop_reason = params.stop_reason or "completed"
    (cb.end if old_names else cb.on_train_end)(rc)  # type: ignore[attr-defined]
    return rc


@pytest.mark.parametrize("old_names", [False, True])
def test_train_lineage_records_every_field(tmp_path: Path, old_names: bool) -> None:
    run = tmp_path / "run"
    ckpt = _ckpt(tmp_path)
    cb = TrainLineage(str(run), user_defined_info={"team": "a", "trial": 2, "dropout": 0.1})
    params = _params(tmp_path, latest_ckpt_file=ckpt)
    _drive(cb, params, old_names=old_names)
    d = read_lineage(run)
    assert d["hyper_parameters"] == {
        "optimizer": "SGD",
        "learning_rate": 0.12,
        "loss_function": "CrossEntropyLoss",
        "epoch": 2,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 4,  # the real batch size, not the 10 batches
    }
    assert d["algorithm"] == {"network": "MLP", "loss": 0.25}
    assert d["train_dataset"] == {"train_dataset_size": 40}  # in-memory: no path
    assert json.loads(d["model"]["path"]) == {"ckpt": ckpt}
    assert d["model"]["size"] == 1234
    assert d["user_defined"] == {"team": "a", "trial": 2, "dropout": 0.1}
    assert d["dataset_graph"]["op_type"] == "DataLoader"
    assert d["dataset_graph"]["children"][0]["op_type"] == "TensorDataset"
    assert d["metric"] == {} and d["valid_dataset"] == {}
    r = d["run"]
    assert r["status"] == "finished" and r["total_steps"] == 20 and r["epochs_done"] == 2
    assert r["start_time"] <= r["end_time"] and r["duration"] >= 0
    assert r["hostname"] and r["pid"] == os.getpid() and r["rank"] == 0
    assert r["python_version"] and r["torch_version"] == torch.__version__
    assert r["trainledger_version"] and "seed" in r and "command" in r
    assert r["dataset_fingerprint"].startswith("tensors:")
    assert r["train_dataset_fingerprint"] == r["dataset_fingerprint"]
    assert r["checkpoints"] == [{"path": ckpt, "size": 1234}]
    assert "error" not in r
    assert len(list_lineage_files(run)) == 1


def test_running_record_after_begin(tmp_path: Path) -> None:
    cb = TrainLineage(tmp_path)
    cb.on_train_begin(RunContext(_params(tmp_path)))
    d = read_lineage(tmp_path)
    assert d["run"]["status"] == "running" and "end_time" not in d["run"]
    assert d["dataset_graph"]["batch_size"] == 4
    # what is known at train begin is there already (our train_begin event), loss and model not
    assert d["hyper_parameters"] == {
        "optimizer": "SGD",
        "learning_rate": 0.12,
        "loss_function": "CrossEntropyLoss",
        "epoch": 2,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 4,
    }
    assert d["algorithm"] == {"network": "MLP"} and d["model"] == {}
    assert d["train_dataset"] == {"train_dataset_size": 40}
    assert d["optimizer_settings"]["lr"] == 0.12


def test_the_final_train_lineage_wins_over_train_begin(tmp_path: Path) -> None:
    params = _params(tmp_path)
    cb = TrainLineage(tmp_path)
    rc = RunContext(params)
    cb.on_train_begin(rc)
    assert read_lineage(tmp_path)["algorithm"] == {"network": "MLP"}
    params["network"] = nn.Linear(3, 2)  # (a host's swap: only to tell the records apart)
    params["epoch_num"] = 3
    params["net_outputs"] = torch.tensor(0.25)
    cb.on_train_end(rc)
    d = read_lineage(tmp_path)
    assert d["algorithm"] == {"network": "Linear", "loss": 0.25}
    assert d["hyper_parameters"]["epoch"] == 3 and d["model"] == {"size": 0}
    # a second training of the same process (same file) is read by its own begin values
    params2 = _params(tmp_path, epoch_num=7)
    cb.on_train_begin(RunContext(params2))
    d = read_lineage(tmp_path)
    assert d["run"]["status"] == "running" and d["hyper_parameters"]["epoch"] == 7
    assert d["algorithm"] == {"network": "MLP"} and d["model"] == {}


def test_initial_lr_is_taken_at_begin(tmp_path: Path) -> None:
    params = _params(tmp_path)
    cb = TrainLineage(tmp_path)
    rc = RunContext(params)
    cb.on_train_begin(rc)
    sched = torch.optim.lr_scheduler.StepLR(params.optimizer, step_size=1, gamma=0.1)
    params.optimizer.step()
    sched.step()
    cb.on_train_end(rc)
    assert read_lineage(tmp_path)["hyper_parameters"]["learning_rate"] == 0.12


def test_checkpoint_from_modelcheckpoint_in_callback_list(tmp_path: Path) -> None:
    ckpt = _ckpt(tmp_path, "m.ckpt", 77)
    params = _params(tmp_path, list_callback=[FakeCheckpoint(None), FakeCheckpoint(ckpt)])
    _drive(TrainLineage(tmp_path / "run"), params)
    d = read_lineage(tmp_path / "run")
    assert json.loads(d["model"]["path"]) == {"ckpt": ckpt} and d["model"]["size"] == 77


def test_no_checkpoint_records_model_size_zero(tmp_path: Path) -> None:
    _drive(TrainLineage(tmp_path), _params(tmp_path))
    record = read_record(tmp_path)  # MindSpore writes size 0 when there is no checkpoint
    assert record is not None and record.model == {"size": 0} and record.model_size == 0


def test_deleted_checkpoints_drop_from_the_final_list(tmp_path: Path) -> None:
    first, second = _ckpt(tmp_path, "a.ckpt", 5), _ckpt(tmp_path, "b.ckpt", 6)
    params = _params(tmp_path, latest_ckpt_file=first)
    cb = TrainLineage(tmp_path / "run")
    rc = RunContext(params)
    cb.on_train_begin(rc)
    cb.on_train_epoch_end(rc)
    params.latest_ckpt_file = second
    os.remove(first)  # a retention policy removed it
    cb.on_train_end(rc)
    assert read_lineage(tmp_path / "run")["run"]["checkpoints"] == [{"path": second, "size": 6}]


def test_exception_recorded_as_failed(tmp_path: Path) -> None:
    params = _params(tmp_path)
    cb = TrainLineage(tmp_path)
    rc = RunContext(params)
    cb.on_train_begin(rc)
    params.exception = RuntimeError("boom")  # what the loop does before on_train_end
    params.stop_reason = "error"
    cb.on_train_end(rc)
    r = read_lineage(tmp_path)["run"]
    assert r["status"] == "failed" and r["error"] == "RuntimeError: boom"


def test_exit_with_exception_records_failed(tmp_path: Path) -> None:
    cb = TrainLineage(tmp_path)
    with pytest.raises(ValueError):
        with cb:
            cb.on_train_begin(RunContext(_params(tmp_path)))
            raise ValueError("bad batch")
    r = read_lineage(tmp_path)["run"]
    assert r["status"] == "failed" and r["error"] == "ValueError: bad batch"


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("requested", "stopped"),
        ("signal", "stopped"),
        ("completed", "finished"),
        (None, "finished"),
    ],
)
def test_stop_reason_status(tmp_path: Path, reason: str | None, status: str) -> None:
    params = _params(tmp_path, stop_reason=reason)
    cb = TrainLineage(tmp_path)
    rc = RunContext(params)
    cb.on_train_begin(rc)
    cb.on_train_end(rc)
    assert read_lineage(tmp_path)["run"]["status"] == status


def test_keyboard_interrupt_is_stopped(tmp_path: Path) -> None:
    params = _params(tmp_path)
    cb = TrainLineage(tmp_path)
    rc = RunContext(params)
    cb.on_train_begin(rc)
    params.exception = KeyboardInterrupt()
    cb.on_train_end(rc)
    assert read_lineage(tmp_path)["run"]["status"] == "stopped"


def test_end_without_begin_records_everything(tmp_path: Path) -> None:
    params = _params(tmp_path, cur_step_num=20, net_outputs=torch.tensor(0.3))
    TrainLineage(tmp_path, user_defined_info={"k": "v"}).end(RunContext(params))
    d = read_lineage(tmp_path)
    assert d["hyper_parameters"]["optimizer"] == "SGD" and d["dataset_graph"]
    assert d["user_defined"] == {"k": "v"} and d["run"]["status"] == "finished"
    assert d["optimizer_settings"]["lr"] == d["hyper_parameters"]["learning_rate"]


def _break_dir(path: Path) -> None:
    shutil.rmtree(path)
    path.write_text("now a file")


def test_raise_exception_false_logs_and_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = tmp_path / "run"
    cb = TrainLineage(run)
    _break_dir(run)
    with caplog.at_level(logging.ERROR, logger="trainledger.lineage"):
        cb.on_train_begin(RunContext(_params(tmp_path)))
    assert "TrainLineage.begin failed" in caplog.text


def test_raise_exception_true_raises(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cb = TrainLineage(run, raise_exception=True)
    ev = EvalLineage(run, raise_exception=True)
    _break_dir(run)
    with pytest.raises(LineageWriteError):
        cb.on_train_begin(RunContext(_params(tmp_path)))
    with pytest.raises(LineageWriteError):
        ev.on_eval_end(RunContext(_params(tmp_path, metrics={"acc": 1.0})))


def test_raise_exception_true_wraps_unexpected_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise KeyError("x")

    monkeypatch.setattr(lineage_mod, "analyze_dataset", broken)
    with pytest.raises(LineageError, match="TrainLineage.begin failed: KeyError"):
        TrainLineage(tmp_path, raise_exception=True).on_train_begin(RunContext(_params(tmp_path)))


@pytest.mark.parametrize(
    ("info", "error", "match"),
    [
        ([("a", 1)], LineageParamTypeError, "expected a dict"),
        ({1: "a"}, LineageParamTypeError, "keys expected str"),
        ({"a": [1, 2]}, LineageParamTypeError, "expected int, float or str, received: list"),
        ({"a": None}, LineageParamTypeError, "received: NoneType"),
        ({"a": 2**40}, LineageParamValueError, "int32 range"),
    ],
)
def test_bad_user_defined_info(tmp_path: Path, info: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        TrainLineage(tmp_path, user_defined_info=info, raise_exception=True)
    with pytest.raises(error, match=match):
        EvalLineage(tmp_path, user_defined_info=info, raise_exception=True)


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(LineageParamTypeError, match="raise_exception expected a bool"):
        TrainLineage(tmp_path, raise_exception="yes")  # type: ignore[arg-type]
    with pytest.raises(LineageParamTypeError, match="SummaryRecord or a directory path"):
        TrainLineage(42, raise_exception=True)


def test_summary_record_log_dir_is_used(tmp_path: Path) -> None:
    from trainledger.summary.record import SummaryRecord

    with SummaryRecord(tmp_path / "sr") as record:
        cb = TrainLineage(record)
    assert cb.log_dir == str(tmp_path / "sr")
    duck = TrainLineage(SimpleNamespace(log_dir=tmp_path / "duck"))
    assert duck.log_dir == str(tmp_path / "duck") and (tmp_path / "duck").is_dir()


def test_bool_user_info_and_update(tmp_path: Path) -> None:
    cb = TrainLineage(tmp_path, user_defined_info={"aug": True})
    cb.update_user_defined_info({"extra": "x"})
    assert cb.user_defined_info == {"aug": 1, "extra": "x"}
    _drive(cb, _params(tmp_path))
    assert read_lineage(tmp_path)["user_defined"] == {"aug": 1, "extra": "x"}


def test_eval_lineage_records_every_field(tmp_path: Path) -> None:
    folder = tmp_path / "val"
    folder.mkdir()
    (folder / "x.bin").write_bytes(b"123")

    class ValSet(TensorDataset):
        root = str(folder)

    valid = DataLoader(ValSet(torch.randn(12, 3), torch.zeros(12)), batch_size=5)
    params = _params(
        tmp_path,
        valid_dataset=valid,
        metrics={"accuracy": torch.tensor(0.75), "loss": 0.5},
        cur_step_num=3,
        mode="eval",
    )
    ev = EvalLineage(tmp_path / "run", user_defined_info={"split": "val"})
    ev.on_train_begin(RunContext(params))  # training hooks do nothing
    ev.on_train_end(RunContext(params))
    assert read_lineage(tmp_path / "run") == {}
    ev.on_eval_end(RunContext(params))
    d = read_lineage(tmp_path / "run")
    assert d["metric"] == {"accuracy": 0.75, "loss": 0.5}
    assert d["valid_dataset"] == {"valid_dataset_path": str(folder), "valid_dataset_size": 12}
    assert d["user_defined"] == {"split": "val"}
    assert d["run"]["valid_dataset_fingerprint"].startswith("files:")
    ev.end(RunContext(dict(params, metrics={"accuracy": 0.8})))  # old name, last one wins
    assert read_lineage(tmp_path / "run")["metric"] == {"accuracy": 0.8}


def test_train_and_eval_in_the_same_second_keep_both(tmp_path: Path) -> None:
    params = _params(tmp_path, metrics={"acc": 0.9})
    train, ev = TrainLineage(tmp_path), EvalLineage(tmp_path)
    _drive(train, params)
    ev.on_eval_end(RunContext(params))
    assert len(list_lineage_files(tmp_path)) == 1  # one process, one shared file
    clear_registry()  # as if a second process evaluated in the same second
    EvalLineage(tmp_path).on_eval_end(RunContext(dict(params, metrics={"acc": 0.95})))
    files = list_lineage_files(tmp_path)
    assert len(files) == 2 and files[0].timestamp < files[1].timestamp
    d = read_lineage(tmp_path)
    assert d["hyper_parameters"]["optimizer"] == "SGD" and d["metric"] == {"acc": 0.95}


def test_only_rank_zero_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trainledger.callbacks.lineage_base as base_mod

    for module in (lineage_mod, base_mod):
        monkeypatch.setattr(module, "distributed_info", lambda: (1, 2, "data_parallel"))
    _drive(TrainLineage(tmp_path / "a"), _params(tmp_path))
    EvalLineage(tmp_path / "a").on_eval_end(RunContext(_params(tmp_path, metrics={"a": 1})))
    assert list_lineage_files(tmp_path / "a") == []
    _drive(TrainLineage(tmp_path / "b", all_ranks=True), _params(tmp_path, device_number=None))
    (f,) = list_lineage_files(tmp_path / "b")
    assert f.name.split(".")[5] == "1"  # rank in the file name
    hp = read_lineage(tmp_path / "b")["hyper_parameters"]
    assert hp["device_num"] == 2 and hp["parallel_mode"] == "stand_alone"


def test_user_info_is_retried_after_a_failed_write(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cb = TrainLineage(run, user_defined_info={"team": "a"})
    _break_dir(run)
    cb.on_train_begin(RunContext(_params(tmp_path)))  # logged, not raised
    os.remove(run)
    cb.on_train_end(RunContext(_params(tmp_path)))
    assert read_lineage(run)["user_defined"] == {"team": "a"}


def test_our_eval_after_a_mindspore_training_merges(tmp_path: Path) -> None:
    golden = Path(__file__).resolve().parents[1] / "golden" / "mindspore-runs" / "sgd_noeval"
    run = tmp_path / "sgd_noeval"
    shutil.copytree(golden, run)
    params = _params(tmp_path, metrics={"Accuracy": 0.5}, cur_step_num=4)
    EvalLineage(run).on_eval_end(RunContext(params))
    files = list_lineage_files(run)
    assert len(files) == 2 and files[1].timestamp > files[0].timestamp
    d = read_lineage(run)
    assert d["hyper_parameters"]["optimizer"] == "SGD"  # MindSpore's train lineage kept
    assert d["user_defined"] == {"team": "a"}
    assert d["metric"] == {"Accuracy": 0.5}
