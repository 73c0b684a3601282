"""``CheckpointManager``: the files of one ``ModelCheckpoint`` prefix, and the deleter.

Why a separate object: MindSpore pruned the oldest file *before* writing the new one, so a
crash between the two lost a checkpoint. Here the manager only learns about a file once it is
committed (``add``), then applies the pure rules of ``policy.py`` (``apply``) and deletes only
files that match this prefix's name pattern in this directory and that it tracks.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from trainledger.checkpoint.policy import CkptRecord, qualifies_for_best, select_deletions
from trainledger.storage import (
    SHARDED_MANIFEST,
    CheckpointName,
    checkpoint_file_name,
    fsync_dir,
    parse_checkpoint_name,
    remove_written,
    scan_dir,
)

__all__ = ["CheckpointManager", "next_free_prefix", "resume_prefix"]

_log = logging.getLogger(__name__)


def next_free_prefix(directory: str | os.PathLike[str], prefix: str) -> str:
    """``prefix`` if no checkpoint of it exists in ``directory``, else ``<prefix>_<N>``.

    N is one more than the largest suffix in use (MindSpore's rule), so a new run never mixes
    its files with an earlier run's.
    """
    suffix = 0
    for entry in scan_dir(directory):
        parsed = parse_checkpoint_name(entry.name, prefix)
        if parsed is not None:
            taken = parsed.family[len(prefix) + 1 :] or "0"
            suffix = max(suffix, int(taken) + 1)
    return prefix if suffix == 0 else f"{prefix}_{suffix}"


def resume_prefix(
    directory: str | os.PathLike[str],
    prefix: str,
    resume_from: str | os.PathLike[str] | None = None,
) -> str:
    """The prefix a resumed run continues (``prefix`` or one of its ``<prefix>_<N>``).

    That of ``resume_from`` when it is a file of this family in ``directory``; else that of the
    family's most recently written file; else ``prefix``. So resuming a run that was given
    ``CKP`` but wrote ``CKP_1-*`` files continues ``CKP_1``.
    """
    root = Path(directory).absolute()
    if resume_from is not None:
        origin = Path(resume_from).absolute()
        parsed = parse_checkpoint_name(origin.name, prefix)
        if parsed is not None and origin.parent == root:
            return parsed.family
    newest: tuple[int, str] | None = None
    for entry in scan_dir(root):
        parsed = parse_checkpoint_name(entry.name, prefix)
        if parsed is not None:
            key = (entry.stat().st_mtime_ns, parsed.family)
            newest = key if newest is None or key > newest else newest
    return newest[1] if newest else prefix


class CheckpointManager:
    """Retention for the checkpoints of one prefix in one directory.

    ``CheckpointManager()`` with no arguments works as MindSpore's: point it at a directory
    and prefix with ``update_ckpoint_filelist(directory, prefix)`` (default: the current
    directory and ``"CKP"``, ModelCheckpoint's default prefix), then use ``ckpoint_filelist``,
    ``remove_oldest_ckpoint_file`` and ``keep_one_ckpoint_per_minutes``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        prefix: str = "CKP",
        keep_checkpoint_max: int = 5,
        keep_checkpoint_per_n_minutes: int = 0,
        keep_best_max: int = 0,
        mode: str = "min",
    ) -> None:
        if "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix expected a file name without '/', received: {prefix!r}")
        self.directory = Path(os.curdir if directory is None else directory).absolute()
        self.prefix = prefix
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_per_n_minutes = keep_checkpoint_per_n_minutes
        self.keep_best_max = keep_best_max
        self.mode = mode
        self._records: dict[str, CkptRecord] = {}
        self._pinned: set[str] = set()

    # --- names --------------------------------------------------------------------------
    def file_path(self, epoch: int, step_in_epoch: int, breakpoint: bool = False) -> Path:
        """Where the checkpoint of ``epoch``/``step_in_epoch`` goes."""
        return self.directory / checkpoint_file_name(self.prefix, epoch, step_in_epoch, breakpoint)

    def _parse(self, name: str) -> CheckpointName | None:
        """The parts of ``name`` when it is a file of exactly this prefix (not ``<prefix>_N``)."""
        parsed = parse_checkpoint_name(name, self.prefix)
        return parsed if parsed is not None and parsed.family == self.prefix else None

    def owns(self, path: str | os.PathLike[str]) -> bool:
        p = Path(path)
        return p.parent.absolute() == self.directory and self._parse(p.name) is not None

    # --- tracking -----------------------------------------------------------------------
    @property
    def records(self) -> list[CkptRecord]:
        """Tracked files, oldest first."""
        return sorted(self._records.values(), key=lambda r: r.order)

    @property
    def ckpoint_num(self) -> int:
        """Number of tracked files (MindSpore's name)."""
        return len(self._records)

    def adopt_existing(
        self,
        score_of: Callable[[Path], float | None] | None = None,
        pinned: str | os.PathLike[str] | None = None,
    ) -> list[CkptRecord]:
        """Track the files of this prefix already on disk (a resumed run continues them)."""
        for entry in scan_dir(self.directory):
            parsed = self._parse(entry.name)
            if parsed is not None:
                path = self.directory / entry.name
                score = None
                if score_of is not None and not parsed.breakpoint:
                    try:
                        score = score_of(path)
                    except Exception as exc:  # an unreadable old file: keep it, unscored
                        _log.warning("cannot read the score of %s: %s", path, exc)
                self._track(path, score)
        if pinned is not None:
            self.pin(pinned)
        return self.records

    def _track(self, path: Path, score: float | None) -> CkptRecord | None:
        parsed = self._parse(path.name)
        if parsed is None or path.parent.absolute() != self.directory:
            return None
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return None
        record = CkptRecord(
            path.name,
            parsed.epoch,
            parsed.step,
            mtime,
            breakpoint=parsed.breakpoint,
            score=score,
        )
        self._records[path.name] = record
        return record

    def pin(self, path: str | os.PathLike[str]) -> None:
        """Never delete ``path`` (the file a run resumed from)."""
        self._pinned.add(Path(path).name)

    def add(self, path: str | os.PathLike[str], score: float | None = None) -> None:
        """Track a newly committed file (call only once it is safely on disk)."""
        self._track(Path(path).absolute(), score)

    def would_be_best(self, score: float | None) -> bool:
        """Whether a file with ``score`` would enter the best ``keep_best_max``."""
        return qualifies_for_best(score, self.records, self.keep_best_max, self.mode)

    # --- deleting -----------------------------------------------------------------------
    def to_delete(self) -> list[Path]:
        """What ``apply`` would delete now (pure decision over the tracked records)."""
        names = select_deletions(
            self.records,
            keep_max=self.keep_checkpoint_max,
            keep_per_n_minutes=self.keep_checkpoint_per_n_minutes,
            keep_best_max=self.keep_best_max,
            mode=self.mode,
            pinned=self._pinned,
        )
        return [self.directory / n for n in names]

    def apply(self) -> list[Path]:
        """Delete the files the retention rules drop; returns them."""
        removed = []
        for path in self.to_delete():
            if not self.owns(path) or path.name in self._pinned:
                continue  # defensive: never touch a file that is not ours
            try:
                remove_checkpoint(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                _log.warning("could not delete old checkpoint %s: %s", path, exc)
                continue
            self._records.pop(path.name, None)
            removed.append(path)
        if removed:
            fsync_dir(self.directory)
        return removed

    # MindSpore names
    @property
    def ckpoint_filelist(self) -> list[str]:
        """Paths of the tracked files, oldest first (MindSpore's name)."""
        return [str(self.directory / r.name) for r in self.records]

    def update_ckpoint_filelist(self, directory: str | os.PathLike[str], prefix: str) -> None:
        """Track exactly the ``<prefix>-<epoch>_<step>.ckpt`` files now in ``directory``.

        As MindSpore: the list is rebuilt from disk; ``<prefix>_N-...`` files (another run)
        and ``_breakpoint`` files are not part of it. The manager then acts on this directory
        and prefix.
        """
        if "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix expected a file name without '/', received: {prefix!r}")
        self.directory = Path(directory).absolute()
        self.prefix = prefix
        self._records.clear()
        for entry in scan_dir(self.directory):
            parsed = self._parse(entry.name)
            if parsed is not None and not parsed.breakpoint:
                self._track(self.directory / entry.name, None)

    def _deletable(self) -> list[CkptRecord]:
        return [r for r in self.records if r.name not in self._pinned and not r.breakpoint]

    def remove_oldest_ckpoint_file(self) -> None:
        """Delete the tracked file with the oldest modification time (MindSpore's name);
        never the file a run resumed from."""
        candidates = sorted(self._deletable(), key=lambda r: r.mtime)
        if candidates:
            self.remove_ckpoint_file(candidates[0].name)

    def keep_one_ckpoint_per_minutes(self, minutes: float, cur_time: float) -> None:
        """Of the tracked files modified in the last ``minutes`` before ``cur_time``, keep the
        oldest and delete the others (MindSpore's rule, called before a new save)."""
        recent = [r for r in self._deletable() if cur_time - r.mtime < 60 * minutes]
        if recent:
            oldest = min(recent, key=lambda r: r.mtime)
            for record in recent:
                if record is not oldest:
                    self.remove_ckpoint_file(record.name)

    def remove_ckpoint_file(self, file_name: str | os.PathLike[str]) -> None:
        """Delete one tracked file of this prefix."""
        path = self.directory / Path(file_name).name
        if not self.owns(path):
            raise ValueError(
                f"{file_name} is not a checkpoint of prefix {self.prefix!r} in {self.directory}"
            )
        try:
            remove_checkpoint(path)
        except FileNotFoundError:
            pass
        self._records.pop(path.name, None)
        fsync_dir(self.directory)


def remove_checkpoint(path: Path) -> None:
    """Delete a checkpoint file, or a sharded checkpoint's directory (``checkpoint.sharded``):
    its manifest first, so a half-deleted directory is never taken for a complete one. Through
    ``remove_written``, so a checkpoint in ``s3://`` is deleted from the store too."""
    if not os.path.lexists(path):
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_dir() and not path.is_symlink():
        (path / SHARDED_MANIFEST).unlink(missing_ok=True)
    remove_written(path)
