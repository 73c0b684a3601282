"""``NonFiniteGuard``: which of a run's checkpoints may be kept once its training loss stopped
being finite.

Why its own module: a checkpoint whose parameters were updated from a NaN/inf loss must never
be published or kept, and on a GPU the loss is read ``LAG`` steps late (``cb_params.
loss_readout``), so saves made in that window are found out only later. ``ModelCheckpoint``
decides when to save; this guard decides which saved files survive the bad step.
"""

from __future__ import annotations

import logging
from math import isfinite
from pathlib import Path
from typing import Any

from trainledger.checkpoint import CheckpointManager
from trainledger.run import LossReadout, loss_value

__all__ = ["NonFiniteGuard"]

_log = logging.getLogger("trainledger.checkpoint")


class NonFiniteGuard:
    """The files one run committed, and the first step whose loss was not finite."""

    def __init__(self, readout: LossReadout | None) -> None:
        self.readout = readout  # a device run's lagged losses (None on the CPU)
        self.kept: list[tuple[int, Path]] = []  # (step, file) committed by this run

    def bad_step(self, cb: Any) -> int | None:
        """The first step whose training loss was not finite, as far as read: a device run's
        lagged read, or on the CPU the current step's loss (a read that costs no stall)."""
        if self.readout is None:
            loss = loss_value(cb.get("net_outputs")) if cb is not None else None
            return None if loss is None or isfinite(loss) else int(cb.get("cur_step_num") or 0)
        bad = self.readout.first_nonfinite
        return None if bad is None else int(bad[0])

    def drop_after_bad_loss(self, cb: Any, manager: CheckpointManager) -> bool:
        """Delete the files taken at or after a non-finite loss's step (saved before the lagged
        read found it); whether any was (``kept`` then ends with the newest file left)."""
        bad = self.bad_step(cb)
        if bad is None:
            return False
        dropped = [path for step, path in self.kept if step >= bad]
        for path in dropped:
            manager.remove_ckpoint_file(path)
            _log.warning("removed %s: taken after the non-finite loss of step %d", path, bad)
        self.kept = [(step, path) for step, path in self.kept if step < bad]
        return bool(dropped)
