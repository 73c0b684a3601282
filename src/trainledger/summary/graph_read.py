"""The computational graph of a run directory, whoever wrote it.

trainledger (and torch's ``add_graph``) write a TensorBoard ``GraphDef`` into
``Event.graph_def``; MindSpore writes an anf_ir ``GraphProto`` into its ``_MS`` files, which
``mindspore_graph`` turns into a ``GraphDef`` with the same scope conventions. Readers (the web UI)
then handle one format.
"""

from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from trainledger.summary.mindspore_graph import graph_def_from_mindspore
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.reader import RunReader, iter_events

__all__ = ["read_graph"]


def read_graph(run_dir: str | os.PathLike[str]) -> pb.GraphDef | None:
    """The last graph written in ``run_dir`` (TensorBoard event files first, then MindSpore
    summaries, so a converted MindSpore run shows its converted graph), or None."""
    found: pb.GraphDef | None = None
    for event in iter_events(run_dir):
        if event.HasField("graph_def"):
            graph = pb.GraphDef()
            try:
                graph.ParseFromString(event.graph_def)
            except DecodeError:
                continue
            found = graph
    if found is not None:
        return found
    for ms_event in RunReader(run_dir).read_mindspore_events():
        if ms_event.HasField("graph_def"):
            found = graph_def_from_mindspore(ms_event.graph_def)
    return found
