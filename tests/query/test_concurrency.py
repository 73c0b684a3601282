"""Processes write runs, query and annotate at once: nothing lost, no "database is locked"."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from pathlib import Path

import pytest

N_WRITERS = 2
RUNS_PER_WRITER = 20


def _writer(base: str, wid: int, errors: mp.Queue) -> None:
    try:
        from tests.runs import write_run

        for i in range(RUNS_PER_WRITER):
            write_run(
                base,
                f"w{wid}_r{i:02d}",
                batch_size=i,
                metrics={"acc": i / 100},
                graph={"op_type": "G", "n": i % 12},
            )
            time.sleep(0.005)
    except BaseException:
        errors.put(traceback.format_exc())


def _reader(base: str, done: str, errors: mp.Queue, delete_index: bool) -> None:
    try:
        from trainledger.errors import LineageFileNotFoundError
        from trainledger.query.index import LineageIndex
        from trainledger.query.lineage_api import filter_summary_lineage

        index = LineageIndex(base)
        for n in range(400):  # bounded
            if os.path.exists(done) and n > 5:
                break
            result = index.query({"metric/acc": {"ge": 0}, "sorted_name": "batch_size"})
            marks = [o["model_lineage"]["dataset_mark"] for o in result["object"]]
            assert all(m is not None for m in marks)
            try:
                filter_summary_lineage(base, {"limit": 3})
            except LineageFileNotFoundError:
                assert result["count"] == 0  # only before the first run is written
            if delete_index and n == 10:
                try:
                    os.unlink(index.path)
                except FileNotFoundError:
                    pass
        index.close()
    except BaseException:
        errors.put(traceback.format_exc())


def _annotator(base: str, errors: mp.Queue) -> None:
    try:
        from trainledger.query.index import LineageIndex

        with LineageIndex(base) as index:
            for i in range(RUNS_PER_WRITER):
                index.set_annotation(f"./w0_r{i:02d}", tag=i % 11)
    except BaseException:
        errors.put(traceback.format_exc())


@pytest.mark.slow
def test_writers_readers_annotators_in_parallel(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    errors: mp.Queue = ctx.Queue()
    base = str(tmp_path)
    done = str(tmp_path / "writers-done")
    writers = [ctx.Process(target=_writer, args=(base, w, errors)) for w in range(N_WRITERS)]
    readers = [ctx.Process(target=_reader, args=(base, done, errors, r == 0)) for r in range(2)]
    annotator = ctx.Process(target=_annotator, args=(base, errors))
    for p in [*readers, *writers, annotator]:
        p.start()
    for p in [*writers, annotator]:
        p.join(120)
    Path(done).touch()
    for p in readers:
        p.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert not found, found[0]
    assert all(p.exitcode == 0 for p in [*readers, *writers, annotator])

    from trainledger.query.index import LineageIndex

    with LineageIndex(base) as index:
        result = index.query({"sorted_name": "summary_dir"})
        assert result["count"] == N_WRITERS * RUNS_PER_WRITER  # no lost run
        marks = {}
        for obj in result["object"]:
            n = obj["dataset_graph"]["n"]
            assert (
                marks.setdefault(n, obj["model_lineage"]["dataset_mark"])
                == obj["model_lineage"]["dataset_mark"]
            )
        assert len(set(marks.values())) == 12  # one mark per distinct graph, no collision
        tags = {o["summary_dir"]: o["added_info"].get("tag") for o in result["object"]}
        assert all(tags[f"./w0_r{i:02d}"] == i % 11 for i in range(RUNS_PER_WRITER))
