"""``get_summary_lineage`` and ``filter_summary_lineage``: MindInsight's lineage API.

Same names, arguments, result shapes, error classes and messages as MindInsight's lineagemgr,
answered from the index (a SQLite file beside the runs, or a shared PostgreSQL database:
``index=``, ``TRAINLEDGER_INDEX_URL``) instead of re-parsing every file per call. Documented
fixes:
no cap on the number of runs (MindInsight stopped at 999); ``customized`` describes the whole
result, not the current page; ``dataset_mark`` numbers never collide and stay stable as runs
are added (numbered from 1 in order of first appearance); ``not_in`` accepted on numeric
fields; ``metric_<name>`` accepted for ``metric/<name>``; run directories may be nested
(``max_depth``); ``added_info`` carries the run's annotations (tag, remark); a run's
``status`` can be filtered and sorted on; the runs of a TensorBoard logdir (event files, no
lineage file: ``tb_runs.py``) answer ``filter_summary_lineage`` too, their HParams as
``user_defined`` and ``metric`` (``get_summary_lineage`` stays MindInsight's: it reads
lineage files only).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from trainledger.errors import (
    LineageFileNotFoundError,
    LineageParamTypeError,
    LineageParamValueError,
    LineageQuerySummaryDataError,
    UnknownFieldWarning,
)
from trainledger.lineage import SETTINGS_KEYS, SUMMARY_KEYS
from trainledger.query.conditions import validate_condition
from trainledger.query.field_hints import missing_field_notes
from trainledger.query.index import LineageIndex
from trainledger.query.index_urls import index_url
from trainledger.query.object_copy import held_copy, index_copy
from trainledger.query.safe_paths import validate_base, validate_run_dir
from trainledger.query.shared_refresh import fresh_elsewhere, mark_refreshed
from trainledger.storage import is_object_url, list_lineage_files

__all__ = [
    "get_summary_lineage",
    "filter_summary_lineage",
    "open_index",
    "base_names",
    "LINEAGE_KEYS",
]

# get_summary_lineage's keys: MindInsight's, then trainledger's extensions (the settings
# keys are in the default answer only for a run that has them: MindSpore's runs never do)
LINEAGE_KEYS: tuple[str, ...] = (*SUMMARY_KEYS, *SETTINGS_KEYS)

# MindInsight's messages (LineageFileNotFoundError's "File not found error: {}" format).
NO_RUN_LINEAGE = "File not found error: There is no summary log file under summary_dir."
NO_BASE_LINEAGE = "File not found error: There is no summary log file under summary_base_dir."

_indexes: dict[tuple[str, int, str | None], LineageIndex] = {}
_indexes_lock = threading.Lock()


def _check_keys(keys: Any) -> list[str]:
    allowed = list(LINEAGE_KEYS)
    if keys is None:
        return [*SUMMARY_KEYS]
    if not isinstance(keys, list):
        raise LineageParamTypeError(
            f"TypeError. Keys must be list, received: {type(keys).__name__}. "
            f"Allowed keys: {allowed}."
        )
    for key in keys:
        if not isinstance(key, str):
            raise LineageParamTypeError(
                f"TypeError. Element of keys must be str, received: {key!r}. "
                f"Allowed keys: {allowed}."
            )
    unknown = [k for k in keys if k not in LINEAGE_KEYS]
    if unknown:
        raise LineageParamValueError(
            f"ValueError. Keys must be in {allowed}, received unknown: {unknown}."
        )
    return keys


def get_summary_lineage(
    summary_dir: str | os.PathLike[str], keys: list[str] | None = None
) -> dict[str, Any]:
    """The lineage of one run directory.

    Returns ``{"summary_dir": <real path>, <key>: ...}`` for the requested ``keys`` (default:
    metric, hyper_parameters (incl. parallel_mode), algorithm, train_dataset, model,
    valid_dataset, dataset_graph, and trainledger's user_defined and run, plus
    optimizer_settings and scheduler_settings where the run recorded them), or ``{}`` when
    its lineage files hold no lineage (an empty file, as MindInsight). It reads the run's own
    files, never an index, so it takes no ``index=`` (a run's tag and remark come with
    ``filter_summary_lineage``'s ``added_info``).

    Raises:
        LineageFileNotFoundError: the directory holds no lineage file at all.
        LineageParamTypeError / LineageParamValueError: ``keys`` is not a list of known keys.
        LineageParamSummaryPathError: ``summary_dir`` is not an existing directory, or unsafe.
        LineageQuerySummaryDataError: the lineage files could not be read.
    """
    wanted = _check_keys(keys)
    real = validate_run_dir(index_copy(summary_dir, "summary_dir"))
    if not list_lineage_files(real):
        raise LineageFileNotFoundError(f"{NO_RUN_LINEAGE} No *_lineage file in {real!r}.")
    from trainledger.lineage import read_lineage  # (the reader loads protobuf: on use)

    try:
        lineage = read_lineage(real)
    except OSError as exc:
        raise LineageQuerySummaryDataError(
            f"Query summary data error: Get summary lineage failed. {exc}"
        ) from exc
    if not lineage:
        return {}
    remote = is_object_url(summary_dir)  # named by its URL, not by the local cache
    shown = os.fspath(summary_dir) if remote else lineage.get("summary_dir", real)
    result: dict[str, Any] = {"summary_dir": shown}
    for key in wanted:
        result[key] = lineage.get(key, {})
    if keys is None:
        result.update((key, lineage[key]) for key in SETTINGS_KEYS if key in lineage)
    return result


def base_name(summary_base_dir: str | os.PathLike[str], real: str) -> str:
    """The name a shared index knows a base by: its ``s3://`` URL (every machine reads it
    through a cache of its own), else its real path."""
    text = os.fspath(summary_base_dir)
    return text.rstrip("/") if is_object_url(text) else real


def open_index(
    summary_base_dir: str | os.PathLike[str], max_depth: int = 1, index: str | None = None
) -> LineageIndex:
    """The process-wide ``LineageIndex`` of a base directory (created on first use);
    ``index`` as in ``filter_summary_lineage``."""
    url = index_url(index)
    with held_copy(summary_base_dir, "summary_base_dir") as local:
        return _index_at(local, summary_base_dir, max_depth, (index, url))


def _index_at(
    local: Any,
    summary_base_dir: str | os.PathLike[str],
    max_depth: int,
    index: tuple[str | None, str | None],
) -> LineageIndex:
    """``open_index`` of the base's local directory ``local`` (its copy, for a URL);
    ``index``: as given, and its URL (checked before anything is synced)."""
    base = validate_base(local)
    key = (base, max_depth, index[1])
    with _indexes_lock:
        found = _indexes.get(key)
        if found is None:
            name = base_name(summary_base_dir, base)
            found = _indexes[key] = LineageIndex(
                base, max_depth=max_depth, index=index[0], name=name
            )
        return found


def filter_summary_lineage(
    summary_base_dir: str | os.PathLike[str],
    search_condition: dict[str, Any] | None = None,
    *,
    max_depth: int = 1,
    index: str | None = None,
    series: Sequence[str] = (),
) -> dict[str, Any]:
    """Filter, sort and page the lineage of every run under ``summary_base_dir``.

    ``search_condition`` is MindInsight's: field conditions (``{"learning_rate": {"gt":
    0.05}}``; fields summary_dir, loss_function, train_dataset_path, train_dataset_count,
    test_dataset_path, test_dataset_count, network, optimizer, learning_rate, epoch,
    batch_size, device_num, loss, model_size, dataset_mark, ``metric/<name>``,
    ``user_defined/<name>``, and trainledger's ``status``; operators eq, lt, gt, le, ge, in,
    not_in), ``sorted_name``, ``sorted_type``, ``offset`` (page number), ``limit`` (page size),
    ``lineage_type``. ``status`` is the run record's state (running, finished, failed,
    stopped; None without a run record, as in MindSpore's files): a filter and a sort key
    that ``model_lineage`` never shows, so answers keep MindInsight's shape. So are
    ``duration`` and ``sessions`` (the run record's seconds of training and its number of
    processes) and the series statistics of every scalar tag, ``<stat>(<tag>)`` with stat
    last, min, max, count, last_step, min_step, max_step or nonfinite_step (e.g.
    ``{"max(eval/accuracy)": {"gt": 0.9}}``, ``"sorted_name": "min(loss)"``): a condition
    or sort naming one, and each field of ``series``, adds ``"series": {field: value}`` to
    every object (docs/queries.md).

    ``index`` is where the index lives: ``postgresql://USER@HOST/DB`` (an index shared by a
    team; the ``postgres`` extra), ``sqlite://`` or None (the SQLite file beside the runs);
    None reads ``TRAINLEDGER_INDEX_URL`` first.

    Returns ``{"customized": {...}, "object": [...], "count": N}``; each object has
    ``summary_dir`` ("./run1"), ``model_lineage``, ``dataset_graph`` and ``added_info``.

    Raises:
        LineageParamSummaryPathError: the base is not an existing directory, or unsafe.
        LineageSearchConditionParamError: the condition is malformed (MindInsight's messages).
        LineageFileNotFoundError: no directory under the base (within ``max_depth``) holds a
            lineage file or is a run of a TensorBoard logdir (docs/queries.md); a run whose
            lineage file is empty still counts, as in MindInsight.
        LineageParamValueError: ``index`` is not a URL of a supported backend.
        LineageQuerySummaryDataError: the index could not be read.

    Warns:
        UnknownFieldWarning: the condition or sort names a ``metric/``, ``user_defined/``,
            ``optimizer/`` or ``scheduler/`` field no run has; it names the nearest they have.
    """
    url = index_url(index)
    with _queried(summary_base_dir, max_depth, (index, url)) as (lineage_index, refresh):
        try:
            result = lineage_index.query(search_condition, refresh=refresh, series=series)
            # an empty answer: tell "nothing matched" from "no runs at all" (a cached re-scan)
            runs = 1 if result["count"] else _runs(lineage_index, refresh)
        except lineage_index.db.errors as exc:
            raise LineageQuerySummaryDataError(
                f"Query summary data error: Filter summary lineage failed. {exc}"
            ) from exc
    if runs == 0:
        raise LineageFileNotFoundError(
            f"{NO_BASE_LINEAGE} No *_lineage or TensorBoard event file under "
            f"{os.fspath(summary_base_dir)!r} "
            f"(searched {max_depth} level(s) deep)."
        )
    _warn_missing_fields(lineage_index, search_condition, result)
    return result


@contextmanager
def _queried(
    summary_base_dir: str | os.PathLike[str],
    max_depth: int,
    index: tuple[str | None, str | None],
) -> Iterator[tuple[LineageIndex, bool]]:
    """The index to answer from, and whether to refresh it first: an ``s3://`` base on a
    shared PostgreSQL index that another process refreshed within the staleness bound is
    answered as it is, with no sync (``shared_refresh``); otherwise the copy is synced, and
    the index refreshed from it and stamped."""
    text = os.fspath(summary_base_dir) if isinstance(summary_base_dir, (str, os.PathLike)) else ""
    if index[1] is not None and is_object_url(text):
        from trainledger.storage import ObjectLocation, index_copy_dir, read_max_age

        local = index_copy_dir(ObjectLocation.parse(text))
        os.makedirs(local, exist_ok=True)
        found = _index_at(local, summary_base_dir, max_depth, index)
        if fresh_elsewhere(found, read_max_age()):
            yield found, False
            return
    with held_copy(summary_base_dir, "summary_base_dir") as local:
        found = _index_at(local, summary_base_dir, max_depth, index)
        yield found, True
        if index[1] is not None and is_object_url(text):
            mark_refreshed(found)


def _runs(found: LineageIndex, refreshed: bool) -> int:
    """How many runs the index holds (a refresh of the copy only where this query synced it)."""
    if refreshed:
        return found.refresh().runs
    return int(found.query({"limit": 1}, refresh=False)["count"])


def _warn_missing_fields(
    found: LineageIndex, condition: dict[str, Any] | None, result: dict[str, Any]
) -> None:
    """An ``UnknownFieldWarning`` for each custom field the condition names and no run has
    (its answer would otherwise be silently empty or unordered)."""
    if not condition:
        return

    def known() -> list[str]:
        return [*found.query({"limit": 1}, refresh=False)["customized"]]

    for note in missing_field_notes(validate_condition(condition), result["customized"], known):
        warnings.warn(note, UnknownFieldWarning, stacklevel=3)


def base_names(
    summary_base_dir: str | os.PathLike[str],
    max_depth: int = 1,
    index: str | None = None,
    *,
    tags: bool = False,
) -> list[str]:
    """Every custom field some run under the base has (``tags``: every scalar tag its runs'
    series statistics hold), from its process-wide index as it stands (no scan): what a
    name in a query that matched nothing is checked against (the CLI's "did you mean")."""
    found = open_index(summary_base_dir, max_depth=max_depth, index=index)
    if tags:
        return found.series_tags()
    return [*found.query({"limit": 1}, refresh=False)["customized"]]
