"""Issue 16, item 12: the online stream neither loses nor repeats records.

Offsets cover only what finished training (and, with checkpoints, only what is in the newest
checkpoint on disk); every clean stop commits; a failing or vanished producer fails the run
instead of hanging it or passing for "completed"; non-finite values are bad records."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from trainledger.callbacks import ModelCheckpoint, TrainLineage
from trainledger.checkpoint import CheckpointConfig
from trainledger.data import BadRecordWarning, FileTailSource, QueueStream
from trainledger.errors import CallbackError, StreamError
from trainledger.query import get_summary_lineage
from trainledger.run.callback import Callback, RunContext
from trainledger.run.rec_model import RecModel


def _model() -> RecModel:
    torch.manual_seed(0)
    net = nn.Linear(1, 1)
    return RecModel(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))


def _collate(records: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([[float(r["id"])] for r in records])
    return x, x


def _write(path: Path, ids: range) -> None:
    with open(path, "a") as fh:
        for i in ids:
            fh.write(json.dumps({"id": i}) + "\n")


class Seen(Callback):
    def __init__(self) -> None:
        self.ids: list[int] = []

    def on_train_step_end(self, rc: RunContext) -> None:
        x = rc.original_args().train_dataset_element[0]
        self.ids.extend(int(v) for v in x.flatten().tolist())


def _bytes(records: int) -> int:
    """Where record ``records`` starts in a file written by ``_write`` from id 0."""
    return sum(len(json.dumps({"id": i})) + 1 for i in range(records))


def _source(data: Path, offsets: Path, **kw: Any) -> FileTailSource:
    kw.setdefault("batch_size", 2)
    return FileTailSource(data, collate_fn=_collate, offsets_path=offsets, poll_interval=0.01, **kw)


@pytest.mark.parametrize("stop", ["max_steps", "max_seconds", "request_stop"])
def test_every_clean_stop_commits_what_was_trained(tmp_path: Path, stop: str) -> None:
    data, offsets = tmp_path / "in", tmp_path / "offsets.json"
    data.mkdir()
    _write(data / "a.jsonl", range(40))
    seen = Seen()
    callbacks: list[Callback] = [seen]
    kwargs: dict[str, Any] = {}
    if stop == "max_steps":
        kwargs["max_steps"] = 3
    elif stop == "max_seconds":
        kwargs["max_seconds"] = 0.0001
    else:

        class StopAt(Callback):
            def on_train_step_end(self, rc: RunContext) -> None:
                if rc.original_args().cur_step_num == 3:
                    rc.request_stop()

        callbacks.append(StopAt())
    with pytest.warns(UserWarning, match="no offsets file"):
        src = _source(data, offsets)
    _model().online_train(src, callbacks=callbacks, dataset_sink_mode=False, **kwargs)
    trained = list(seen.ids)  # no close(): the stop itself committed
    (data / "_END").touch()
    again = Seen()
    _model().online_train(_source(data, offsets), callbacks=[again], dataset_sink_mode=False)
    assert trained + again.ids == list(range(40))  # nothing lost, nothing twice


def test_a_crash_replays_the_batch_in_flight_and_never_skips(tmp_path: Path) -> None:
    data, offsets = tmp_path / "in", tmp_path / "offsets.json"
    data.mkdir()
    _write(data / "a.jsonl", range(20))
    (data / "_END").touch()

    class Crash(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            if rc.original_args().cur_step_num == 4:
                raise RuntimeError("out of memory")

    seen = Seen()
    with pytest.warns(UserWarning), pytest.raises(CallbackError, match="out of memory"):
        src = _source(data, offsets, commit_interval=1e-9)
        _model().online_train(src, callbacks=[seen, Crash()], dataset_sink_mode=False)
    src.close()  # what a finally or the process exit would do
    again = Seen()
    _model().online_train(_source(data, offsets), callbacks=[again], dataset_sink_mode=False)
    assert again.ids[:2] == seen.ids[-2:]  # the batch whose step failed is trained again
    assert sorted(set(seen.ids) | set(again.ids)) == list(range(20))


def test_with_checkpoints_offsets_follow_the_newest_checkpoint(tmp_path: Path) -> None:
    data, offsets, ckpts = tmp_path / "in", tmp_path / "offsets.json", tmp_path / "ckpt"
    data.mkdir()
    _write(data / "a.jsonl", range(30))
    (data / "_END").touch()
    seen: list[tuple[int, Any, Any]] = []

    class Watch(Callback):  # what is committed when each step's hooks run
        def on_train_step_end(self, rc: RunContext) -> None:
            p = rc.original_args()
            doc = json.loads(offsets.read_text()) if offsets.exists() else None
            seen.append((p.cur_step_num, p.get("last_save_ckpt_step"), doc and doc["offsets"]))

    config = CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=3)
    callbacks = [ModelCheckpoint("m", ckpts, config), Watch()]
    with pytest.warns(UserWarning):
        src = _source(data, offsets, commit_interval=1e-9)  # would commit at every step
    _model().online_train(src, callbacks=callbacks, dataset_sink_mode=False)
    for step, _saved, committed in seen:
        last_save = 4 * ((step - 1) // 4)  # committed after the hooks of a saving step
        assert committed == ({"a.jsonl": _bytes(2 * last_save)} if last_save else None), step
    assert json.loads(offsets.read_text())["offsets"] == {"a.jsonl": _bytes(30)}  # final save


def test_non_finite_values_are_bad_records_unless_allowed(tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text(
        '{"id": 1}\n{"id": NaN}\n{"id": Infinity}\n{"id": 1e400}\n{"id": 2}\n'
    )
    (data / "_END").touch()
    src = FileTailSource(data, collate_fn=_collate, batch_size=1)
    with pytest.warns(BadRecordWarning, match="non-finite"):
        got = [int(b[0]) for b in src]
    assert got == [1, 2] and src.bad_records == 3
    src = FileTailSource(data, collate_fn=_collate, batch_size=1, allow_nonfinite=True)
    values = [float(b[0]) for b in src]
    assert len(values) == 5 and math.isnan(values[1]) and math.isinf(values[3])


def _produce_then_raise(stream: QueueStream, end_in_finally: bool) -> None:
    try:
        for i in range(6):
            stream.put({"id": i})
        raise ValueError("the database went away")
    finally:
        if end_in_finally:
            stream.end()


@pytest.mark.parametrize("end_in_finally", [False, True])
def test_a_producer_thread_that_raises_fails_the_run(tmp_path: Path, end_in_finally: bool) -> None:
    stream = QueueStream(batch_size=2, collate_fn=_collate, poll_interval=0.02)
    producer = threading.Thread(target=_produce_then_raise, args=(stream, end_in_finally))
    stream.attach(producer)
    producer.start()
    started = time.monotonic()
    with pytest.raises(StreamError, match="the database went away|without ending"):
        _model().online_train(stream, callbacks=[TrainLineage(tmp_path)], dataset_sink_mode=False)
    assert time.monotonic() - started < 10  # no hang
    assert get_summary_lineage(str(tmp_path))["run"]["status"] == "failed"


def test_the_producer_context_manager_fails_the_stream(tmp_path: Path) -> None:
    stream = QueueStream(batch_size=2, collate_fn=_collate)

    def produce() -> None:
        with stream.producer() as p:
            p.put({"id": 0})
            raise KeyError("schema changed")

    threading.Thread(target=produce).start()
    with pytest.raises(StreamError, match="KeyError: 'schema changed'"):
        _model().online_train(stream, callbacks=[TrainLineage(tmp_path)], dataset_sink_mode=False)
    assert get_summary_lineage(str(tmp_path))["run"]["status"] == "failed"


def _die(producer: Any) -> None:
    producer.put({"id": 0})
    os._exit(3)  # killed without a word (no end(), no exception)


def test_a_producer_process_that_dies_fails_the_run_in_bounded_time(tmp_path: Path) -> None:
    stream = QueueStream(batch_size=1, collate_fn=_collate, process=True, poll_interval=0.05)
    child = multiprocessing.get_context("spawn").Process(target=_die, args=(stream.producer(),))
    stream.attach(child)
    child.start()
    with pytest.raises(StreamError, match="exit code 3"):
        _model().online_train(stream, callbacks=[TrainLineage(tmp_path)], dataset_sink_mode=False)
    assert get_summary_lineage(str(tmp_path))["run"]["status"] == "failed"
