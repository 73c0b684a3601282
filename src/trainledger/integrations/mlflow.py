"""Import MLflow runs as trainledger run directories, so a team moves over with its history.

``import_mlflow(tracking_uri, base)`` reads every run (of the chosen experiments, matching an
optional MLflow ``filter_string``) through MLflow's own client, so any tracking URI MLflow
reads works (a ``file:`` store, ``sqlite:///...``, a tracking server). Each run becomes
``<base>/mlflow-<run_id>``: one lineage file (params, tags, final metrics, status, artifact
checkpoints; the mapping is in ``mlflow_mapping``), TensorBoard scalars with each metric's
whole history, and ``mlflow_run.json`` (the run id, a fingerprint of what was imported, the
files written).

Re-running is idempotent: a run whose fingerprint (status, end time, params, tags, last
metrics, artifact listing, and the mapping's version) is unchanged is skipped; a changed run
(a run that was still going, a new tag) has the files of its previous import replaced, and so
has a run whose import was interrupted before its marker was written. ``mlflow-<run_id>``
directories belong to the importer; artifacts are referenced where MLflow keeps them, never
copied.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from mlflow.entities import ViewType
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from mlflow.tracking import MlflowClient

from trainledger.integrations.mlflow_mapping import (
    CHECKPOINT_SUFFIXES,
    checkpoint_choice,
    optimizer_settings_of,
    parse_number,
    run_status_of,
    tag_fields,
    train_fields,
)
from trainledger.lineage import (
    EvalValues,
    RunValues,
    TrainValues,
    eval_event,
    get_writer,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.storage import (
    MLFLOW_MARKER,
    atomic_write_bytes,
    is_series_sidecar_name,
    list_lineage_files,
    remove_written,
    run_files,
)
from trainledger.summary import SummaryRecord, list_event_files

__all__ = ["ImportReport", "import_mlflow", "MARKER", "RUN_DIR_PREFIX"]

MARKER = MLFLOW_MARKER
RUN_DIR_PREFIX = "mlflow-"
_PAGE = 1000
_MAX_ARTIFACT_DEPTH = 4


@dataclass
class ImportReport:
    """What one ``import_mlflow`` call did."""

    imported: int = 0  # new run directories
    updated: int = 0  # runs that changed since their last import
    unchanged: int = 0  # skipped: already imported as they are
    run_dirs: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.imported + self.updated + self.unchanged


def import_mlflow(
    tracking_uri: str,
    base: str | os.PathLike[str],
    *,
    experiments: Sequence[str] | None = None,
    filter_string: str = "",
    progress: bool = False,
) -> ImportReport:
    """Import the runs of ``tracking_uri`` into run directories under ``base``.

    Args:
        experiments: experiment names or ids (default: every active experiment).
        filter_string: an MLflow search filter (``"metrics.acc > 0.9"``); only those runs.
        progress: show a progress bar (rich) on the terminal.

    Raises:
        ValueError: an experiment name or id that the store does not have.
    """
    client = MlflowClient(tracking_uri=tracking_uri)
    names = _experiment_names(client, experiments)
    runs = list(_search(client, list(names), filter_string))
    os.makedirs(base, exist_ok=True)
    report = ImportReport()
    with _progress_bar(progress, len(runs)) as advance:
        for run in runs:
            outcome, run_dir = _import_run(client, run, names, os.fspath(base))
            setattr(report, outcome, getattr(report, outcome) + 1)
            report.run_dirs.append(run_dir)
            advance()
    return report


def _experiment_names(client: MlflowClient, wanted: Sequence[str] | None) -> dict[str, str]:
    """experiment id -> name, for the wanted names/ids (default: all active experiments)."""
    found = {e.experiment_id: e.name for e in client.search_experiments(ViewType.ACTIVE_ONLY)}
    if wanted is None:
        return found
    by_name = {name: eid for eid, name in found.items()}
    out: dict[str, str] = {}
    for item in wanted:
        eid = item if item in found else by_name.get(item)
        if eid is None:
            raise ValueError(
                f"experiment expected a name or id of the store, received: {item!r} "
                f"(known: {', '.join(sorted(by_name)) or 'none'})"
            )
        out[eid] = found[eid]
    return out


def _search(client: MlflowClient, experiment_ids: list[str], filter_string: str) -> Iterator[Any]:
    token = None
    while experiment_ids:
        page = client.search_runs(
            experiment_ids, filter_string, ViewType.ACTIVE_ONLY, _PAGE, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


@contextmanager
def _progress_bar(show: bool, total: int) -> Iterator[Any]:
    if not show:
        yield lambda: None
        return
    from rich.progress import Progress

    with Progress(transient=False) as bar:
        task = bar.add_task("importing MLflow runs", total=total)
        yield lambda: bar.advance(task)


def _artifacts(
    repo: Any, path: str | None = None, depth: int = 0
) -> Iterator[tuple[str, int | None]]:
    """Every artifact file (path, size) under the run's artifact root, to a few levels.

    Listed through the artifact repository of the run's ``artifact_uri`` (the client's
    ``list_artifacts(run_id)`` would look the run up again for each call)."""
    for info in repo.list_artifacts(path):
        if info.is_dir:
            if depth < _MAX_ARTIFACT_DEPTH:
                yield from _artifacts(repo, info.path, depth + 1)
        else:
            yield info.path, info.file_size


def _artifact_location(artifact_uri: str, rel: str) -> str:
    """A local path for a ``file:``/plain artifact URI, else the artifact's URI."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme in ("", "file"):
        return os.path.join(unquote(parsed.path), rel)
    return f"{artifact_uri.rstrip('/')}/{rel}"


