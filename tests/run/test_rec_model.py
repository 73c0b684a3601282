"""RecModel.online_train: stopping, epochs over re-iterable sources, sink units, cb_params."""

from __future__ import annotations

import itertools
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from trainledger.data import QueueStream
from trainledger.errors import DatasetError
from trainledger.run.callback import Callback, RunContext
from trainledger.run.model import Model
from trainledger.run.rec_model import RecModel


def _batches(seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An infinite stream of regression batches."""
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randn(8, 4, generator=g)
        yield x, x.sum(dim=1, keepdim=True)


def _model(**kw: Any) -> RecModel:
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    return RecModel(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01), **kw)


class Recorder(Callback):
    """Records hook calls as (hook, cur_epoch_num, cur_step_num); may stop at a step."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[tuple[str, Any, int]] = []
        self.stop_at = stop_at
        self.params: dict[str, Any] = {}

    def _rec(self, hook: str, rc: RunContext) -> None:
        p = rc.original_args()
        self.calls.append((hook, p.cur_epoch_num, p.cur_step_num))

    def on_train_begin(self, rc: RunContext) -> None:
        self._rec("train_begin", rc)

    def on_train_epoch_begin(self, rc: RunContext) -> None:
        self._rec("epoch_begin", rc)

    def on_train_step_begin(self, rc: RunContext) -> None:
        self._rec("step_begin", rc)

    def on_train_step_end(self, rc: RunContext) -> None:
        self._rec("step_end", rc)
        self.params = dict(rc.original_args())
        if self.stop_at is not None and rc.original_args().cur_step_num >= self.stop_at:
            rc.request_stop()

    def on_train_epoch_end(self, rc: RunContext) -> None:
        self._rec("epoch_end", rc)

    def on_train_end(self, rc: RunContext) -> None:
        self._rec("train_end", rc)
        self.params = dict(rc.original_args())

    def hooks(self, name: str) -> list[tuple[str, Any, int]]:
        return [c for c in self.calls if c[0] == name]


def test_infinite_generator_stopped_by_request_stop() -> None:
    rec = Recorder(stop_at=7)
    _model().online_train(_batches(), callbacks=[rec])
    assert [c[2] for c in rec.hooks("step_end")] == list(range(1, 8))
    assert rec.calls[-2:] == [("epoch_end", 1, 7), ("train_end", 1, 7)]
    assert rec.params["stop_reason"] == "requested"


def test_infinite_generator_stopped_by_max_steps_in_sink_units() -> None:
    rec = Recorder()
    _model().online_train(_batches(), callbacks=[rec], sink_size=4, max_steps=10)
    # sink mode: hooks once per unit; cur_step_num advanced by the steps run; the last unit
    # is cut to respect max_steps
    assert [c[2] for c in rec.hooks("step_begin")] == [0, 4, 8]
    assert [c[2] for c in rec.hooks("step_end")] == [4, 8, 10]
    assert rec.params["stop_reason"] == "max_steps"
    assert rec.params["sink_size"] == 4 and rec.params["dataset_sink_mode"] is True


def test_non_sink_mode_fires_step_hooks_every_step() -> None:
    rec = Recorder()
    _model().online_train(_batches(), callbacks=[rec], dataset_sink_mode=False, max_steps=5)
    assert [c[2] for c in rec.hooks("step_begin")] == [1, 2, 3, 4, 5]
    assert [c[2] for c in rec.hooks("step_end")] == [1, 2, 3, 4, 5]


def test_infinite_generator_stopped_by_max_seconds() -> None:
    rec = Recorder()
    _model().online_train(_batches(), callbacks=[rec], max_seconds=0.05)
    assert rec.params["stop_reason"] == "max_seconds"
    assert rec.hooks("train_end") and rec.params["cur_step_num"] >= 1


def test_one_shot_iterator_that_ends_ends_training_normally() -> None:
    rec = Recorder()
    _model().online_train(itertools.islice(_batches(), 6), callbacks=[rec], sink_size=4)
    assert [c[2] for c in rec.hooks("step_end")] == [4, 6]
    assert len(rec.hooks("epoch_begin")) == 1
    assert rec.params["stop_reason"] == "completed"


def test_uneven_streams_in_one_process_changes_nothing() -> None:
    """Without a process group there is no other rank to agree with: no collective runs."""
    rec = Recorder()
    stream = itertools.islice(_batches(), 6)
    _model().online_train(stream, callbacks=[rec], sink_size=4, uneven_streams=True)
    assert [c[2] for c in rec.hooks("step_end")] == [4, 6]
    assert rec.params["stop_reason"] == "completed"


def test_reiterable_source_is_reiterated_as_epochs() -> None:
    data = list(itertools.islice(_batches(), 4))
    rec = Recorder()
    _model().online_train(data, callbacks=[rec], max_steps=10)
    assert [(c[1], c[2]) for c in rec.hooks("epoch_end")] == [(1, 4), (2, 8), (3, 10)]
    assert [c[1] for c in rec.hooks("epoch_begin")] == [1, 2, 3]
    assert rec.params["epoch_num"] is None and rec.params["batch_num"] == 4  # len of a pass


class Shrinking:
    """A re-iterable whose passes get shorter, then empty."""

    def __init__(self) -> None:
        self.sizes = [3, 1, 0, 5]

    def __iter__(self) -> Iterator[Any]:
        return itertools.islice(_batches(), self.sizes.pop(0))


def test_reiterable_source_with_an_empty_pass_ends_training() -> None:
    rec = Recorder()
    _model().online_train(Shrinking(), callbacks=[rec])
    assert [(c[1], c[2]) for c in rec.hooks("epoch_end")] == [(1, 3), (2, 4)]
    assert rec.params["stop_reason"] == "completed"


def test_every_cb_params_field_of_model_train_is_set() -> None:
    ref = Recorder()
    data = list(itertools.islice(_batches(), 3))
    Model(nn.Linear(4, 1), nn.MSELoss(), torch.optim.SGD(nn.Linear(4, 1).parameters(), 0.1)).train(
        1, data, callbacks=[ref]
    )
    rec = Recorder()
    _model().online_train(_batches(), callbacks=[rec], max_steps=3)
    missing = set(ref.params) - set(rec.params)
    assert not missing
    p = rec.params
    assert p["epoch_num"] is None and p["batch_num"] is None
    assert p["mode"] == "train" and p["cur_epoch_num"] == 1 and p["cur_step_num"] == 3
    assert p["max_steps"] == 3 and p["max_seconds"] is None
    assert p["window_metrics"] == {} and p["eval_results"] == {}
    assert isinstance(p["net_outputs"], torch.Tensor)
    assert p["parallel_mode"] == "stand_alone" and p["device_number"] == 1


def test_sigint_while_blocked_on_an_empty_stream_stops_cleanly() -> None:
    stream = QueueStream(
        maxsize=8,
        batch_size=2,
        collate_fn=lambda rs: (
            torch.tensor(rs, dtype=torch.float32),
            torch.tensor(rs, dtype=torch.float32).sum(1, True),
        ),
        poll_interval=0.01,
    )
    for _ in range(4):
        stream.put([1.0, 2.0, 3.0, 4.0])  # two batches, then the producer goes quiet

    rec = Recorder()
    # (the handler the process had: Python's default, or SIG_IGN in a background job)
    before = signal.getsignal(signal.SIGINT)

    class Interrupt(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            if rc.original_args().cur_step_num == 2:  # the trainer will now wait for data
                threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()

    _model().online_train(stream, callbacks=[rec, Interrupt()])
    assert rec.params["stop_reason"] == "signal"
    assert rec.params["cur_step_num"] == 2
    assert rec.hooks("train_end")
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_bad_records_of_the_source_are_in_cb_params() -> None:
    def parse(r: Any) -> Any:
        if r is None:
            raise ValueError("empty")
        return r

    stream = QueueStream(
        maxsize=16,
        batch_size=1,
        parse=parse,
        collate_fn=lambda rs: (torch.tensor(rs, dtype=torch.float32), torch.zeros(1, 1)),
    )
    for r in ([1.0] * 4, None, [2.0] * 4, None):
        stream.put(r)
    stream.end()
    rec = Recorder()
    with pytest.warns(RuntimeWarning, match="skipped bad record"):
        _model().online_train(stream, callbacks=[rec])
    assert rec.params["bad_records"] == 2 and rec.params["cur_step_num"] == 2


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"sink_size": 0}, ValueError, "sink_size expected a positive int"),
        ({"sink_size": -1}, ValueError, "sink_size expected a positive int"),
        ({"sink_size": True}, TypeError, "sink_size expected a positive int"),  # as MindSpore
        ({"max_steps": 0}, ValueError, "max_steps expected a positive int"),
        ({"max_seconds": -1.0}, ValueError, "max_seconds expected a positive number"),
        ({"metric_window": 0}, ValueError, "metric_window expected a positive int"),
        ({"uneven_streams": 1}, TypeError, "uneven_streams expected a bool, received: int"),
    ],
)
def test_config_errors(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        _model(metrics={"loss"}).online_train(_batches(), **kwargs)


def test_dataset_and_metric_errors() -> None:
    with pytest.raises(DatasetError, match="train_dataset expected an iterable"):
        _model().online_train(42)  # type: ignore[arg-type]
    net = nn.Linear(4, 1)
    no_loss_fn = RecModel(net, optimizer=torch.optim.SGD(net.parameters(), 0.1), metrics={"auc"})
    with pytest.raises(ValueError, match="expected predictions and labels"):
        no_loss_fn.online_train(_batches())


def test_file_tail_source_resumes_across_online_train_runs(tmp_path: Path) -> None:
    import json

    from trainledger.data import FileTailSource

    data = tmp_path / "stream"
    data.mkdir()
    with open(data / "part-1.jsonl", "w") as fh:
        for i in range(10):
            fh.write(json.dumps({"x": [float(i)] * 4, "y": float(i)}) + "\n")

    def collate(rs: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tensor([r["x"] for r in rs]), torch.tensor([[r["y"]] for r in rs])

    seen: list[float] = []

    class See(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            seen.extend(rc.original_args().train_dataset_element[1].flatten().tolist())

    def source() -> FileTailSource:
        return FileTailSource(
            data,
            batch_size=2,
            collate_fn=collate,
            offsets_path=tmp_path / "offsets.json",
            poll_interval=0.01,
        )

    first = source()
    _model().online_train(first, callbacks=[See()], max_steps=2)
    first.close()  # after training: commit what was handed out
    assert seen == [0.0, 1.0, 2.0, 3.0]
    (data / "_END").touch()
    _model().online_train(source(), callbacks=[See()])  # a restart: resumes at record 4
    assert seen == [float(i) for i in range(10)]


def test_stop_requested_in_train_begin_trains_nothing() -> None:
    class StopAtOnce(Callback):
        def on_train_begin(self, rc: RunContext) -> None:
            rc.request_stop()

    rec = Recorder()
    _model().online_train(_batches(), callbacks=[StopAtOnce(), rec])
    assert rec.hooks("step_end") == [] and rec.hooks("epoch_begin") == []
    assert rec.params["stop_reason"] == "requested" and rec.params["cur_step_num"] == 0
