"""SummaryLandscape: landscapes from a real training run, written and read back."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import IMAGES, EventAccumulator

import trainledger
from tests.landscape.helpers import data, train_run
from trainledger.summary import read_landscapes

SETTINGS = {"intervals": [[1, 2, 3, 4], [5, 6, 8, 10, 12]], "num_samples": 40, "landscape_size": 5}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    model, net = train_run(run_dir, SETTINGS)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    landscape = trainledger.SummaryLandscape(run_dir, seed=0)
    made = landscape.gen_landscapes_with_multi_process(lambda: (model, net, data(), {"loss"}))
    return run_dir, model, net, before, made


def test_one_train_landscape_per_interval_and_one_result(generated):
    run_dir, *_ = generated
    found = read_landscapes(run_dir)
    assert [(x["tag"], x["kind"], x["decomposition"]) for x in found] == [
        ("landscape_[1, 4]", "train", "PCA"),
        ("landscape_[5, 12]", "train", "PCA"),
        ("landscape_[12]", "result", "Random"),
    ]
    for item in found:
        assert item["x"].shape == (5,) and item["y"].shape == (5,)
        assert item["z"].shape == (5, 5) and item["z"].dtype == np.float64
        assert np.isfinite(item["z"]).all()
        assert item["unit"] == "step" and item["step_per_epoch"] == 6
        assert item["num_samples"] == 40
    assert found[0]["intervals"] == [1, 2, 3, 4] and found[2]["intervals"] == [12]
    path = found[1]["path"]
    assert len(path["x"]) == 5 and path["x"][-1] == 0.0 and path["y"][-1] == 0.0
    # the grid spans the path with a 20 % margin on each side
    span = max(path["x"]) - min(path["x"])
    assert found[1]["x"][0] == pytest.approx(min(path["x"]) - 0.2 * span)
    assert found[1]["x"][-1] == pytest.approx(max(path["x"]) + 0.2 * span)
    assert found[2]["path"] is None
    # the PCA plane's share of the path's variance; random directions explain nothing
    for item in found[:2]:
        first, second = item["explained_variance"]
        assert 0 < second <= first and first + second <= 1 + 1e-9
    assert "explained_variance" not in found[2]


def test_a_landscape_without_explained_variance_reads_and_a_bad_one_is_refused(tmp_path):
    plain = {"kind": "train", "x": [0.0, 1.0], "y": [0.0, 1.0], "z": np.ones((2, 2))}
    with trainledger.SummaryRecord(tmp_path) as record:  # as trainledger 0.1 wrote it
        record.add_value("landscape", "landscape_[1, 3]", plain)
        record.record(0)
    (read,) = read_landscapes(tmp_path)
    assert "explained_variance" not in read and read["decomposition"] == "PCA"
    with trainledger.SummaryRecord(tmp_path / "bad") as record:
        with pytest.raises(ValueError, match=r"explained_variance as two fractions.*\[0.5, 1.5\]"):
            record.add_value("landscape", "t", {**plain, "explained_variance": [0.5, 1.5]})


def test_result_centre_and_path_end_are_the_loss_of_the_final_weights(generated):
    run_dir, model, *_ = generated
    found = read_landscapes(run_dir)
    first_40 = data()[:2] + [(data()[2][0][:8], data()[2][1][:8])]  # 16 + 16 + 8 samples
    expected = model.eval(first_40)["loss"]
    result = found[2]
    assert result["x"][2] == 0.0 and result["y"][2] == 0.0
    assert result["z"][2, 2] == pytest.approx(expected, rel=1e-5)
    assert result["convergence_point"] == pytest.approx([0.0, 0.0, expected], rel=1e-5)
    assert found[1]["path"]["z"][-1] == pytest.approx(expected, rel=1e-5)
    assert result["z"].max() > result["z"][2, 2]  # moving away from the minimum costs


def test_generation_leaves_the_network_as_it_was(generated):
    _, _, net, before, _ = generated
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert net.training


def test_tensorboard_shows_a_contour_image_per_landscape(generated):
    run_dir, *_ = generated
    acc = EventAccumulator(str(run_dir), size_guidance={IMAGES: 0})
    acc.Reload()
    tags = acc.Tags()[IMAGES]
    assert {"landscape_[1, 4]/contour", "landscape_[12]/contour"} <= set(tags)
    image = acc.Images("landscape_[12]/contour")[0]
    assert (image.width, image.height) == (320, 320)


def test_returned_landscapes_are_what_was_written(generated):
    run_dir, _, _, _, made = generated
    found = read_landscapes(run_dir)
    for mine, read in zip(made, found, strict=True):
        np.testing.assert_allclose(read["z"], mine["z"], rtol=1e-6)  # float32 on disk


def test_overrides_are_checked_and_saved_back(tmp_path):
    model, net = train_run(tmp_path, {"intervals": [[1, 2, 3]], "num_samples": 16})
    landscape = trainledger.SummaryLandscape(tmp_path, seed=1)
    with pytest.raises(ValueError, match="landscape_size"):
        landscape.gen_landscapes_with_multi_process(
            lambda: (model, net, data(), None), collect_landscape={"landscape_size": 300}
        )
    with pytest.raises(ValueError, match=r"no weight snapshot for step \[4\]"):
        landscape.gen_landscapes_with_multi_process(
            lambda: (model, net, data(), None), collect_landscape={"intervals": [[2, 3, 4]]}
        )
    made = landscape.gen_landscapes_with_multi_process(
        lambda: (model, net, data(), None),
        collect_landscape={
            "intervals": [[1, 2, 3]],
            "landscape_size": 3,
            "create_landscape": {"train": False, "result": True},
        },
        output=tmp_path / "out",
    )
    assert [m["kind"] for m in made] == ["result"] and made[0]["z"].shape == (3, 3)
    meta = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert meta["landscape_size"] == 3 and meta["create_landscape"]["train"] is False
    assert [x["tag"] for x in read_landscapes(tmp_path / "out")] == ["landscape_[3]"]


def test_missing_metadata_and_clean_ckpt(tmp_path):
    landscape = trainledger.SummaryLandscape(tmp_path)
    with pytest.raises(FileNotFoundError, match="train_metadata.json"):
        landscape.gen_landscapes_with_multi_process(lambda: None)
    model, net = train_run(tmp_path, {"intervals": [[1, 2, 3]]})
    assert (tmp_path / "ckpt_dir").is_dir()
    landscape.clean_ckpt()
    assert not (tmp_path / "ckpt_dir").exists()


def test_device_ids_are_checked_and_cpu_is_used_without_cuda(tmp_path, caplog):
    model, net = train_run(tmp_path, {"intervals": [[1, 2, 3]], "landscape_size": 3})
    landscape = trainledger.SummaryLandscape(tmp_path, seed=0)
    with pytest.raises(TypeError, match="device_ids"):
        landscape.gen_landscapes_with_multi_process(
            lambda: (model, net, data(), None), device_ids=[-1]
        )
    if torch.cuda.is_available():
        pytest.skip("this check is for machines without CUDA")
    with caplog.at_level(logging.WARNING, logger="trainledger.landscape"):
        made = landscape.gen_landscapes_with_multi_process(
            lambda: (model, net, data(), None), device_ids=[0, 1]
        )
    assert "no CUDA device" in caplog.text and len(made) == 2


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices (none here)")
def test_two_gpus_give_the_cpu_numbers(tmp_path):
    model, net = train_run(tmp_path, {"intervals": [[1, 2, 3]], "landscape_size": 5})
    landscape = trainledger.SummaryLandscape(tmp_path, seed=0)
    cpu = landscape.gen_landscapes_with_multi_process(lambda: (model, net, data(), None))
    gpu = landscape.gen_landscapes_with_multi_process(
        lambda: (model, net, data(), None), device_ids=[0, 1]
    )
    for a, b in zip(cpu, gpu, strict=True):
        np.testing.assert_allclose(a["z"], b["z"], rtol=1e-4)
