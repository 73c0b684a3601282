"""Summaries: TensorBoard-format files written and read, and MindSpore (``_MS``) files read.

* ``proto/``        TensorBoard's ``Event``/``Summary`` schema and MindSpore's summary schema
                    (each with its original field numbers)
* ``encoders``      values -> ``Summary.Value`` messages (pure; tensors by duck typing)
* ``scalar_bytes``  scalar events straight to bytes, the hot path
* ``entries``       staged values -> serialised events, run on the writer thread
* ``writer``        event files on disk: rollover, the disk-space guard, the background writer
* ``record``        ``SummaryRecord``, MindSpore's summary writer API
* ``export``        tensor summaries also written as ``.npy`` files
* ``reader``        ``read_scalars``, ``read_images``, ``read_histograms``, ``read_tensors`` (both
                    formats), ``iter_events``, ``RunReader`` (incremental)
* ``media``         what the readers return for images, histograms and tensors
* ``mindspore``, ``ms_graph``, ``tb_export``  MindSpore's files, its graph as a ``GraphDef``,
                    and the conversion of ``_MS`` runs into TensorBoard event files

Record framing and file names come from ``trainledger.storage``. Public names are re-exported
lazily, so ``import trainledger.summary`` loads none of these modules. Nothing here imports
torch; ``SummaryCollector`` lives in ``trainledger.callbacks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "module_tree_text": "trainledger.summary.encoders",
    "process_export_options": "trainledger.summary.export",
    "HistogramEvent": "trainledger.summary.media",
    "ImageEvent": "trainledger.summary.media",
    "TensorEvent": "trainledger.summary.media",
    "is_mindspore_summary_name": "trainledger.summary.mindspore",
    "list_mindspore_files": "trainledger.summary.mindspore",
    "RunReader": "trainledger.summary.reader",
    "iter_events": "trainledger.summary.reader",
    "list_event_files": "trainledger.summary.reader",
    "read_histograms": "trainledger.summary.reader",
    "read_images": "trainledger.summary.reader",
    "read_scalars": "trainledger.summary.reader",
    "read_tensors": "trainledger.summary.reader",
    "SummaryRecord": "trainledger.summary.record",
    "graph_def_from_mindspore": "trainledger.summary.ms_graph",
    "ConvertCounts": "trainledger.summary.tb_export",
    "convert_mindspore_run": "trainledger.summary.tb_export",
    "find_mindspore_runs": "trainledger.summary.tb_export",
}

__all__ = [
    "convert_mindspore_run",
    "ConvertCounts",
    "find_mindspore_runs",
    "graph_def_from_mindspore",
    "HistogramEvent",
    "ImageEvent",
    "is_mindspore_summary_name",
    "iter_events",
    "list_event_files",
    "list_mindspore_files",
    "module_tree_text",
    "process_export_options",
    "read_histograms",
    "read_images",
    "read_scalars",
    "read_tensors",
    "RunReader",
    "SummaryRecord",
    "TensorEvent",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.summary.encoders import module_tree_text
    from trainledger.summary.export import process_export_options
    from trainledger.summary.media import HistogramEvent, ImageEvent, TensorEvent
    from trainledger.summary.mindspore import is_mindspore_summary_name, list_mindspore_files
    from trainledger.summary.ms_graph import graph_def_from_mindspore
    from trainledger.summary.reader import (
        RunReader,
        iter_events,
        list_event_files,
        read_histograms,
        read_images,
        read_scalars,
        read_tensors,
    )
    from trainledger.summary.record import SummaryRecord
    from trainledger.summary.tb_export import (
        ConvertCounts,
        convert_mindspore_run,
        find_mindspore_runs,
    )