#: bumped when the mapping (``mlflow_mapping``) gives a run other fields: the next import
#: then writes every run again once (2: ``optimizer/`` settings from autolog's params)
MAPPING_VERSION = 2


def _fingerprint(run: Any, artifacts: list[tuple[str, int | None]]) -> str:
    info, data = run.info, run.data
    facts = [
        MAPPING_VERSION,
        info.status,
        info.end_time,
        sorted(data.params.items()),
        sorted(data.tags.items()),
        sorted(data.metrics.items()),
        sorted(artifacts),
    ]
    return hashlib.sha256(json.dumps(facts, default=str).encode()).hexdigest()


def _import_run(
    client: MlflowClient, run: Any, names: dict[str, str], base: str
) -> tuple[str, str]:
    """Import one run; returns ("imported" | "updated" | "unchanged", run_dir)."""
    run_id = run.info.run_id
    run_dir = os.path.join(base, f"{RUN_DIR_PREFIX}{run_id}")
    repo = get_artifact_repository(run.info.artifact_uri)
    artifacts = [(p, s) for p, s in _artifacts(repo) if p.lower().endswith(CHECKPOINT_SUFFIXES)]
    fingerprint = _fingerprint(run, artifacts)
    previous = _read_marker(run_dir)
    if previous is not None and previous.get("fingerprint") == fingerprint:
        return "unchanged", run_dir
    _remove_previous(run_dir, previous)
    os.makedirs(run_dir, exist_ok=True)
    histories = {key: client.get_metric_history(run_id, key) for key in run.data.metrics}
    lineage_file = _write_lineage(run, names, artifacts, run_dir)
    _write_scalars(histories, run_dir)
    files = [os.path.basename(lineage_file), *_summary_files(run_dir)]
    marker = {"run_id": run_id, "fingerprint": fingerprint, "files": files}
    atomic_write_bytes(os.path.join(run_dir, MARKER), json.dumps(marker, indent=1).encode())
    return ("updated" if previous is not None else "imported"), run_dir


def _remove_previous(run_dir: str, previous: dict[str, Any] | None) -> None:
    """Remove what an earlier import wrote: the files its marker lists, or, with no marker
    (an import interrupted before writing it), every lineage and event file of the directory,
    which only the importer writes."""
    if previous is not None:
        names = [os.path.basename(str(n)) for n in previous.get("files", [])]
    elif os.path.isdir(run_dir):
        names = [f.name for f in list_lineage_files(run_dir)] + _summary_files(run_dir)
    else:
        return
    for name in names:
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            remove_written(path)


def _summary_files(run_dir: str) -> list[str]:
    """The names of the event files and series sidecars (``SummaryRecord``'s) in ``run_dir``."""
    names = [p.name for p in list_event_files(run_dir)]
    return names + sorted(e.name for e in run_files(run_dir, is_series_sidecar_name))


def _read_marker(run_dir: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(run_dir, MARKER), "rb") as fh:
            value = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_lineage(
    run: Any, names: dict[str, str], artifacts: list[tuple[str, int | None]], run_dir: str
) -> str:
    info, data = run.info, run.data
    fields = train_fields(data.params, data.metrics)
    tag_user, tag_run = tag_fields(data.tags)
    user = {k: parse_number(v) for k, v in data.params.items()}
    user.update(tag_user)
    user["mlflow.run_id"] = info.run_id
    user["mlflow.experiment"] = names.get(info.experiment_id, info.experiment_id)
    checkpoints = [(_artifact_location(info.artifact_uri, p), s) for p, s in artifacts]
    chosen = checkpoint_choice([p for p, _ in checkpoints])
    sizes = dict(checkpoints)
    train = TrainValues(
        model_path=json.dumps({"ckpt": chosen}) if chosen else None,
        model_size=sizes.get(chosen) if chosen else None,
        optimizer_settings=optimizer_settings_of(data.params),
        **{k: v for k, v in fields.items() if not k.startswith("valid_")},
    )
    evaluation = EvalValues(
        metrics=dict(data.metrics),
        valid_dataset_path=fields.get("valid_dataset_path"),
        valid_dataset_size=fields.get("valid_dataset_size"),
    )
    start = info.start_time / 1000 if info.start_time else None
    end = info.end_time / 1000 if info.end_time else None
    status = run_status_of(info.status)
    values = RunValues(
        status=status,
        start_time=start,
        end_time=end,
        duration=(end - start) if start is not None and end is not None else None,
        checkpoints=checkpoints,
        **tag_run,
    )
    events = [user_defined_event(user), train_event(train)]
    if data.metrics or evaluation.valid_dataset_path or evaluation.valid_dataset_size:
        events.append(eval_event(evaluation))
    events.append(run_event(values))
    return get_writer(run_dir).write(events)


def _write_scalars(histories: dict[str, list[Any]], run_dir: str) -> None:
    if not any(histories.values()):
        return
    record = SummaryRecord(run_dir)
    try:
        for key, history in sorted(histories.items()):
            rows = sorted((m.step, m.timestamp / 1000, float(m.value)) for m in history)
            if rows:
                record.record_scalar_rows((key,), rows)
    finally:
        record.close()
