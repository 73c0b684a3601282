"""Lineage queries: condition validation, filter/sort/page in SQL and in Python, the index.

Public entry points: ``api.get_summary_lineage``, ``api.filter_summary_lineage``,
``table.lineage_table``, ``index.LineageIndex`` (a reusable index with ``query``,
``refresh``, ``set_annotation``, ``get_annotations``) and ``where.parse_where`` (the
``FIELD OP VALUE`` compiler). Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "UNSET": "trainledger.query.annotations",
    "filter_summary_lineage": "trainledger.query.api",
    "get_summary_lineage": "trainledger.query.api",
    "FIELDS": "trainledger.query.conditions",
    "lineage_types": "trainledger.query.conditions",
    "LineageIndex": "trainledger.query.index",
    "flatten_object": "trainledger.query.table",
    "flatten_result": "trainledger.query.table",
    "lineage_table": "trainledger.query.table",
    "parse_where": "trainledger.query.where",
}

__all__ = [
    "FIELDS",
    "filter_summary_lineage",
    "flatten_object",
    "flatten_result",
    "get_summary_lineage",
    "lineage_table",
    "lineage_types",
    "LineageIndex",
    "parse_where",
    "UNSET",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.query.annotations import UNSET
    from trainledger.query.api import filter_summary_lineage, get_summary_lineage
    from trainledger.query.conditions import FIELDS, lineage_types
    from trainledger.query.index import LineageIndex
    from trainledger.query.table import flatten_object, flatten_result, lineage_table
    from trainledger.query.where import parse_where
