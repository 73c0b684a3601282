"""Reading TensorBoard's HParams plugin data back: what other writers recorded of a run.

Why its own module (``hparams.py`` writes ours): runs written by ``torch.utils.tensorboard``
(``add_hparams``), Lightning's ``TensorBoardLogger`` (``log_hyperparams``) or TensorFlow's
HParams API carry their hyper-parameters only here, so the query engine reads them to index
such runs (``query.tb_runs``).

Why bounded: every writer puts the plugin data at the start of a file (torch's
``add_hparams`` writes a file of its own; Lightning logs them when fitting starts), and the
index reads them again whenever a live run's file grows. So only the first
``HPARAMS_WINDOW`` bytes of each event file are read, and only records whose bytes name an
``_hparams_/`` tag are decoded. A damaged record is skipped and a truncated one left unread,
as everywhere (``storage.RecordReader``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from trainledger.storage import RecordReader
from trainledger.summary.hparams import PLUGIN_NAME
from trainledger.summary.proto import hparams_pb2 as hp
from trainledger.summary.proto import summary_pb2 as pb
from trainledger.summary.reader import list_event_files

__all__ = ["HPARAMS_WINDOW", "HParamsFound", "read_hparams"]

#: bytes read from the start of each event file when looking for HParams plugin data
HPARAMS_WINDOW = 1 << 20
_MARK = b"_hparams_/"
#: the plugin's session status -> trainledger's run status (UNKNOWN: None)
_STATUS = {
    hp.STATUS_SUCCESS: "finished",
    hp.STATUS_FAILURE: "failed",
    hp.STATUS_RUNNING: "running",
}


@dataclass
class HParamsFound:
    """What the HParams plugin data of one folder's event files say (later files win)."""

    hparams: dict[str, float | str | bool] = field(default_factory=dict)
    #: the experiment's metrics as (group, tag): TensorBoard reads each from run <group>
    metrics: list[tuple[str, str]] = field(default_factory=list)
    #: the session end's status, when it carries an end time (see ``read_hparams``)
    status: str | None = None
    sessions: int = 0  # session starts found
    #: the last ``simple_value`` of each tag inside the window (``scalars=True`` only)
    scalars: dict[str, float] = field(default_factory=dict)


def read_hparams(
    folder: str | os.PathLike[str], *, scalars: bool = False, window: int = HPARAMS_WINDOW
) -> HParamsFound:
    """The HParams plugin data in the first ``window`` bytes of each event file directly in
    ``folder`` (writing order), and with ``scalars`` the scalar values found there too (for
    the small folders torch's ``add_hparams`` writes, whose metrics are scalars beside the
    plugin data).

    A session end without an end time says nothing about the run: torch's ``hparams()``
    helper (which ``add_hparams`` and Lightning use) writes it, always "success", together
    with the session start. Only a session end with an end time (TensorFlow's, ours) sets
    ``status``.
    """
    found = HParamsFound()
    for path in list_event_files(folder):
        try:
            payloads = RecordReader(path).read(limit=window)
        except OSError:  # unreadable: it costs only itself
            continue
        for payload in payloads:
            if not scalars and _MARK not in payload:
                continue
            try:
                event = pb.Event.FromString(payload)
            except DecodeError:
                continue
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == PLUGIN_NAME:
                    _take(found, value.metadata.plugin_data.content)
                elif scalars and value.WhichOneof("value") == "simple_value":
                    found.scalars[value.tag] = value.simple_value
    return found


def _take(found: HParamsFound, content: bytes) -> None:
    """One record of plugin data into ``found`` (an undecodable one is skipped)."""
    try:
        data = hp.HParamsPluginData.FromString(content)
    except DecodeError:
        return
    kind = data.WhichOneof("data")
    if kind == "experiment":
        for info in data.experiment.metric_infos:
            name = (info.name.group, info.name.tag)
            if info.name.tag and name not in found.metrics:
                found.metrics.append(name)
    elif kind == "session_start_info":
        found.sessions += 1
        for name, value in data.session_start_info.hparams.items():
            which = value.WhichOneof("kind")
            if which == "number_value":
                found.hparams[name] = value.number_value
            elif which == "string_value":
                found.hparams[name] = value.string_value
            elif which == "bool_value":
                found.hparams[name] = value.bool_value
    elif kind == "session_end_info" and data.session_end_info.end_time_secs > 0:
        found.status = _STATUS.get(data.session_end_info.status)
