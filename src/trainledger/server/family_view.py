"""A run's family as the web UI shows it (issue 53 item 6): ``query.family``'s answer with
each entry's run also given as a run id the page links to.

Finding a family reads the weight digests of every run of the base (``Families.read``), so
the answer's inputs are kept for one data version: the run pages of one base share them,
and a new run or a changed lineage (which moves the version) reads them again. Only the run
page asks (``GET /api/v1/runs/{id}/family``), never the runs table's first load.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainledger.lineage import json_float
from trainledger.query import Families, run_id_of

__all__ = ["FamilyCache", "with_run_ids"]

#: the entry lists of a family answer
PARTS = ("ancestors", "descendants", "evaluations")


class FamilyCache:
    """The base's ``Families`` for the data version they were read at (one held)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: tuple[int, Families] | None = None

    def get(self, version: int, read: Callable[[], Families]) -> Families:
        """The held families when read at ``version``, else ``read()`` (outside the lock:
        two pages may read at once, never wait on each other)."""
        with self._lock:
            held = self._held
        if held is not None and held[0] == version:
            return held[1]
        found = read()
        with self._lock:
            self._held = (version, found)
        return found

    def family(
        self,
        base: str,
        remote: str | None,
        version: int,
        objects: Sequence[Mapping[str, Any]],
        summary_dir: str,
    ) -> dict[str, Any]:
        """The family of ``summary_dir`` among the runs of a search result's ``objects``
        (their ``model_lineage.metric`` is each entry's main metric), read from the local
        directory ``base`` (the copy of ``remote``, an ``s3://`` base, whose writers named
        their files under that URL)."""
        records = {str(o.get("summary_dir")): o.get("model_lineage") or {} for o in objects}
        real = os.path.realpath(base)
        root = remote.rstrip("/") if remote else real
        families = self.get(version, lambda: Families.read(real, root, sorted(records)))
        return with_run_ids(families.of(summary_dir, records))


def with_run_ids(found: Mapping[str, Any]) -> dict[str, Any]:
    """``found`` (``Families.of``) with ``run_id`` on the answer and on every entry (None
    for a file outside the base), the same for ``child`` and ``parent`` (``child_id``,
    ``parent_id``), and NaN or infinite metrics as protobuf JSON's strings."""
    out: dict[str, Any] = {
        "run": found["run"],
        "run_id": run_id_of(str(found["run"])),
        "metric": _finite(found.get("metric")),
    }
    for part in PARTS:
        entries = []
        for entry in found.get(part, []):
            item = {**entry, "run_id": _id(entry.get("run")), "metric": _finite(entry["metric"])}
            for link in ("child", "parent"):
                if link in entry:
                    item[f"{link}_id"] = _id(entry[link])
            entries.append(item)
        out[part] = entries
    return out


def _id(summary_dir: object) -> str | None:
    return run_id_of(summary_dir) if isinstance(summary_dir, str) else None


def _finite(metric: object) -> dict[str, Any]:
    if not isinstance(metric, Mapping):
        return {}
    return {
        k: json_float(v) if isinstance(v, float) and not math.isfinite(v) else v
        for k, v in metric.items()
    }
