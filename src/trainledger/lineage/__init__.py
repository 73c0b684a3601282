"""Lineage records, torch analyzers, the lineage file writer and reader.

* ``proto/``      the schema: MindInsight's ``LineageEvent`` field numbers + extensions >= 100
* ``graph``       dataset graph dicts <-> ``DatasetGraph`` messages, by MindInsight's rules
* ``records``     plain values -> events, and events -> MindInsight's dicts (pure)
* ``run_facts``   small pure decisions over a run's cb_params (final status, saved checkpoint)
* ``writer``      the process's append-only, fsynced writer per run directory; it creates each
  file with a unique, increasing ``<unix_ts>`` (the names themselves: ``trainledger.storage``)
* ``reader``      ``read_lineage(run_dir)``: ``get_summary_lineage``'s dict (no torch needed);
  its keys: ``keys``
* ``skim``        ``read_status(run_dir)``, ``read_run(run_dir)``: the run's status or record
  alone, decoding only run events
* ``analyzers``   torch objects -> plain values (dataset walk, backbone, optimizer, env)

The callbacks that use them are ``trainledger.callbacks.lineage.TrainLineage/EvalLineage``.
Public names are re-exported lazily, so the reader works without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "RunWeights": "trainledger.lineage.weights",
    "read_weights": "trainledger.lineage.weights",
    "weights_event": "trainledger.lineage.weights",
    "DatasetInfo": "trainledger.lineage.analyzers",
    "analyze_dataset": "trainledger.lineage.analyzers",
    "Configured": "trainledger.lineage.analyzers",
    "configured": "trainledger.lineage.analyzers",
    "distributed_info": "trainledger.lineage.analyzers",
    "environment_info": "trainledger.lineage.analyzers",
    "initial_learning_rate": "trainledger.lineage.analyzers",
    "loss_function_name": "trainledger.lineage.analyzers",
    "network_name": "trainledger.lineage.analyzers",
    "optimizer_name": "trainledger.lineage.analyzers",
    "torch_seed": "trainledger.lineage.analyzers",
    "EnvironmentInfo": "trainledger.lineage.analyzers.environment",
    "lineage_pb2": "trainledger.lineage.proto",
    "SUMMARY_KEYS": "trainledger.lineage.keys",
    "SETTINGS_KEYS": "trainledger.lineage.keys",
    "lineage_files": "trainledger.lineage.reader",
    "read_lineage": "trainledger.lineage.reader",
    "read_lineage_texts": "trainledger.lineage.reader",
    "EvalValues": "trainledger.lineage.records",
    "RunValues": "trainledger.lineage.records",
    "TrainValues": "trainledger.lineage.records",
    "dataset_graph_event": "trainledger.lineage.records",
    "eval_event": "trainledger.lineage.records",
    "run_event": "trainledger.lineage.records",
    "shortest_float32": "trainledger.lineage.records",
    "json_float": "trainledger.lineage.records",
    "train_event": "trainledger.lineage.records",
    "train_begin_event": "trainledger.lineage.records",
    "user_defined_event": "trainledger.lineage.records",
    "validate_user_defined_info": "trainledger.lineage.records",
    "REDACT_ENV": "trainledger.lineage.redaction",
    "Redaction": "trainledger.lineage.redaction",
    "redact_event": "trainledger.lineage.redaction",
    "redact_object": "trainledger.lineage.redaction",
    "as_int": "trainledger.lineage.run_facts",
    "file_size": "trainledger.lineage.run_facts",
    "saved_checkpoint_of": "trainledger.lineage.run_facts",
    "run_status": "trainledger.lineage.run_facts",
    "is_run_uid": "trainledger.lineage.run_facts",
    "run_uid": "trainledger.lineage.run_facts",
    "read_status": "trainledger.lineage.skim",
    "read_run": "trainledger.lineage.skim",
    "get_writer": "trainledger.lineage.writer",
}

__all__ = [
    "RunWeights",
    "read_weights",
    "weights_event",
    "analyze_dataset",
    "Configured",
    "configured",
    "as_int",
    "dataset_graph_event",
    "DatasetInfo",
    "distributed_info",
    "environment_info",
    "EnvironmentInfo",
    "eval_event",
    "EvalValues",
    "file_size",
    "get_writer",
    "initial_learning_rate",
    "lineage_files",
    "lineage_pb2",
    "loss_function_name",
    "network_name",
    "optimizer_name",
    "read_lineage",
    "read_lineage_texts",
    "read_status",
    "read_run",
    "REDACT_ENV",
    "redact_event",
    "redact_object",
    "Redaction",
    "run_event",
    "run_status",
    "run_uid",
    "is_run_uid",
    "saved_checkpoint_of",
    "RunValues",
    "shortest_float32",
    "json_float",
    "SUMMARY_KEYS",
    "SETTINGS_KEYS",
    "torch_seed",
    "train_begin_event",
    "train_event",
    "TrainValues",
    "user_defined_event",
    "validate_user_defined_info",
]

#: old name -> new name, each still importable (with a DeprecationWarning) until 0.3
_RENAMED = {"latest_checkpoint": "saved_checkpoint_of"}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), renamed=_RENAMED)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.lineage.analyzers import (
        Configured,
        DatasetInfo,
        analyze_dataset,
        configured,
        distributed_info,
        environment_info,
        initial_learning_rate,
        loss_function_name,
        network_name,
        optimizer_name,
        torch_seed,
    )
    from trainledger.lineage.analyzers.environment import EnvironmentInfo
    from trainledger.lineage.keys import SETTINGS_KEYS, SUMMARY_KEYS
    from trainledger.lineage.proto import lineage_pb2
    from trainledger.lineage.reader import lineage_files, read_lineage, read_lineage_texts
    from trainledger.lineage.records import (
        EvalValues,
        RunValues,
        TrainValues,
        dataset_graph_event,
        eval_event,
        json_float,
        run_event,
        shortest_float32,
        train_begin_event,
        train_event,
        user_defined_event,
        validate_user_defined_info,
    )
    from trainledger.lineage.redaction import REDACT_ENV, Redaction, redact_event, redact_object
    from trainledger.lineage.run_facts import (
        as_int,
        file_size,
        is_run_uid,
        run_status,
        run_uid,
        saved_checkpoint_of,
    )
    from trainledger.lineage.skim import read_run, read_status
    from trainledger.lineage.weights import RunWeights, read_weights, weights_event
    from trainledger.lineage.writer import get_writer
