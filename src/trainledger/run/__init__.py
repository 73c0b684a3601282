"""The training host: callback protocol, Model, RecModel, metrics. Depends on nothing else in
the package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "call_network": "trainledger.run.batches",
    "extract_loss": "trainledger.run.outputs",
    "split_batch": "trainledger.run.batches",
    "to_device": "trainledger.run.batches",
    "HostCopy": "trainledger.run.host_copy",
    "to_host": "trainledger.run.host_copy",
    "Callback": "trainledger.run.callback",
    "CallbackParams": "trainledger.run.callback",
    "HOOKS": "trainledger.run.callback",
    "RunContext": "trainledger.run.callback",
    "TRAIN_TO_OLD": "trainledger.run.callback",
    "CallbackManager": "trainledger.run.callback_manager",
    "finish_uploads": "trainledger.run.callback_manager",
    "add_default_callback": "trainledger.run.defaults",
    "device_memory": "trainledger.run.device",
    "device_of": "trainledger.run.device",
    "barrier": "trainledger.run.distributed",
    "is_main_rank": "trainledger.run.distributed",
    "rank_and_world": "trainledger.run.distributed",
    "LossReadout": "trainledger.run.loss_readout",
    "DynamicLossScaleManager": "trainledger.run.loss_scale",
    "FixedLossScaleManager": "trainledger.run.loss_scale",
    "metrics": "trainledger.run.metrics",
    "Model": "trainledger.run.model",
    "loss_of": "trainledger.run.outputs",
    "loss_value": "trainledger.run.outputs",
    "monitored_value": "trainledger.run.outputs",
    "RecModel": "trainledger.run.rec_model",
    "StepLoop": "trainledger.run.steploop",
    "stdout_is_tty": "trainledger.run.defaults",
}

__all__ = [
    "add_default_callback",
    "barrier",
    "call_network",
    "Callback",
    "CallbackManager",
    "device_memory",
    "device_of",
    "CallbackParams",
    "DynamicLossScaleManager",
    "extract_loss",
    "FixedLossScaleManager",
    "finish_uploads",
    "HOOKS",
    "is_main_rank",
    "LossReadout",
    "loss_of",
    "loss_value",
    "monitored_value",
    "metrics",
    "Model",
    "RecModel",
    "rank_and_world",
    "RunContext",
    "split_batch",
    "StepLoop",
    "stdout_is_tty",
    "to_device",
    "to_host",
    "HostCopy",
    "TRAIN_TO_OLD",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.run import metrics
    from trainledger.run.batches import call_network, split_batch, to_device
    from trainledger.run.callback import HOOKS, TRAIN_TO_OLD, Callback, CallbackParams, RunContext
    from trainledger.run.callback_manager import CallbackManager, finish_uploads
    from trainledger.run.defaults import add_default_callback, stdout_is_tty
    from trainledger.run.device import device_memory, device_of
    from trainledger.run.distributed import barrier, is_main_rank, rank_and_world
    from trainledger.run.host_copy import HostCopy, to_host
    from trainledger.run.loss_readout import LossReadout
    from trainledger.run.loss_scale import DynamicLossScaleManager, FixedLossScaleManager
    from trainledger.run.model import Model
    from trainledger.run.outputs import extract_loss, loss_of, loss_value, monitored_value
    from trainledger.run.rec_model import RecModel
    from trainledger.run.steploop import StepLoop
