"""The index's refresh: the runs on disk compared with what the index holds, and the
re-parse of those that changed.

Why apart from ``index.py``: ``LineageIndex`` is the door to a base's index (connection,
annotations, queries); keeping the index in step with the run directories is another idea,
with its own state. ``IndexRefresh`` holds what this process knows the index holds (the
signature of each run's lineage and summary files, valid while the index's generation
holds), so a warm refresh compares a scan with memory and writes nothing when nothing
changed. ``LineageIndex`` calls ``forget`` when its backend says the data may have changed
without a generation bump (a new SQLite file).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

from trainledger.query import (
    bulk_build,
    family_index,
    index_tables,
    scan_state,
    schema,
    semantics,
    series_tables,
)
from trainledger.query.discovery import RunFiles, Scanner
from trainledger.query.flat_record import to_record
from trainledger.query.registry_fields import refresh_registry
from trainledger.query.schema import Connection, Dialect, read_meta
from trainledger.query.series_index import SeriesState, read_series_state
from trainledger.query.status_fill import Read, Write, fill_statuses
from trainledger.query.tb_runs import series_parts, tensorboard_lineage

__all__ = ["IndexRefresh", "ScanStats"]
log = logging.getLogger("trainledger.query.index")  # the logger of its warnings before the split
_CHUNK = 500
#: how often at most a refresh whose only change was a live run's series saves the scan
#: state (``_save_state``)
STATE_SAVE_SECONDS = 2.0


@dataclass
class ScanStats:
    """What one refresh did."""

    runs: int = 0  # run directories found
    parsed: int = 0  # runs (re-)parsed because their lineage files were new or changed
    removed: int = 0  # runs gone from disk
    unreadable: int = 0  # runs whose lineage files held no usable lineage
    statuses: int = 0  # runs of a migrated index whose status was filled from their run events
    series: int = 0  # runs whose series statistics were read (from where the last read stopped)
    trusted: bool = False  # nothing scanned: the saved scan state proved the index fresh


class _Proof(NamedTuple):
    """A saved-state check that passed while the base watcher was trusted."""

    mark: int  # the watcher's generation before the check
    at: float  # when (``time.monotonic``): the proof lasts ``FULL_RESCAN_SECONDS``
    generation: int | None  # the index's generation it proved
    runs: int


def _checked_state(conn: Connection, base: str, max_depth: int) -> tuple[int | None, int | None]:
    """``scan_state.trusted_runs`` and the index generation it was checked at, in one read."""
    return scan_state.trusted_runs(conn, base, max_depth), read_meta(conn, "generation")


class IndexRefresh:
    """Brings one base's index in step with its run directories (``refresh``).

    ``scanner``: the base's cheap scan; ``reader``: a run directory's lineage (a damaged run
    is logged and indexed as unreadable), None to read its lineage files
    (``parse_worker.parse_run``, which a bulk build may run in other processes).
    ``read``/``write`` (given to ``refresh``): the index's transactions, which call
    ``forget`` first when the backend changed under it.
    """

    def __init__(
        self,
        scanner: Scanner,
        reader: Callable[[str], dict[str, Any]] | None,
        root: str | None = None,
        directory: str | None = None,
    ) -> None:
        self._scanner = scanner
        self._reader = reader
        self._directory = directory  # (the index's: where a local registry's log lives)
        self._registry_stamp: Any = None  # the registry log's, when last applied here
        self._root = root or scanner.base  # (the base's name: its runs' files start with it)
        self._extras: dict[str, dict[str, Any]] = {}  # a parsed run's parent groups
        # summary_dir -> signature of what the index holds, valid while the generation holds
        self._known: dict[str, str] = {}
        self._known_generation: int | None = None
        self._listings_loaded = False
        self._synced: dict[str, RunFiles] = {}
        self._synced_generation: int | None = None
        self._checked: list[RunFiles] | None = None  # last scan result found fully in sync
        self._statuses_filled = False  # no status of a migrated index left to fill
        # summary_dir -> signature of the summary files its statistics hold, per generation
        self._series_known: dict[str, str] = {}
        self._series_generation: int | None = None
        self._state_checks = 0  # saved scan states checked (while no listing is loaded)
        self._proof: _Proof | None = None  # the last check that passed with a trusted watcher
        self._state_attempted: int | None = None  # the generation it was last saved for
        self._dirs_tag: int | None = None  # the directory part it saved, while still current
        self._state_saved_at = -math.inf  # (time.monotonic) when the state was last saved
        self._scan_generation: int | None = None  # the generation this refresh compared at
        #: called (on the watcher's thread) when the base watcher becomes trusted: the index
        #: refreshes then, so its proof (``_trusted``) is in place before the next query
        self.on_watch_trusted: Callable[[], None] | None = None

    def forget(self) -> None:
        """Drop what was cached about the index (it may have changed without a generation
        bump)."""
        self._known_generation = None
        self._listings_loaded = False
        self._synced, self._synced_generation, self._checked = {}, None, None
        self._statuses_filled = False
        self._registry_stamp = None
        self._series_generation = None
        self._state_checks, self._proof = 0, None
        self._state_attempted, self._dirs_tag = None, None
        self._index_checked = False  # whether a killed bulk build left no value index

    def refresh(self, read: Read, write: Write, dialect: Any) -> ScanStats:
        """Cheap scan; re-parse new/changed runs, drop vanished ones.

        A new process first tries the saved scan state (``scan_state.py``): when it proves
        the index in step with the runs, nothing is scanned or loaded (``ScanStats.trusted``),
        and so on while it does (``_trusted``). The base watcher starts just after the first
        refresh (``WatchedScans.start_soon``), never during one (a cold build of a big base
        would share its cores with the watcher's walk).
        """
        try:
            return self._refresh(read, write, dialect)
        finally:  # (once; 50 ms after this refresh is over)
            self._scanner.watched.start_soon(self.on_watch_trusted)

    def _refresh(self, read: Read, write: Write, dialect: Any) -> ScanStats:
        if not self._listings_loaded:
            runs = self._trusted(read)
            if runs is not None:
                return ScanStats(runs=runs, trusted=True)
        bumps = 0

        def counted(fn: Callable[[Connection], Any], bump: bool) -> Any:
            nonlocal bumps
            result = write(fn, bump)
            bumps += bump
            return result

        stats = self._sync(read, counted, dialect)
        if self._scan_generation is not None:
            self._save_state(write, self._scan_generation + bumps)
        return stats

    def _trusted(self, read: Read) -> int | None:
        """The runs the index holds while it is provably in step with the base without a
        scan, else None. Why more than once: loading every run's listing for the first scan
        took 2.5-3.5 s at 100,000 runs, where the saved state's check takes 0.2-0.3 s (a
        script's second query, the web UI's). A process's first check starts the base
        watcher, and ``on_watch_trusted`` checks again once it is trusted (a fraction of a
        second later); once a check passed with the watcher trusted, a refresh while the
        watcher saw no change (and no process wrote to the index) checks nothing: the proof
        holds."""
        watched = self._scanner.watched
        proof = self._proof
        if proof is not None and watched.quiet_since(proof.mark, proof.at):
            if read(functools.partial(read_meta, key="generation")) == proof.generation:
                return proof.runs
        mark, at = watched.mark(), time.monotonic()  # (before: a change meanwhile is after it)
        base, depth = self._scanner.base, self._scanner.max_depth
        runs, generation = read(lambda conn: _checked_state(conn, base, depth))
        self._state_checks += 1  # (after the read: its first use may call ``forget``)
        self._proof = None
        if runs is not None and mark is not None:
            self._proof = _Proof(mark, at, generation, runs)
        return runs

    def _sync(self, read: Read, write: Write, dialect: Any) -> ScanStats:
        """The scan, and the index's changes it calls for (see ``refresh``)."""
        if not self._listings_loaded:
            self._scanner.load(read(index_tables.load_listings))
            self._listings_loaded = True
        # what the index held before the scan: a run missing from the scan is then really
        # gone, not one that another process wrote and indexed while this scan ran
        seen = read(self._known_signatures)
        self._scan_generation = self._known_generation
        on_disk = self._scanner.scan()
        if self._scanner.changed:
            self._dirs_tag = None  # the saved directory part no longer matches
            write(
                functools.partial(index_tables.save_listings, changed=self._scanner.changed),
                False,
            )
        stats = ScanStats(runs=len(on_disk))
        if not self._statuses_filled:
            stats.statuses = fill_statuses(read, write, on_disk)
            family_index.backfill(read, write, on_disk, self._root, dialect)
            self._statuses_filled = True
        if self._synced_generation != self._known_generation:
            self._synced = {}
            self._checked = None
            self._synced_generation = self._known_generation
        synced = self._synced  # runs already matched against this generation of the index
        changed = []
        if on_disk is self._checked:  # the very same scan result, already matched
            return stats
        stats.series = self._refresh_series(read, write, on_disk)
        for run in on_disk:
            if synced.get(run.summary_dir) is run:
                continue
            if seen.get(run.summary_dir) == run.signature:
                synced[run.summary_dir] = run
            else:
                changed.append(run)
        if not changed and len(on_disk) == len(seen):
            gone = []  # every known run is on disk (and names are unique)
        else:
            present = {r.summary_dir for r in on_disk}
            gone = [d for d in seen if d not in present]
        stats.removed = len(gone)
        if gone:
            write(functools.partial(index_tables.delete_runs, summary_dirs=gone), True)
        self._extras = read(family_index.extras) if changed else {}
        self._store(changed, len(on_disk), stats, read, write, dialect)
        if changed or gone:
            family_index.refresh_families(read, write, changed, gone, self._root, dialect)
        if self._directory is not None and self._registry_stamp is None:  # (once a process:
            # a registry write applies itself, ``registry_fields.py``)
            stamp = refresh_registry(read, write, self._directory, dialect, None)
            self._registry_stamp = () if stamp is None else stamp
        self._checked = None if (changed or gone) else on_disk
        return stats

    def _store(
        self,
        changed: list[RunFiles],
        on_disk: int,
        stats: ScanStats,
        read: Read,
        write: Write,
        dialect: Any,
    ) -> None:
        """Parse and store the changed runs in chunks; a build of many runs makes the value
        index once at the end (``bulk_build.py``), and a missing one is made again."""
        bulk = bulk_build.is_bulk(dialect, len(changed), on_disk)
        if dialect.name == "sqlite" and not self._index_checked:
            self._index_checked = True
            if not bulk and read(bulk_build.value_index_missing):
                write(bulk_build.make_value_index, False)
        if bulk:
            write(bulk_build.drop_value_index, False)
        # oldest first over the whole refresh: dataset marks are numbered by first appearance
        changed = sorted(changed, key=lambda run: (run.update_time, run.summary_dir))
        parse = functools.partial(self._parse, read=read, dialect=dialect)
        batches = self._batches(changed, parse, bulk)
        try:
            for batch in batches:
                stats.parsed += len(batch)
                store = functools.partial(index_tables.store_batch, batch=batch, dialect=dialect)
                stats.unreadable += write(store, True)
        finally:
            batches.close()  # (stops a parse process at once when a store failed)
            if bulk:
                write(bulk_build.make_value_index, False)

    def _batches(
        self, changed: list[RunFiles], parse: Callable[[RunFiles], Any], bulk: bool
    ) -> Generator[list[tuple[RunFiles, Any]], None, None]:
        """The changed runs parsed, chunk by chunk: in parse processes for a bulk build with
        the lineage files' reader (``parse_worker.py``), else here."""
        if bulk and self._reader is None:
            from trainledger.query import parse_worker  # (here: a query parsing no run skips it)

            if parse_worker.usable(sum(not run.tensorboard for run in changed)):
                return parse_worker.parsed_chunks(changed, parse, self._extras)
        return (
            [(run, parse(run)) for run in changed[start : start + _CHUNK]]
            for start in range(0, len(changed), _CHUNK)
        )

    def _save_state(self, write: Write, generation: int) -> None:
        """Save what the scan saw as what the index holds at ``generation`` (the generation
        the scan was compared at, plus this refresh's own writes: a write of another process
        meanwhile makes the save a no-op). Tried again only when the generation or a listing
        changed: building the state visits every directory's listing. When only the
        generation changed (a live run's series grew), at most every ``STATE_SAVE_SECONDS``:
        until then the saved state is of an older generation, which a new process does not
        trust (it scans), so a live base does not pay a visit of every directory a refresh."""
        if not self._scanner.changed and self._state_attempted == generation:
            return
        now = time.monotonic()
        if not self._scanner.changed and now - self._state_saved_at < STATE_SAVE_SECONDS:
            return
        self._state_attempted = generation
        self._state_saved_at = now
        state = self._scanner.state()
        if state is None:
            return
        tag = self._dirs_tag or scan_state.new_tag()
        save = functools.partial(
            scan_state.save_state,
            state=state,
            generation=generation,
            tag=tag,
            dirs=self._dirs_tag is None,
        )
        self._dirs_tag = tag if write(save, False) else None

    def _refresh_series(self, read: Read, write: Write, on_disk: list[RunFiles]) -> int:
        """Read the series statistics of runs whose summary files changed (from where the
        last read stopped: ``series_index``); forget those of runs that are gone."""

        def known(conn: Connection) -> dict[str, str]:
            generation = schema.read_meta(conn, "generation")
            if generation != self._series_generation:
                self._series_known = series_tables.series_signatures(conn)
                self._series_generation = generation
            return self._series_known

        seen = read(known)
        stale, hits = [], 0
        for run in on_disk:
            signature = seen.get(run.summary_dir)
            hits += signature is not None
            if (signature or "") != run.series_signature:
                stale.append(run)
        if hits < len(seen):
            present = {r.summary_dir for r in on_disk}
            write(
                functools.partial(
                    series_tables.delete_series, summary_dirs=[d for d in seen if d not in present]
                ),
                True,
            )
        for start in range(0, len(stale), _CHUNK):
            batch = stale[start : start + _CHUNK]

            def load(conn: Connection, batch: list[RunFiles] = batch) -> list[SeriesState | None]:
                return [series_tables.load_series(conn, r.summary_dir, True) for r in batch]

            olds = read(load)
            states = [
                read_series_state(r.path, old, series_parts(r.parts) if r.tensorboard else ())
                for r, old in zip(batch, olds, strict=True)
            ]

            def store(
                conn: Connection, batch: list[RunFiles] = batch, states: list[SeriesState] = states
            ) -> None:
                for run, state in zip(batch, states, strict=True):
                    series_tables.store_series(conn, run.summary_dir, run.series_signature, state)
                self._own_series_write(conn, batch)

            write(store, True)
        return len(stale)

    def _own_series_write(self, conn: Connection, batch: list[RunFiles]) -> None:
        """Keep the caches that this write (which bumps the generation by one, and changes no
        run's record) leaves true, when no other write came since they were read: a live
        run's refresh then re-reads no table of every run (``_known_signatures``, ``known``)."""
        generation = schema.read_meta(conn, "generation")
        if generation is None:
            return
        if generation == self._series_generation:
            self._series_known.update((r.summary_dir, r.series_signature) for r in batch)
            self._series_generation = generation + 1
        if generation == self._known_generation:
            self._known_generation = generation + 1
            if self._synced_generation == generation:
                self._synced_generation = generation + 1

    def _known_signatures(self, conn: Connection) -> dict[str, str]:
        """What the index holds per run, re-read only when another write happened."""
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        if generation != self._known_generation:
            self._known = dict(
                conn.execute(
                    "SELECT runs.summary_dir, r.signature FROM runs "
                    "JOIN records AS r ON r.run_id = runs.id "
                    "UNION ALL SELECT summary_dir, signature FROM unreadable"
                ).fetchall()
            )
            self._known_generation = generation
        return self._known

    def _parse(
        self, run: RunFiles, read: Read, dialect: Dialect
    ) -> semantics.Record | index_tables.Prepared | None:
        if run.tensorboard:
            return self._parse_tensorboard(run, read)
        extra = self._extras.get(run.summary_dir)
        if self._reader is None:
            from trainledger.query.parse_worker import parse_run

            return parse_run(run.path, run.summary_dir, run.update_time, dialect, extra)
        try:
            lineage = self._reader(run.path)
        except Exception as exc:  # a damaged run must not break queries over the others
            log.warning("cannot read lineage of %s: %s", run.path, exc)
            return None
        if not lineage:
            return None
        return {**to_record(lineage, run.summary_dir, run.update_time), **(extra or {})}

    @staticmethod
    def _parse_tensorboard(run: RunFiles, read: Read) -> semantics.Record:
        """A TensorBoard run's record (``tb_runs.py``): its HParams, and its metrics' values
        from the series statistics ``_refresh_series`` has just brought up to date."""
        state = read(functools.partial(series_tables.load_series, summary_dir=run.summary_dir))
        last = {tag: stats.last for tag, stats in state.tags.items()} if state else {}
        lineage, status = tensorboard_lineage(run.path, run.parts, last)
        record = to_record(lineage, run.summary_dir, run.update_time)
        record["status"] = status
        return record
