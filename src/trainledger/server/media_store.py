"""Images, histograms and tensors of single runs, for the run page, through the summary readers.

Each kind is read by its own incremental :class:`~trainledger.summary.RunReader` (a reader's
methods share one position in the files, so one reader per kind), created on the first request
for that kind: opening a run page reads nothing until a view asks. Later requests read only
what was appended since, at most every ``interval`` seconds, for the ``max_runs`` runs used last.
Both TensorBoard and MindSpore (``_MS``) summary files are covered, as the readers cover them.

Also here: the pure helpers the routes use to shape the answers (``rebin``, ``tensor_view``,
``image_type``), kept apart from FastAPI so they are tested directly.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from trainledger.summary import HistogramEvent, RunReader

Kind = Literal["images", "histograms", "tensors"]
KINDS: tuple[Kind, ...] = ("images", "histograms", "tensors")

#: Tensors up to this many elements are sent whole; larger ones as statistics only.
SMALL_TENSOR = 1024


class RunMedia:
    """The images, histograms and tensors read so far from one run, ``{kind: {tag: [event]}}``."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._readers: dict[Kind, RunReader] = {}
        self._data: dict[Kind, dict[str, list[Any]]] = {}
        self._read_at: dict[Kind, float] = {}

    def get(self, kind: Kind, min_interval: float) -> dict[str, list[Any]]:
        """Events of one kind per tag, after reading what was appended (at most every
        ``min_interval`` seconds). The lists grow in place: callers must not modify them."""
        now = time.monotonic()
        data = self._data.setdefault(kind, {})
        if now - self._read_at.get(kind, -math.inf) < min_interval:
            return data
        self._read_at[kind] = now
        reader = self._readers.get(kind)
        if reader is None:
            reader = self._readers[kind] = RunReader(self.run_dir)
        new: dict[str, list[Any]] = getattr(reader, f"read_{kind}")()
        for tag, events in new.items():
            data.setdefault(tag, []).extend(events)
        return data


class MediaCache:
    """``RunMedia`` of the ``max_runs`` runs used last (least recently used dropped first)."""

    def __init__(self, *, interval: float = 0.5, max_runs: int = 16) -> None:
        self.interval = interval
        self.max_runs = max_runs
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, RunMedia] = OrderedDict()

    def get(self, run_id: str, run_dir: Path, kind: Kind) -> dict[str, list[Any]]:
        """``{tag: [event, ...]}`` of ``kind`` for a run already resolved inside BASE."""
        if kind not in KINDS:
            raise ValueError(f"kind expected one of {KINDS}, received: {kind!r}")
        with self._lock:
            media = self._runs.get(run_id)
            if media is None or media.run_dir != run_dir:
                media = self._runs[run_id] = RunMedia(run_dir)
                while len(self._runs) > self.max_runs:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(run_id)
            return media.get(kind, self.interval)


# --- answer shaping -------------------------------------------------------------------------

_IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(data: bytes) -> str | None:
    """The media type of encoded image bytes from their signature (None if not an image the
    page can show: the bytes are then not served as an image)."""
    for signature, media_type in _IMAGE_TYPES:
        if data.startswith(signature):
            return media_type
    return None


def pick_indices(total: int, limit: int) -> list[int]:
    """At most ``limit`` indices spread evenly over ``range(total)``, first and last kept."""
    if total <= limit:
        return list(range(total))
    return sorted({round(i * (total - 1) / (limit - 1)) for i in range(limit)})


def _span(event: HistogramEvent) -> tuple[float, float] | None:
    """The finite value range a histogram covers (its min/max when recorded, else the edges
    of its non-empty buckets); None when empty."""
    nonzero = event.counts > 0
    if not nonzero.any():
        return None
    lo = float(event.lefts[nonzero].min())
    hi = float(event.rights[nonzero].max())
    if math.isfinite(event.min):
        lo = max(lo, event.min)
    if math.isfinite(event.max):
        hi = min(hi, event.max)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return lo, hi


def rebin(events: Sequence[HistogramEvent], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Histograms of different bucketings on one grid, as TensorBoard's histogram view draws
    them: ``(edges, counts)`` with ``bins + 1`` edges over the range all of them cover and one
    row of counts per event. A bucket's count is spread over the bins it overlaps in proportion
    to the overlap (values assumed uniform within a bucket); a zero-width bucket goes whole to
    the bin holding it."""
    spans = [s for s in map(_span, events) if s is not None]
    if not spans:
        return np.linspace(0.0, 1.0, bins + 1), np.zeros((len(events), bins))
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    out = np.zeros((len(events), bins))
    for row, event in enumerate(events):
        span = _span(event)
        if span is None:
            continue
        left = np.clip(event.lefts, span[0], span[1])
        right = np.clip(event.rights, span[0], span[1])
        counts = event.counts
        width = right - left
        flat = width <= 0
        overlap = np.clip(
            np.minimum(right[:, None], edges[None, 1:])
            - np.maximum(left[:, None], edges[None, :-1]),
            0.0,
            None,
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(flat[:, None], 0.0, overlap / np.where(flat, 1.0, width)[:, None])
        out[row] = counts @ share
        if flat.any():
            where = np.clip(np.searchsorted(edges, left[flat], side="right") - 1, 0, bins - 1)
            np.add.at(out[row], where, counts[flat])
    return edges, out


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def tensor_view(value: np.ndarray, max_values: int = SMALL_TENSOR) -> dict[str, Any]:
    """What the tensors view shows of one array: shape, dtype, size, the values (flat, row
    major; NaN/inf as null) when at most ``max_values`` elements, and statistics of numeric
    arrays (over the finite values; NaN and inf counted)."""
    out: dict[str, Any] = {
        "shape": list(value.shape),
        "dtype": str(value.dtype),
        "size": int(value.size),
        "values": None,
        "stats": None,
    }
    flat = value.reshape(-1)
    if value.dtype.kind in "OSU":
        if value.size <= max_values:
            out["values"] = [
                v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in flat
            ]
        return out
    numbers = flat.astype(np.float64)
    if value.size <= max_values:
        out["values"] = [_finite_or_none(v) for v in numbers.tolist()]
    finite = numbers[np.isfinite(numbers)]
    out["stats"] = {
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
        "std": float(finite.std()) if finite.size else None,
        "nan": int(np.isnan(numbers).sum()),
        "inf": int(np.isinf(numbers).sum()),
        "zeros": int((numbers == 0).sum()),
    }
    return out
