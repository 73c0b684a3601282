"""Which records of a stream count as trained: the offsets a resumable source may commit.

A source that can resume (``FileTailSource``) must never commit records that did not finish
training, or a crash loses them; and when checkpoints are written, it must commit exactly the
records that are in the newest checkpoint on disk, or a restart from that checkpoint trains
some records twice (offsets behind) or never (offsets ahead). ``StreamCommits`` does that for
``RecModel.online_train``, through a duck-typed protocol (``snapshot``, ``acknowledge``,
``hold_commits``) so that ``run`` needs nothing from ``data``:

* without a checkpointing callback: every clean stop (end of the stream, ``request_stop``,
  ``max_steps``, ``max_seconds``) acknowledges everything trained; in between the source
  commits, every ``commit_interval``, what the trainer finished (at-least-once: a crash
  replays at most one interval plus the batch in flight);
* with one (a callback whose ``writes_checkpoints`` is true, as ``ModelCheckpoint``'s): the
  source holds its own commits, a snapshot of its marks is kept for every step, and when
  ``cb_params.last_save_ckpt_step`` names a newly committed checkpoint, the snapshot of that
  step is acknowledged (exactly-once relative to checkpoints: resuming from the newest
  checkpoint with the committed offsets trains every record once).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from trainledger.run.callback import CallbackParams

__all__ = ["StreamCommits"]

_HISTORY = 100_000  # steps of marks kept while no checkpoint lands (a few MB at most)


class StreamCommits:
    """The commit policy of one ``online_train`` call over ``source``."""

    def __init__(self, source: Any, cb_params: CallbackParams, callbacks: list[Any]) -> None:
        able = all(callable(getattr(source, n, None)) for n in ("acknowledge", "snapshot"))
        self.source = source if able else None
        self.cb_params = cb_params
        self.checkpointed = any(getattr(cb, "writes_checkpoints", False) for cb in callbacks)
        self._history: deque[tuple[int, Any]] = deque(maxlen=_HISTORY)
        self._saved_step = cb_params.get("last_save_ckpt_step")
        self._read_upto: Any = None  # marks to acknowledge at a clean end (None: all read)
        if self.source is not None and self.checkpointed:
            hold = getattr(source, "hold_commits", None)
            if callable(hold):
                hold()

    def after_step(self) -> None:
        """After a step's hooks (where ``ModelCheckpoint`` saves): remember what was handed
        out up to this step, and acknowledge a checkpoint that has just been committed."""
        if self.source is None or not self.checkpointed:
            return
        self._history.append((int(self.cb_params["cur_step_num"]), self.source.snapshot()))
        if self.cb_params.get("last_save_ckpt_step") != self._saved_step:
            self._acknowledge_checkpoint()

    def _acknowledge_checkpoint(self) -> None:
        step = self.cb_params.get("last_save_ckpt_step")
        self._saved_step = step
        if not isinstance(step, int):
            return
        marks = None
        history = self._history
        while history and history[0][0] <= step:  # the newest snapshot at or before the step
            marks = history.popleft()[1]
        if marks is not None:
            path = self.cb_params.get("latest_ckpt_file")
            self.source.acknowledge(marks, checkpoint=path)  # type: ignore[union-attr]

    def marks(self) -> Any:
        """The source's marks of what it handed out so far (None without a resumable source),
        to give back to ``unread`` if the batch read next is not trained."""
        return None if self.source is None else self.source.snapshot()

    def unread(self, marks: Any) -> None:
        """What was read after ``marks`` will not be trained (the ranks stopped before it): a
        clean end acknowledges up to ``marks`` only. (Checkpoint acknowledgements never
        covered it: their snapshots are taken after steps.)"""
        self._read_upto = marks

    def clean_end(self) -> None:
        """Training stopped cleanly (the end hooks ran): commit what that makes durable."""
        if self.source is None:
            return
        if not self.checkpointed:
            self.source.acknowledge(self._read_upto)
        elif self.cb_params.get("last_save_ckpt_step") != self._saved_step:
            self._acknowledge_checkpoint()  # the final checkpoint, saved by on_train_end
