"""Small pure decisions over a run's cb_params (a plain mapping): the final status and the
checkpoint it saved last. Kept apart from the callbacks so they are tested as tables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["run_status", "saved_checkpoint_of", "file_size", "as_int"]


def run_status(exception: BaseException | None, stop_reason: Any) -> str:
    """ "failed" when an exception ended the run (Ctrl-C counts as "stopped"), "stopped" for a
    requested or signalled stop, else "finished"."""
    if isinstance(exception, KeyboardInterrupt):
        return "stopped"
    if exception is not None:
        return "failed"
    if stop_reason in ("requested", "signal"):
        return "stopped"
    return "finished"


def saved_checkpoint_of(params: Mapping[str, Any]) -> str | None:
    """The checkpoint the run saved last, as its parameters say: ``latest_ckpt_file`` (kept
    current by ModelCheckpoint), else the ``latest_ckpt_file_name`` of a ModelCheckpoint-like
    callback in ``list_callback``. No directory is scanned (that is
    ``trainledger.checkpoint.latest_checkpoint``)."""
    path = params.get("latest_ckpt_file")
    if path:
        return os.fspath(path)
    for cb in params.get("list_callback") or ():
        try:
            name = getattr(cb, "latest_ckpt_file_name", None)
        except Exception:  # a property that fails must not break lineage
            name = None
        if name:
            return os.fspath(name)
    return None


def file_size(path: str) -> int | None:
    """Bytes of a checkpoint: a file's size, or the sum of a sharded checkpoint directory's
    files (shards and manifest)."""
    try:
        if os.path.isdir(path):
            return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
        return os.path.getsize(path)
    except OSError:
        return None


def as_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
