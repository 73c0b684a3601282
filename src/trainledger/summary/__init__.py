"""TensorBoard-format summaries: framing, protobuf schema, pure encoders, writer, reader.

``read_scalars(run_dir)``, ``iter_events(run_dir)``, ``RunReader`` (incremental) and
``SummaryRecord`` are re-exported lazily, so importing ``trainledger.storage`` (as the
lineage files do) loads nothing else. Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "GraphNode": "trainledger.summary.graph",
    "graph_def_bytes": "trainledger.summary.graph",
    "module_graph_def": "trainledger.summary.graph",
    "parse_graph_def": "trainledger.summary.graph",
    "process_export_options": "trainledger.summary.export",
    "LANDSCAPE_PLUGIN": "trainledger.summary.landscape",
    "read_landscapes": "trainledger.summary.landscape",
    "RunReader": "trainledger.summary.reader",
    "iter_events": "trainledger.summary.reader",
    "list_event_files": "trainledger.summary.reader",
    "read_scalars": "trainledger.summary.reader",
    "SummaryRecord": "trainledger.summary.record",
}

__all__ = [
    "graph_def_bytes",
    "GraphNode",
    "iter_events",
    "LANDSCAPE_PLUGIN",
    "list_event_files",
    "module_graph_def",
    "parse_graph_def",
    "process_export_options",
    "read_landscapes",
    "read_scalars",
    "RunReader",
    "SummaryRecord",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.summary.export import process_export_options
    from trainledger.summary.graph import (
        GraphNode,
        graph_def_bytes,
        module_graph_def,
        parse_graph_def,
    )
    from trainledger.summary.landscape import LANDSCAPE_PLUGIN, read_landscapes
    from trainledger.summary.reader import RunReader, iter_events, list_event_files, read_scalars
    from trainledger.summary.record import SummaryRecord
