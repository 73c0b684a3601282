"""Where a base's index, annotations and audit log live, and where none can be written.

Why a module of its own: three writers (the SQLite index, the annotations file, the audit
log) must agree on one directory, or a read-only base would keep its tags in one place and
the record of who set them in another (or nowhere: a 500 after the tag was already stored).
The order is ``BASE/.trainledger``, else a per-base directory in the user's cache (a shared
mount, another user's files), else a scratch directory under the system's temp directory:
the index is derived data and may be rebuilt anywhere, so reads always work, but
annotations and the audit log are the only copy of what people wrote, and they are refused
there (``ReadOnlyBaseError``, the web UI's 409) rather than kept where a reboot loses them.
"""

from __future__ import annotations

import os

from trainledger.errors import ReadOnlyBaseError
from trainledger.storage import INDEX_DIRNAME

__all__ = ["cache_root", "durable_dir", "index_dir"]


def cache_root() -> str:
    """The user's cache of indexes of read-only bases (``$XDG_CACHE_HOME``, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "trainledger", "index")


def _fallbacks(base_real: str) -> list[str]:
    """The user cache's and the scratch directory for this base."""
    import hashlib  # (here: only a read-only base needs them; a query's new process must not)
    import tempfile

    digest = hashlib.sha256(base_real.encode()).hexdigest()[:16]
    scratch = os.path.join(tempfile.gettempdir(), f"trainledger-{os.getuid()}", "index")
    return [os.path.join(cache_root(), digest), os.path.join(scratch, digest)]


def _usable(directory: str) -> bool:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return False
    return os.path.isdir(directory) and os.access(directory, os.W_OK | os.X_OK)


def index_dir(base_real: str) -> str:
    """The first writable of ``BASE/.trainledger``, the user cache's and the scratch
    directory for this base."""
    preferred = os.path.join(base_real, INDEX_DIRNAME)
    if _usable(preferred):
        return preferred
    candidates = [preferred, *_fallbacks(base_real)]
    for directory in candidates[1:]:
        if _usable(directory):
            return directory
    raise ReadOnlyBaseError(
        f"expected a writable directory for the lineage index of {base_real!r}, received "
        f"read-only {', '.join(repr(c) for c in candidates)}"
    )


def durable_dir(base_real: str) -> str:
    """Where annotations and the audit log of the base are kept: ``index_dir`` unless that
    fell back to scratch space, which is refused with the read-only paths named."""
    directory = index_dir(base_real)
    if directory == os.path.join(base_real, INDEX_DIRNAME):
        return directory
    candidates = [os.path.join(base_real, INDEX_DIRNAME), *_fallbacks(base_real)]
    if directory == candidates[-1]:
        raise ReadOnlyBaseError(
            f"nowhere to keep a change to {base_real!r}: {candidates[0]!r} and the user cache "
            f"{candidates[1]!r} are read-only (make one writable, or set XDG_CACHE_HOME to a "
            "writable directory); reading works"
        )
    return directory
