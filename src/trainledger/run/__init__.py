"""The training host: callback protocol, Model, RecModel, the step loop they share, metrics,
and the loss rule (``loss_value``). Depends on nothing else in the package; the callbacks Model
adds by itself (the progress bar) are registered through ``add_default_callback``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Callback": "trainledger.run.callback",
    "CallbackParams": "trainledger.run.callback",
    "HOOKS": "trainledger.run.callback",
    "RunContext": "trainledger.run.callback",
    "TRAIN_TO_OLD": "trainledger.run.callback",
    "CallbackManager": "trainledger.run.callback_manager",
    "add_default_callback": "trainledger.run.defaults",
    "loss_value": "trainledger.run.outputs",
    "metrics": "trainledger.run.metrics",
    "Model": "trainledger.run.model",
    "RecModel": "trainledger.run.rec_model",
    "StepLoop": "trainledger.run.steploop",
}

__all__ = [
    "add_default_callback",
    "Callback",
    "CallbackManager",
    "CallbackParams",
    "HOOKS",
    "loss_value",
    "metrics",
    "Model",
    "RecModel",
    "RunContext",
    "StepLoop",
    "TRAIN_TO_OLD",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.run import metrics
    from trainledger.run.callback import HOOKS, TRAIN_TO_OLD, Callback, CallbackParams, RunContext
    from trainledger.run.callback_manager import CallbackManager
    from trainledger.run.defaults import add_default_callback
    from trainledger.run.model import Model
    from trainledger.run.outputs import loss_value
    from trainledger.run.rec_model import RecModel
    from trainledger.run.steploop import StepLoop
