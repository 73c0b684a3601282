"""Convert MindSpore summary runs (``_MS`` files) into TensorBoard event files.

Each MindSpore event becomes one TensorBoard event with the same step and wall time: scalars
as ``simple_value``, images with their PNG bytes unchanged, histograms as ``HistogramProto``
(bucket limits are MindSpore's right edges), tensors as ``TensorProto`` and the graph as a
``GraphDef`` (``mindspore_graph``). Loss landscapes have no TensorBoard form and are counted as
skipped. Every plugin follows one rule, MindInsight's (``summary.series.mindinsight_keep``),
applied per tag and plugin by ``_keeps``: a repeated step is written once (its last value) and
the points a later session supersedes (a tag started again at step ``s`` drops the earlier
files' points at ``s`` and after) are left out and counted as ``superseded``. One rule, so
TensorBoard shows the scalars, images, histograms and tensors that MindInsight showed, and
never a step's image beside a loss curve that no longer has that step. The source is only
read: output goes to a new event file under the destination.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainledger.summary.encoders import make_tensor_proto
from trainledger.summary.mindspore import list_mindspore_files, ms_histogram, ms_tensor_array
from trainledger.summary.mindspore_graph import graph_def_from_mindspore
from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.reader import RunReader, list_event_files
from trainledger.summary.series import mindinsight_keep
from trainledger.summary.writer import EventFileWriter

__all__ = ["ConvertCounts", "convert_mindspore_run", "find_mindspore_runs"]


@dataclass
class ConvertCounts:
    """What one conversion wrote (events per kind) and what it could not convert."""

    scalars: int = 0
    images: int = 0
    histograms: int = 0
    tensors: int = 0
    graphs: int = 0
    skipped: int = 0  # values with no TensorBoard form (loss landscapes) or undecodable tensors
    superseded: int = 0  # points MindInsight does not show (repeated steps, purged sessions)
    corrupt: int = 0  # damaged records of the source, skipped


def find_mindspore_runs(src: str | os.PathLike[str]) -> list[Path]:
    """``src`` itself if it holds ``_MS`` files, else every directory below it that does (not
    following symlinks), sorted."""
    root = Path(src)
    if list_mindspore_files(root):
        return [root]
    runs = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames.sort()
        if list_mindspore_files(dirpath):
            runs.append(Path(dirpath))
    return runs


def _histogram(value: ms.Summary.Histogram) -> pb.HistogramProto:
    hist = ms_histogram(0, 0.0, value)
    return pb.HistogramProto(
        min=hist.min,
        max=hist.max,
        num=hist.count,
        sum=hist.sum,
        bucket_limit=hist.rights.tolist(),
        bucket=hist.counts.tolist(),
    )


# the values a step rule applies to; graphs are one per run, landscapes are skipped
_SERIES_KINDS = frozenset({"scalar_value", "image", "histogram", "tensor"})
_Keeps = dict[tuple[str, str], Iterator[bool]]


def _keeps(files: list[list[ms.Event]]) -> _Keeps:
    """Per ``(plugin, tag)``, whether each point (in file and record order) is kept by
    MindInsight's rule (``summary.series``). MindInsight keys its series by tag and plugin, so
    an image and a histogram of one tag are two series; every plugin goes through this one
    function so that no plugin can show a step another has dropped."""
    points: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for session, events in enumerate(files):
        for event in events:
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind in _SERIES_KINDS:
                    steps, sessions = points.setdefault((kind, value.tag), ([], []))
                    steps.append(event.step)
                    sessions.append(session)
    return {
        key: iter(mindinsight_keep(np.array(steps), np.array(sessions)).tolist())
        for key, (steps, sessions) in points.items()
    }


def _convert(event: ms.Event, counts: ConvertCounts, keeps: _Keeps) -> Iterator[pb.Event]:
    if event.HasField("graph_def"):
        counts.graphs += 1
        graph = graph_def_from_mindspore(event.graph_def).SerializeToString()
        yield pb.Event(step=event.step, wall_time=event.wall_time, graph_def=graph)
        return
    values = []
    for value in event.summary.value:
        kind = value.WhichOneof("value") or ""
        if kind in _SERIES_KINDS and not next(keeps[(kind, value.tag)], True):
            counts.superseded += 1
            continue
        if kind == "scalar_value":
            counts.scalars += 1
            values.append(pb.Summary.Value(tag=value.tag, simple_value=value.scalar_value))
        elif kind == "image":
            counts.images += 1
            img = value.image
            image = pb.Summary.Image(
                height=img.height,
                width=img.width,
                colorspace=img.colorspace,
                encoded_image_string=img.encoded_image,
            )
            values.append(pb.Summary.Value(tag=value.tag, image=image))
        elif kind == "histogram":
            counts.histograms += 1
            values.append(pb.Summary.Value(tag=value.tag, histo=_histogram(value.histogram)))
        elif kind == "tensor" and (arr := ms_tensor_array(value.tensor)) is not None:
            counts.tensors += 1
            values.append(pb.Summary.Value(tag=value.tag, tensor=make_tensor_proto(arr)))
        else:
            counts.skipped += 1
    if values:
        summary = pb.Summary(value=values)
        yield pb.Event(step=event.step, wall_time=event.wall_time, summary=summary)


def convert_mindspore_run(
    src_run: str | os.PathLike[str], dst_run: str | os.PathLike[str]
) -> ConvertCounts:
    """Write the content of the ``_MS`` files of ``src_run`` as one TensorBoard event file in
    ``dst_run`` (created). Refuses (``FileExistsError``) a ``dst_run`` that already holds event
    files, since TensorBoard would show both."""
    dst = Path(dst_run)
    if list_event_files(dst):
        raise FileExistsError(f"{dst} already holds TensorBoard event files; choose another DST")
    reader = RunReader(src_run)
    files = [reader.read_mindspore_events_of(path) for path in list_mindspore_files(src_run)]
    keeps = _keeps(files)
    counts = ConvertCounts()
    writer = EventFileWriter(dst, min_free_bytes=0)
    try:
        payloads = [
            tb.SerializeToString()
            for events in files
            for event in events
            for tb in _convert(event, counts, keeps)
        ]
        writer.write(payloads)
    finally:
        writer.close()
    counts.corrupt = reader.corrupt
    return counts
