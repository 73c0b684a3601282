"""What ``TrainLineage`` and ``EvalLineage`` record of a run's weights: the network's digests
when training (or an evaluation) begins with the files the process loaded, and each
checkpoint's digests once it is saved (docs/lineage.md, "Across runs").

Why apart from the lineage callbacks: digesting is its own cost with its own budget (one host
copy and one crc32c pass over the weights at train begin, about 0.3 s per GiB at most on one
core; nothing per step), and a failure here must never cost the run its lineage: each part
logs and records nothing instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from trainledger.checkpoint import (
    file_digests,
    is_fsdp,
    network_digests,
    take_loads,
    unwrap_network,
)
from trainledger.lineage import lineage_pb2 as pb
from trainledger.lineage import weights_event
from trainledger.storage import public_path

__all__ = ["WeightNotes", "network_event", "begin_events"]

_log = logging.getLogger(__name__)


def network_event(network: Any, *, evaluated: bool = False) -> list[pb.LineageEvent]:
    """The ``weights`` event of ``network`` now (with the process's loads at train begin);
    none when it is not a torch network or cannot be read (logged: the run's lineage
    matters more than its digests)."""
    try:
        if hasattr(network, "modules") and is_fsdp(unwrap_network(network)):
            return []  # gathering its state is a collective the other ranks do not join
        digests = network_digests(network)
        if evaluated:
            return [weights_event(evaluated=digests)] if digests is not None else []
        loads = take_loads()
        if digests is None and not loads:
            return []
        return [weights_event(initial=digests, loaded=loads)]
    except Exception as exc:  # noqa: BLE001 - advice, as the module doc says
        _log.warning("could not record the network's weight digests: %s", exc)
        return []


def begin_events(params: Any) -> list[pb.LineageEvent]:
    """``network_event`` of the training's network, once per training: every lineage writer
    of the run (``TrainLineage``, ``SummaryCollector``'s) records the same event, from one
    host copy of each tensor (kept in the cb_params)."""
    cached = params.get("weights_at_begin")
    if cached is None:
        network = params.get("network") or params.get("train_network")
        cached = params["weights_at_begin"] = network_event(network)
    return list(cached)


class WeightNotes:
    """The checkpoints of one run whose digests are already in its lineage."""

    def __init__(self) -> None:
        self._done: set[str] = set()

    def checkpoint_events(self, checkpoints: Mapping[str, int | None]) -> list[pb.LineageEvent]:
        """``weights`` events of the checkpoints (local path -> global step) not recorded
        yet, each from its header (a file gone or unreadable is left for the next call)."""
        events = []
        for path, step in checkpoints.items():
            if path in self._done or not os.path.isfile(path):
                continue
            digests = file_digests(path)
            self._done.add(path)
            if digests is not None:
                events.append(weights_event(checkpoint=(public_path(path), step, digests)))
        return events
