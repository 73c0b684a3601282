"""``HParamsSession``: a run's entry in TensorBoard's HParams dashboard.

The dashboard lists one session per run directory: its hyper-parameters (written when the
run starts) and its status (when it ends); its metric values are the last points of the
run's scalars. The hyper-parameters are lineage's own (optimizer, initial learning rate,
network, loss function, batch size, epochs, and the optimizer's and scheduler's settings as
``optimizer/<name>`` and ``scheduler/<name>``, read from cb_params with the same analyzers as
``TrainLineage``) followed by the user's fields.

Each write is a small event file of its own (``trainledger.summary.write_hparams_events``).
TensorBoard reading a run live polls only its newest event file, so a session file must not
be newer than a scalar file still being written: with ``live=True`` (a host that opens its
summary file after ``on_train_begin``, as the integrations do) the start is written at
``on_train_begin`` and the end by ``finish()``; with ``live=False`` (``SummaryCollector``,
whose file is already open) both are written by ``finish()``, which the owner calls after
closing its summary file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from trainledger.lineage import (
    configured,
    loss_function_name,
    network_name,
    optimizer_name,
    run_status,
)
from trainledger.run import Callback, CallbackParams, RunContext
from trainledger.summary import session_end_event, session_start_event, write_hparams_events

__all__ = ["HParamsSession", "session_hparams"]

_log = logging.getLogger("trainledger.summary")


def session_hparams(
    params: Mapping[str, Any], user: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Lineage's hyper-parameters from cb_params, then the user's fields."""
    network = params.get("network") or params.get("train_network")
    dataset = params.get("train_dataset")
    batch_size = params.get("batch_size") or getattr(dataset, "batch_size", None)
    setup = configured(params.get("optimizer"), params.get("lr_scheduler"))
    lineage: dict[str, Any] = {
        "optimizer": optimizer_name(params.get("optimizer")),
        "learning_rate": setup.learning_rate,
        "network": network_name(network),
        "loss_function": loss_function_name(params.get("loss_fn"), network),
        "batch_size": batch_size if isinstance(batch_size, int) else None,
        "epoch": params.get("epoch_num") if isinstance(params.get("epoch_num"), int) else None,
    }
    settings = {
        **{f"optimizer/{k}": v for k, v in setup.optimizer.items()},
        **{f"scheduler/{k}": v for k, v in setup.scheduler.items()},
    }
    return {**{k: v for k, v in lineage.items() if v is not None}, **settings, **dict(user or {})}


class HParamsSession(Callback):
    """Write the run's HParams session (see the module docstring).

    Args:
        log_dir: the run directory.
        user_hparams: flat user fields shown after lineage's hyper-parameters.
        live: write the session start at ``on_train_begin`` (True) or with the end (False).
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        user_hparams: Mapping[str, Any] | None = None,
        *,
        live: bool = True,
    ) -> None:
        self.log_dir = os.fspath(log_dir)
        self.user_hparams = dict(user_hparams or {})
        self.live = live
        self._start: Any = None
        self._status: str | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._status = None
        self._guard(self._begin, params)

    def _begin(self, params: CallbackParams) -> None:
        start = session_start_event(
            session_hparams(params, self.user_hparams), start_time=time.time()
        )
        self._start = start
        if self.live:
            write_hparams_events(self.log_dir, start)
            self._start = None

    def on_train_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._status = run_status(params.get("exception"), params.get("stop_reason"))

    def finish(self, exception: object = None) -> None:
        """Write the session end (and a start not yet written); call after the summary file
        is closed. Does nothing when no run began or the run was already finished.
        ``exception``: what ended the run when ``on_train_end`` did not run (else ignored)."""
        start, self._start = self._start, None
        status, self._status = self._status, None
        if status is None:
            if start is None:
                return
            status = run_status(exception if isinstance(exception, BaseException) else None, None)
        events = [e for e in (start,) if e is not None] + [session_end_event(status)]
        self._guard(lambda: write_hparams_events(self.log_dir, *events))

    def _guard(self, fn: Any, *args: Any) -> None:
        """HParams data is a view for TensorBoard: failing to write it never stops a run."""
        try:
            fn(*args)
        except Exception as exc:
            _log.error("writing TensorBoard hparams data to %s failed: %s", self.log_dir, exc)
