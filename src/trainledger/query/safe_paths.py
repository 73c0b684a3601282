"""Paths a caller hands the query engine: a base, a run directory, a ``summary_dir`` value.

Why apart from ``discovery.py``: what a path may be is one rule, checked before anything is
opened, and the same whoever asks (the index, ``get_summary_lineage``, a condition's
``summary_dir``); the scan that lists run directories is another idea. The rule: the base must
be an existing directory, NUL bytes and ``..`` are rejected, and nothing outside the base is
reached (``is_inside``: the scan follows a symlink only when it leads inside). Errors are
MindInsight's ``LineageParamSummaryPathError`` with its sentences, which callers match on.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainledger.errors import LineageParamSummaryPathError
from trainledger.storage import id_of_name

__all__ = [
    "INVALID_PATH",
    "MISSING_DIR",
    "check_path_text",
    "is_inside",
    "path_error",
    "resolve_summary_dir",
    "validate_base",
    "validate_run_dir",
]

_PATH_ERROR = "The parameter summary path error: {}"
# MindInsight's sentences, which callers match on; trainledger's detail follows them.
INVALID_PATH = "The summary path is invalid."
MISSING_DIR = "The summary path does not exist or is not a dir."


def path_error(detail: str) -> LineageParamSummaryPathError:
    """MindInsight's path error, with ``detail`` (one of its sentences, then ours)."""
    return LineageParamSummaryPathError(_PATH_ERROR.format(detail))


def check_path_text(path: object, name: str = "summary path") -> str:
    """Reject non-strings, empty strings, NUL bytes and ``..`` components."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise path_error(
            f"{INVALID_PATH} The {name} should be a non-empty str, received: {path!r}."
        )
    if "\x00" in path:
        raise path_error(f"{INVALID_PATH} The {name} contains a NUL byte.")
    if ".." in Path(path).parts:
        raise path_error(f"{INVALID_PATH} The {name} must not contain '..', received: {path!r}.")
    return path


def validate_base(base: object) -> str:
    """The real path of an existing base directory, or LineageParamSummaryPathError."""
    return _existing_dir(base, "summary_base_dir")


def validate_run_dir(summary_dir: object) -> str:
    """The real path of an existing run directory, or LineageParamSummaryPathError."""
    return _existing_dir(summary_dir, "summary_dir")


def _existing_dir(value: object, name: str) -> str:
    text = check_path_text(value, name)
    real = os.path.realpath(text)
    if not os.path.exists(real):
        raise path_error(f"{MISSING_DIR} The {name} does not exist: {text!r}.")
    if not os.path.isdir(real):
        raise path_error(f"{MISSING_DIR} The {name} is not a directory: {text!r}.")
    return real


def is_inside(path: str, base: str) -> bool:
    """Whether ``path`` is ``base`` or below it (both real, normalised paths)."""
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def resolve_summary_dir(base_real: str, value: str) -> str | None:
    """Map a summary_dir condition value to the "./rel" form, or None if outside the base.

    Accepts "./run1", "run1" and absolute paths under the base (MindInsight's docs used
    absolute paths in their example).
    """
    if "\x00" in value or ".." in Path(value).parts:
        return None
    if os.path.isabs(value):
        real = os.path.normpath(value)
        if not is_inside(real, base_real):
            real = os.path.realpath(value)
            if not is_inside(real, base_real):
                return None
        rel = os.path.relpath(real, base_real)
        named = True
    else:  # an id ("./r%FF"), unless it holds raw names (lone surrogates: not UTF-8)
        rel = os.path.normpath(value)
        named = not rel.isascii() and not rel.isprintable()
    if rel == ".":
        return "./"
    parts = rel.split(os.sep)
    # a path's names as run ids: a name that is not UTF-8 has its bytes written %XX
    return "./" + "/".join(id_of_name(p) for p in parts) if named else "./" + "/".join(parts)
