"""User annotations of runs (a tag 0..10 and a remark), persisted next to the index.

Why a JSON file and not only the index table: the index is derived data that may be deleted
and rebuilt at any time; annotations are user input and must survive that. The file
``annotations.json`` (in the index directory) is the source of truth, written atomically under
an advisory lock so two processes annotating at once lose nothing; the index table mirrors it
for sorting by tag in SQL.
"""

from __future__ import annotations

import json
import os
from typing import Any

from trainledger.errors import LineageParamValueError
from trainledger.storage import ANNOTATIONS_FILE, atomic_write_bytes, exclusive_lock

TAG_RANGE = (0, 10)
REMARK_MAX = 1000
UNSET: Any = object()  # "leave unchanged" (None clears)


def check_run_id(run_id: Any) -> str:
    """A run id is a summary_dir relative to the base: "./run1" (no "..", no NUL)."""
    if (
        not isinstance(run_id, str)
        or not run_id.startswith("./")
        or "\x00" in run_id
        or ".." in run_id.split("/")
    ):
        raise LineageParamValueError(
            f"ValueError. The run id should be a path relative to the base starting with "
            f"'./', received: {run_id!r}."
        )
    return run_id


def check_tag(tag: Any) -> int | None:
    if tag is None:
        return None
    if isinstance(tag, bool) or not isinstance(tag, int):
        raise LineageParamValueError(f"ValueError. 'tag' must be int, received: {tag!r}.")
    lo, hi = TAG_RANGE
    if not lo <= tag <= hi:
        raise LineageParamValueError(
            f"ValueError. The tag should in [{lo}, {hi}], received: {tag}."
        )
    return tag


def check_remark(remark: Any) -> str | None:
    if remark is None:
        return None
    if not isinstance(remark, str):
        raise LineageParamValueError(f"ValueError. 'remark' must be str, received: {remark!r}.")
    if len(remark) > REMARK_MAX:
        raise LineageParamValueError(
            f"ValueError. The length of remark should in [0, {REMARK_MAX}], "
            f"received: {len(remark)}."
        )
    return remark


class AnnotationFile:
    """``annotations.json``: {"version": 1, "annotations": {run_id: {"tag", "remark"}}}."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, ANNOTATIONS_FILE)
        self._lock_path = self.path + ".lock"

    def mtime_ns(self) -> int | None:
        try:
            return os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            return None

    def load(self) -> dict[str, dict[str, Any]]:
        """All annotations; a missing or unreadable file reads as none."""
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read() or b"{}")
        except (FileNotFoundError, ValueError):
            return {}
        items = data.get("annotations", {}) if isinstance(data, dict) else {}
        out: dict[str, dict[str, Any]] = {}
        for run_id, info in items.items():
            if not isinstance(info, dict):
                continue
            entry = {k: info[k] for k in ("tag", "remark") if info.get(k) is not None}
            if entry:
                out[run_id] = entry
        return out

    def update(self, run_id: str, tag: Any = UNSET, remark: Any = UNSET) -> dict[str, Any]:
        """Set (or clear with None) the tag and/or remark of a run; returns its new entry."""
        with exclusive_lock(self._lock_path):
            items = self.load()
            entry = dict(items.get(run_id, {}))
            for key, value in (("tag", tag), ("remark", remark)):
                if value is UNSET:
                    continue
                if value is None:
                    entry.pop(key, None)
                else:
                    entry[key] = value
            if entry:
                items[run_id] = entry
            else:
                items.pop(run_id, None)
            payload = {"version": 1, "annotations": dict(sorted(items.items()))}
            atomic_write_bytes(self.path, json.dumps(payload, indent=1).encode())
        return entry
