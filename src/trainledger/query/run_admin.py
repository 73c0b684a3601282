"""Archive, restore and delete runs under a base, with their checkpoints.

An archived run moves (one ``rename``, atomic on one file system) to
``BASE/.trainledger-archive/<run>``, which discovery never enters: it leaves every query and
the UI at the next scan and comes back whole with ``restore_run``. A deleted run's directory is
removed, together with the checkpoint files its lineage names that lie elsewhere under BASE and
are provably the run's own (``_own_checkpoints_elsewhere``). Nothing outside BASE is ever
touched, a run still "running" is refused unless ``force``
(a crashed writer leaves "running" for good, hence the way out), and so is a run a named
model's version points into (``query.models``: archiving or deleting it would leave the
version pointing at nothing; ``force`` takes that risk, and the reference then fails with a
message naming the missing file); every action is recorded in the audit log by the caller
(``query.audit``).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from trainledger.checkpoint import read_info
from trainledger.errors import LineageParamValueError
from trainledger.lineage import is_run_uid, read_lineage
from trainledger.storage import (
    ARCHIVE_DIRNAME,
    INDEX_DIRNAME,
    fsync_dir,
    id_of_name,
    is_lineage_file_name,
    is_summary_file_name,
    name_of_id,
    note_change,
    run_files,
)

__all__ = ["archive_run", "restore_run", "delete_run", "archived_runs"]


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root and path != root


def _run_path(base: str, run_id: str, root: str | None = None) -> tuple[str, str]:
    """(real base, real run directory) of ``run_id`` ("./r0" or "r0"), or a clear error."""
    base_real = os.path.realpath(os.fspath(base))
    rel = name_of_id(run_id.removeprefix("./")) if isinstance(run_id, str) else ""
    parts = rel.split("/")
    if not rel or "\x00" in rel or any(p in ("", ".", "..") for p in parts):
        raise LineageParamValueError(
            f"expected a run id relative to the base ('./run1'), received: {run_id!r}"
        )
    if parts[0] in (INDEX_DIRNAME, ARCHIVE_DIRNAME):
        raise LineageParamValueError(f"{run_id!r} is trainledger's own directory, not a run")
    top = os.path.join(base_real, root) if root else base_real
    named = os.path.normpath(os.path.join(top, rel))
    path = os.path.realpath(named)
    if not _inside(path, base_real) or not os.path.isdir(path):
        raise LineageParamValueError(f"no run {run_id!r} under {base_real!r}")
    if path != named:  # a link would make the action land on the run it points at
        raise LineageParamValueError(
            f"expected a run directory, received {run_id!r}, a symbolic link (to {path!r}); "
            "act on the run itself"
        )
    return base_real, path


def _refuse_running(path: str, run_id: str, force: bool) -> dict[str, Any]:
    lineage = read_lineage(path)
    status = (lineage.get("run") or {}).get("status")
    if status == "running" and not force:
        raise LineageParamValueError(
            f"run {run_id!r} is still running (its lineage says so); stop it first, or force "
            "if its writer is dead (a killed process leaves 'running' behind)"
        )
    return lineage


def _refuse_registered(
    base: str | os.PathLike[str], run_id: str, force: bool, index: str | None
) -> None:
    """Refuse a run that registered model versions point into, naming them."""
    if force:
        return
    from trainledger.query.models import versions_in_run

    run = "./" + run_id.removeprefix("./").strip("/")
    held = versions_in_run(base, run, index=index)
    if held:
        raise LineageParamValueError(
            f"run {run!r} expected no model version pointing into it; received "
            f"{len(held)}: {', '.join(held)} (register another checkpoint and move the aliases "
            "first, or force: those versions would then name a missing checkpoint)"
        )


def archive_run(
    base: str | os.PathLike[str], run_id: str, *, force: bool = False, index: str | None = None
) -> str:
    """Move a run into the base's archive; return its new path. ``index``: where the base's
    index (and so its registry of named models) lives, as in ``filter_summary_lineage``."""
    base_real, path = _run_path(os.fspath(base), run_id)
    _refuse_running(path, run_id, force)
    _refuse_registered(base, run_id, force, index)
    target = os.path.join(base_real, ARCHIVE_DIRNAME, os.path.relpath(path, base_real))
    if os.path.exists(target):
        raise LineageParamValueError(f"the archive already holds {run_id!r}: {target!r}")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(path, target)
    fsync_dir(os.path.dirname(path))
    fsync_dir(os.path.dirname(target))
    note_change(path)
    return target


def restore_run(base: str | os.PathLike[str], run_id: str) -> str:
    """Move an archived run back to where it was; return its path."""
    base_real, path = _run_path(os.fspath(base), run_id, root=ARCHIVE_DIRNAME)
    target = os.path.join(
        base_real, os.path.relpath(path, os.path.join(base_real, ARCHIVE_DIRNAME))
    )
    if os.path.exists(target):
        raise LineageParamValueError(f"{target!r} exists; move it away before restoring")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(path, target)
    fsync_dir(os.path.dirname(target))
    note_change(target)
    return target


def archived_runs(base: str | os.PathLike[str]) -> list[str]:
    """Run ids ("./r0") in the base's archive."""
    root = os.path.join(os.path.realpath(os.fspath(base)), ARCHIVE_DIRNAME)
    out = []
    for parent, dirs, files in os.walk(root):
        if any(f.endswith("_lineage") for f in files):
            rel = os.path.relpath(parent, root).split(os.sep)
            out.append("./" + "/".join(id_of_name(part) for part in rel))
            dirs[:] = []
    return sorted(out)


