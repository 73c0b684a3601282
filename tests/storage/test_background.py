"""BackgroundWorker: ordering, back-pressure, flush semantics, errors raised once."""

from __future__ import annotations

import threading

import pytest

from trainledger.storage import BackgroundWorker


def test_tasks_run_in_order_on_named_thread() -> None:
    seen: list[tuple[int, str]] = []
    worker = BackgroundWorker("tl-test-writer")
    for i in range(100):
        worker.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    worker.flush()
    assert [i for i, _ in seen] == list(range(100))
    assert {name for _, name in seen} == {"tl-test-writer"}
    worker.close()


def test_flush_waits_for_every_task_submitted_before_it() -> None:
    gate = threading.Event()
    done: list[int] = []
    worker = BackgroundWorker("tl-test-flush")
    worker.submit(lambda: (gate.wait(5), done.append(1)))
    threading.Timer(0.05, gate.set).start()
    worker.flush()
    assert done == [1]
    worker.close()


def test_error_is_raised_once_on_next_flush_and_later_tasks_still_run() -> None:
    ran: list[str] = []
    worker = BackgroundWorker("tl-test-error")

    def boom() -> None:
        raise OSError("disk on fire")

    worker.submit(boom)
    worker.submit(lambda: ran.append("after"))
    with pytest.raises(OSError, match="disk on fire"):
        worker.flush()
    assert ran == ["after"]
    worker.flush()  # raised once only
    worker.close()


def test_error_is_raised_on_close_and_close_is_idempotent() -> None:
    worker = BackgroundWorker("tl-test-close")
    worker.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        worker.close()
    worker.close()
    with pytest.raises(RuntimeError, match="closed"):
        worker.submit(lambda: None)


def test_bounded_queue_applies_back_pressure() -> None:
    gate = threading.Event()
    worker = BackgroundWorker("tl-test-bound", maxsize=2)
    worker.submit(lambda: gate.wait(5))  # occupies the thread
    worker.submit(lambda: None)
    worker.submit(lambda: None)  # queue now full
    blocked = threading.Event()
    unblocked = threading.Event()

    def producer() -> None:
        blocked.set()
        worker.submit(lambda: None)
        unblocked.set()

    t = threading.Thread(target=producer)
    t.start()
    blocked.wait(5)
    assert not unblocked.wait(0.1)  # still waiting for room
    gate.set()
    assert unblocked.wait(5)
    t.join(5)
    worker.close()
