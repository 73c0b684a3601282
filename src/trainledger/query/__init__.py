"""Lineage queries: condition validation, filter/sort/page in SQL and in Python, the index.

Public names (``__all__``): MindInsight's ``get_summary_lineage`` and
``filter_summary_lineage``; ``LineageIndex`` (a reusable index: ``query``, ``refresh``,
``set_annotation``, ``get_annotations``); ``QueryService`` (an index with background re-scans,
data versions and a result cache, for long-lived readers such as the web UI);
``lineage_table`` and ``flatten_object``/``flatten_result`` (flat rows); ``index_url`` and
``redact_url`` (where the index lives: SQLite or PostgreSQL); ``parse_where``
(the ``FIELD OP VALUE`` compiler); named models (``register_model``, ``set_model_alias``,
``resolve_model``, ``model_checkpoint``, ``model_history``, ``list_models``:
docs/models.md); ``FIELDS`` (MindInsight's), ``RUN_FIELDS`` (trainledger's: ``status``,
``duration``, ``sessions``), ``STATS`` and ``parse_series_field`` (series
statistics as fields: ``max(eval/accuracy)``), ``overview_fresh`` (whether a long series'
overview in the index still matches its run's files), ``index_copy`` (the local copy of an
``s3://`` base the index reads), ``CONTROL_KEYS`` and ``lineage_types`` of search conditions;
``did_you_mean``, ``condition_fields`` and ``missing_field_notes`` (what a mistaken field
name is answered with, alike in Python, the CLI and the UI).
Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "UNSET": "trainledger.query.annotations",
    "append_audit": "trainledger.query.audit",
    "cli_actor": "trainledger.query.audit",
    "read_audit": "trainledger.query.audit",
    "token_fingerprint": "trainledger.query.audit",
    "lineage_types": "trainledger.query.conditions",
    "page_bounds": "trainledger.query.conditions",
    "condition_fields": "trainledger.query.field_hints",
    "did_you_mean": "trainledger.query.field_hints",
    "missing_field_notes": "trainledger.query.field_hints",
    "CONTROL_KEYS": "trainledger.query.fields",
    "FIELDS": "trainledger.query.fields",
    "HYPERPARAMETERS": "trainledger.query.fields",
    "PREFIXES": "trainledger.query.fields",
    "is_field": "trainledger.query.fields",
    "RUN_FIELDS": "trainledger.query.fields",
    "index_url": "trainledger.query.index_urls",
    "redact_url": "trainledger.query.index_urls",
    "MIN_RUNS": "trainledger.query.importance",
    "hyperparameter_importance": "trainledger.query.importance",
    "LineageIndex": "trainledger.query.index",
    "filter_summary_lineage": "trainledger.query.lineage_api",
    "run_family": "trainledger.query.family",
    "list_models": "trainledger.query.models",
    "model_checkpoint": "trainledger.query.models",
    "model_history": "trainledger.query.models",
    "register_model": "trainledger.query.models",
    "resolve_model": "trainledger.query.models",
    "set_model_alias": "trainledger.query.models",
    "Families": "trainledger.query.family",
    "get_summary_lineage": "trainledger.query.lineage_api",
    "archive_run": "trainledger.query.run_admin",
    "archived_runs": "trainledger.query.run_admin",
    "delete_run": "trainledger.query.run_admin",
    "restore_run": "trainledger.query.run_admin",
    "QueryService": "trainledger.query.service",
    "flatten_object": "trainledger.query.table",
    "flatten_result": "trainledger.query.table",
    "lineage_table": "trainledger.query.table",
    "run_id_of": "trainledger.query.table",
    "parse_where": "trainledger.query.where",
    "FIELD_ALIASES": "trainledger.query.where",
    "base_names": "trainledger.query.lineage_api",
    "index_copy": "trainledger.query.object_copy",
    "STATS": "trainledger.query.series_fields",
    "overview_fresh": "trainledger.query.series_overviews",
    "series_parts_of": "trainledger.query.tb_runs",
    "parse_series_field": "trainledger.query.series_fields",
}

__all__ = [
    "append_audit",
    "archive_run",
    "base_names",
    "index_copy",
    "archived_runs",
    "cli_actor",
    "condition_fields",
    "CONTROL_KEYS",
    "did_you_mean",
    "delete_run",
    "FIELD_ALIASES",
    "FIELDS",
    "filter_summary_lineage",
    "Families",
    "run_family",
    "flatten_object",
    "flatten_result",
    "get_summary_lineage",
    "hyperparameter_importance",
    "HYPERPARAMETERS",
    "index_url",
    "lineage_table",
    "lineage_types",
    "LineageIndex",
    "list_models",
    "MIN_RUNS",
    "missing_field_notes",
    "model_checkpoint",
    "model_history",
    "overview_fresh",
    "page_bounds",
    "parse_where",
    "PREFIXES",
    "is_field",
    "parse_series_field",
    "STATS",
    "QueryService",
    "read_audit",
    "redact_url",
    "register_model",
    "resolve_model",
    "restore_run",
    "RUN_FIELDS",
    "series_parts_of",
    "set_model_alias",
    "run_id_of",
    "token_fingerprint",
    "UNSET",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.query.annotations import UNSET
    from trainledger.query.audit import append_audit, cli_actor, read_audit, token_fingerprint
    from trainledger.query.conditions import lineage_types, page_bounds
    from trainledger.query.family import Families, run_family
    from trainledger.query.field_hints import condition_fields, did_you_mean, missing_field_notes
    from trainledger.query.fields import (
        CONTROL_KEYS,
        FIELDS,
        HYPERPARAMETERS,
        PREFIXES,
        RUN_FIELDS,
        is_field,
    )
    from trainledger.query.importance import MIN_RUNS, hyperparameter_importance
    from trainledger.query.index import LineageIndex
    from trainledger.query.index_urls import index_url, redact_url
    from trainledger.query.lineage_api import (
        base_names,
        filter_summary_lineage,
        get_summary_lineage,
    )
    from trainledger.query.models import (
        list_models,
        model_checkpoint,
        model_history,
        register_model,
        resolve_model,
        set_model_alias,
    )
    from trainledger.query.object_copy import index_copy
    from trainledger.query.run_admin import archive_run, archived_runs, delete_run, restore_run
    from trainledger.query.series_fields import STATS, parse_series_field
    from trainledger.query.series_overviews import overview_fresh
    from trainledger.query.service import QueryService
    from trainledger.query.table import flatten_object, flatten_result, lineage_table, run_id_of
    from trainledger.query.tb_runs import series_parts_of
    from trainledger.query.where import FIELD_ALIASES, parse_where
