"""Checks of the host's arguments: a clear ``ValueError`` saying what was expected."""

from __future__ import annotations

from typing import Any

import torch

from trainledger.run.amp import BOOST_LEVELS
from trainledger.run.loss_scale import LossScaleManager

__all__ = [
    "check_loss_scale_args",
    "check_frequency",
    "check_int",
    "check_model_args",
    "check_train_args",
]


def check_int(value: Any, name: str, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} expected an int >= {minimum}, received: {value!r}")


def check_frequency(freq: Any) -> None:
    if isinstance(freq, list) and all(isinstance(f, int) and f >= 1 for f in freq):
        return
    if isinstance(freq, int) and not isinstance(freq, bool) and freq >= 1:
        return
    raise ValueError(
        f"valid_frequency expected an int >= 1 or a list of epoch numbers, received: {freq!r}"
    )


def check_train_args(epoch: Any, initial_epoch: Any, sink_size: Any) -> None:
    """``Model.train``/``fit``'s epoch range and sink size."""
    check_int(epoch, "epoch", 1)
    check_int(initial_epoch, "initial_epoch", 0)
    if initial_epoch >= epoch:
        raise ValueError(
            f"initial_epoch expected a value below epoch ({epoch}), received: {initial_epoch}"
        )
    if (
        not isinstance(sink_size, int)
        or isinstance(sink_size, bool)
        or sink_size == 0
        or sink_size < -1
    ):
        raise ValueError(f"sink_size expected -1 or a positive int, received: {sink_size!r}")


def check_loss_scale_args(manager: Any, keep_batchnorm_fp32: Any, optimizer: Any) -> None:
    """``Model``'s MindSpore keyword arguments ``loss_scale_manager`` and
    ``keep_batchnorm_fp32``: a TypeError/ValueError naming the one at fault."""
    if manager is not None:
        if not isinstance(manager, LossScaleManager):
            raise TypeError(
                "Model loss_scale_manager expected a FixedLossScaleManager or "
                f"DynamicLossScaleManager, received: {type(manager).__name__}"
            )
        if optimizer is None:
            raise ValueError(
                "Model loss_scale_manager expected an optimizer to scale the updates of, "
                "received: optimizer=None"
            )
    if keep_batchnorm_fp32 is not None and not isinstance(keep_batchnorm_fp32, bool):
        raise TypeError(
            "Model keep_batchnorm_fp32 expected a bool, received: "
            f"{type(keep_batchnorm_fp32).__name__}"
        )


def check_model_args(
    network: Any,
    loss_fn: Any,
    optimizer: Any,
    eval_network: Any,
    eval_indexes: Any,
    boost_level: Any,
) -> None:
    """``Model``'s constructor arguments: a TypeError/ValueError naming the one at fault."""
    if not isinstance(network, torch.nn.Module):
        raise TypeError(
            f"Model network expected a torch.nn.Module, received: {type(network).__name__}"
        )
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"Model loss_fn expected a callable, received: {type(loss_fn).__name__}")
    if optimizer is not None and not (
        hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")
    ):
        raise TypeError(
            "Model optimizer expected a torch.optim.Optimizer, "
            f"received: {type(optimizer).__name__}"
        )
    if eval_network is not None and not isinstance(eval_network, torch.nn.Module):
        raise TypeError(
            "Model eval_network expected a torch.nn.Module, "
            f"received: {type(eval_network).__name__}"
        )
    if eval_indexes is not None:
        if eval_network is None:
            raise ValueError("Model eval_indexes expected an eval_network, received: None")
        if (
            not isinstance(eval_indexes, (list, tuple))
            or len(eval_indexes) != 3
            or not all(isinstance(i, int) for i in eval_indexes)
        ):
            raise ValueError(
                "Model eval_indexes expected 3 ints (loss, predictions, label positions), "
                f"received: {eval_indexes!r}"
            )
    if boost_level not in BOOST_LEVELS:
        raise ValueError(
            f"Model boost_level expected one of {', '.join(BOOST_LEVELS)}, "
            f"received: {boost_level!r}"
        )


def check_sink_args(dataset_sink_mode: Any, sink_size: Any) -> None:
    """MindSpore's checks of ``RecModel.online_train``'s sink arguments, its error types and
    sentences first: ``dataset_sink_mode`` a bool; ``sink_size`` a positive int, checked only
    in sink mode (MindSpore ignores it otherwise)."""
    if not isinstance(dataset_sink_mode, bool):
        raise TypeError(
            f"The input value must be a bool, but got {type(dataset_sink_mode).__name__}. "
            f"dataset_sink_mode expected True or False, received: {dataset_sink_mode!r}"
        )
    if not dataset_sink_mode:
        return
    detail = f" sink_size expected a positive int, received: {sink_size!r}"
    if isinstance(sink_size, bool) or (isinstance(sink_size, int) and sink_size < 1):
        error = TypeError if isinstance(sink_size, bool) else ValueError
        raise error(
            "The input value must be int and must > 0, but got "
            f"'{sink_size}' with type '{type(sink_size).__name__}'." + detail
        )
    if not isinstance(sink_size, int):
        raise TypeError(
            f"The input value must be int, but got '{type(sink_size).__name__}'." + detail
        )
