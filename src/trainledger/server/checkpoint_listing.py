"""A run's checkpoints as the run page lists them: the files under its directory (a sharded
checkpoint as one entry), those of the object store it was copied from, and those only its
lineage record names.

Why a module of its own: finding checkpoints is a walk of a run's files with its own rules
(depth, links, temporary and sharded files, the names ModelCheckpoint writes), none of which
the store's caches and its door to the query engine (``run_store.py``) need to know.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trainledger.lineage import file_size, read_lineage
from trainledger.server.object_checkpoints import object_checkpoints
from trainledger.server.security import check_run_id
from trainledger.storage import (
    LANDSCAPE_DIR,
    LANDSCAPE_METADATA,
    SHARDED_MANIFEST,
    is_temp_name,
    parse_checkpoint_name,
)

__all__ = ["list_checkpoints", "run_checkpoints"]

_CKPT_SUFFIXES: tuple[str, ...] = (".ckpt", ".safetensors")
_CKPT_MAX_DEPTH: int = 3


def list_checkpoints(run_dir: Path) -> list[dict[str, Any]]:
    """Checkpoint files under a run directory (a few levels deep, links not followed); a
    sharded checkpoint (a directory with a manifest) is one entry with its files' total size.

    The epoch and ``step_in_epoch`` come from the ``<prefix>-<epoch>_<step>[_breakpoint].ckpt``
    names ModelCheckpoint (and MindSpore) writes; other names report None. ``step``, the
    global step, is None here: only the lineage records it (``run_checkpoints``). ``kind`` is
    ``"landscape"`` for ``collect_landscape``'s weight snapshots (files of ``ckpt_dir/`` beside
    its ``train_metadata.json``: inputs of a landscape, not checkpoints to resume from), else
    ``"checkpoint"``. Sorted by modification time, oldest first.
    """
    snapshots = run_dir / LANDSCAPE_DIR
    landscape = (snapshots / LANDSCAPE_METADATA).is_file() and not snapshots.is_symlink()
    found: list[dict[str, Any]] = []
    stack: list[tuple[Path, int]] = [(run_dir, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            sharded = entry.is_dir() and (entry / SHARDED_MANIFEST).is_file()
            if entry.is_dir() and not sharded:
                if depth + 1 < _CKPT_MAX_DEPTH and not entry.name.startswith("."):
                    stack.append((entry, depth + 1))
                continue
            if not entry.name.endswith(_CKPT_SUFFIXES) or is_temp_name(entry.name):
                continue
            try:
                st = entry.stat()
                size = file_size(str(entry)) if sharded else st.st_size
            except OSError:
                continue
            parsed = parse_checkpoint_name(entry.name)
            found.append(
                {
                    "name": entry.relative_to(run_dir).as_posix(),
                    "size": size,
                    "epoch": parsed.epoch if parsed else None,
                    "step": None,
                    "step_in_epoch": parsed.step if parsed else None,
                    "time": st.st_mtime,
                    "kind": (
                        "landscape" if landscape and entry.parent == snapshots else "checkpoint"
                    ),
                }
            )
    found.sort(key=lambda c: (c["time"], c["name"]))
    return found


def run_checkpoints(path: Path, run_id: str, remote: str | None) -> list[dict[str, Any]]:
    """The checkpoints of the run ``run_id`` in ``path`` (resolved inside BASE): the files
    under it, those in the object store when BASE is a copy of the ``s3://`` base ``remote``,
    plus checkpoints the lineage lists elsewhere (from the record only: nothing outside BASE
    is opened).

    ``step`` is the global step each was saved at, the step the curves use, as the lineage's
    checkpoint list records it (issue 51 item 10): the file name holds only the step within
    its epoch (``step_in_epoch``), and on ``s3://`` no checkpoint header is read. A file the
    lineage does not list (or an older lineage without steps) has ``step`` None."""
    found = list_checkpoints(path)
    where = {str(path / c["name"]): c for c in found}
    if remote is not None:  # the local copy holds no checkpoint: list the store's
        url = f"{remote.rstrip('/')}/{check_run_id(run_id)}"
        stored = object_checkpoints(url)
        where |= {f"{url}/{c['name']}": c for c in stored}  # how lineage names them
        found += stored
    recorded = (read_lineage(path).get("run") or {}).get("checkpoints") or []
    for item in recorded:
        name = str(item.get("path", ""))
        step = item.get("step")
        listed = where.get(name) or where.get(os.path.realpath(os.path.join(path, name)))
        if not name or listed is not None:
            if listed is not None and isinstance(step, int):
                listed["step"] = step
            continue
        parsed = parse_checkpoint_name(Path(name).name)
        found.append(
            {
                "name": name,
                "size": item.get("size") or 0,
                "epoch": parsed.epoch if parsed else None,
                "step": step if isinstance(step, int) else None,
                "step_in_epoch": parsed.step if parsed else None,
                "time": None,
                "kind": "checkpoint",
            }
        )
    return found