def _named_checkpoints(lineage: dict[str, Any]) -> list[str]:
    """The absolute checkpoint paths a lineage names (``model.path``, ``run.checkpoints``).
    A relative path is never taken: it would resolve against whoever deletes, not the run."""
    model = (lineage.get("model") or {}).get("path")
    try:
        named = json.loads(model) if isinstance(model, str) and model.startswith("{") else {}
    except ValueError:
        named = {}
    candidates = (
        [v for v in named.values() if isinstance(v, str)] if isinstance(named, dict) else []
    )
    for entry in (lineage.get("run") or {}).get("checkpoints") or []:  # [{"path", "size"}]
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            candidates.append(entry["path"])
    return [c for c in candidates if "\x00" not in c and os.path.isabs(c)]


def _is_run_dir(path: str) -> bool:
    """Whether a directory holds a run's own files (lineage or summaries), by the one checked
    listing; one this process cannot list is taken for someone's run."""
    if not os.access(path, os.R_OK | os.X_OK):
        return True
    return bool(run_files(path, lambda n: is_lineage_file_name(n) or is_summary_file_name(n)))


def _in_another_run(real: str, base_real: str) -> bool:
    """Whether a file lies in a run directory (or the base's own directories) on its way up
    to the base; the deleting run's own directory is already excluded by the caller."""
    first = os.path.relpath(real, base_real).split(os.sep)[0]
    if first in (INDEX_DIRNAME, ARCHIVE_DIRNAME):
        return True
    parent = os.path.dirname(real)
    while _inside(parent, base_real) or parent == base_real:
        if _is_run_dir(parent):
            return True
        if parent == base_real:
            return False
        parent = os.path.dirname(parent)
    return True


def _saved_by(path: str, uid: str, homes: set[str]) -> bool:
    """Whether a checkpoint's verified header says the run ``uid`` living in one of ``homes``
    saved it. Both: a lineage may copy another run's uid (it is no secret), never the
    directory the other run's files name. Any doubt is a no (a foreign file, an older
    checkpoint, an encrypted one, a damaged header)."""
    try:
        info = read_info(path)
    except Exception:  # noqa: BLE001 - unreadable or not ours: never deleted
        return False
    return info.get("run_uid") == uid and info.get("run_dir") in homes


def _own_checkpoints_elsewhere(lineage: dict[str, Any], base_real: str, run_path: str) -> list[str]:
    """Checkpoint files outside the run's directory that are provably the run's own.

    A lineage file is untrusted input (whoever can write a run directory writes it), so
    naming a file is not enough: the file must lie under the base, in no other run's
    directory and outside ``.trainledger``, be a regular file, and carry in its verified
    header the run's identity and directory (``run_uid``, ``run_dir``: written by
    ``ModelCheckpoint`` from ``TrainLineage``'s). Checkpoints written before identities
    existed, MindSpore's and other writers' files are never deleted outside the run's
    directory."""
    uid = (lineage.get("run") or {}).get("uid")
    if not isinstance(uid, str) or not is_run_uid(uid):
        return []
    homes = {run_path}  # where it lives, and where an archived run lived when it trained
    archive = os.path.join(base_real, ARCHIVE_DIRNAME)
    if _inside(run_path, archive):
        homes.add(os.path.join(base_real, os.path.relpath(run_path, archive)))
    paths: list[str] = []
    for candidate in _named_checkpoints(lineage):
        real = os.path.realpath(candidate)
        if (
            _inside(real, base_real)
            and not _inside(real, run_path)
            and os.path.isfile(real)
            and not _in_another_run(real, base_real)
            and _saved_by(real, uid, homes)
        ):
            paths.append(real)
    return sorted(set(paths))


def delete_run(
    base: str | os.PathLike[str],
    run_id: str,
    *,
    force: bool = False,
    archived: bool = False,
    index: str | None = None,
) -> list[str]:
    """Delete a run (or an archived one) and its checkpoints under the base; return what
    was removed (the run directory first). ``index``: as in ``archive_run``."""
    root = ARCHIVE_DIRNAME if archived else None
    base_real, path = _run_path(os.fspath(base), run_id, root=root)
    lineage = _refuse_running(path, run_id, force)
    _refuse_registered(base, run_id, force, index)
    extra = _own_checkpoints_elsewhere(lineage, base_real, path)
    shutil.rmtree(path)
    for file in extra:
        os.unlink(file)
    fsync_dir(os.path.dirname(path))
    note_change(path)
    return [path, *extra]
