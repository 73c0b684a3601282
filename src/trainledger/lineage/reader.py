"""Read the lineage of one run directory, exactly as MindInsight reports it (plus our extensions).

Contract (used by ``trainledger.query``; no torch needed):

``read_lineage(run_dir) -> dict``
    The shape of MindInsight's ``get_summary_lineage(summary_dir)``, or ``{}`` when the
    directory holds no lineage (missing directory, no lineage file, or no usable event)::

        {"summary_dir": <realpath of run_dir>,
         "metric": {...},                      # eval metrics (JSON object), {} if none
         "hyper_parameters": {"optimizer", "learning_rate", "loss_function", "epoch",
                              "parallel_mode", "device_num", "batch_size"},
         "algorithm": {"network", "loss"},
         "train_dataset": {"train_dataset_path", "train_dataset_size"},
         "valid_dataset": {"valid_dataset_path", "valid_dataset_size"},
         "model": {"path", "size"},            # path is JSON text '{"ckpt": "..."}'
         "dataset_graph": {...},               # MindInsight's dict tree, {} if none
         "user_defined": {...},                # trainledger addition (MindInsight: filter only)
         "run": {...},                         # trainledger extension, {} for MindSpore files
         "optimizer_settings": {...},          # trainledger extensions, present only when
         "scheduler_settings": {...}}          # written (lineage/analyzers/settings.py)

    As in MindInsight, a sub-dict holds only the fields that were written (absent -> missing
    key, never None). ``learning_rate``/``loss`` are float32 in MindInsight's schema and shown
    the way protobuf's JSON conversion shows them (0.1, 0.08898517); when our float64
    extension is present it is used instead. NaN/inf show as "NaN"/"Infinity"/"-Infinity".
    ``run`` keys (present when written): status (running|finished|failed|stopped),
    start_time, end_time, duration, total_steps, epochs_done, hostname, pid, rank, command
    (str), python_version, torch_version, trainledger_version, git_commit, git_dirty, seed,
    dataset_fingerprint, train_dataset_fingerprint, valid_dataset_fingerprint,
    checkpoints ([{"path", "size"}]), error, bad_records (records a streaming source skipped),
    lineage_warnings (present only when part of the lineage could not be read, see below).

``read_record(run_dir) -> LineageRecord | None``
    The same data as a dataclass with raw facts for querying: ``loss``, ``learning_rate``
    (floats, full precision when known), ``model_size``, ``train_dataset_count``,
    ``test_dataset_count``, ``update_time``, ``files``; ``to_summary_lineage(keys)`` gives the
    dict above, ``model_lineage_fields()`` the flat per-field dict MindInsight filters on.

``lineage_files(run_dir) -> list[LineageFile]``
    Cheap listing (name, path, timestamp, size, mtime) in reading order, so an index can
    re-parse only the files whose (size, mtime) changed: ``parse_lineage_file(path)`` gives a
    cacheable ``FileLineage`` and ``merge_file_lineages(run_dir, files, parsed)`` combines them.

Semantics (MindInsight's ``LineageParser``): files are read oldest first by ``<unix_ts>``
(equal timestamps: name descending); within a file the last event of each kind wins; a file
with no train/eval/dataset-graph/run event is ignored entirely; a file holding a train lineage,
a dataset graph or a run event starts a new training, so everything read before is dropped; a
file holding only an evaluation updates metric and valid dataset and merges user info.

Our ``train_begin`` event (field 101, unknown to MindInsight) holds what a training was given
when it began; it also starts a new training, and gives the record its train lineage's
sections until a ``train_lineage`` written after it in the same file (the training's end)
replaces it. So a running run has its hyperparameters, network and train dataset, and a
finished one reads exactly as MindInsight reads it. Damaged
records are skipped and counted, a truncated tail (file still being written) is not an error.

Damaged content never hides a run: a field that cannot be read (a string that is not UTF-8, a
metric that is not a JSON object or is nested deeper than ``MAX_JSON_DEPTH``) is left out,
everything else of the record is kept, and each omission is reported once: a warning on the
``trainledger.lineage.reader`` logger, ``LineageRecord.warnings``, and the
``run["lineage_warnings"]`` list of the summary dict (absent when nothing was left out).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from trainledger.lineage.keys import SETTINGS_KEYS, SUMMARY_KEYS
from trainledger.lineage.messages import (
    MAX_JSON_DEPTH,
    drop_bytes,
    eval_dict,
    run_dict,
    train_dict,
    user_info,
)
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.lineage.records import organize_graph
from trainledger.storage import LineageFile, list_lineage_files, read_records
from trainledger.values import fresh_copy

__all__ = [
    "read_lineage",
    "read_lineage_texts",
    "read_record",
    "lineage_files",
    "parse_lineage_file",
    "merge_file_lineages",
    "LineageRecord",
    "FileLineage",
    "LineageFile",
    "SUMMARY_KEYS",
    "MAX_JSON_DEPTH",
]

_log = logging.getLogger(__name__)


@dataclass
class FileLineage:
    """The last event of each kind in one file, already converted to plain values."""

    train: dict[str, Any] | None = None  # hyper_parameters/algorithm/train_dataset/model (+ raw)
    #: a training's values as known at its begin (our ``train_begin`` event), in ``train``'s
    #: form; kept only when no ``train_lineage`` follows it in the file (that one is final)
    train_begin: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None  # metric/valid_dataset (+ raw)
    dataset_graph: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    user_defined: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    corrupt: int = 0
    warnings: list[str] = field(default_factory=list)  # what could not be read, and where

    @property
    def has_lineage(self) -> bool:
        return any(
            x is not None
            for x in (self.train, self.train_begin, self.evaluation, self.dataset_graph, self.run)
        )


@dataclass
class LineageRecord:
    """One run directory's lineage, merged over its files (see the module docstring)."""

    summary_dir: str
    metric: dict[str, Any] = field(default_factory=dict)
    hyper_parameters: dict[str, Any] = field(default_factory=dict)
    algorithm: dict[str, Any] = field(default_factory=dict)
    train_dataset: dict[str, Any] = field(default_factory=dict)
    valid_dataset: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    dataset_graph: dict[str, Any] = field(default_factory=dict)
    user_defined: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    optimizer_settings: dict[str, Any] = field(default_factory=dict)
    scheduler_settings: dict[str, Any] = field(default_factory=dict)
    #: the JSON text ``metric`` was decoded from, where it holds exactly that (``eval_dict``)
    metric_json: str | None = None
    # Raw float64 values (None when unknown) behind the display values above.
    loss: float | None = None
    learning_rate: float | None = None
    files: list[LineageFile] = field(default_factory=list)
    corrupt_records: int = 0
    warnings: list[str] = field(default_factory=list)  # lineage left out as unreadable

    @property
    def model_size(self) -> int | None:
        return self.model.get("size")

    @property
    def train_dataset_count(self) -> int | None:
        return self.train_dataset.get("train_dataset_size")

    @property
    def test_dataset_count(self) -> int | None:
        return self.valid_dataset.get("valid_dataset_size")

    @property
    def status(self) -> str | None:
        return self.run.get("status")

    @property
    def update_time(self) -> float | None:
        """Modification time of the newest lineage file (largest ``<unix_ts>``; among equal
        ones the earliest-modified, as MindInsight's directory watcher picks it)."""
        if not self.files:
            return None
        newest = max(f.timestamp for f in self.files)
        return min(f.mtime for f in self.files if f.timestamp == newest)

    def to_summary_lineage(self, keys: Sequence[str] | None = None) -> dict[str, Any]:
        """The ``get_summary_lineage`` dict (optionally only ``keys``); values are copies."""
        wanted = SUMMARY_KEYS if keys is None else keys
        out: dict[str, Any] = {"summary_dir": self.summary_dir}
        for key in wanted:
            if key not in SETTINGS_KEYS:
                out[key] = fresh_copy(getattr(self, key))
        for key in SETTINGS_KEYS:
            if getattr(self, key) and (keys is None or key in keys):
                out[key] = dict(getattr(self, key))
        if self.warnings and "run" in out:
            out["run"]["lineage_warnings"] = list(self.warnings)
        return out

    def model_lineage_fields(self) -> dict[str, Any]:
        """Flat fields as MindInsight filters and sorts on them (missing -> None).

        ``dataset_mark`` is not here: it depends on the other runs (the query engine's job).
        """
        hp, ds, vd = self.hyper_parameters, self.train_dataset, self.valid_dataset
        return {
            "summary_dir": self.summary_dir,
            "loss_function": hp.get("loss_function"),
            "train_dataset_path": ds.get("train_dataset_path"),
            "train_dataset_count": ds.get("train_dataset_size"),
            "test_dataset_path": vd.get("valid_dataset_path"),
            "test_dataset_count": vd.get("valid_dataset_size"),
            "network": self.algorithm.get("network"),
            "optimizer": hp.get("optimizer"),
            "learning_rate": hp.get("learning_rate"),
            "epoch": hp.get("epoch"),
            "batch_size": hp.get("batch_size"),
            "device_num": hp.get("device_num"),
            "loss": self.algorithm.get("loss"),
            "model_size": self.model.get("size"),
            "metric": dict(self.metric),
            "user_defined": dict(self.user_defined),
            "optimizer_settings": dict(self.optimizer_settings),
            "scheduler_settings": dict(self.scheduler_settings),
            "dataset_graph": self.dataset_graph,
        }


