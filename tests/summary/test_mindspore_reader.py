"""Reading MindSpore ``_MS`` summary files, checked against what MindInsight 2.3.1 read.

The answers are tests/golden/mindspore-full/mindinsight-summaries.json (MindInsight's
``MSDataLoader`` on each file alone; see record_mindinsight.py). MindInsight keys tags as
``tag/plugin`` and keeps only the last value of a repeated step; we return every point as
written, so the comparison takes our last value per step.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainledger.summary import (
    read_histograms,
    read_images,
    read_scalar_sessions,
    read_scalars,
    read_tensors,
)
from trainledger.summary.reader import RunReader
from trainledger.summary.record import SummaryRecord

GOLDEN = Path(__file__).parents[1] / "golden"
ANSWERS = json.loads((GOLDEN / "mindspore-full" / "mindinsight-summaries.json").read_text())
FULL_RUN = GOLDEN / "mindspore-full" / "run"
MS_FILES = sorted(ANSWERS["by_file"])
# files that hold only loss landscapes: no scalars or histograms for MindInsight either
LANDSCAPE_ONLY = {rel for rel, tags in ANSWERS["by_file"].items() if not tags}


def _alone(rel: str, tmp_path: Path) -> Path:
    shutil.copy(GOLDEN / rel, tmp_path)
    return tmp_path


def _last_per_step(steps: list[int], items: list) -> tuple[list[int], list]:
    """MindInsight's view of one file: a repeated step replaces the earlier point."""
    keep: dict[int, object] = {}
    for step, item in zip(steps, items, strict=True):
        keep.pop(step, None)
        keep[step] = item
    return list(keep), list(keep.values())


def _answers(rel: str, plugin: str) -> dict[str, dict]:
    suffix = "/" + plugin
    return {
        tag[: -len(suffix)]: got
        for tag, got in ANSWERS["by_file"][rel].items()
        if got["plugin"] == plugin
    }


def test_every_ms_fixture_is_covered():
    on_disk = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*_MS"))
    assert on_disk == MS_FILES and len(MS_FILES) == 10


@pytest.mark.parametrize("rel", MS_FILES)
def test_scalars_equal_mindinsight(rel: str, tmp_path: Path) -> None:
    expected = _answers(rel, "scalar")
    got = read_scalars(_alone(rel, tmp_path))
    assert set(got) == set(expected) and (bool(expected) or rel in LANDSCAPE_ONLY)
    for tag, answer in expected.items():
        steps, times, values = got[tag]
        assert steps.dtype == np.int64 and values.dtype == np.float64
        our_steps, ours = _last_per_step(steps.tolist(), list(zip(times, values, strict=True)))
        assert our_steps == answer["steps"]
        assert [v for _, v in ours] == answer["values"]
        assert [t for t, _ in ours] == answer["wall_times"]


@pytest.mark.parametrize("rel", MS_FILES)
def test_histograms_equal_mindinsight(rel: str, tmp_path: Path) -> None:
    expected = _answers(rel, "histogram")
    got = read_histograms(_alone(rel, tmp_path))
    assert set(got) == set(expected) and (bool(expected) or rel in LANDSCAPE_ONLY)
    for tag, answer in expected.items():
        our_steps, ours = _last_per_step([h.step for h in got[tag]], got[tag])
        assert our_steps == answer["steps"]
        for hist, want in zip(ours, answer["values"], strict=True):
            buckets = [
                [lo, hi - lo, c]
                for lo, hi, c in zip(hist.lefts, hist.rights, hist.counts, strict=True)
            ]
            assert np.allclose(buckets, want["buckets"])
            assert (hist.min, hist.max, hist.count) == (want["min"], want["max"], want["count"])


def test_images_and_tensors_equal_mindinsight(tmp_path: Path) -> None:
    rel = next(r for r in MS_FILES if r.startswith("mindspore-full"))
    run = _alone(rel, tmp_path)
    images = read_images(run)
    expected = _answers(rel, "image")
    assert set(images) == set(expected) == {"input_data/auto", "input_image"}
    for tag, answer in expected.items():
        # MindInsight keeps a sample of 10 images per tag: each must be one of ours.
        steps, ours = _last_per_step([i.step for i in images[tag]], images[tag])
        by_step = dict(zip(steps, ours, strict=True))
        for step, want in zip(answer["steps"], answer["values"], strict=True):
            img = by_step[step]
            assert hashlib.sha256(img.encoded).hexdigest() == want["sha256"]
            assert (img.width, img.height, img.colorspace) == (
                want["width"], want["height"], want["colorspace"],
            )  # fmt: skip
            pixels = img.array()
            assert pixels is not None and pixels.shape == (img.height, img.width, img.colorspace)
    tensors = read_tensors(run)
    ((tag, answer),) = _answers(rel, "tensor").items()
    steps, ours = _last_per_step([t.step for t in tensors[tag]], tensors[tag])
    assert steps == answer["steps"]
    for tensor, want in zip(ours, answer["values"], strict=True):
        assert list(tensor.value.shape) == want["dims"]
        assert tensor.value.reshape(-1).astype(np.float64).tolist() == want["values"]


ADAM_MS = "events.out.events.summary.1795284214.0.vm_MS"


