"""The series API's ``continue_parent`` (issue 53 item 6): a run started from another run's
checkpoint continues its parent's line, the parent's points up to the fork step, then its
own drawn at the fork step plus theirs; off by default. ``server/parent_series.py`` on
arrays, and the API over real fine-tuned runs (``tests/server/family_runs.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.server.conftest import TestClient, client_for
from tests.server.family_runs import make_fork_base
from trainledger.server.parent_series import Line, fork_of, keep_with_fork, splice
from trainledger.server.smoothing import smooth

PRE = {s: 2.0 - 0.1 * s for s in range(1, 9)}
FINE = {s: 1.0 - 0.1 * s for s in range(1, 9)}
EARLY = {s: 0.5 - 0.1 * s for s in range(1, 5)}


def _line(steps: list[int], values: list[float]) -> Line:
    return Line(
        np.array(steps, dtype=np.int64),
        np.array(steps, dtype=np.float64) + 1e9,
        np.array(values, dtype=np.float64),
        np.zeros(len(steps), dtype=np.int32),
    )


def test_splice_takes_the_parents_points_up_to_the_fork_then_the_childs_shifted() -> None:
    parent = _line([2, 4, 6, 8, 10], [5.0, 4.0, 3.0, 2.0, 1.0])
    child = _line([1, 2, 3], [0.9, 0.8, 0.7])
    line, drawn, count = splice(parent, child, 6)
    assert count == 3
    assert line.steps.tolist() == [2, 4, 6, 1, 2, 3]  # each run's own steps
    assert drawn.tolist() == [2, 4, 6, 7, 8, 9]  # the child's step s at 6 + s
    assert line.values.tolist() == [5.0, 4.0, 3.0, 0.9, 0.8, 0.7]
    assert line.smoothed is None
    # a parent without the tag: the child's own points, still shifted
    line, drawn, count = splice(_line([], []), child, 6)
    assert (count, line.steps.tolist(), drawn.tolist()) == (0, [1, 2, 3], [7, 8, 9])


def test_the_downsampling_keeps_both_sides_of_the_fork() -> None:
    values = np.r_[np.linspace(5, 4, 500), np.linspace(1, 0, 500)]
    for count in (1, 123, 500, 999):
        kept = keep_with_fork(values, count, 40)
        assert len(kept) <= 40 and count - 1 in kept and count in kept, count
        assert kept.tolist() == sorted(set(kept.tolist()))


def test_the_fork_is_the_largest_source_when_it_is_a_run_of_the_base() -> None:
    entry = {"run_id": "pre", "checkpoint": "pre/m-2_4.ckpt", "step": 8, "match": 0.9}
    found = fork_of({"ancestors": [{**entry, "depth": 1}, {**entry, "run_id": "b", "depth": 1}]})
    assert found is not None and (found.run_id, found.step, found.match) == ("pre", 8, 0.9)
    outside = {**entry, "run_id": None, "run": None, "step": None, "depth": 1}
    assert fork_of({"ancestors": [outside, {**entry, "depth": 1}]}) is None
    assert fork_of({"ancestors": [{**entry, "depth": 2}]}) is None
    assert fork_of({"ancestors": []}) is None


@pytest.fixture(scope="module")
def fork_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fork_base(tmp_path_factory.mktemp("fork") / "base")


@pytest.fixture
def fclient(fork_base: Path) -> Iterator[TestClient]:
    with client_for(fork_base) as c:
        yield c


def _series(client: TestClient, runs: list[str], **body: Any) -> dict[str, dict[str, Any]]:
    answer = client.post("/api/v1/scalars/series", json={"runs": runs, "tags": ["loss"], **body})
    assert answer.status_code == 200, answer.text
    return {s["run_id"]: s for s in answer.json()["series"]}


def _points(series: dict[str, Any]) -> list[tuple[int, float]]:
    return [(p[0], pytest.approx(p[2], abs=1e-6)) for p in series["points"]]


def test_a_child_continues_its_parent_up_to_the_fork_step(fclient: TestClient) -> None:
    found = _series(fclient, ["early", "fine", "pre", "alone"], continue_parent=True)
    early = found["early"]
    assert early["parent"] == {
        "run_id": "pre",
        "checkpoint": early["parent"]["checkpoint"],
        "step": 4,
        "match": 1.0,
        "count": 4,
    }
    assert early["parent"]["checkpoint"].endswith("m-1_4.ckpt")
    # pre's points at steps 1-4 (not 5-8: after the fork), then early's own steps 1-4
    assert _points(early) == [*((s, PRE[s]) for s in range(1, 5)), *EARLY.items()]
    assert (early["total"], early["in_range"]) == (4, 4)  # the run's own
    fine = found["fine"]
    assert (fine["parent"]["run_id"], fine["parent"]["step"], fine["parent"]["count"]) == (
        "pre",
        8,
        8,
    )
    assert _points(fine) == [*PRE.items(), *FINE.items()]
    assert found["pre"]["parent"] is None and _points(found["pre"]) == list(PRE.items())
    # off (the default): each run's own points, no parent
    plain = _series(fclient, ["early", "fine"])
    assert plain["early"]["parent"] is None and _points(plain["early"]) == list(EARLY.items())
    assert plain["fine"]["parent"] is None and _points(plain["fine"]) == list(FINE.items())


def test_the_range_is_on_the_drawn_axis(fclient: TestClient) -> None:
    early = _series(fclient, ["early"], continue_parent=True, step_min=3, step_max=6)["early"]
    # drawn steps 3..6: pre's 3 and 4, early's 1 and 2 (drawn at 5 and 6)
    assert _points(early) == [(3, PRE[3]), (4, PRE[4]), (1, EARLY[1]), (2, EARLY[2])]
    assert early["parent"]["count"] == 2 and early["in_range"] == 2
    late = _series(fclient, ["early"], continue_parent=True, step_min=6)["early"]
    assert late["parent"]["count"] == 0
    assert _points(late) == [(s, EARLY[s]) for s in (2, 3, 4)]


def test_each_part_is_smoothed_as_its_own_runs_line(fclient: TestClient) -> None:
    early = _series(fclient, ["early"], continue_parent=True, smoothing=0.6)["early"]
    own = _series(fclient, ["early", "pre"], smoothing=0.6)
    parent_part = own["pre"]["smoothed"][:4]  # (pre's smoothed line up to the fork)
    assert early["smoothed"] == pytest.approx([*parent_part, *own["early"]["smoothed"]])
    want = smooth(np.array([PRE[s] for s in range(1, 9)], dtype=np.float32).astype(float), 0.6)
    assert parent_part == pytest.approx(want[:4].tolist(), rel=1e-6)
