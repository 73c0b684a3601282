"""TensorBoard-format summaries: framing, protobuf schema, pure encoders, writer, reader.

``read_scalars(run_dir)``, ``iter_events(run_dir)``, ``RunReader`` (incremental) and
``SummaryRecord`` are re-exported lazily, so importing ``trainledger.storage`` (as the
lineage files do) loads nothing else. Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "module_tree_text": "trainledger.summary.encoders",
    "process_export_options": "trainledger.summary.export",
    "RunReader": "trainledger.summary.reader",
    "iter_events": "trainledger.summary.reader",
    "list_event_files": "trainledger.summary.reader",
    "read_scalars": "trainledger.summary.reader",
    "SummaryRecord": "trainledger.summary.record",
}

__all__ = [
    "iter_events",
    "list_event_files",
    "module_tree_text",
    "process_export_options",
    "read_scalars",
    "RunReader",
    "SummaryRecord",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.summary.encoders import module_tree_text
    from trainledger.summary.export import process_export_options
    from trainledger.summary.reader import RunReader, iter_events, list_event_files, read_scalars
    from trainledger.summary.record import SummaryRecord
