"""Thin adapters from RunContext to the stores (summary, lineage, checkpoint) and the built-in
monitors: one module per concern (``monitors`` holds LossMonitor and TimeMonitor, ``lineage``
TrainLineage and EvalLineage; ``summary_options``/``collected_values``/``summary_lineage`` are
SummaryCollector's argument rules, stateless pieces and lineage callbacks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ModelCheckpoint": "trainledger.callbacks.checkpoint",
    "EarlyStopping": "trainledger.callbacks.early_stopping",
    "History": "trainledger.callbacks.history",
    "HParamsSession": "trainledger.callbacks.hparams_session",
    "LambdaCallback": "trainledger.callbacks.lambda_callback",
    "EvalLineage": "trainledger.callbacks.lineage",
    "TrainLineage": "trainledger.callbacks.lineage",
    "LossMonitor": "trainledger.callbacks.monitors",
    "TimeMonitor": "trainledger.callbacks.monitors",
    "ProgressBar": "trainledger.callbacks.progress",
    "SummaryCollector": "trainledger.callbacks.summary_collector",
    "SummaryLandscape": "trainledger.callbacks.landscape",
}

__all__ = [
    "EarlyStopping",
    "EvalLineage",
    "History",
    "HParamsSession",
    "LambdaCallback",
    "LossMonitor",
    "ModelCheckpoint",
    "ProgressBar",
    "SummaryCollector",
    "SummaryLandscape",
    "TimeMonitor",
    "TrainLineage",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.callbacks.checkpoint import ModelCheckpoint
    from trainledger.callbacks.early_stopping import EarlyStopping
    from trainledger.callbacks.history import History
    from trainledger.callbacks.hparams_session import HParamsSession
    from trainledger.callbacks.lambda_callback import LambdaCallback
    from trainledger.callbacks.landscape import SummaryLandscape
    from trainledger.callbacks.lineage import EvalLineage, TrainLineage
    from trainledger.callbacks.monitors import LossMonitor, TimeMonitor
    from trainledger.callbacks.progress import ProgressBar
    from trainledger.callbacks.summary_collector import SummaryCollector
