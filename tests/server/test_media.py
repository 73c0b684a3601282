"""A run's images, histograms and tensors over the API: our TensorBoard files and MindSpore's."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.runs import sample_run
from tests.server.conftest import client_for
from trainledger.server.media_store import pick_indices, rebin, tensor_view
from trainledger.summary import HistogramEvent, SummaryRecord, read_histograms, read_images
from trainledger.summary.media import decode_png

MS_RUN = Path(__file__).parents[1] / "golden" / "mindspore-full" / "run"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    base = tmp_path / "base"
    run = sample_run(base, "ours", 0, scalars=3)
    rng = np.random.default_rng(0)
    with SummaryRecord(run) as rec:
        for step in range(1, 4):
            rec.add_image("in/<b>", rng.integers(0, 256, (4, 6, 3), dtype=np.uint8), step)
            rec.add_histogram("w", rng.normal(step, 1.0, 400), step)
            rec.add_tensor("big", np.arange(2000, dtype=np.float32) * step, step)
            rec.add_tensor("small", np.array([[1.0, np.nan], [np.inf, 4.0]]), step)
    shutil.copytree(MS_RUN, base / "ms")
    return base


def test_images_of_both_formats_are_served_as_png(base: Path) -> None:
    with client_for(base) as c:
        tags = {t["tag"]: t for t in c.get("/api/v1/runs/ours/images").json()["tags"]}
        assert tags["in/<b>"]["steps"] == [1, 2, 3]
        assert (tags["in/<b>"]["width"], tags["in/<b>"]["height"]) == (6, 4)
        r = c.get("/api/v1/runs/ours/images/file", params={"tag": "in/<b>", "index": 1})
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"
        expected = read_images(base / "ours")["in/<b>"][1].encoded
        assert r.content == expected and decode_png(r.content).shape == (4, 6, 3)

        ms_tags = {t["tag"]: t for t in c.get("/api/v1/runs/ms/images").json()["tags"]}
        assert ms_tags["input_image"]["steps"] == list(range(1, 13))
        r = c.get("/api/v1/runs/ms/images/file", params={"tag": "input_image"})
        assert r.content == read_images(MS_RUN)["input_image"][-1].encoded
        assert r.headers["content-type"] == "image/png"


def test_unknown_tag_or_index_is_404(base: Path) -> None:
    with client_for(base) as c:
        r = c.get("/api/v1/runs/ours/images/file", params={"tag": "nope"})
        assert r.status_code == 404 and "nope" in r.json()["detail"]
        r = c.get("/api/v1/runs/ours/images/file", params={"tag": "in/<b>", "index": 3})
        assert r.status_code == 404
        assert c.get("/api/v1/runs/missing/images").status_code == 404
        assert c.get("/api/v1/runs/ours/tensors/value", params={"tag": "w"}).status_code == 404


def test_histogram_series_keep_each_steps_count(base: Path) -> None:
    with client_for(base) as c:
        tags = c.get("/api/v1/runs/ms/histograms").json()["tags"]
        assert {t["tag"] for t in tags} == set(read_histograms(MS_RUN))
        body = c.get(
            "/api/v1/runs/ms/histograms/series", params={"tag": "fc.weight/auto", "bins": 7}
        ).json()
        assert len(body["edges"]) == 8 and body["total"] == 14
        for item, event in zip(
            body["histograms"], read_histograms(MS_RUN)["fc.weight/auto"], strict=True
        ):
            assert item["step"] == event.step
            assert sum(item["counts"]) == pytest.approx(event.counts.sum())
        ours = c.get("/api/v1/runs/ours/histograms/series", params={"tag": "w", "max_steps": 2})
        assert [h["step"] for h in ours.json()["histograms"]] == [1, 3]


def test_tensors_small_values_and_large_stats(base: Path) -> None:
    with client_for(base) as c:
        tags = {t["tag"]: t for t in c.get("/api/v1/runs/ours/tensors").json()["tags"]}
        assert tags["big"]["shape"] == [2000] and tags["big"]["dtype"] == "float32"
        big = c.get("/api/v1/runs/ours/tensors/value", params={"tag": "big", "index": 0}).json()
        assert big["values"] is None and big["step"] == 1
        assert big["stats"]["max"] == 1999.0 and big["stats"]["mean"] == pytest.approx(999.5)
        small = c.get("/api/v1/runs/ours/tensors/value", params={"tag": "small"}).json()
        assert small["values"] == [1.0, None, None, 4.0] and small["shape"] == [2, 2]
        assert small["stats"]["nan"] == 1 and small["stats"]["inf"] == 1
        ms = c.get("/api/v1/runs/ms/tensors/value", params={"tag": "logits"}).json()
        assert ms["shape"] == [8, 3] and len(ms["values"]) == 24 and ms["step"] == 12


def test_new_summaries_are_read_incrementally(base: Path) -> None:
    with client_for(base) as c:
        assert c.get("/api/v1/runs/ours/images").json()["tags"][0]["steps"] == [1, 2, 3]
        with SummaryRecord(base / "ours") as rec:
            rec.add_image("in/<b>", np.zeros((4, 6, 3), dtype=np.uint8), 9)
        assert c.get("/api/v1/runs/ours/images").json()["tags"][0]["steps"] == [1, 2, 3, 9]


def test_rebin_spreads_counts_by_overlap() -> None:
    one = HistogramEvent(0, 0.0, np.array([0.0, 1.0]), np.array([1.0, 2.0]),
                         np.array([4.0, 2.0]), 0.0, 2.0, 6.0, 5.0)  # fmt: skip
    point = HistogramEvent(1, 0.0, np.array([3.0]), np.array([3.0]), np.array([5.0]),
                           3.0, 3.0, 5.0, 15.0)  # fmt: skip
    edges, counts = rebin([one, point], 3)
    np.testing.assert_allclose(edges, [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(counts, [[4.0, 2.0, 0.0], [0.0, 0.0, 5.0]])


def test_pick_indices_and_tensor_view_of_strings() -> None:
    assert pick_indices(10, 3) == [0, 4, 9] and pick_indices(2, 5) == [0, 1]
    view = tensor_view(np.array([b"a", b"<i>"], dtype=object))
    assert view["values"] == ["a", "<i>"] and view["stats"] is None
