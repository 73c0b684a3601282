"""TensorBoard's HParams dashboard: a run's hyper-parameters and status as the plugin stores them.

TensorBoard's HParams tab lists one row per "session" (a run directory holding a
``_hparams_/session_start_info`` summary) with its hyper-parameters, and takes each metric's
value from the run's scalars (the last point of each tag). We write the session start (the
hyper-parameters) when a run starts and the session end (its status) when it ends, each as a
small event file of its own, built with our copy of the plugin's schema
(``proto/hparams.proto``); TensorBoard is never imported.

No experiment summary is written: with one per run, TensorBoard would take the first run's as
the whole experiment's and hide the hyper-parameters other runs have. Without one it unions
the hyper-parameters of all sessions and lists every scalar tag as a metric.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainledger.storage import atomic_write_bytes, event_file_name, frame
from trainledger.summary.encoders import file_version_event
from trainledger.summary.proto import hparams_pb2 as hp
from trainledger.summary.proto import summary_pb2 as pb

__all__ = [
    "PLUGIN_NAME",
    "SESSION_START_TAG",
    "SESSION_END_TAG",
    "session_start_event",
    "session_end_event",
    "write_hparams_events",
]

PLUGIN_NAME = "hparams"
SESSION_START_TAG = "_hparams_/session_start_info"
SESSION_END_TAG = "_hparams_/session_end_info"
#: trainledger's run status -> the plugin's session status
_STATUS = {
    "finished": hp.STATUS_SUCCESS,
    "stopped": hp.STATUS_SUCCESS,
    "failed": hp.STATUS_FAILURE,
    "running": hp.STATUS_RUNNING,
}


def _event(tag: str, data: hp.HParamsPluginData, wall_time: float) -> pb.Event:
    data.version = 0
    value = pb.Summary.Value(tag=tag)
    value.metadata.plugin_data.plugin_name = PLUGIN_NAME
    value.metadata.plugin_data.content = data.SerializeToString()
    # TensorBoard writes an empty float tensor as the value; its loaders expect one
    value.tensor.dtype = pb.DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=0)
    return pb.Event(wall_time=wall_time, step=0, summary=pb.Summary(value=[value]))


def session_start_event(
    hparams: Mapping[str, Any],
    *,
    start_time: float | None = None,
    group_name: str = "",
    model_uri: str = "",
) -> pb.Event:
    """The session start: each hyper-parameter as a number, bool or string (None skipped;
    anything else as its ``str``)."""
    start = time.time() if start_time is None else float(start_time)
    data = hp.HParamsPluginData()
    info = data.session_start_info
    info.start_time_secs = start
    info.group_name = group_name
    info.model_uri = model_uri
    for name, value in hparams.items():
        if value is None:
            continue
        slot = info.hparams[str(name)]
        if isinstance(value, bool):
            slot.bool_value = value
        elif isinstance(value, (int, float)):
            slot.number_value = float(value)
        else:
            slot.string_value = str(value)
    return _event(SESSION_START_TAG, data, start)


def session_end_event(status: str, *, end_time: float | None = None) -> pb.Event:
    """The session end with trainledger's run status (finished/stopped -> success)."""
    if status not in _STATUS:
        raise ValueError(f"status expected one of {sorted(_STATUS)}, received: {status!r}")
    end = time.time() if end_time is None else float(end_time)
    data = hp.HParamsPluginData()
    data.session_end_info.status = _STATUS[status]
    data.session_end_info.end_time_secs = end
    return _event(SESSION_END_TAG, data, end)


def write_hparams_events(run_dir: str | os.PathLike[str], *events: pb.Event) -> Path:
    """Write ``events`` as a new event file in ``run_dir`` (atomically); returns its path."""
    directory = Path(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    wall = events[0].wall_time if events else time.time()
    path = directory / event_file_name(wall_time=time.time())
    payload = b"".join(frame(e.SerializeToString()) for e in (file_version_event(wall), *events))
    atomic_write_bytes(path, payload)
    return path
