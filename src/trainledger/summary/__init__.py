"""TensorBoard-format summaries: framing, protobuf schema, pure encoders, writer, reader.

``read_scalars(run_dir)``, ``iter_events(run_dir)``, ``RunReader`` (incremental) and
``SummaryRecord`` are re-exported lazily, so importing ``trainledger.storage`` (as the
lineage files do) loads nothing else. Nothing here imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "session_end_event": "trainledger.summary.hparams",
    "session_start_event": "trainledger.summary.hparams",
    "write_hparams_events": "trainledger.summary.hparams",
    "HParamsFound": "trainledger.summary.hparams_read",
    "read_hparams": "trainledger.summary.hparams_read",
    "read_hparams_yaml": "trainledger.summary.hparams_yaml",
    "process_export_options": "trainledger.summary.tensor_export",
    "GraphNode": "trainledger.summary.graph_def",
    "graph_def_bytes": "trainledger.summary.graph_def",
    "module_graph_def": "trainledger.summary.graph_def",
    "parse_graph_def": "trainledger.summary.graph_def",
    "read_graph": "trainledger.summary.graph_read",
    "LANDSCAPE_PLUGIN": "trainledger.summary.landscape",
    "read_landscapes": "trainledger.summary.landscape",
    "BucketCounts": "trainledger.summary.encoders",
    "HistogramEvent": "trainledger.summary.media",
    "ImageEvent": "trainledger.summary.media",
    "TensorEvent": "trainledger.summary.media",
    "is_mindspore_summary_name": "trainledger.summary.mindspore",
    "list_mindspore_files": "trainledger.summary.mindspore",
    "graph_def_from_mindspore": "trainledger.summary.mindspore_graph",
    "RunReader": "trainledger.summary.reader",
    "iter_events": "trainledger.summary.reader",
    "list_event_files": "trainledger.summary.reader",
    "read_histograms": "trainledger.summary.reader",
    "read_images": "trainledger.summary.reader",
    "read_scalars": "trainledger.summary.reader",
    "read_scalar_sessions": "trainledger.summary.reader",
    "writer_last_steps": "trainledger.summary.reader",
    "ScalarSeries": "trainledger.summary.reader",
    "SessionSeries": "trainledger.summary.reader",
    "resolve_series": "trainledger.summary.series",
    "MINDSPORE": "trainledger.summary.series",
    "read_tensors": "trainledger.summary.reader",
    "SummaryRecord": "trainledger.summary.record",
    "sidecar_state": "trainledger.summary.series_sidecar",
    "SeriesOverview": "trainledger.summary.series_overview",
    "TagStats": "trainledger.summary.series_stats",
    "tag_stats": "trainledger.summary.series_stats",
    "ConvertCounts": "trainledger.summary.tb_export",
    "convert_mindspore_run": "trainledger.summary.tb_export",
    "find_mindspore_runs": "trainledger.summary.tb_export",
}

__all__ = [
    "BucketCounts",
    "convert_mindspore_run",
    "ConvertCounts",
    "find_mindspore_runs",
    "graph_def_bytes",
    "graph_def_from_mindspore",
    "GraphNode",
    "HistogramEvent",
    "HParamsFound",
    "ImageEvent",
    "is_mindspore_summary_name",
    "iter_events",
    "LANDSCAPE_PLUGIN",
    "list_event_files",
    "list_mindspore_files",
    "module_graph_def",
    "parse_graph_def",
    "process_export_options",
    "read_graph",
    "read_histograms",
    "read_hparams",
    "read_hparams_yaml",
    "read_images",
    "read_landscapes",
    "read_scalar_sessions",
    "writer_last_steps",
    "read_scalars",
    "read_tensors",
    "resolve_series",
    "MINDSPORE",
    "RunReader",
    "ScalarSeries",
    "SessionSeries",
    "SeriesOverview",
    "session_end_event",
    "session_start_event",
    "sidecar_state",
    "SummaryRecord",
    "TagStats",
    "tag_stats",
    "TensorEvent",
    "write_hparams_events",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.summary.encoders import BucketCounts
    from trainledger.summary.graph_def import (
        GraphNode,
        graph_def_bytes,
        module_graph_def,
        parse_graph_def,
    )
    from trainledger.summary.graph_read import read_graph
    from trainledger.summary.hparams import (
        session_end_event,
        session_start_event,
        write_hparams_events,
    )
    from trainledger.summary.hparams_read import HParamsFound, read_hparams
    from trainledger.summary.hparams_yaml import read_hparams_yaml
    from trainledger.summary.landscape import LANDSCAPE_PLUGIN, read_landscapes
    from trainledger.summary.media import HistogramEvent, ImageEvent, TensorEvent
    from trainledger.summary.mindspore import is_mindspore_summary_name, list_mindspore_files
    from trainledger.summary.mindspore_graph import graph_def_from_mindspore
    from trainledger.summary.reader import (
        RunReader,
        ScalarSeries,
        SessionSeries,
        iter_events,
        list_event_files,
        read_histograms,
        read_images,
        read_scalar_sessions,
        read_scalars,
        read_tensors,
        writer_last_steps,
    )
    from trainledger.summary.record import SummaryRecord
    from trainledger.summary.series import MINDSPORE, resolve_series
    from trainledger.summary.series_overview import SeriesOverview
    from trainledger.summary.series_sidecar import sidecar_state
    from trainledger.summary.series_stats import TagStats, tag_stats
    from trainledger.summary.tb_export import (
        ConvertCounts,
        convert_mindspore_run,
        find_mindspore_runs,
    )
    from trainledger.summary.tensor_export import process_export_options
