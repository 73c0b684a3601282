"""A run's weight digests in its lineage: written once each as ``weights`` events (field 102,
which MindInsight skips), read back for the family of runs (docs/lineage.md, "Across runs").

Why events of their own rather than fields of the run snapshot: a snapshot is written again at
every epoch end, and a network's digests (about 25 bytes a tensor) or a checkpoint list's
would be repeated in each; here each set is appended once. Why a reader of its own: the index
parses every run's lineage at every change, and only the family needs these.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.storage import Digests, list_lineage_files, read_records

__all__ = ["RunWeights", "weights_event", "read_weights"]


def _digests(msg: pb.TensorDigests) -> Digests | None:
    return Digests.from_message(msg) if msg.kind else None


def weights_event(
    *,
    initial: Digests | None = None,
    loaded: Sequence[tuple[str, Digests, float]] = (),
    checkpoint: tuple[str, int | None, Digests] | None = None,
    evaluated: Digests | None = None,
    wall_time: float | None = None,
) -> pb.LineageEvent:
    """One ``weights`` event: a network's digests at train begin with the files it loaded, a
    checkpoint's (its path, global step and tensors), or an evaluation's network."""
    event = pb.LineageEvent(wall_time=time.time() if wall_time is None else wall_time)
    info = event.weights
    info.SetInParent()
    if initial is not None:
        initial.to_message(info.initial)
    for path, digests, at in loaded:
        added = info.loaded.add(path=path, time=at)
        digests.to_message(added.tensors)
    if checkpoint is not None:
        path, step, digests = checkpoint
        info.checkpoint = path
        if step is not None:
            info.step = int(step)
        digests.to_message(info.checkpoint_tensors)
    if evaluated is not None:
        evaluated.to_message(info.evaluated)
    return event


@dataclass
class RunWeights:
    """What a run's lineage says of its weights: the network at its first train begin, the
    files its processes loaded, its checkpoints (path -> (step, digests)) and its
    evaluations' networks."""

    initial: Digests | None = None
    loaded: list[tuple[str, Digests]] = field(default_factory=list)
    checkpoints: dict[str, tuple[int | None, Digests]] = field(default_factory=dict)
    evaluated: list[Digests] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.initial or self.loaded or self.checkpoints or self.evaluated)


def read_weights(run_dir: str | os.PathLike[str]) -> RunWeights:
    """The weight digests a run directory's lineage files hold (oldest file first: a resumed
    run's initial weights are its first process's). Damaged records are skipped."""
    out = RunWeights()
    for lineage in list_lineage_files(run_dir):  # (oldest first)
        try:
            with open(lineage.path, "rb") as fh:
                if _TAG not in fh.read():  # (most files: the index reads every run's)
                    continue
        except OSError:
            continue
        payloads, _ = read_records(lineage.path)
        for payload in payloads:
            _take(out, payload)
    return out


#: field 102's tag (``weights``): a file without these two bytes holds no weights event
_TAG = b"\xb2\x06"


def _take(out: RunWeights, payload: bytes) -> None:
    if _TAG not in payload[:32]:  # (after the time: the other events skip fast)
        return
    event = pb.LineageEvent()
    try:
        event.ParseFromString(payload)
    except DecodeError:
        return
    if event.WhichOneof("what") != "weights":
        return
    info = event.weights
    if out.initial is None and info.HasField("initial"):
        out.initial = _digests(info.initial)
    for loaded in info.loaded:
        found = _digests(loaded.tensors)
        if found is not None and loaded.path:
            out.loaded.append((loaded.path, found))
    if info.checkpoint and (found := _digests(info.checkpoint_tensors)) is not None:
        out.checkpoints[info.checkpoint] = (info.step if info.HasField("step") else None, found)
    if info.HasField("evaluated") and (found := _digests(info.evaluated)) is not None:
        out.evaluated.append(found)
