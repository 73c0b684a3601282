"""A run's record (its status, duration, sessions) from its lineage files, skimmed: only run
events are decoded.

Why: an index made before status was a query field holds every run's other facts but not its
status. Filling it must not cost a re-parse of every lineage file (dataset graphs, lineage,
metric JSON), so this walks each record's top-level field numbers, skips every other event
unread, and decodes only the ``RunInfo`` of the last run event of each file.

The answer is ``read_lineage(run_dir)["run"]`` by the reader's merge rules (files oldest
first; a file holding a train lineage, a train begin, a dataset graph or a run event starts a
new training; the last run event of a file wins); damaged records aside, which the reader
drops after decoding them and this skim cannot always see.
"""

from __future__ import annotations

import os
from typing import Any

from google.protobuf.message import DecodeError

from trainledger.lineage.messages import run_dict
from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.storage import list_lineage_files, read_records, read_varint

__all__ = ["read_run", "read_status"]

# LineageEvent's oneof ``what`` (lineage.proto): the kinds that start a new training, the
# evaluation, which only updates the current one, and the members that are not lineage
_TRAIN, _EVAL, _GRAPH, _RUN, _TRAIN_BEGIN = 6, 7, 9, 100, 101
_VERSION, _USER_INFO = 3, 10
_STARTS_TRAINING = frozenset({_TRAIN, _GRAPH, _RUN, _TRAIN_BEGIN})
_LENGTH_DELIMITED, _VARINT, _FIXED64, _FIXED32 = 2, 0, 1, 5


def _kind(payload: bytes) -> tuple[int | None, bytes]:
    """(the event's oneof field number, its bytes), reading only top-level tags and lengths."""
    kind, body, pos = None, b"", 0
    while pos < len(payload):
        tag, pos = read_varint(payload, pos)
        field, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            _, pos = read_varint(payload, pos)
        elif wire == _FIXED64:
            pos += 8
        elif wire == _FIXED32:
            pos += 4
        elif wire == _LENGTH_DELIMITED:
            size, pos = read_varint(payload, pos)
            if field in (_TRAIN, _EVAL, _GRAPH, _RUN, _TRAIN_BEGIN):
                kind, body = field, payload[pos : pos + size]
            elif field in (_VERSION, _USER_INFO):  # the oneof's last member wins
                kind, body = None, b""
            pos += size
        else:
            raise ValueError(f"unexpected wire type {wire}")
        if pos > len(payload):
            raise ValueError("truncated field")
    return kind, body


def _file_run(path: str) -> tuple[bool, dict[str, Any] | None]:
    """(whether the file starts a new training, the record of its last run event)."""
    payloads, _ = read_records(path)
    kinds: set[int] = set()
    last_run: bytes | None = None
    for payload in payloads:
        try:
            kind, body = _kind(payload)
        except ValueError:
            continue  # a damaged record: the reader skips it too
        if kind is not None:
            kinds.add(kind)
        if kind == _RUN:
            last_run = body
    run = None
    if last_run is not None:
        try:
            run = run_dict(pb.RunInfo.FromString(last_run), [])
        except (DecodeError, ValueError, TypeError, RecursionError):
            kinds.discard(_RUN)  # the reader leaves an unreadable run event out
    return bool(kinds & _STARTS_TRAINING), run


def read_status(run_dir: str | os.PathLike[str]) -> str | None:
    """The status of the run in ``run_dir`` (running, finished, failed, stopped), or None
    when its lineage holds no run record (MindSpore's files, or none at all)."""
    run = read_run(run_dir)
    status = None if run is None else run.get("status")
    return status if isinstance(status, str) else None


def read_run(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The run record of the run in ``run_dir`` (``read_lineage(run_dir)["run"]``), or None
    when its lineage holds none."""
    run = None
    for item in list_lineage_files(run_dir):
        starts, file_run = _file_run(item.path)
        if starts:
            run = file_run
    return run
