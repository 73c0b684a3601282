"""The audit log: who changed what in a base (tags, remarks, archiving, deletions).

One JSON object per line in ``BASE/.trainledger/audit.jsonl`` (beside the annotations: the
user cache's directory for a read-only base, ``query/index_location.py``), only ever appended,
under the index directory's lock and fsynced, so concurrent UI and CLI writers interleave whole
lines and a crash loses nothing already answered. An entry names the actor (``ui`` with the
token's role and a fingerprint of the token - never the token itself - and the client address,
or ``cli`` with the OS user and host), the action, the run and the values before and after.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import socket
import time
from typing import Any

from trainledger.query.index_location import durable_dir, index_dir
from trainledger.storage import AUDIT_FILE, exclusive_lock

__all__ = ["append_audit", "read_audit", "cli_actor", "token_fingerprint"]


def token_fingerprint(token: str) -> str:
    """A short SHA-256 prefix that tells tokens apart in the log without revealing them."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def cli_actor() -> str:
    """``cli:<user>@<host>`` for actions taken with the ``trainledger`` command."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"cli:{user}@{socket.gethostname()}"


def _path(base: str, *, writing: bool = False) -> str:
    """Beside the annotations (``index_location``): in ``BASE/.trainledger``, else the user
    cache of a read-only base; a write with neither writable is a ``ReadOnlyBaseError``."""
    real = os.path.realpath(base)
    return os.path.join(durable_dir(real) if writing else index_dir(real), AUDIT_FILE)


def append_audit(
    base: str | os.PathLike[str], actor: str, action: str, run_id: str, **detail: Any
) -> dict[str, Any]:
    """Append one entry and return it."""
    entry = {"time": time.time(), "actor": actor, "action": action, "run": run_id, **detail}
    path = _path(os.fspath(base), writing=True)
    line = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
    with exclusive_lock(path + ".lock"):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
    return entry


def read_audit(base: str | os.PathLike[str], limit: int | None = None) -> list[dict[str, Any]]:
    """The entries, oldest first (the last ``limit`` of them); a torn last line is skipped."""
    try:
        with open(_path(os.fspath(base)), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries[-limit:] if limit else entries
