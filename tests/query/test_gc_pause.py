"""The collector paused while answers are built (``query/gc_pause.py``): during the read and
the answer's objects, never during a refresh's parsing, and restored as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runs import write_run
from trainledger.lineage import read_lineage
from trainledger.query import answer_forms
from trainledger.query.gc_pause import gc_paused
from trainledger.query.index import LineageIndex


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_answers_are_built_with_the_collector_paused_and_runs_parsed_with_it_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector_on: None
) -> None:
    for name, acc in (("a", 0.1), ("b", 0.2)):
        write_run(tmp_path, name, metrics={"acc": acc})
    parsed: list[bool] = []
    built: list[bool] = []

    def reader(run_dir: str) -> dict[str, Any]:
        parsed.append(gc.isenabled())
        return read_lineage(run_dir)

    build = answer_forms.build_page

    def counting_build(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        built.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(answer_forms, "build_page", counting_build)
    with LineageIndex(tmp_path, reader=reader, watch=False) as index:
        result = index.query({"sorted_name": "summary_dir"})
        records = index.records()
    assert [o["summary_dir"] for o in result["object"]] == ["./a", "./b"]
    assert len(records) == 2
    assert parsed == [True, True]  # a refresh may make cycles and run long: never paused
    assert built == [False]  # (one page of two answers)
    assert gc.isenabled()  # and running again after the answer


def test_a_collector_the_program_disabled_stays_disabled(collector_on: None) -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()


def test_nested_pauses_across_threads_resume_once_the_last_leaves(collector_on: None) -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread is still building
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_an_error_inside_a_pause_resumes_the_collector(collector_on: None) -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def _generation_of(obj: object) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation=generation)):
            return generation
    return None


def test_what_a_pause_allocated_goes_to_the_oldest_generation_unwalked(collector_on: None) -> None:
    """No young collection walks the answer's objects once the pause ends: they are moved to
    the oldest generation, and the count of young allocations starts again from zero."""
    gc.collect()
    with gc_paused():
        answer = [{"children": [{}]} for _ in range(5_000)]
        assert gc.get_count()[0] >= 5_000
    assert gc.get_count()[0] < 5_000
    assert _generation_of(answer) == 2 and _generation_of(answer[-1]) == 2
    young = [[] for _ in range(3)]  # (allocations outside a pause stay young)
    assert _generation_of(young) == 0


def test_objects_the_program_froze_stay_frozen(collector_on: None) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with gc_paused():
            answer = [[] for _ in range(100)]
        # still frozen (thawing would leave none); a few may have been freed meanwhile by
        # another thread of the test process (a base watcher of an earlier test)
        assert frozen - 1000 < gc.get_freeze_count() <= frozen
        assert _generation_of(answer) == 0  # (left young: unfreezing would thaw the program's)
    finally:
        gc.unfreeze()
