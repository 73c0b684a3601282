"""The per-step fast path's rows of ``SummaryCollector``: ``(step, wall time, loss, lr)``
buffered and handed to the ``SummaryRecord`` in batches.

Why batches: each hand-over costs the writer thread about half a millisecond of cold-cache
start-up on top of its rows, so batches are large; live views still see new points within a
second (``MAX_AGE``). Why loss tensors are kept, not read: on a GPU reading a loss waits for
the device, so the rows hold the tensors and a batch reads them together (``read_deferred``:
one device sync per batch instead of one per step).
"""

from __future__ import annotations

import time
from typing import Any

from trainledger.callbacks.collected_values import read_deferred
from trainledger.summary import SummaryRecord

__all__ = ["MAX_AGE", "ROWS_PER_BATCH", "ROW_TAGS", "ScalarRows"]

ROW_TAGS = ("loss/auto", "learning_rate/auto")
ROWS_PER_BATCH = 4096
MAX_AGE = 1.0  # seconds


class ScalarRows:
    """The buffered rows of one run, and the loss tensor held since the last step."""

    __slots__ = ("deferred", "flush_at", "held_loss", "held_ptr", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple[int, float, Any, float]] = []  # the loss may be a tensor
        self.flush_at = 0.0  # when the buffered rows are handed over at the latest
        self.deferred = False  # rows hold loss tensors to read
        self.held_loss: Any = None  # the last loss tensor seen, kept alive ...
        self.held_ptr = -1  # ... so the same address next step means a reused buffer

    def hold(self, loss: Any) -> None:
        """Remember the first step's loss tensor (``defer`` tells a reused buffer by it)."""
        self.held_loss = loss.detach()
        self.held_ptr = self.held_loss.data_ptr()

    def defer(self, outputs: Any) -> Any:
        """The scalar loss tensor, to be read with the rows' batch; its value when it must be
        read now; None when it is not 0-dimensional (the general path takes the mean)."""
        if outputs.ndim != 0:
            return None
        loss = outputs.detach()
        ptr = loss.data_ptr()
        if ptr == self.held_ptr:  # one buffer rewritten every step (CUDA graphs)
            return float(loss.float().item())  # must be read now
        # held until the next step: its memory cannot be reused meanwhile
        self.held_loss, self.held_ptr = loss, ptr
        self.deferred = True
        return loss

    def add(self, step: int, loss: Any, lr: float, record: SummaryRecord) -> None:
        """Buffer one row; hand the batch over when it is full or old enough."""
        now = time.time()
        rows = self.rows
        rows.append((step, now, loss, lr))
        if len(rows) >= ROWS_PER_BATCH or now >= self.flush_at:
            self.flush(record)

    def restart_clock(self) -> None:
        """With no row waiting, the next row may wait ``MAX_AGE`` at most."""
        if not self.rows:
            self.flush_at = time.time() + MAX_AGE

    def flush(self, record: SummaryRecord) -> None:
        """Hand the buffered rows to the record (before any other write: file order must
        follow step order, or TensorBoard would purge the later points)."""
        if self.rows:
            rows, self.rows = self.rows, []
            self.flush_at = time.time() + MAX_AGE
            if self.deferred:
                self.deferred = False
                rows = read_deferred(rows, 2)
            # built here with checked types (read_deferred returns floats), so unchecked
            record.hand_over_scalar_rows(ROW_TAGS, rows)
