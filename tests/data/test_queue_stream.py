"""QueueStream: batching, back-pressure, end-of-stream, bad records, process producers."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
import torch

from trainledger.data import BadRecordWarning, QueueProducer, QueueStream
from trainledger.errors import StreamError


def _collate(records: list[dict]) -> torch.Tensor:
    return torch.tensor([r["x"] for r in records], dtype=torch.float32)


def test_batches_and_partial_last_batch_after_end() -> None:
    stream = QueueStream(maxsize=16, batch_size=3, collate_fn=_collate)
    for i in range(7):
        stream.put({"x": i})
    stream.end()
    batches = list(stream)
    assert [b.tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(stream) == []  # one-shot: ended stays ended
    assert iter(stream) is stream
    assert not hasattr(stream, "__len__")


def test_put_blocks_when_full_until_consumer_reads() -> None:
    stream = QueueStream(maxsize=2, batch_size=1, collate_fn=_collate, poll_interval=0.01)
    stream.put({"x": 0})
    stream.put({"x": 1})
    with pytest.raises(TimeoutError):
        stream.put({"x": 2}, timeout=0.05)  # full: back-pressure
    unblocked = threading.Event()

    def producer() -> None:
        stream.put({"x": 2})  # blocks until the consumer takes one
        unblocked.set()
        stream.end()

    t = threading.Thread(target=producer)
    t.start()
    assert not unblocked.wait(0.1)
    assert next(stream).tolist() == [0.0]
    assert unblocked.wait(5)
    assert [b.tolist() for b in stream] == [[1.0], [2.0]]  # end() got in once there was room
    t.join(5)


def test_put_after_end_raises_and_end_is_idempotent() -> None:
    stream = QueueStream(maxsize=4, collate_fn=_collate)
    stream.end()
    stream.end()
    with pytest.raises(StreamError, match="after close"):
        stream.put({"x": 1})
    assert list(stream) == []


def test_consumer_close_releases_blocked_producer() -> None:
    stream = QueueStream(maxsize=1, collate_fn=_collate, poll_interval=0.01)
    stream.put({"x": 0})
    errors: list[BaseException] = []

    def producer() -> None:
        try:
            stream.put({"x": 1})
        except StreamError as exc:
            errors.append(exc)

    t = threading.Thread(target=producer)
    t.start()
    stream.close()
    t.join(5)
    assert not t.is_alive()
    assert len(errors) == 1 and "consumer closed" in str(errors[0])
    assert list(stream) == []


def test_bad_records_counted_and_skipped_with_warning() -> None:
    def parse(rec: dict) -> dict:
        if rec.get("x") is None:
            raise ValueError("missing x")
        return rec

    stream = QueueStream(maxsize=16, batch_size=2, collate_fn=_collate, parse=parse)
    for rec in [{"x": 1}, {"y": 2}, {"x": 3}, {"x": "oops"}, {"x": 5}]:
        stream.put(rec)
    stream.end()
    with pytest.warns(BadRecordWarning) as caught:
        batches = [b.tolist() for b in stream]
    assert batches == [[1.0, 3.0], [5.0]]  # {"x": "oops"} fails collate alone: dropped
    assert stream.bad_records == 2
    assert len(caught) == 2
    assert "record 2" in str(caught[0].message)


def test_many_threads_feed_one_stream() -> None:
    stream = QueueStream(maxsize=8, batch_size=5, collate_fn=_collate)
    handles = [stream.producer() for _ in range(4)]

    def feed(h: QueueProducer, base: int) -> None:
        for i in range(25):
            h.put({"x": base + i})

    threads = [threading.Thread(target=feed, args=(h, k * 100)) for k, h in enumerate(handles)]
    for t in threads:
        t.start()
    got: list[float] = []
    for _ in range(20):
        got.extend(next(stream).tolist())
    for t in threads:
        t.join(5)
    stream.end()
    assert list(stream) == []
    assert sorted(got) == sorted(float(k * 100 + i) for k in range(4) for i in range(25))


def _child_producer(handle: QueueProducer, n: int) -> None:
    for i in range(n):
        handle.put({"x": i})
    handle.close()


@pytest.mark.slow
def test_process_producer_feeds_the_stream() -> None:
    stream = QueueStream(maxsize=4, batch_size=4, collate_fn=_collate, process=True)
    proc = multiprocessing.get_context("spawn").Process(
        target=_child_producer, args=(stream.producer(), 10)
    )
    proc.start()
    batches = [b.tolist() for b in stream]
    proc.join(30)
    assert proc.exitcode == 0
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_process_stream_requires_json_records() -> None:
    stream = QueueStream(maxsize=4, process=True)
    with pytest.raises(TypeError):
        stream.put({"x": object()})
    stream.close()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"maxsize": 0}, "maxsize expected a positive int"),
        ({"batch_size": 0}, "batch_size expected a positive int"),
        ({"collate_fn": 3}, "collate_fn expected a callable"),
        ({"poll_interval": 0}, "poll_interval expected a positive number"),
    ],
)
def test_config_errors(kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        QueueStream(**kwargs)
