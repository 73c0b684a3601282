"""trainledger: lineage of PyTorch training runs.

The public names are re-exported lazily (PEP 562) from the packages that define them, so that
``import trainledger`` and the query engine work without torch installed: torch is imported only
when a torch-facing name is used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from trainledger.checkpoint import set_reference_resolver
from trainledger.lazy import lazy_exports
from trainledger.run import Callback, add_default_callback
from trainledger.version import __version__

# public name -> the package that exports it
_EXPORTS: dict[str, str] = {
    # training host
    "Callback": "trainledger.run",
    "RunContext": "trainledger.run",
    "CallbackManager": "trainledger.run",
    "Model": "trainledger.run",
    "RecModel": "trainledger.run",
    "DynamicLossScaleManager": "trainledger.run",
    "FixedLossScaleManager": "trainledger.run",
    "metrics": "trainledger.run.metrics",
    # streaming sources for RecModel.online_train
    "QueueStream": "trainledger.data",
    "FileTailSource": "trainledger.data",
    # built-in callbacks
    "LossMonitor": "trainledger.callbacks",
    "TimeMonitor": "trainledger.callbacks",
    "ProgressBar": "trainledger.callbacks",
    "EarlyStopping": "trainledger.callbacks",
    "LambdaCallback": "trainledger.callbacks",
    "History": "trainledger.callbacks",
    "SummaryCollector": "trainledger.callbacks",
    "SummaryLandscape": "trainledger.callbacks",
    "TrainLineage": "trainledger.callbacks",
    "EvalLineage": "trainledger.callbacks",
    "ModelCheckpoint": "trainledger.callbacks",
    # summaries
    "SummaryRecord": "trainledger.summary",
    # checkpoints
    "CheckpointConfig": "trainledger.checkpoint",
    "CheckpointManager": "trainledger.checkpoint",
    "save_checkpoint": "trainledger.checkpoint",
    "load_checkpoint": "trainledger.checkpoint",
    "load_distributed_checkpoint": "trainledger.checkpoint",
    "load_param_into_net": "trainledger.checkpoint",
    # lineage queries
    "get_summary_lineage": "trainledger.query",
    "filter_summary_lineage": "trainledger.query",
    "run_family": "trainledger.query",
    "lineage_table": "trainledger.query",
    # named models
    "register_model": "trainledger.query",
    "set_model_alias": "trainledger.query",
    "resolve_model": "trainledger.query",
    "model_history": "trainledger.query",
    "list_models": "trainledger.query",
    # other trainers
    "track": "trainledger.integrations",
}

__all__ = [
    "__version__",
    "Callback",
    "CallbackManager",
    "CheckpointConfig",
    "CheckpointManager",
    "EarlyStopping",
    "EvalLineage",
    "FileTailSource",
    "filter_summary_lineage",
    "run_family",
    "get_summary_lineage",
    "History",
    "LambdaCallback",
    "lineage_table",
    "list_models",
    "load_checkpoint",
    "load_distributed_checkpoint",
    "load_param_into_net",
    "LossMonitor",
    "metrics",
    "model_history",
    "DynamicLossScaleManager",
    "FixedLossScaleManager",
    "Model",
    "ModelCheckpoint",
    "ProgressBar",
    "QueueStream",
    "RecModel",
    "register_model",
    "resolve_model",
    "RunContext",
    "save_checkpoint",
    "set_model_alias",
    "SummaryCollector",
    "SummaryLandscape",
    "SummaryRecord",
    "TimeMonitor",
    "TrainLineage",
    "track",
]

# names that import an optional dependency only when called: checked when imported
_NEEDS: dict[str, str] = {"lineage_table": "pandas"}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), _NEEDS)


def _progress_bar(given: list[Callback]) -> Callback | None:
    """The default ``ProgressBar`` of a run watched on a terminal, unless one was given.

    Registered here, in the package every ``trainledger.*`` import loads first, so that both
    ``from trainledger import Model`` and ``from trainledger.run import Model`` show it; the
    import is inside because callbacks load torch, which ``import trainledger`` must not.
    """
    from trainledger.callbacks import ProgressBar

    return None if any(isinstance(cb, ProgressBar) for cb in given) else ProgressBar()


add_default_callback(_progress_bar)


def _model_checkpoint(ref: str, base: str | os.PathLike[str]) -> str:
    """The file a named model's reference names, for ``load_checkpoint(ref, base=BASE)``:
    registered here, as the progress bar is, because the checkpoint package may not import
    the query package that keeps the registry (``checkpoint/references.py``)."""
    from trainledger.query import model_checkpoint

    return model_checkpoint(base, ref)


set_reference_resolver(_model_checkpoint)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.callbacks import (
        EarlyStopping,
        EvalLineage,
        History,
        LambdaCallback,
        LossMonitor,
        ModelCheckpoint,
        ProgressBar,
        SummaryCollector,
        SummaryLandscape,
        TimeMonitor,
        TrainLineage,
    )
    from trainledger.checkpoint import (
        CheckpointConfig,
        CheckpointManager,
        load_checkpoint,
        load_distributed_checkpoint,
        load_param_into_net,
        save_checkpoint,
    )
    from trainledger.data import FileTailSource, QueueStream
    from trainledger.integrations import track
    from trainledger.query import (
        filter_summary_lineage,
        get_summary_lineage,
        lineage_table,
        list_models,
        model_history,
        register_model,
        resolve_model,
        run_family,
        set_model_alias,
    )
    from trainledger.run import (
        CallbackManager,
        DynamicLossScaleManager,
        FixedLossScaleManager,
        Model,
        RecModel,
        RunContext,
        metrics,
    )
    from trainledger.summary import SummaryRecord
