"""Landscapes MindSpore 2.10 wrote (tests/golden/mindspore-landscape, see make_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainledger.callbacks.landscape_inputs import check_metadata
from trainledger.summary import read_landscapes

GOLDEN = Path(__file__).parents[1] / "golden" / "mindspore-landscape"
EXPECTED = json.loads((GOLDEN / "expected.json").read_text())["landscapes"]


def test_read_landscapes_reads_what_mindspore_wrote():
    found = read_landscapes(GOLDEN / "run")
    assert [f["tag"] for f in found] == [e["tag"] for e in EXPECTED]
    assert [f["kind"] for f in found] == ["train", "train", "result"]
    for mine, theirs in zip(found, EXPECTED, strict=True):
        assert mine["source"] == "mindspore"
        assert mine["decomposition"] == theirs["decomposition"]
        assert mine["unit"] == theirs["unit"] and mine["step_per_epoch"] == theirs["step_per_epoch"]
        np.testing.assert_allclose(mine["x"], theirs["x"], rtol=1e-7)
        np.testing.assert_allclose(mine["y"], theirs["y"], rtol=1e-7)
        assert list(mine["z"].shape) == theirs["z_dims"] == [3, 3]
        np.testing.assert_allclose(mine["z"].ravel(), theirs["z"], rtol=1e-7)
        assert mine["convergence_point"] == pytest.approx(theirs["convergence_point"])
        if mine["kind"] == "train":
            assert mine["intervals"] == theirs["intervals"]
            for axis in "xyz":
                np.testing.assert_allclose(mine["path"][axis], theirs["path"][axis], rtol=1e-7)
        else:
            assert mine["intervals"] == [6] and mine["path"] is None


def test_mindspores_metadata_passes_the_same_checks():
    check_metadata(json.loads((GOLDEN / "run" / "train_metadata.json").read_text()))


def test_mindspore_runs_without_landscapes_give_none():
    runs = Path(__file__).parents[1] / "golden" / "mindspore-runs"
    for run in sorted(p for p in runs.iterdir() if p.is_dir()):
        assert read_landscapes(run) == []


def test_a_damaged_record_is_skipped(tmp_path, caplog):
    from trainledger.storage.framing import frame

    good = next((GOLDEN / "run").glob("*1766.0.vm_MS")).read_bytes()
    bad = frame(b"\x2a\x05\xff\xff")  # Event.summary: 5 bytes announced, 2 given
    (tmp_path / "events.out.events.summary.1.0.vm_MS").write_bytes(bad + good)
    with caplog.at_level("WARNING", logger="trainledger.summary.mindspore_landscape"):
        found = read_landscapes(tmp_path)
    assert [f["tag"] for f in found] == [e["tag"] for e in EXPECTED]
    assert "not a valid MindSpore event" in caplog.text
