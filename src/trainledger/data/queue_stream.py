"""A bounded, thread- or process-fed stream of records, batched for the trainer.

Why bounded: an online trainer is usually slower than its producer at times and faster at
others. A bounded queue turns "producer too fast" into back-pressure (``put`` blocks) instead
of unbounded memory. Why an explicit end-of-stream: a consumer cannot tell "no data yet" from
"no more data" by waiting, so the producer says so with ``close()``; the stream then yields
what is left (a last, possibly partial, batch) and stops.

Process producers: with ``process=True`` the queue is a ``multiprocessing`` queue and records
cross the process boundary as JSON text (so they must be JSON-serialisable); hand the child
``stream.producer()``, a small picklable handle with ``put``/``close``, not the stream.

A producer that fails must not look like one that finished: ``with stream.producer() as p:``
ends the stream cleanly when the block completes and with ``fail(exc)`` when it raises, and
the consumer's ``next()`` then raises ``StreamError`` (so ``online_train`` ends "failed").
``attach(thread_or_process)`` covers producers that die without a word: when every attached
producer has exited and the stream was not ended, or one that ended it exited with an error
(an uncaught exception in the thread, a non-zero exit code), ``next()`` raises too, within
``poll_interval`` seconds, instead of waiting forever.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from trainledger.data.batcher import BatchedSource, RecordBatcher
from trainledger.errors import StreamError

__all__ = ["QueueProducer", "QueueStream"]

_RECORD = "r"
_END = "e"
_ERROR = "x"
_JOIN_SECONDS = 5.0  # how long an ended stream waits for attached producers to exit
_THREAD_ERRORS: weakref.WeakKeyDictionary[threading.Thread, BaseException] = (
    weakref.WeakKeyDictionary()
)
_hook_lock = threading.Lock()
_hooked = False


def _record_thread_errors() -> None:
    """Chain ``threading.excepthook`` once, to learn which attached threads died raising."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return
        _hooked = True
        previous = threading.excepthook

        def hook(args: threading.ExceptHookArgs) -> None:
            if args.thread is not None and args.exc_value is not None:
                _THREAD_ERRORS[args.thread] = args.exc_value
            previous(args)

        threading.excepthook = hook


