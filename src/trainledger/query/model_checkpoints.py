"""Which run of a base a checkpoint belongs to, for the named-model registry; and the name a
registered checkpoint is loaded by.

Why these rules: a version must keep pointing at its checkpoint, so what is registered is
what the base will still hold - a file (or object) inside the base, under the folder of one
of its runs (the deepest, where runs nest), or one that a run's lineage names as its own
checkpoint. Its path is kept relative to the base, so a base that moves or is mounted
elsewhere keeps its registry. The checkpoint's global step and the fingerprint of its
tensors' digests come from the run's lineage (``lineage.weights``), else from the file's
header (a local file only: an ``s3://`` one is never downloaded to register it); both may be
unknown (None), as for another writer's file.

An ``s3://`` base's checkpoints are named by the base's URL (as their writers named them:
what ``load_checkpoint`` reads and what a loading run's lineage records); their existence
is asked of the store, since the index's copy of the base leaves checkpoints out.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainledger.checkpoint import file_digests, read_info
from trainledger.errors import LineageParamValueError, TrainledgerError
from trainledger.lineage import read_weights
from trainledger.query.safe_paths import is_inside, validate_base
from trainledger.storage import (
    ARCHIVE_DIRNAME,
    INDEX_DIRNAME,
    Digests,
    ObjectLocation,
    ObjectStore,
    index_copy_dir,
    is_lineage_file_name,
    is_object_url,
    is_summary_file_name,
    is_temp_name,
    name_of_id,
)

__all__ = ["BaseSite", "Located", "site_of", "locate", "fingerprint"]


@dataclass(frozen=True)
class BaseSite:
    """A base as the registry sees it: its ``s3://`` URL (None for a local base), the local
    directory its index reads (the base, or the URL's index copy) and its name in a shared
    index (the URL, or the real path)."""

    url: str | None
    local: str
    name: str

    def public(self, rel: str) -> str:
        """The name a checkpoint ``rel`` (relative to the base) is loaded by."""
        if self.url is not None:
            return f"{self.url}/{rel}"
        return os.path.join(self.local, *rel.split("/"))

    def run_dir(self, run: str) -> str:
        """The local directory of run ``run`` ("./r1"; "." for the base itself)."""
        return self.local if run == "." else os.path.join(self.local, name_of_id(run[2:]))


def site_of(base: str | os.PathLike[str]) -> BaseSite:
    """``base`` (a local directory or an ``s3://`` URL) as a ``BaseSite``."""
    text = os.fspath(base) if isinstance(base, (str, os.PathLike)) else base
    if isinstance(text, str) and is_object_url(text):
        url = text.rstrip("/")  # the shared index's name (lineage_api.base_name)
        local = os.path.realpath(index_copy_dir(ObjectLocation.parse(url)))
        os.makedirs(local, exist_ok=True)
        return BaseSite(url, local, url)
    real = validate_base(text)
    return BaseSite(None, real, real)


@dataclass(frozen=True)
class Located:
    """A registrable checkpoint: its run, its path relative to the base, step, digests."""

    run: str
    checkpoint: str
    step: int | None
    digests: str | None

    def as_event(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("run", "checkpoint", "step", "digests")}


def locate(site: BaseSite, checkpoint: Any, runs: Sequence[str]) -> Located:
    """The run of ``runs`` (``summary_dir``s) that ``checkpoint`` belongs to, or an error
    saying what was expected (module doc)."""
    rel = _relative(site, checkpoint)
    name = rel.rsplit("/", 1)[-1]
    if is_lineage_file_name(name) or is_summary_file_name(name) or is_temp_name(name):
        raise LineageParamValueError(
            f"a checkpoint expected a checkpoint file; received {checkpoint!r}, a lineage, "
            "summary or temporary file"
        )
    run = _run_holding(rel, runs) or _run_naming(site, rel, runs)
    if run is None:
        shown = ", ".join(sorted(runs)[:5]) + (" ..." if len(runs) > 5 else "")
        raise LineageParamValueError(
            "a checkpoint expected a file in the folder of one of the base's runs "
            f"({shown or 'none'}) or one a run's lineage names; received: {checkpoint!r}"
        )
    if site.url is not None:
        _check_object(site, rel, checkpoint)
    step, digests = _facts(site, run, rel)
    return Located(run, rel, step, digests)


def _relative(site: BaseSite, checkpoint: Any) -> str:
    """``checkpoint`` as a ``/``-separated path relative to the base, checked to lie inside
    it, outside trainledger's own folders, and (local) to be a file."""
    if not isinstance(checkpoint, (str, os.PathLike)) or not os.fspath(checkpoint):
        raise LineageParamValueError(
            "a checkpoint expected a path inside the base (absolute, or relative to the base); "
            f"received: {checkpoint!r}"
        )
    text = os.fspath(checkpoint)
    if site.url is not None:
        rel = _relative_key(site.url, text)
    else:
        path = os.path.realpath(os.path.join(site.local, text))  # (an absolute text wins)
        if not is_inside(path, site.local) or path == site.local:
            raise LineageParamValueError(
                f"a checkpoint expected a file inside the base {site.local!r}; received: {text!r}"
            )
        if not os.path.isfile(path):
            why = "a directory" if os.path.isdir(path) else "no such file"
            raise LineageParamValueError(
                f"a checkpoint expected an existing file; received: {text!r} ({why})"
            )
        rel = os.path.relpath(path, site.local).replace(os.sep, "/")
    if rel.split("/", 1)[0] in (INDEX_DIRNAME, ARCHIVE_DIRNAME):
        raise LineageParamValueError(
            f"a checkpoint expected a file of a run; received: {text!r}, in trainledger's "
            f"own folder {rel.split('/', 1)[0]!r} (an archived run's files are not registered)"
        )
    return rel


def _relative_key(url: str, text: str) -> str:
    if is_object_url(text):
        if not text.startswith(url + "/"):
            raise LineageParamValueError(
                f"a checkpoint expected an object under the base {url}; received: {text!r}"
            )
        rel = text[len(url) + 1 :]
    elif os.path.isabs(text):
        raise LineageParamValueError(
            f"a checkpoint of the base {url} expected its s3:// URL or a path relative to the "
            f"base; received the local path {text!r}"
        )
    else:
        rel = text.replace(os.sep, "/")
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise LineageParamValueError(
            f"a checkpoint expected a key under the base {url} without empty, '.' or '..' "
            f"parts; received: {text!r}"
        )
    return rel


def _run_holding(rel: str, runs: Sequence[str]) -> str | None:
    """The deepest run whose folder holds ``rel`` ("." when the base itself is a run)."""
    best: str | None = None
    for run in runs:
        folder = name_of_id(run[2:]) if run != "." else ""
        if (not folder or rel.startswith(folder + "/")) and (best is None or len(run) > len(best)):
            best = run
    return best


def _run_naming(site: BaseSite, rel: str, runs: Sequence[str]) -> str | None:
    """The run whose lineage names ``rel`` among its checkpoints (saved outside its folder)."""
    for run in sorted(runs):
        if _recorded(site, run, rel) is not None:
            return run
    return None


def _recorded(site: BaseSite, run: str, rel: str) -> tuple[int | None, Digests] | None:
    """The step and digests ``run``'s lineage records for checkpoint ``rel``, if it does."""
    wanted = site.public(rel)
    for key, facts in read_weights(site.run_dir(run)).checkpoints.items():
        same = key == wanted if site.url is not None else _same_file(key, wanted)
        if same:
            return facts
    return None


def _same_file(recorded: str, path: str) -> bool:
    return not is_object_url(recorded) and os.path.realpath(recorded) == path


def _facts(site: BaseSite, run: str, rel: str) -> tuple[int | None, str | None]:
    """The checkpoint's global step and digests fingerprint: the lineage's, else the local
    file header's, else None."""
    recorded = _recorded(site, run, rel)
    if recorded is not None:
        return recorded[0], fingerprint(recorded[1])
    if site.url is not None:
        return None, None
    path = site.public(rel)
    try:
        step = read_info(path).get("step")
    except (OSError, ValueError, TrainledgerError):  # another writer's file, or encrypted
        step = None
    digests = file_digests(path)
    step = step if isinstance(step, int) and not isinstance(step, bool) else None
    return step, fingerprint(digests) if digests is not None else None


def fingerprint(digests: Digests) -> str:
    """16 hex digits naming a set of tensors by their digests (whatever their order)."""
    pairs = sorted(f"{crc:08x}:{kind}" for crc, kind in digests.keys())
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]


def _check_object(site: BaseSite, rel: str, given: Any) -> None:
    """An ``s3://`` checkpoint must be an object of the store (one LIST of its key)."""
    loc = ObjectLocation.parse(site.public(rel))
    keys, _ = ObjectStore().list_keys(loc.bucket, loc.key, limit=1)
    if keys[:1] != [loc.key]:
        raise LineageParamValueError(
            f"a checkpoint expected an existing object; received: {given!r} (no such object)"
        )
