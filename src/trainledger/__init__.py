"""trainledger: lineage of PyTorch training runs.

The public names are re-exported lazily (PEP 562) so that ``import trainledger`` and the query
engine work without torch installed: torch is imported only when a torch-facing name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # training host
    "Callback": "trainledger.run.callback",
    "RunContext": "trainledger.run.callback",
    "CallbackManager": "trainledger.run.manager",
    "Model": "trainledger.run.model",
    "RecModel": "trainledger.run.rec_model",
    # streaming sources for RecModel.online_train
    "QueueStream": "trainledger.data",
    "FileTailSource": "trainledger.data",
    "metrics": "trainledger.run.metrics",
    # built-in callbacks
    "LossMonitor": "trainledger.callbacks.monitors",
    "TimeMonitor": "trainledger.callbacks.monitors",
    "ProgressBar": "trainledger.callbacks.progress",
    "EarlyStopping": "trainledger.callbacks.early_stopping",
    "LambdaCallback": "trainledger.callbacks.lambda_callback",
    "History": "trainledger.callbacks.history",
    "SummaryCollector": "trainledger.callbacks.summary_collector",
    "TrainLineage": "trainledger.callbacks.lineage",
    "EvalLineage": "trainledger.callbacks.lineage",
    "ModelCheckpoint": "trainledger.callbacks.checkpoint",
    # summaries
    "SummaryRecord": "trainledger.summary.record",
    # checkpoints
    "CheckpointConfig": "trainledger.checkpoint.config",
    "CheckpointManager": "trainledger.checkpoint.manager",
    "save_checkpoint": "trainledger.checkpoint.api",
    "load_checkpoint": "trainledger.checkpoint.api",
    "load_param_into_net": "trainledger.checkpoint.api",
    # lineage queries
    "get_summary_lineage": "trainledger.query.api",
    "filter_summary_lineage": "trainledger.query.api",
    "lineage_table": "trainledger.query.table",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'trainledger' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if name == "metrics" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.callbacks.checkpoint import ModelCheckpoint
    from trainledger.callbacks.early_stopping import EarlyStopping
    from trainledger.callbacks.history import History
    from trainledger.callbacks.lambda_callback import LambdaCallback
    from trainledger.callbacks.lineage import EvalLineage, TrainLineage
    from trainledger.callbacks.monitors import LossMonitor, TimeMonitor
    from trainledger.callbacks.progress import ProgressBar
    from trainledger.callbacks.summary_collector import SummaryCollector
    from trainledger.checkpoint.api import load_checkpoint, load_param_into_net, save_checkpoint
    from trainledger.checkpoint.config import CheckpointConfig
    from trainledger.checkpoint.manager import CheckpointManager
    from trainledger.data import FileTailSource, QueueStream
    from trainledger.query.api import filter_summary_lineage, get_summary_lineage
    from trainledger.query.table import lineage_table
    from trainledger.run import metrics
    from trainledger.run.callback import Callback, RunContext
    from trainledger.run.manager import CallbackManager
    from trainledger.run.model import Model
    from trainledger.run.rec_model import RecModel
    from trainledger.summary.record import SummaryRecord