# ---- public entry points ----------------------------------------------------------------------


def lineage_files(run_dir: str | os.PathLike[str]) -> list[LineageFile]:
    """Lineage files of ``run_dir`` in reading order (a listing and a stat; no parsing)."""
    return list_lineage_files(run_dir)


def read_record(run_dir: str | os.PathLike[str]) -> LineageRecord | None:
    """The merged lineage of ``run_dir``, or None when it has none."""
    files = list_lineage_files(run_dir)
    if not files:
        return None
    return merge_file_lineages(run_dir, files, [parse_lineage_file(f.path) for f in files])


def read_lineage(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """``get_summary_lineage``'s dict for ``run_dir``, or ``{}`` when it has no lineage."""
    record = read_record(run_dir)
    return {} if record is None else record.to_summary_lineage()


def read_lineage_texts(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``read_lineage``'s dict, and the JSON texts of its sections that decode to exactly
    their value there (``{"metric": ...}`` or nothing), which an index stores as they are."""
    record = read_record(run_dir)
    if record is None:
        return {}, {}
    texts = {"metric": record.metric_json} if record.metric_json is not None else {}
    return record.to_summary_lineage(), texts


def parse_lineage_file(path: str | os.PathLike[str]) -> FileLineage:
    """Parse one lineage file (MindSpore's or ours) into its last event of each kind."""
    payloads, corrupt = read_records(path)
    result = FileLineage(records=len(payloads), corrupt=corrupt)
    warn = result.warnings
    last: dict[str, Any] = {}  # kind -> message; converted once, after the last one is known
    order: dict[str, int] = {}  # kind -> the position of its last event
    for position, payload in enumerate(payloads):
        event = pb.LineageEvent()
        try:
            event.ParseFromString(payload)
        except DecodeError:
            result.corrupt += 1
            continue
        kind = event.WhichOneof("what")
        if kind == "user_defined_info":
            result.user_defined.append(user_info(event.user_defined_info, warn))
        elif kind is not None and kind not in ("version", "weights"):  # (weights: weights.py)
            last[kind] = getattr(event, kind)
            order[kind] = position
    if order.get("train_begin", -1) < order.get("train_lineage", -1):
        last.pop("train_begin", None)  # the training it began has ended: its final values win
    converters: dict[str, tuple[str, Any]] = {
        "train_lineage": ("train", train_dict),
        "train_begin": ("train_begin", train_dict),
        "evaluation_lineage": ("evaluation", eval_dict),
        "dataset_graph": ("dataset_graph", lambda m, w: drop_bytes(organize_graph(m), "graph", w)),
        "run": ("run", run_dict),
    }
    for kind, message in last.items():
        attr, convert = converters[kind]
        try:
            setattr(result, attr, convert(message, warn))
        except (ValueError, TypeError, RecursionError) as exc:  # not UTF-8, too deep
            result.corrupt += 1
            warn.append(f"{kind}: unreadable, left out ({type(exc).__name__})")
    for message in warn:
        _log.warning("%s: %s", os.fspath(path), message)
    return result


def merge_file_lineages(
    run_dir: str | os.PathLike[str],
    files: Sequence[LineageFile],
    parsed: Iterable[FileLineage],
) -> LineageRecord | None:
    """Combine per-file results (in ``files``' reading order) with MindInsight's rules."""
    summary_dir = os.path.realpath(os.fspath(run_dir))
    record: LineageRecord | None = None
    corrupt = 0
    warnings: list[str] = []
    for part in parsed:
        corrupt += part.corrupt
        warnings.extend(part.warnings)
        if not part.has_lineage:
            continue
        if (
            record is None
            or part.train is not None
            or part.train_begin is not None
            or part.dataset_graph is not None
            or part.run is not None
        ):
            record = LineageRecord(summary_dir)  # a new training: drop what came before
        for info in part.user_defined:
            record.user_defined.update(info)
        train = part.train if part.train_begin is None else part.train_begin
        if train is not None:
            record.hyper_parameters = dict(train["hyper_parameters"])
            record.algorithm = dict(train["algorithm"])
            record.train_dataset = dict(train["train_dataset"])
            record.model = dict(train["model"])
            record.loss = train["raw_loss"]
            record.learning_rate = train["raw_learning_rate"]
            record.optimizer_settings = dict(train["optimizer_settings"])
            record.scheduler_settings = dict(train["scheduler_settings"])
            if train.get("fingerprint"):
                record.run["train_dataset_fingerprint"] = train["fingerprint"]
        if part.evaluation is not None:
            record.metric = dict(part.evaluation["metric"])
            record.metric_json = part.evaluation["metric_json"]
            if part.evaluation["valid_dataset"] is not None:
                record.valid_dataset = dict(part.evaluation["valid_dataset"])
            if part.evaluation.get("fingerprint"):
                record.run["valid_dataset_fingerprint"] = part.evaluation["fingerprint"]
        if part.dataset_graph is not None:
            record.dataset_graph = part.dataset_graph
        if part.run is not None:
            record.run = {**record.run, **part.run}
    if record is not None:
        record.files = list(files)
        record.corrupt_records = corrupt
        record.warnings = warnings
    return record