class QueueProducer:
    """The producer's side of a ``QueueStream``: ``put`` records, then ``close``.

    Safe to use from several threads (or, for a process stream, from a child process). The
    first ``close()`` ends the stream for every producer.
    """

    def __init__(
        self, q: Any, ended: Any, cancelled: Any, encode: bool, poll_interval: float
    ) -> None:
        self._queue = q
        self._ended = ended
        self._cancelled = cancelled
        self._encode = encode
        self._poll = poll_interval

    def put(self, record: Any, timeout: float | None = None) -> None:
        """Queue one record; blocks while the queue is full (back-pressure).

        Raises ``StreamError`` when the stream was closed (by a producer or the consumer) and
        ``TimeoutError`` when ``timeout`` seconds pass with the queue still full.
        """
        if self._ended.is_set():
            raise StreamError("put() on a QueueStream after close(): the stream has ended")
        payload = json.dumps(record) if self._encode else record
        self._put((_RECORD, payload), timeout)

    def close(self, timeout: float | None = None) -> None:
        """End the stream: the consumer drains what was queued, then stops. Idempotent."""
        self._finish((_END, None), timeout)

    def fail(self, error: BaseException | str, timeout: float | None = None) -> None:
        """End the stream as failed: the consumer's ``next()`` raises ``StreamError`` naming
        ``error`` after the records queued before it."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self._finish((_ERROR, text), timeout)

    def __enter__(self) -> QueueProducer:
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        """``with stream.producer() as p:`` ends the stream, as failed when the block raised."""
        if error is None:
            self.close()
        else:
            self.fail(error)

    def _finish(self, item: tuple[str, Any], timeout: float | None) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        try:
            self._put(item, timeout)
        except StreamError:
            pass  # the consumer is gone already; nothing is waiting for the marker

    def _put(self, item: tuple[str, Any], timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._cancelled.is_set():
                # A process queue's feeder thread would otherwise block this process's exit
                # on data nobody will read.
                cancel = getattr(self._queue, "cancel_join_thread", None)
                if cancel is not None:
                    cancel()
                raise StreamError("the consumer closed the QueueStream; no more records are read")
            wait = self._poll if deadline is None else min(self._poll, deadline - time.monotonic())
            if wait <= 0:
                raise TimeoutError(f"QueueStream still full after {timeout} s")
            try:
                self._queue.put(item, timeout=wait)
                return
            except queue.Full:
                continue


class QueueStream(BatchedSource):
    """An unbounded stream of batches fed through a bounded queue.

    Args:
        maxsize: queue capacity in records; ``put`` blocks while it is full.
        batch_size: records per batch; the last batch before end-of-stream may be smaller.
        collate_fn: list of records -> batch (default: torch's ``default_collate``).
        parse: optional record -> record function run by the consumer; a record it raises on
            is counted in ``bad_records``, warned about (``BadRecordWarning``) and skipped.
        process: feed from other processes (a ``multiprocessing`` queue, JSON records).
        poll_interval: how often blocked calls look for ``close()`` from the other side (and
            the consumer for attached producers that died).
        allow_nonfinite: train on NaN and infinite numbers (by default a record holding one
            is a bad record: one such value turns every weight NaN).

    The stream is a one-shot iterator: ``RecModel.online_train`` ends normally when it ends.
    ``close()`` on the consumer side stops iteration and makes blocked producers raise
    ``StreamError`` (call it when training stopped early, so producers do not hang).
    """

    def __init__(
        self,
        maxsize: int = 1024,
        *,
        batch_size: int = 1,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        parse: Callable[[Any], Any] | None = None,
        process: bool = False,
        poll_interval: float = 0.1,
        allow_nonfinite: bool = False,
    ) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize expected a positive int, received: {maxsize!r}")
        if not poll_interval > 0:
            raise ValueError(
                f"poll_interval expected a positive number, received: {poll_interval!r}"
            )
        self._batcher = RecordBatcher(batch_size, collate_fn, parse, "QueueStream", allow_nonfinite)
        self._process = bool(process)
        if self._process:
            ctx = multiprocessing.get_context("spawn")
            q: Any = ctx.Queue(maxsize)
            ended: Any = ctx.Event()
            cancelled: Any = ctx.Event()
        else:
            q, ended, cancelled = queue.Queue(maxsize), threading.Event(), threading.Event()
        self._queue = q
        self._cancelled = cancelled
        self._producer = QueueProducer(q, ended, cancelled, self._process, poll_interval)
        self._poll = poll_interval
        self._finished = False
        self._attached: list[Any] = []
        self.records_read = 0

    # --- producer side -------------------------------------------------------------------
    def producer(self) -> QueueProducer:
        """The handle to give producer threads or processes."""
        return self._producer

    def put(self, record: Any, timeout: float | None = None) -> None:
        """Same as ``producer().put``."""
        self._producer.put(record, timeout)

    def end(self, timeout: float | None = None) -> None:
        """Same as ``producer().close``: the clean end-of-stream."""
        self._producer.close(timeout)

    def fail(self, error: BaseException | str, timeout: float | None = None) -> None:
        """Same as ``producer().fail``: end the stream as failed."""
        self._producer.fail(error, timeout)

    def attach(self, *producers: Any) -> None:
        """Watch producer threads or processes (``threading.Thread``,
        ``multiprocessing.Process``): their death without a clean end fails the stream."""
        if any(isinstance(p, threading.Thread) for p in producers):
            _record_thread_errors()
        self._attached.extend(producers)

    # --- consumer side -------------------------------------------------------------------
    def close(self) -> None:
        """Consumer side: stop reading; producers blocked in ``put`` raise ``StreamError``."""
        self._cancelled.set()
        self._finished = True

    def __iter__(self) -> QueueStream:
        return self

    def __next__(self) -> Any:
        while not self._finished:
            try:
                kind, payload = self._queue.get(timeout=self._poll)
            except queue.Empty:
                if self._cancelled.is_set():
                    self._finished = True
                elif self._attached and not any(_alive(p) for p in self._attached):
                    self._finished = True
                    raise StreamError(
                        "every producer attached to the QueueStream exited without ending "
                        f"it ({_describe(self._attached)}): no more records can come"
                    ) from None
                continue
            if kind == _ERROR:
                self._finished = True
                raise StreamError(f"the QueueStream's producer failed: {payload}")
            if kind == _END:
                self._finished = True
                self._check_clean_exit()
                break
            self.records_read += 1
            where = f"record {self.records_read}"
            if self._process:
                try:
                    payload = json.loads(payload)
                except ValueError as exc:
                    self._batcher.bad(where, f"invalid JSON: {exc}")
                    continue
            batch = self._batcher.add(payload, where)
            if batch is not None:
                return batch
        batch = self._batcher.flush()
        if batch is not None:
            return batch
        raise StopIteration

    def _check_clean_exit(self) -> None:
        """An ended stream whose attached producers died raising (``end()`` in a ``finally``)
        failed: wait for them a moment, then say so."""
        deadline = time.monotonic() + _JOIN_SECONDS
        for producer in self._attached:
            producer.join(max(0.0, deadline - time.monotonic()))
        failed = [p for p in self._attached if _failure(p) is not None]
        if failed:
            raise StreamError(
                f"the QueueStream was ended, but its producer failed: {_describe(failed)}"
            )


def _alive(producer: Any) -> bool:
    return bool(producer.is_alive())


def _failure(producer: Any) -> str | None:
    """Why an exited producer failed (its exception, its exit code), None if it did not."""
    if isinstance(producer, threading.Thread):
        error = _THREAD_ERRORS.get(producer)
        return None if error is None else f"{type(error).__name__}: {error}"
    code = getattr(producer, "exitcode", None)
    return f"exit code {code}" if code not in (0, None) else None


def _describe(producers: list[Any]) -> str:
    parts = []
    for p in producers:
        why = _failure(p)
        parts.append(f"{getattr(p, 'name', p)}" + (f": {why}" if why else ""))
    return "; ".join(parts)
