"""A condition's count kept between its pages (``query/count_cache.py``): counted once while
the index holds, counted afresh after any change of runs, never kept for a tag condition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runs import write_run
from trainledger.query import page_read
from trainledger.query.index import LineageIndex


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every count a query made."""
    calls: list[str] = []
    by_type_set, series_sizes = page_read._by_type_set, page_read._series_sizes

    def spy(conn: Any, matches: tuple[str, list[Any]], *rest: Any) -> Any:
        calls.append(matches[0])
        return by_type_set(conn, matches)

    def series_spy(conn: Any, matches: tuple[str, list[Any]], *rest: Any) -> Any:
        calls.append(matches[0])
        return series_sizes(conn, matches, *rest)

    monkeypatch.setattr(page_read, "_by_type_set", spy)
    monkeypatch.setattr(page_read, "_series_sizes", series_spy)
    return calls


def _dirs(result: dict[str, Any]) -> list[str]:
    return [o["summary_dir"] for o in result["object"]]


def _runs(base: Path, n: int) -> None:
    for i in range(n):
        write_run(base, f"r{i}", metrics={"acc": i / 10, "loss": 1 - i / 10}, mtime=100 + i)


def test_pages_and_sorts_of_one_condition_count_it_once(
    tmp_path: Path, index_url: str | None, counted: list[str]
) -> None:
    _runs(tmp_path, 5)
    cond = {"metric/acc": {"gt": 0.15}, "sorted_name": "metric/acc", "limit": 2}
    with LineageIndex(tmp_path, index=index_url, name=str(tmp_path), watch=False) as index:
        first = index.query({**cond, "offset": 0})
        second = index.query({**cond, "offset": 1})
        by_loss = index.query({**cond, "sorted_name": "metric/loss", "offset": 0})
        other = index.query({"metric/acc": {"gt": 0.25}, "limit": 2, "offset": 0})
    assert (first["count"], second["count"], by_loss["count"], other["count"]) == (3, 3, 3, 2)
    assert _dirs(first) == ["./r2", "./r3"] and _dirs(second) == ["./r4"]
    assert _dirs(by_loss) == ["./r4", "./r3"]
    assert first["customized"] == second["customized"]
    assert len(counted) == 2  # one count per condition: the pages and the new sort reuse it


def test_a_change_of_runs_is_counted_afresh(
    tmp_path: Path, index_url: str | None, counted: list[str]
) -> None:
    _runs(tmp_path, 3)
    cond = {"metric/acc": {"ge": 0.1}, "limit": 1, "offset": 0}
    with LineageIndex(tmp_path, index=index_url, name=str(tmp_path), watch=False) as index:
        assert index.query(cond)["count"] == 2
        write_run(tmp_path, "new", metrics={"acc": 0.9, "loss": 0.1}, mtime=500)
        changed = index.query(cond)
        assert changed["count"] == 3 and _dirs(changed) == ["./new"]
        write_run(tmp_path, "new", metrics={"acc": 0.0, "loss": 0.1}, mtime=600)
        assert index.query(cond)["count"] == 2
    assert len(counted) == 3


def test_a_tag_condition_is_counted_each_time(tmp_path: Path, counted: list[str]) -> None:
    _runs(tmp_path, 3)
    cond = {"tag": {"eq": 2}, "limit": 1, "offset": 0}
    with LineageIndex(tmp_path, watch=False) as index:
        assert index.query(cond)["count"] == 0
        index.set_annotation("./r1", tag=2)  # (does not bump the index generation)
        assert index.query(cond)["count"] == 1
        index.set_annotation("./r2", tag=2)
        assert index.query(cond)["count"] == 2
    assert len(counted) == 3


def test_the_count_cache_holds_at_most_its_limit(tmp_path: Path, counted: list[str]) -> None:
    _runs(tmp_path, 5)
    with LineageIndex(tmp_path, watch=False) as index:
        index._counts.limit = 2
        for low in (0.05, 0.15, 0.25):
            index.query({"metric/acc": {"gt": low}, "limit": 1, "offset": 0})
        assert len(index._counts) == 2
        assert index.query({"metric/acc": {"gt": 0.05}, "limit": 1, "offset": 0})["count"] == 4
    assert len(counted) == 4  # the oldest condition went first and was counted again


def test_a_statistic_sorts_segment_sizes_are_kept_and_renewed(
    tmp_path: Path, counted: list[str]
) -> None:
    """A sort on ``min(loss)`` counts the runs with and without it (``page_read``'s segment
    sizes): kept across its pages, counted again once a run changed."""

    def record(i: int, low: float | None) -> dict[str, Any]:
        series = {} if low is None else {"loss": {"min": low, "count": 3, "last_step": 2}}
        return {"summary_dir": f"./r{i}", "update_time": float(i), "series": series}

    cond = {"sorted_name": "min(loss)", "sorted_type": "ascending", "limit": 2}
    with LineageIndex(tmp_path, watch=False) as index:
        index.add_records([record(0, None), record(1, 0.5), record(2, 0.2), record(3, None)])
        pages = [_dirs(index.query({**cond, "offset": k}, refresh=False)) for k in range(2)]
        assert pages == [["./r3", "./r0"], ["./r2", "./r1"]]  # without the statistic first
        assert len(counted) == 1
        index.add_records([record(3, 0.3)])
        pages = [_dirs(index.query({**cond, "offset": k}, refresh=False)) for k in range(2)]
        assert pages == [["./r0", "./r2"], ["./r3", "./r1"]]
        assert len(counted) == 2


def test_a_live_runs_growing_series_is_counted_afresh(tmp_path: Path) -> None:
    """A live run's new points change its statistics (a write of series that bumps the
    index generation, ``index_refresh``): a kept count on them is not used again."""
    from torch.utils.tensorboard import SummaryWriter

    from tests.runs import RunValues

    live = write_run(tmp_path, "live", run=RunValues(status="running"))
    write_run(tmp_path, "done", metrics={"acc": 0.5})
    cond = {"max(loss)": {"gt": 4.0}, "limit": 1, "offset": 0}
    with SummaryWriter(str(live)) as writer, LineageIndex(tmp_path, watch=False) as index:
        for step in range(1, 6):
            writer.add_scalar("loss", 1.0 / step, step)
        writer.flush()
        assert index.query(cond)["count"] == 0
        assert index.query(cond)["count"] == 0  # (kept)
        writer.add_scalar("loss", 5.0, 6)
        writer.flush()
        grown = index.query(cond)
        assert (grown["count"], _dirs(grown)) == (1, ["./live"])
