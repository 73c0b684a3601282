"""Find run directories under a base directory, safely and cheaply.

Why its own module: this is the per-query "cheap scan" (a directory listing plus a stat of
each lineage file), so it must do nothing else, and it is where path safety lives: the base
must be an existing directory, NUL bytes and ``..`` are rejected, and a symlink leading outside
the base is never followed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from trainledger.checkpoint.atomic import is_temp_name
from trainledger.errors import LineageParamSummaryPathError

LINEAGE_SUFFIX = "_lineage"
INDEX_DIRNAME = ".trainledger"
_PATH_ERROR = "The parameter summary path error: {}"
_TS_RE = re.compile(r"summary\.\d+")  # MindInsight's rule for summary/lineage file names


@dataclass(frozen=True)
class RunFiles:
    """One run directory and the (name, size, mtime_ns) of its lineage files."""

    summary_dir: str  # relative to the base: "./run1", "./group/run2", or "./" for the base
    path: str  # absolute real path
    files: tuple[tuple[str, int, int], ...]

    @property
    def signature(self) -> str:
        """Changes whenever a lineage file is added, removed, grown or rewritten."""
        return ";".join(f"{n}:{s}:{m}" for n, s, m in self.files)

    @property
    def update_time(self) -> float:
        """Newest lineage-file modification time, in seconds."""
        return max(m for _, _, m in self.files) / 1e9


def path_error(detail: str) -> LineageParamSummaryPathError:
    return LineageParamSummaryPathError(_PATH_ERROR.format(detail))


def check_path_text(path: object, name: str = "summary path") -> str:
    """Reject non-strings, empty strings, NUL bytes and ``..`` components."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise path_error(f"The {name} should be a non-empty str, received: {path!r}.")
    if "\x00" in path:
        raise path_error(f"The {name} contains a NUL byte.")
    if ".." in Path(path).parts:
        raise path_error(f"The {name} must not contain '..', received: {path!r}.")
    return path


def validate_base(base: object) -> str:
    """The real path of an existing base directory, or LineageParamSummaryPathError."""
    text = check_path_text(base, "summary_base_dir")
    real = os.path.realpath(text)
    if not os.path.exists(real):
        raise path_error(f"The summary_base_dir does not exist: {text!r}.")
    if not os.path.isdir(real):
        raise path_error(f"The summary_base_dir is not a directory: {text!r}.")
    return real


def validate_run_dir(summary_dir: object) -> str:
    """The real path of an existing run directory, or LineageParamSummaryPathError."""
    text = check_path_text(summary_dir, "summary_dir")
    real = os.path.realpath(text)
    if not os.path.exists(real):
        raise path_error(f"The summary_dir does not exist: {text!r}.")
    if not os.path.isdir(real):
        raise path_error(f"The summary_dir is not a directory: {text!r}.")
    return real


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def lineage_files(directory: str) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime_ns) of the lineage files directly in ``directory``, by name."""
    out = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                name = entry.name
                if (not name.endswith(LINEAGE_SUFFIX) or is_temp_name(name)
                        or not _TS_RE.search(name)):
                    continue
                try:
                    if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # vanished between listing and stat
                out.append((name, st.st_size, st.st_mtime_ns))
    except OSError:
        return ()
    out.sort()
    return tuple(out)


def discover(base_real: str, max_depth: int = 1) -> list[RunFiles]:
    """Run directories (directories holding lineage files) under ``base_real``.

    Depth 0 is the base itself ("./"), depth 1 its children ("./run1"), and so on up to
    ``max_depth``. Symlinked directories are followed only if they resolve inside the base;
    each real directory is reported once. The index directory is skipped.
    """
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise ValueError(f"max_depth expected a non-negative int, received: {max_depth!r}")
    runs: list[RunFiles] = []
    seen: set[str] = set()
    stack: list[tuple[str, str, int]] = [(base_real, ".", 0)]
    while stack:
        path, rel, depth = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        files = lineage_files(path)
        if files:
            summary_dir = "./" if rel == "." else rel
            runs.append(RunFiles(summary_dir, path, files))
        if depth >= max_depth:
            continue
        try:
            with os.scandir(path) as it:
                entries = [(e.name, e.is_symlink(), e.is_dir()) for e in it]
        except OSError:
            continue
        # push symlinks first so real directories are visited (and named) before links to them
        entries.sort(key=lambda e: (not e[1], e[0]))
        for name, is_link, is_dir in entries:
            if not is_dir or name == INDEX_DIRNAME or "\x00" in name:
                continue
            child = os.path.join(path, name)
            if is_link:
                child = os.path.realpath(child)
                if not _inside(child, base_real) or child == base_real:
                    continue
            stack.append((child, f"{rel}/{name}", depth + 1))
    return runs


def resolve_summary_dir(base_real: str, value: str) -> str | None:
    """Map a summary_dir condition value to the "./rel" form, or None if outside the base.

    Accepts "./run1", "run1" and absolute paths under the base (MindInsight's docs used
    absolute paths in their example).
    """
    if "\x00" in value or ".." in Path(value).parts:
        return None
    if os.path.isabs(value):
        real = os.path.normpath(value)
        if not _inside(real, base_real):
            real = os.path.realpath(value)
            if not _inside(real, base_real):
                return None
        rel = os.path.relpath(real, base_real)
    else:
        rel = os.path.normpath(value)
    if rel == ".":
        return "./"
    return "./" + rel.replace(os.sep, "/")
