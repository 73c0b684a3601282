"""What SummaryCollector saves during training for the loss landscape."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from tests.landscape.helpers import train_run
from trainledger.callbacks.landscape_inputs import METADATA_KEYS
from trainledger.callbacks.summary_options import process_specified_data


def test_defaults_are_mindspores_documented_ones():
    landscape = process_specified_data(None, True)["collect_landscape"]
    assert landscape == {
        "landscape_size": 40,
        "unit": "step",
        "num_samples": 128,
        "create_landscape": {"train": True, "result": True},
        "intervals": [list(range(1, 10)), list(range(10, 20))],
    }


def test_step_snapshots_and_metadata(tmp_path):
    m, net = train_run(tmp_path, {"intervals": [[2, 3, 4], [5, 6, 8]], "num_samples": 32})
    ckpt_dir = tmp_path / "ckpt_dir"
    meta = json.loads((ckpt_dir / "train_metadata.json").read_text())
    assert list(meta) == list(METADATA_KEYS)  # MindSpore's keys, in its order
    assert meta["epoch_group"] == {"0": [2, 3, 4], "1": [5, 6, 8]}
    assert sorted(meta["model_params_file_map"], key=int) == ["2", "3", "4", "5", "6", "8"]
    assert meta["step_per_epoch"] == 6 and meta["unit"] == "step"
    assert meta["num_samples"] == 32 and meta["landscape_size"] == 40
    assert meta["create_landscape"] == {"train": True, "result": True}
    last = meta["model_params_file_map"]["8"]
    assert last.endswith("ckpt_dir/Net_8_step.ckpt")
    with safe_open(last, "pt") as f:  # plain safetensors: parameters and BatchNorm buffers
        assert {"fc1.weight", "bn.running_mean", "fc2.bias"} <= set(f.keys())
        step2 = f.get_tensor("fc2.weight")
    with safe_open(meta["model_params_file_map"]["2"], "pt") as f:
        assert not torch.equal(f.get_tensor("fc2.weight"), step2)  # training moved the weights


def test_epoch_unit_saves_at_epoch_ends(tmp_path):
    train_run(tmp_path, {"unit": "epoch", "intervals": [[1, 2, 3]]}, epochs=3)
    meta = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert meta["unit"] == "epoch"
    assert sorted((tmp_path / "ckpt_dir").glob("*.ckpt")) == [
        tmp_path / "ckpt_dir" / f"Net_{e}_epoch.ckpt" for e in (1, 2, 3)
    ]


def test_default_is_on_and_costs_one_snapshot_per_interval_point(tmp_path, caplog):
    from tests.landscape.helpers import data, model
    from trainledger.callbacks.summary_collector import SummaryCollector

    m, _ = model()
    m.train(4, data(), callbacks=[SummaryCollector(tmp_path)])  # 24 steps
    assert len(list((tmp_path / "ckpt_dir").glob("*.ckpt"))) == 19  # steps 1..19


def test_turned_off_with_none(tmp_path):
    train_run(tmp_path, None)
    assert not (tmp_path / "ckpt_dir").exists()


def test_a_run_shorter_than_the_intervals_warns(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="trainledger.summary"):
        train_run(tmp_path, {"intervals": [[10, 11, 20]]})  # 12 steps
    assert "[20]" in caplog.text and "collect_landscape=None" in caplog.text


@pytest.mark.parametrize(
    "landscape,exc",
    [
        ({"num_samples": 1.5}, TypeError),
        ({"landscape_size": 2}, ValueError),
        ({"intervals": [[1, 2]]}, ValueError),
        ({"unit": "day"}, ValueError),
        ({"create_landscape": {"train": 1}}, TypeError),
    ],
)
def test_bad_settings_are_refused(tmp_path, landscape, exc):
    with pytest.raises(exc, match="collect_landscape"):
        train_run(tmp_path, landscape)
