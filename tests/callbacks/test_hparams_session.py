"""SummaryCollector's runs in TensorBoard's HParams dashboard (read with TensorBoard's own
hparams plugin code), and HParamsSession's timing rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from tests.integrations import tensorboard_hparams as tb
from trainledger.callbacks import HParamsSession, SummaryCollector
from trainledger.errors import CallbackError
from trainledger.run import Callback, CallbackParams, Model, RunContext
from trainledger.summary import list_event_files


def _fit(run_dir: Path, *callbacks: Callback) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(32, 4)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    collector = SummaryCollector(run_dir, collect_freq=1, custom_lineage_data={"team": "a"})
    model.train(2, data, callbacks=[collector, *callbacks])


class Boom(Callback):
    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == 3:
            raise RuntimeError("boom")


@pytest.mark.slow
def test_collector_runs_show_in_the_hparams_dashboard(tmp_path: Path) -> None:
    _fit(tmp_path / "ok")
    with pytest.raises(CallbackError):
        _fit(tmp_path / "bad", Boom())
    sessions = tb.sessions(tmp_path)
    ok, bad = sessions["ok"], sessions["bad"]
    assert ok["hparams"] == {
        "optimizer": "SGD",
        "learning_rate": 0.1,
        "network": "Sequential",
        "loss_function": "CrossEntropyLoss",
        "batch_size": 8.0,
        "epoch": 2.0,
        # the optimizer as configured (plain SGD: momentum 0), flags as words
        "optimizer/lr": 0.1,
        "optimizer/momentum": 0.0,
        "optimizer/dampening": 0.0,
        "optimizer/weight_decay": 0.0,
        "optimizer/nesterov": "false",
        "optimizer/maximize": "false",
        "optimizer/param_groups": 1.0,
        "team": "a",
    }
    assert ok["status"] == "STATUS_SUCCESS" and bad["status"] == "STATUS_FAILURE"
    assert "loss/auto" in ok["metrics"]


def test_session_file_is_written_after_the_scalar_file(tmp_path: Path) -> None:
    _fit(tmp_path)
    first, last = list_event_files(tmp_path)
    assert "loss/auto" in tb.value_tags(first)
    assert tb.value_tags(last) == {"_hparams_/session_start_info", "_hparams_/session_end_info"}


def test_live_session_writes_start_at_begin_and_end_at_finish(tmp_path: Path) -> None:
    session = HParamsSession(tmp_path, {"x": 1}, live=True)
    session.on_train_begin(RunContext(CallbackParams(epoch_num=3)))
    assert len(list_event_files(tmp_path)) == 1
    session.on_train_end(RunContext(CallbackParams(exception=None, stop_reason="completed")))
    session.finish()
    session.finish()  # nothing more: the run is finished
    assert len(list_event_files(tmp_path)) == 2
    (session_row,) = tb.sessions(tmp_path).values()
    assert session_row["status"] == "STATUS_SUCCESS" and session_row["hparams"] == {
        "epoch": 3.0,
        "x": 1.0,
    }
