"""The server's one door to the data: runs, lineage, annotations, checkpoints, scalars.

Routes talk only to a :class:`RunStore`. The real one, :class:`IndexedRunStore`, asks the query
package's ``QueryService`` for everything over many runs (search, counts, annotations; it owns
the re-scans and the caches) and reads single runs itself (lineage, checkpoint files:
``checkpoint_listing.py``, scalars), always through :func:`security.resolve_run`. That keeps
the routes testable with a small fake and every filesystem access inside BASE.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from trainledger.lineage import SUMMARY_KEYS, lineage_files, read_lineage
from trainledger.query import (
    QueryService,
    append_audit,
    archive_run,
    archived_runs,
    delete_run,
    get_summary_lineage,
    lineage_types,
    overview_fresh,
    parse_where,
    read_audit,
    restore_run,
    run_id_of,
    series_parts_of,
)
from trainledger.server.checkpoint_listing import run_checkpoints
from trainledger.server.columns import RUN_FIELDS
from trainledger.server.divergence import diverged
from trainledger.server.family_view import FamilyCache
from trainledger.server.media_store import Kind, MediaCache
from trainledger.server.scalar_cache import RunScalars
from trainledger.server.security import RunNotFound, check_run_id, resolve_run
from trainledger.server.session_ends import sessions_ending_at_their_points
from trainledger.server.structure_store import (
    StructureCache,
    read_run_graph,
    read_run_landscapes,
)
from trainledger.storage import ObjectLocation, exclusive_lock, index_copy_lock, readable_dir
from trainledger.summary import SeriesOverview, SessionSeries

# ``run`` extension fields attached to each object of a page (shown as run/<name> columns)
RUN_COLUMNS = tuple(name.split("/", 1)[1] for name in RUN_FIELDS)
_RUN_INFO_MAX = 100


class RunStore(Protocol):
    """What the routes need.

    Errors: ``RunNotFound`` (404); ``LineageError`` and ``ValueError`` (400).
    """

    base: Path

    def search(self, condition: Mapping[str, Any] | None) -> dict[str, Any]:
        """``filter_summary_lineage`` over BASE; each object also carries ``run_id``.

        The result may be shared between requests (cached): callers must not modify it."""

    def stamp(self, scan: bool = True) -> dict[str, Any]:
        """``{"stamp": str, "count": int}``; the stamp changes whenever the set of runs or
        any run's lineage changes (a cheap re-scan, not done with ``scan=False``), so the
        page polls it."""

    def series_tags(self) -> list[str]:
        """The scalar tags whose statistics (``max(<tag>)``...) the runs can be shown by."""

    def run_info(self, run_id: str) -> dict[str, Any]:
        """The run's ``run`` extension fields of ``RUN_COLUMNS`` (status, times, host...)."""

    def run_detail(self, run_id: str) -> dict[str, Any]:
        """Full lineage of one run (``get_summary_lineage`` keys), its annotation, status."""

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        """``[{"name", "size", "step", "epoch", "time"}]`` of the run's checkpoint files."""

    def annotate(
        self, run_id: str, *, tag: int | None = None, remark: str | None = None
    ) -> dict[str, Any]:
        """Set a run's tag and/or remark; persisted so it survives restarts and rebuilds."""

    def compile_where(self, expressions: Sequence[str]) -> dict[str, Any]:
        """The CLI's ``--where`` expressions -> a search condition (ValueError if bad)."""

    def archive(self, run_id: str, *, force: bool = False) -> str:
        """Move the run into BASE's archive (it leaves every result); its new path in BASE."""

    def restore(self, run_id: str) -> None:
        """Bring an archived run back."""

    def archived(self) -> list[str]:
        """Ids of the archived runs."""

    def delete(self, run_id: str, *, force: bool = False) -> list[str]:
        """Delete the run and its checkpoints under BASE; the paths removed."""

    def audit(self, actor: str, action: str, run_id: str, **detail: Any) -> None:
        """Record a write in BASE's audit log."""

    def audit_log(self, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` audit entries, oldest first."""

    def scalar_tags(self, run_id: str) -> list[str]:
        """Scalar tags in the run's summary files."""

    def scalar_series(self, run_id: str, tag: str, view: str = "merged") -> SessionSeries:
        """``(steps, wall_times, values, sessions)`` arrays of one tag, read incrementally:
        ``view`` "merged" (the series rule) or "sessions" (every point, sessions apart)."""

    def nonfinite(self, run_id: str) -> list[dict[str, Any]]:
        """``[{"tag", "step", "value"}]``: each of the run's series that went NaN or
        infinite, by step, as the index holds it (``value``: nan, inf, -inf or None)."""

    def scalar_overview(self, run_id: str, tag: str) -> SeriesOverview | None:
        """The overview the index holds of a long series (``view`` "merged"), only while it
        covers the run's summary files as they are now; None: read the points."""

    def media(self, run_id: str, kind: Kind) -> dict[str, list[Any]]:
        """``{tag: [event]}`` of the run's images, histograms or tensors (``ImageEvent``,
        ``HistogramEvent``, ``TensorEvent``), read incrementally; callers must not modify it."""

    def landscapes(self, run_id: str) -> list[dict[str, Any]]:
        """The run's loss landscapes as JSON (``structure_store.landscape_json``)."""

    def graph(self, run_id: str, max_nodes: int) -> dict[str, Any] | None:
        """The run's computational graph as JSON (``graph_view.graph_view``), or None."""

    def family(self, run_id: str) -> dict[str, Any]:
        """The run's family (``family_view.with_run_ids``); RunNotFound for an unknown run."""

    def close(self) -> None:
        """Release files and connections."""


def _parts(condition: Mapping[str, Any]) -> list[str]:
    """Which parts the objects of a result carry (only validated conditions get here)."""
    spec = condition.get("lineage_type")
    return lineage_types({"lineage_type": spec} if isinstance(spec, dict) else {})


class _KnownRuns:
    """``run_id in known``: asks the index (one SQL lookup), never the filesystem."""

    def __init__(self, service: QueryService) -> None:
        self.service = service

    def __contains__(self, run_id: object) -> bool:
        return isinstance(run_id, str) and self.service.is_known(f"./{run_id}")


def _copy_lock(remote: str | None) -> Callable[[], AbstractContextManager[Any]]:
    """What a scan of the copy of ``remote`` holds: the lock its syncs hold (none locally)."""
    if remote is None:
        return nullcontext
    return functools.partial(exclusive_lock, index_copy_lock(ObjectLocation.parse(remote)))


class IndexedRunStore:
    """The real store: the query package's ``QueryService`` (index, re-scans, data versions,
    result cache) plus the lineage, checkpoint-file and summary reads of single runs.

    The options are ``QueryService``'s (``max_depth``, ``rescan_interval``, ``stale_after``,
    ``background_rescan``, ``index`` and ``name``: a shared index and the base's name there);
    ``remote``: the ``s3://`` base copied into ``base`` (the index's copy, whose event files
    may be stand-ins: each scan holds its lock; a run's points, media, graph and landscapes
    are read from the download cache of that run alone, its checkpoints from the store);
    scalars, images, histograms and tensors are re-read at most every
    ``scalar_interval`` seconds per run, for the ``max_cached_runs`` runs read last (scalars)
    or a quarter of them (the media, which weigh more; see ``media_store``).
    """

    def __init__(
        self,
        base: Path,
        *,
        max_depth: int = 1,
        rescan_interval: float = 2.0,
        stale_after: float = 10.0,
        background_rescan: bool = True,
        scalar_interval: float = 0.5,
        max_cached_runs: int = 64,
        index: str | None = None,
        name: str | None = None,
        remote: str | None = None,
    ) -> None:
        self.base = base
        self.remote = remote  # the s3:// URL ``base`` is a local copy of (no checkpoints in it)
        self.index = index  # (also where the base's named models are: archive/delete ask)
        self.max_depth = max_depth  # (how deep the registry looks for a checkpoint's run)
        self.scalar_interval = scalar_interval
        self.max_cached_runs = max_cached_runs
        self.service = QueryService(
            base,
            max_depth=max_depth,
            rescan_interval=rescan_interval,
            stale_after=stale_after,
            background_rescan=background_rescan,
            finish=self._finish,
            index=index,
            name=name,
            scan_guard=_copy_lock(remote),
        )
        self._known = _KnownRuns(self.service)
        self._lock = threading.RLock()  # guards the caches below
        self._run_infos: dict[str, tuple[int, Any, dict[str, Any]]] = {}
        self._scalars: OrderedDict[str, RunScalars] = OrderedDict()
        self._media = MediaCache(interval=scalar_interval, max_runs=max(1, max_cached_runs // 4))
        self._structure = StructureCache(max_runs=max(1, max_cached_runs // 4))
        self._families = FamilyCache()

    def stamp(self, scan: bool = True) -> dict[str, Any]:
        """Re-scans in the caller's thread: the page's poll may wait; its table requests not."""
        version, count = self.service.stamp(scan)
        return {"stamp": f"{version}-{count}", "count": count}

    # -- lineage ----------------------------------------------------------------------------

    def search(self, condition: Mapping[str, Any] | None) -> dict[str, Any]:
        return self.service.search(condition)

    def series_tags(self) -> list[str]:
        return self.service.series_tags()

    def _finish(self, result: dict[str, Any], condition: Mapping[str, Any] | None) -> None:
        """Each object gets its ``run_id``; a page of objects with model lineage also gets
        its ``run`` info (never a whole result: that would read every run's lineage)."""
        for obj in result["object"]:
            obj["run_id"] = run_id_of(str(obj.get("summary_dir", "")))
        if len(result["object"]) <= _RUN_INFO_MAX and (
            condition is None or "model" in _parts(condition)
        ):
            dirs = [str(obj.get("summary_dir", "")) for obj in result["object"]]
            found = self.service.nonfinite_series(dirs)
            for obj, summary_dir in zip(result["object"], dirs, strict=True):
                obj["run"] = self.run_info(obj["run_id"])
                obj["nonfinite"] = diverged(found.get(summary_dir, []))

    def run_info(self, run_id: str) -> dict[str, Any]:
        """The ``run`` extension fields the table shows (status, times, host, commit).

        The index does not hold them, so they come from the lineage file, re-read only when
        its size or mtime changed, and not even stat'ed again while the data version (which
        every change of a run's lineage moves) is the one it was read at: an export of every
        run costs a dictionary lookup per row.
        """
        version = self.service.version
        with self._lock:
            hit = self._run_infos.get(run_id)
        if hit is not None and hit[0] == version:
            return hit[2]
        try:
            path = resolve_run(self.base, run_id, {run_id})
            key = tuple((f.name, f.size, f.mtime) for f in lineage_files(path))
        except (RunNotFound, OSError):
            return {}
        if hit is not None and hit[1] == key:
            info = hit[2]
        else:
            try:
                run = read_lineage(path).get("run") or {}
            except Exception:  # noqa: BLE001 - a damaged file must not break the table
                run = {}
            info = {k: run[k] for k in RUN_COLUMNS if k in run}
        with self._lock:
            self._run_infos[run_id] = (version, key, info)
        return info

    def _path(self, run_id: str) -> Path:
        return resolve_run(self.base, run_id, self._known)

    def _content(self, run_id: str) -> Path:
        """Where a run's points, media and graph are read: its directory, or for a copy of
        an ``s3://`` base the download cache of the run alone (the index's copy may hold
        stand-ins for its event files: ``query/object_copy.py``), synced when older than
        ``READ_MAX_AGE``."""
        path = self._path(run_id)
        if self.remote is None:
            return path
        return Path(readable_dir(f"{self.remote.rstrip('/')}/{check_run_id(run_id)}"))

    def run_detail(self, run_id: str) -> dict[str, Any]:
        path = self._path(run_id)
        run_id = check_run_id(run_id)
        if lineage_files(path):
            lineage = get_summary_lineage(str(path))
            lineage.pop("summary_dir", None)  # an absolute path: the page needs none
            lineage = sessions_ending_at_their_points(path, lineage)
        else:
            lineage = self._tensorboard_lineage(f"./{run_id}")
        annotation = self.service.annotation(f"./{run_id}")
        return {
            "run_id": run_id,
            "summary_dir": f"./{run_id}",
            "status": (lineage.get("run") or {}).get("status"),
            "lineage": lineage,
            "added_info": {"tag": annotation.get("tag", 0), "remark": annotation.get("remark", "")},
        }

    def _tensorboard_lineage(self, summary_dir: str) -> dict[str, Any]:
        """A run of a TensorBoard logdir (no lineage file): what the index holds of it, its
        HParams as ``user_defined`` and ``metric`` (``query/tb_runs.py``), the other keys
        empty."""
        found = self.service.search({"summary_dir": {"eq": summary_dir}})["object"]
        if not found:
            raise RunNotFound(summary_dir)
        record = found[0]["model_lineage"]
        lineage: dict[str, Any] = {key: {} for key in SUMMARY_KEYS}
        lineage.update(metric=record["metric"], user_defined=record["user_defined"])
        return lineage

    def checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        """Files under the run directory, plus checkpoints the lineage lists elsewhere (from
        the record only: nothing outside BASE is opened)."""
        return run_checkpoints(self._path(run_id), run_id, self.remote)

    def annotate(
        self, run_id: str, *, tag: int | None = None, remark: str | None = None
    ) -> dict[str, Any]:
        self._path(run_id)
        run_id = check_run_id(run_id)
        entry = self.service.annotate(f"./{run_id}", tag=tag, remark=remark)
        return {"run_id": run_id, "tag": entry.get("tag", 0), "remark": entry.get("remark", "")}

    # -- a team's writes ---------------------------------------------------------------------

    def _changed(self, run_id: str) -> None:
        """This process moved or deleted a run: forget it now, not at the next poll."""
        self.service.rescan(wait=True, force=True)
        with self._lock:
            self._run_infos.pop(run_id, None)
            self._scalars.pop(run_id, None)

    def archive(self, run_id: str, *, force: bool = False) -> str:
        self._path(run_id)
        run_id = check_run_id(run_id)
        moved = archive_run(self.base, f"./{run_id}", force=force, index=self.index)
        self._changed(run_id)
        return os.path.relpath(moved, os.path.realpath(self.base))

    def restore(self, run_id: str) -> None:
        restore_run(self.base, f"./{check_run_id(run_id)}")
        self._changed(run_id)

    def archived(self) -> list[str]:
        return [r.removeprefix("./") for r in archived_runs(self.base)]

    def delete(self, run_id: str, *, force: bool = False) -> list[str]:
        self._path(run_id)
        run_id = check_run_id(run_id)
        removed = delete_run(self.base, f"./{run_id}", force=force, index=self.index)
        self._changed(run_id)
        return removed

    def audit(self, actor: str, action: str, run_id: str, **detail: Any) -> None:
        append_audit(self.base, actor, action, run_id, **detail)

    def audit_log(self, limit: int) -> list[dict[str, Any]]:
        return read_audit(self.base, limit)

    def compile_where(self, expressions: Sequence[str]) -> dict[str, Any]:
        return parse_where(list(expressions))

    # -- scalars ----------------------------------------------------------------------------

    def _run_scalars(self, run_id: str) -> RunScalars:
        path = self._content(run_id)
        with self._lock:
            cached = self._scalars.get(run_id)
            if cached is None:
                cached = self._scalars[run_id] = RunScalars(path, series_parts_of(path))
                while len(self._scalars) > self.max_cached_runs:
                    self._scalars.popitem(last=False)
            else:
                self._scalars.move_to_end(run_id)
            cached.update(self.scalar_interval)
            return cached

    def scalar_tags(self, run_id: str) -> list[str]:
        return self._run_scalars(run_id).tags()

    def scalar_series(self, run_id: str, tag: str, view: str = "merged") -> SessionSeries:
        return self._run_scalars(run_id).series(tag, view)

    def nonfinite(self, run_id: str) -> list[dict[str, Any]]:
        summary_dir = f"./{check_run_id(run_id)}"
        return self.service.nonfinite_series([summary_dir]).get(summary_dir, [])

    def scalar_overview(self, run_id: str, tag: str) -> SeriesOverview | None:
        path = self._path(run_id)
        found = self.service.series_overview(f"./{check_run_id(run_id)}", tag)
        if found is None or not overview_fresh(str(path), found[0], series_parts_of(path)):
            return None
        return SeriesOverview.from_bytes(found[1])

    def media(self, run_id: str, kind: Kind) -> dict[str, list[Any]]:
        return self._media.get(check_run_id(run_id), self._content(run_id), kind)

    def landscapes(self, run_id: str) -> list[dict[str, Any]]:
        path = self._content(run_id)
        found: list[dict[str, Any]] = self._structure.get(
            check_run_id(run_id), path, "landscapes", read_run_landscapes
        )
        return found

    def graph(self, run_id: str, max_nodes: int) -> dict[str, Any] | None:
        path = self._content(run_id)
        found: dict[str, Any] | None = self._structure.get(
            check_run_id(run_id), path, f"graph-{max_nodes}", lambda p: read_run_graph(p, max_nodes)
        )
        return found

    def family(self, run_id: str) -> dict[str, Any]:
        self._path(run_id)  # the run-id rules, and 404 before any file of the base is read
        version = self.service.version  # before the search: a change after it reads again
        objects = self.service.search(None)["object"]
        summary_dir = f"./{check_run_id(run_id)}"
        return self._families.family(str(self.base), self.remote, version, objects, summary_dir)

    def close(self) -> None:
        self.service.close()


def __getattr__(name: str) -> Any:
    """``EngineStore``: ``IndexedRunStore``'s name before 0.2, kept until 0.3 with a warning."""
    if name == "EngineStore":
        warnings.warn(
            "trainledger.server.EngineStore is now IndexedRunStore; the old name goes in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return IndexedRunStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
