"""One training step of ``Model`` (and ``RecModel``): the batch to the network's device, the
forward pass and the loss (inside autocast with amp), the backward pass and the update.

Why its own module: the step is the per-step hot path and the part the GPU work changes (host
syncs, pinned copies, compiled steps); the run's phases, callbacks and evaluation are
``run/model.py``'s. ``TrainStep`` is a mixin of ``Model``: ``StepLoop`` is given its bound
methods, and ``RecModel`` overrides ``_loss`` to keep each step's predictions and labels.
"""

from __future__ import annotations

from typing import Any

import torch

from trainledger.run.amp import AmpPolicy
from trainledger.run.batches import (
    call_network,
    checked_call,
    cpu_tensors_only,
    split_batch,
    to_device,
)
from trainledger.run.device import device_of
from trainledger.run.loss_scale import LossScaleManager, scaled_step
from trainledger.run.outputs import extract_loss
from trainledger.run.steploop import InlineParts

__all__ = ["TrainStep"]


class TrainStep:
    """The step of a model that holds these attributes (``Model.__init__`` sets them)."""

    _network: torch.nn.Module
    _train_network: torch.nn.Module
    _loss_fn: Any
    _optimizer: Any
    _amp_level: str
    _amp: AmpPolicy
    _loss_scale_manager: LossScaleManager | None
    _device: torch.device
    _on_cpu: bool
    _steps_itself: bool
    _check_next_batch: bool

    def _inline_parts(self) -> InlineParts | None:
        """What a plain CPU step needs, when ``StepLoop`` may run it inline: a loss_fn and an
        optimizer, no amp, and the run's first batch already checked by ``_train_step``."""
        if (
            self._on_cpu
            and self._loss_fn is not None
            and self._optimizer is not None
            and not self._amp.enabled
            and self._amp.scaler is None
            and not self._check_next_batch
        ):
            return self._network, self._loss_fn, self._optimizer
        return None

    def _prepare_run(self) -> None:
        """Pick up the network's current device (it may have moved since __init__)."""
        device = device_of(self._network)
        if device != self._device:
            self._device = device
            self._on_cpu = device.type == "cpu"
            self._amp = AmpPolicy(self._amp_level, device, self._loss_scale_manager)
        self._check_next_batch = True

    def _move_to_device(self, batch: Any) -> Any:
        """``batch`` with its tensors (and numpy arrays) on the network's device."""
        if self._on_cpu and cpu_tensors_only(batch):  # the fast path: nothing to move
            return batch
        return to_device(batch, self._device, self._device.type == "cuda")

    def _train_step(self, batch: Any) -> Any:
        """One optimisation step on a batch already on the device; returns ``net_outputs``
        (the loss tensor, or the network's tuple whose first element is the loss)."""
        if self._steps_itself:
            return extract_loss(call_network(self._train_network, batch))[1]
        optimizer = self._optimizer
        # before the forward, as a hand loop: old gradients freed before new activations (faster
        # for small networks); no arguments (the optimizer's default), as a hand loop calls it: a
        # keyword argument costs ~0.7 µs a step through torch's wrappers of zero_grad
        optimizer.zero_grad()
        if self._amp.enabled:
            with self._amp.autocast():
                loss, net_outputs = self._forward_loss(batch)
        else:
            loss, net_outputs = self._forward_loss(batch)
        scaler = self._amp.scaler
        if self._amp.manager is not None:  # MindSpore's (loss, overflow, loss_scale)
            return scaled_step(scaler, self._amp.manager, optimizer, loss)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return net_outputs

    def _forward_loss(self, batch: Any) -> tuple[Any, Any]:
        """``(loss, net_outputs)`` of one batch (inside autocast when amp is on)."""
        if self._check_next_batch:
            result = checked_call(self._forward_loss_unchecked, batch)
            self._check_next_batch = False
            return result
        return self._forward_loss_unchecked(batch)

    def _forward_loss_unchecked(self, batch: Any) -> tuple[Any, Any]:
        if self._loss_fn is None:
            return extract_loss(call_network(self._network, batch))
        if type(batch) is tuple and len(batch) == 2:  # the common (x, y): no splitting
            loss = self._loss(self._network(batch[0]), batch[1])
            return loss, loss
        args, kwargs, label = split_batch(batch)
        loss = self._loss(self._network(*args, **kwargs), label)
        return loss, loss

    def _loss(self, y_pred: Any, label: Any) -> Any:
        """``loss_fn(y_pred, label)`` of a training step that is not run inline (RecModel
        overrides it to keep the predictions and labels for its windowed metrics)."""
        return self._loss_fn(y_pred, label)
