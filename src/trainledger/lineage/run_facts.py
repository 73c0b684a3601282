"""Small pure decisions over a run's cb_params (a plain mapping): the final status, the
checkpoint it saved last and the run's identity. Kept apart from the callbacks so they are
tested as tables."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["run_status", "saved_checkpoint_of", "file_size", "as_int", "is_run_uid", "run_uid"]

_UID = re.compile(r"[0-9a-f]{32}")


def is_run_uid(value: Any) -> bool:
    """Whether ``value`` is a run identity as ``run_uid`` makes them (32 lowercase hex)."""
    return isinstance(value, str) and _UID.fullmatch(value) is not None


def run_uid(recorded: Any, offered: Any = None) -> str:
    """The identity of a run: the one its directory already records (a resumed or retrained
    run stays the same run), else one a sibling callback already chose for this training
    (``cb_params.run_uid``), else a new random one. Random, never derived from a path or a
    host, so a lineage file cannot claim another run's checkpoints by naming them."""
    for value in (recorded, offered):
        if is_run_uid(value):
            return str(value)
    return uuid.uuid4().hex


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
