"""Scalars of one run for the UI: raw points with their sessions, grown incrementally, served
as the run's series (``summary.series``: a resumed run's repeated steps once, MindSpore files
as MindInsight reads them)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from trainledger.summary import RunReader, SessionSeries, resolve_series

__all__ = ["RunScalars"]


class RunScalars:
    """Scalars of one run, grown incrementally by a summary ``RunReader`` per folder: the
    run's, and each of ``parts`` (a TensorBoard run's Keras folders, whose tags are named
    ``<part>/<tag>`` as in the index: ``query/tb_runs.py``)."""

    def __init__(self, run_dir: Path, parts: tuple[str, ...] = ()) -> None:
        self.readers = [("", RunReader(run_dir))] + [
            (f"{p}/", RunReader(run_dir / p)) for p in parts
        ]
        self.raw: dict[str, SessionSeries] = {}
        self._reader_of: dict[str, RunReader] = {}
        self._resolved: dict[str, SessionSeries] = {}
        self.read_at = -math.inf

    def update(self, min_interval: float) -> None:
        """Read what was appended since the last read (at most every ``min_interval`` s)."""
        now = time.monotonic()
        if now - self.read_at < min_interval:
            return
        self.read_at = now
        for prefix, reader in self.readers:
            for name, new in reader.read_scalar_sessions().items():
                tag = prefix + name
                self._reader_of.setdefault(tag, reader)
                old = self.raw.get(tag)
                if old is None:
                    self.raw[tag] = new
                else:
                    self.raw[tag] = tuple(  # type: ignore[assignment]
                        np.concatenate([a, b]) for a, b in zip(old, new, strict=True)
                    )
                self._resolved.clear()  # a new session's START may drop points of any tag

    def tags(self) -> list[str]:
        return sorted(self.raw)

    def series(self, tag: str, view: str = "merged") -> SessionSeries:
        """``(steps, wall_times, values, sessions)`` of ``tag``: ``"merged"`` by its format's
        rule (cached until the tag grows), ``"sessions"`` every point as written, each with
        its session, for a view that draws sessions apart; empty arrays for a tag the run
        does not have."""
        raw = self.raw.get(tag)
        if raw is None:
            empty = np.zeros(0)
            return empty.astype(np.int64), empty, empty, empty.astype(np.int32)
        if view == "sessions":
            return raw
        found = self._resolved.get(tag)
        if found is not None:
            return found
        reader = self._reader_of[tag]
        found = self._resolved[tag] = resolve_series(
            *raw, reader.session_formats, reader.session_starts
        )
        return found
