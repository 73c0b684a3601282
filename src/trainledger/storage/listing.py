"""The one checked listing of a run directory's files (imports nothing else of ours, so every
module of ``storage`` and every reader can use it)."""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["run_files"]


def run_files(
    run_dir: str | os.PathLike[str], accept: Callable[[str], bool]
) -> list[os.DirEntry[str]]:
    """The regular files directly in ``run_dir`` whose name ``accept`` takes: the one checked
    listing every reader of a run's files uses. Symlinks (which may point out of the base),
    FIFOs (whose ``open`` blocks for ever), sockets and devices are never listed; a missing or
    unreadable directory lists nothing."""
    try:
        with os.scandir(run_dir) as it:
            entries = list(it)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    out = []
    for entry in entries:
        if not accept(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                out.append(entry)
        except OSError:  # vanished between listing and stat
            continue
    return out
