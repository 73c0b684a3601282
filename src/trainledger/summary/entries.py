"""Batches of staged values -> serialised events, on the writer thread.

``SummaryRecord`` checks and snapshots values in the caller's thread, collects them into
entries ``(step, wall_time, [(plugin, tag, value)])`` and hands lists of entries to its
``AsyncEventWriter``; the functions here run there: encoding (PNG, histograms, protobuf or
the scalar byte path) and the optional .npy export. Kept out of ``record.py`` so the API
module stays about the API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainledger.summary import encoders
from trainledger.summary.graph_def import checked_graph
from trainledger.summary.landscape import checked_landscape, landscape_values
from trainledger.summary.proto.summary_pb2 import Event, Summary
from trainledger.summary.scalar_bytes import scalar_event_bytes, scalars_event_bytes
from trainledger.summary.tensor_export import export_tensor
from trainledger.summary.writer import AsyncEventWriter

__all__ = ["Entry", "VALUE_CHECKS", "submit_entries", "close_forgotten", "encode_entries"]

logger = logging.getLogger("trainledger.summary.record")

Entry = tuple[int, float, list[tuple[str, str, Any]]]  # (step, wall_time, [(plugin, tag, value)])

_ENCODERS: dict[str, Callable[..., Any]] = {
    "image": lambda tag, hwc, bins: encoders.image(tag, hwc, "HWC"),
    "histogram": lambda tag, arr, bins: encoders.histogram(tag, arr, bins),
    "tensor": lambda tag, arr, bins: encoders.tensor(tag, arr),
    "text": lambda tag, text, bins: encoders.text(tag, text),
    "landscape": lambda tag, value, bins: landscape_values(tag, value),  # a list of values
}

# add_value's checks of the plugins whose values are not arrays or text (caller's thread)
VALUE_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "graph": checked_graph,
    "landscape": checked_landscape,
}


def submit_entries(
    writer: AsyncEventWriter, batch: list[Entry], bins: int, export_dir: Path | None
) -> None:
    """Hand ``batch``'s events to the writer thread and empty it (the list object stays)."""
    if not batch:
        return
    entries = batch[:]
    batch.clear()
    writer.submit(
        lambda: encode_entries(entries, bins, export_dir),
        lambda tally: tally.add_entries(entries),
    )


def close_forgotten(
    writer: AsyncEventWriter, batch: list[Entry], bins: int, export_dir: Path | None
) -> None:
    """Finalizer of a record that was never closed: write what is left, then close."""
    try:
        submit_entries(writer, batch, bins, export_dir)
        writer.close()
    except Exception as exc:  # at exit or in GC there is no caller left to raise to
        logger.error("closing a SummaryRecord that was not closed failed: %s", exc)


def encode_entries(entries: list[Entry], bins: int, export_dir: Path | None) -> list[bytes]:
    """Serialised events of ``entries`` (runs on the writer thread); exports tensors if asked."""
    out: list[bytes] = []
    value_cls = Summary.Value
    for step, wall_time, values in entries:
        if len(values) == 1:
            plugin, tag, value = values[0]
            if plugin == "scalar":
                out.append(scalar_event_bytes(tag, value, step, wall_time))
                continue
        if all(plugin == "scalar" for plugin, _, _ in values):
            pairs = [(tag, value) for _, tag, value in values]
            out.append(scalars_event_bytes(pairs, step, wall_time))
            continue
        protos = []
        for plugin, tag, value in values:
            if plugin == "graph":  # a serialised GraphDef: an event of its own, as TensorBoard's
                out.append(
                    Event(wall_time=wall_time, step=step, graph_def=value).SerializeToString()
                )
                continue
            if plugin == "scalar":
                protos.append(value_cls(tag=tag, simple_value=value))
                continue
            encoded = _ENCODERS[plugin](tag, value, bins)
            protos.extend(encoded) if isinstance(encoded, list) else protos.append(encoded)
            if plugin == "tensor" and export_dir is not None:
                export_tensor(export_dir, tag, step, value)
        if protos:
            event = Event(wall_time=wall_time, step=step, summary=Summary(value=protos))
            out.append(event.SerializeToString())
    return out
