"""Records -> batches, shared by every streaming source.

Why one place: both sources must treat a bad record the same way (count it, warn, skip it,
never stop the trainer), and both must hand the trainer the same kind of batch. A record is
bad when the user's ``parse`` raises on it, or when it makes ``collate_fn`` raise: a failing
batch is re-collated record by record, and records whose shapes do not match the majority of
the batch are dropped, so that only the offending records are lost.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "BadRecordWarning",
    "BatchedSource",
    "RecordBatcher",
    "StreamWarning",
    "default_collate",
]

# After this many individual warnings, further bad records are only counted.
MAX_WARNINGS = 10


class BadRecordWarning(RuntimeWarning):
    """A streaming source skipped a record it could not parse or collate."""


class StreamWarning(UserWarning):
    """A streaming source noticed something the user should know: a tailed file replaced or
    rewritten (read again from its start), an offsets file missing."""


def default_collate(samples: Sequence[Any]) -> Any:
    """torch's ``default_collate`` (dicts of numbers -> dict of tensors), imported lazily."""
    from torch.utils.data import default_collate as torch_default_collate  # only if used

    return torch_default_collate(list(samples))


class RecordBatcher:
    """Accumulates parsed records into batches of ``batch_size`` and counts bad records."""

    def __init__(
        self,
        batch_size: int,
        collate_fn: Callable[[list[Any]], Any] | None,
        parse: Callable[[Any], Any] | None,
        source_name: str,
        allow_nonfinite: bool = False,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size expected a positive int, received: {batch_size!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn expected a callable, received: {collate_fn!r}")
        if parse is not None and not callable(parse):
            raise TypeError(f"parse expected a callable, received: {parse!r}")
        self.batch_size = batch_size
        self.collate_fn: Callable[[list[Any]], Any] = collate_fn or default_collate
        self.parse = parse
        self.source_name = source_name
        self.allow_nonfinite = bool(allow_nonfinite)
        self.bad_records = 0
        self._pending: list[tuple[Any, str]] = []

    def bad(self, where: str, reason: str) -> None:
        """Count one skipped record and warn (the first ``MAX_WARNINGS`` times)."""
        self.bad_records += 1
        if self.bad_records <= MAX_WARNINGS:
            tail = (
                "; further bad records are counted without a warning"
                if self.bad_records == MAX_WARNINGS
                else ""
            )
            warnings.warn(
                f"{self.source_name}: skipped bad record at {where}: {reason}{tail}",
                BadRecordWarning,
                stacklevel=4,
            )

    def add(self, record: Any, where: str) -> Any | None:
        """Add one raw record; return a collated batch when ``batch_size`` records are ready.

        A record holding a NaN or infinite float (``NaN``, ``Infinity``, ``1e400`` in JSON) is
        bad unless ``allow_nonfinite``: one such value trained on turns every weight NaN.
        """
        if not self.allow_nonfinite and _has_nonfinite(record):
            self.bad(where, "holds a non-finite number (NaN or infinity)")
            return None
        if self.parse is not None:
            try:
                record = self.parse(record)
            except Exception as exc:  # user code: any failure marks the record bad
                self.bad(where, f"parse raised {type(exc).__name__}: {exc}")
                return None
        self._pending.append((record, where))
        if len(self._pending) >= self.batch_size:
            return self.flush()
        return None

    def flush(self) -> Any | None:
        """Collate what is pending (a partial batch at end of stream); None when nothing is."""
        while self._pending:
            pending, self._pending = self._pending, []
            try:
                return self.collate_fn([record for record, _ in pending])
            except Exception:
                good = self._largest_compatible_group(pending)
                if not good:
                    continue
                try:
                    return self.collate_fn([record for record, _ in good])
                except Exception as exc:
                    for _, where in good:
                        self.bad(where, f"collate_fn raised {type(exc).__name__}: {exc}")
        return None

    def _largest_compatible_group(self, pending: list[tuple[Any, str]]) -> list[tuple[Any, str]]:
        """The records of a failed batch that can form a batch; the others are counted bad.

        A record that does not collate alone is bad. Records that collate alone may still not
        collate together (ragged shapes): they are grouped by the structure of their one-record
        batch and the largest group is kept (the first one on a tie), so one odd record never
        takes good records down with it.
        """
        groups: dict[Any, list[tuple[Any, str]]] = {}
        for record, where in pending:
            try:
                single = self.collate_fn([record])
            except Exception as exc:
                self.bad(where, f"collate_fn raised {type(exc).__name__}: {exc}")
            else:
                groups.setdefault(_signature(single), []).append((record, where))
        if not groups:
            return []
        keep = max(groups.values(), key=len)
        for group in groups.values():
            if group is not keep:
                for _, where in group:
                    self.bad(where, "its shape does not match the other records of the batch")
        return keep


class BatchedSource:
    """What every streaming source shares: the batching it was given and its bad-record count.

    A source sets ``_batcher`` in its constructor. ``RecModel.online_train`` closes an
    ``interruptible`` source on SIGINT/SIGTERM, so a trainer blocked waiting for data still
    stops; each source's ``close()`` is thread- and signal-safe for that.
    """

    interruptible = True
    _batcher: RecordBatcher

    @property
    def batch_size(self) -> int:
        """Records per batch (lineage records it as the run's batch size)."""
        return self._batcher.batch_size

    @property
    def bad_records(self) -> int:
        """Records skipped as bad in this session (unreadable, or ``parse``/``collate_fn``
        raised on them)."""
        return self._batcher.bad_records


def _has_nonfinite(value: Any) -> bool:
    """Whether a float in ``value`` (nested in dicts, lists, tuples) is NaN or infinite."""
    kind = type(value)
    if kind is float:
        return value - value != 0.0  # NaN - NaN and inf - inf are NaN
    if kind is dict:
        return any(_has_nonfinite(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(_has_nonfinite(v) for v in value)
    if isinstance(value, float):
        return not math.isfinite(value)
    return False


def _signature(batch: Any) -> Any:
    """The structure of a collated batch: per-sample shapes and dtypes, nested containers."""
    shape = getattr(batch, "shape", None)
    if shape is not None:
        return ("array", tuple(shape[1:]), str(getattr(batch, "dtype", "")))
    if isinstance(batch, dict):
        return ("dict", tuple((k, _signature(v)) for k, v in sorted(batch.items(), key=str)))
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, tuple(_signature(v) for v in batch))
    return ("value", type(batch).__name__)
