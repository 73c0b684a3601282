"""The runs the integrations record show in TensorBoard's HParams dashboard, read back with
TensorBoard's own hparams plugin code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations import tensorboard_hparams as tb
from tests.integrations.test_track import _loop
from trainledger.summary import session_end_event, session_start_event, write_hparams_events

#: plain SGD's numeric settings, as the HParams plugin lists them
SGD_NUMBERS = ("lr", "momentum", "dampening", "weight_decay", "param_groups")


@pytest.mark.slow
def test_tracked_runs_show_hparams_metrics_and_status(tmp_path: Path) -> None:
    _loop(tmp_path / "ok")
    with pytest.raises(RuntimeError):
        _loop(tmp_path / "bad", fail_at=5)
    experiment = tb.experiment(tmp_path)
    assert experiment["hparams"] == {
        "optimizer": "DATA_TYPE_STRING",
        "learning_rate": "DATA_TYPE_FLOAT64",
        "network": "DATA_TYPE_STRING",
        "loss_function": "DATA_TYPE_STRING",
        "epoch": "DATA_TYPE_FLOAT64",
        **{f"optimizer/{k}": "DATA_TYPE_FLOAT64" for k in SGD_NUMBERS},
        "optimizer/nesterov": "DATA_TYPE_STRING",
        "optimizer/maximize": "DATA_TYPE_STRING",
        "lr": "DATA_TYPE_FLOAT64",
        "hidden": "DATA_TYPE_FLOAT64",
        "batch_size": "DATA_TYPE_FLOAT64",
    }
    assert "eval/accuracy" in experiment["metrics"] and "loss" in experiment["metrics"]
    sessions = tb.sessions(tmp_path)
    ok, bad = sessions["ok"], sessions["bad"]
    assert ok["status"] == "STATUS_SUCCESS" and bad["status"] == "STATUS_FAILURE"
    assert ok["hparams"]["optimizer"] == "SGD" and ok["hparams"]["learning_rate"] == 0.05
    assert ok["hparams"]["hidden"] == 8
    assert ok["hparams"]["optimizer/lr"] == 0.05 and ok["hparams"]["optimizer/nesterov"] == "false"
    assert 0.0 <= ok["metrics"]["eval/accuracy"] <= 1.0


def test_session_events_round_trip_through_tensorboards_parser(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.hparams import metadata

    write_hparams_events(
        tmp_path,
        session_start_event({"lr": 0.1, "opt": "Adam", "amp": True, "none": None}, start_time=5),
        session_end_event("stopped", end_time=9),
    )
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert dict(start.hparams) == {
        "lr": start.hparams["lr"],
        "opt": start.hparams["opt"],
        "amp": start.hparams["amp"],
    }
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["amp"].bool_value is True
    assert start.hparams["opt"].string_value == "Adam" and start.start_time_secs == 5
    end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
    assert end.status == 1 and end.end_time_secs == 9  # STATUS_SUCCESS
    with pytest.raises(ValueError, match="received: 'done'"):
        session_end_event("done")