def test_run_dir_with_both_formats(tmp_path: Path) -> None:
    shutil.copy(GOLDEN / "mindspore-runs" / "adam_lr001" / ADAM_MS, tmp_path)
    with SummaryRecord(tmp_path) as rec:
        rec.add_scalar("acc", 0.5, 3, wall_time=10.0)
        rec.add_histogram("w", np.arange(10.0), 3)
        rec.add_image("img", np.zeros((4, 5, 3), dtype=np.uint8), 3, dataformats="HWC")
        rec.add_tensor("t", np.arange(6, dtype=np.int32).reshape(2, 3), 3)
    scalars = read_scalars(tmp_path)
    assert set(scalars) == {"acc", "loss/auto"}
    assert scalars["acc"][2].tolist() == [0.5]
    assert scalars["loss/auto"][0].tolist() == [1, 2, 4, 6]  # step 6 twice: the last kept
    raw = read_scalar_sessions(tmp_path, raw=True)["loss/auto"]
    assert raw[0].tolist() == [1, 2, 4, 6, 6]  # what the file holds, for a view that wants it
    hists = read_histograms(tmp_path)
    assert {"w", "fc1.weight/auto"} <= set(hists) and hists["w"][0].counts.sum() == 10
    img = read_images(tmp_path)["img"][0]
    assert img.array().shape == (4, 5, 3) and not img.array().any()
    assert read_tensors(tmp_path)["t"][0].value.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_damage_is_skipped_and_counted(tmp_path: Path) -> None:
    data = bytearray((FULL_RUN / Path(MS_FILES[0]).name).read_bytes())
    name = Path(MS_FILES[0]).name
    mid = len(data) // 2
    data[mid] ^= 0xFF  # inside some record: that record's checksum fails
    (tmp_path / name).write_bytes(bytes(data[: len(data) - 7]))  # and a truncated tail
    reader = RunReader(tmp_path)
    scalars = reader.read_scalars()
    assert reader.corrupt >= 1
    full = read_scalar_sessions(FULL_RUN, raw=True)["loss/auto"][0]  # RunReader reads raw
    assert 0 < len(scalars["loss/auto"][0]) < len(full)
    (tmp_path / "garbage.summary.1_MS").write_bytes(b"\x00" * 5 + os.urandom(64))
    for read in (read_images, read_histograms, read_tensors, read_scalars):
        read(tmp_path)  # never raises


def test_symlinked_files_are_ignored(tmp_path: Path) -> None:
    name = Path(MS_FILES[0]).name
    (tmp_path / name).symlink_to(FULL_RUN / name)
    assert read_scalars(tmp_path) == {}
    assert read_images(tmp_path) == {}


def test_incremental_reads_return_only_new_points(tmp_path: Path) -> None:
    data = (FULL_RUN / Path(MS_FILES[0]).name).read_bytes()
    target = tmp_path / Path(MS_FILES[0]).name
    target.write_bytes(data[: len(data) // 2])
    reader = RunReader(tmp_path)
    first = reader.read_scalars()["loss/auto"][0]
    target.write_bytes(data)
    second = reader.read_scalars()["loss/auto"][0]
    assert (
        np.concatenate([first, second]).tolist()
        == read_scalar_sessions(FULL_RUN, raw=True)["loss/auto"][0].tolist()
    )


def test_random_damage_never_raises(tmp_path: Path) -> None:
    """Flipped bytes and cuts anywhere in a real ``_MS`` file: every reader returns what is
    intact and counts what is not, and never raises."""
    name = Path(MS_FILES[0]).name
    data = (FULL_RUN / name).read_bytes()
    full = len(read_scalar_sessions(FULL_RUN, raw=True)["loss/auto"][0])
    rng = np.random.default_rng(14)
    for trial in range(40):
        damaged = bytearray(data)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            damaged[pos] ^= int(rng.integers(1, 256))
        if trial % 2:
            damaged = damaged[: int(rng.integers(1, len(data)))]
        (tmp_path / name).write_bytes(bytes(damaged))
        reader = RunReader(tmp_path)
        scalars = reader.read_scalars()
        assert len(scalars.get("loss/auto", ([],))[0]) <= full
        for read in (read_images, read_histograms, read_tensors):
            read(tmp_path)
        if trial % 2 == 0:
            assert reader.corrupt >= 1  # a flip inside a record fails its checksum


BY_DIR = sorted(
    (run_dir, tag.rsplit("/", 1)[0])
    for run_dir, tags in ANSWERS["by_dir"].items()
    for tag, want in tags.items()
    if want["plugin"] == "scalar"
)


@pytest.mark.parametrize(("run_dir", "tag"), BY_DIR, ids=["|".join(x) for x in BY_DIR])
def test_each_run_directory_reads_as_mindinsight_read_it(run_dir: str, tag: str) -> None:
    """MindInsight 2.3.1's answer per run directory: a repeated step keeps its last value, a
    later session (``momentum_twice``: a second training in the same directory) drops the
    earlier points at and after the step it starts at."""
    want = ANSWERS["by_dir"][run_dir][f"{tag}/scalar"]
    steps, _, values = read_scalars(GOLDEN / run_dir)[tag]
    assert steps.tolist() == want["steps"]
    np.testing.assert_allclose(values, want["values"], rtol=1e-6)
