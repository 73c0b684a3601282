"""``TrainStep``: one training step of ``Model`` (and ``RecModel``), in one object: the batch
to the network's device, the forward pass and the loss (inside autocast with amp), the backward
pass, the update (through a ``GradScaler`` with amp or a loss-scale manager), and the parts of
the CPU fast path.

Why one object: the step is the per-step hot path and the part the GPU work changes (host
syncs, pinned copies, loss scaling, compiled networks). Two paths sit side by side here: the
general one (``run``: any batch, amp, a GPU, a network that steps itself) and the CPU fast
path, whose parts (``inline_parts``: network, loss_fn, optimizer) ``StepLoop`` runs inline,
as a hand-written loop would, because a call per step is measurable there (``run/steploop.py``
says by how much). ``Model`` holds one; ``StepLoop`` is given it; nothing outside ``run/``
touches its parts. ``RecModel`` sets ``capture`` to keep each step's predictions and labels.
"""

from __future__ import annotations

from collections.abc import Callable
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

__all__ = ["InlineParts", "TrainStep"]

InlineParts = tuple[torch.nn.Module, Callable[[Any, Any], Any], Any]


class TrainStep:
    """The training step of one network, loss and optimizer."""

    def __init__(
        self,
        network: torch.nn.Module,
        loss_fn: Any,
        optimizer: Any,
        amp_level: str,
        loss_scale_manager: LossScaleManager | None,
        steps_itself: bool,
    ) -> None:
        self.network = network
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.amp_level = amp_level
        self.loss_scale_manager = loss_scale_manager
        self.steps_itself = steps_itself
        self.device = device_of(network)
        self.on_cpu = self.device.type == "cpu"
        self.amp = AmpPolicy(amp_level, self.device, loss_scale_manager)
        self.check_next_batch = True  # the run's first batch goes through checked_call
        # RecModel's windowed metrics: called with (predictions, label) of each general step
        self.capture: Callable[[Any, Any], None] | None = None

    def inline_parts(self) -> InlineParts | None:
        """What a plain CPU step needs, when ``StepLoop`` may run it inline: a loss_fn and an
        optimizer, no amp or loss scaling, and the run's first batch already checked."""
        if (
            self.on_cpu
            and self.loss_fn is not None
            and self.optimizer is not None
            and not self.amp.enabled
            and self.amp.scaler is None
            and not self.check_next_batch
        ):
            return self.network, self.loss_fn, self.optimizer
        return None

    def prepare(self) -> None:
        """Pick up the network's current device (it may have moved since the last run)."""
        device = device_of(self.network)
        if device != self.device:
            self.device = device
            self.on_cpu = device.type == "cpu"
            self.amp = AmpPolicy(self.amp_level, device, self.loss_scale_manager)
        self.check_next_batch = True

    def move(self, batch: Any) -> Any:
        """``batch`` with its tensors (and numpy arrays) on the network's device; a CUDA copy
        is non-blocking (from a pinned ``DataLoader`` it overlaps the previous step)."""
        if self.on_cpu and cpu_tensors_only(batch):  # the fast path: nothing to move
            return batch
        return to_device(batch, self.device, self.device.type == "cuda")

    def run(self, batch: Any) -> Any:
        """One optimisation step on a batch already on the device; returns ``net_outputs``
        (the loss tensor, the network's tuple whose first element is the loss, or with a
        loss-scale manager MindSpore's ``(loss, overflow, loss_scale)``)."""
        if self.steps_itself:
            return extract_loss(call_network(self.network, batch))[1]
        optimizer = self.optimizer
        # before the forward, as a hand loop: old gradients freed before new activations (faster
        # for small networks); no arguments (the optimizer's default), as a hand loop calls it: a
        # keyword argument costs ~0.7 µs a step through torch's wrappers of zero_grad
        optimizer.zero_grad()
        amp = self.amp
        if amp.enabled:
            with amp.autocast():
                loss, net_outputs = self._forward_loss(batch)
        else:
            loss, net_outputs = self._forward_loss(batch)
        scaler = amp.scaler
        if amp.manager is not None:  # MindSpore's (loss, overflow, loss_scale)
            return scaled_step(scaler, amp.manager, optimizer, loss)
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
        if self.check_next_batch:
            result = checked_call(self._forward_loss_unchecked, batch)
            self.check_next_batch = False
            return result
        return self._forward_loss_unchecked(batch)

    def _forward_loss_unchecked(self, batch: Any) -> tuple[Any, Any]:
        if self.loss_fn is None:
            return extract_loss(call_network(self.network, batch))
        if type(batch) is tuple and len(batch) == 2:  # the common (x, y): no splitting
            loss = self._loss(self.network(batch[0]), batch[1])
            return loss, loss
        args, kwargs, label = split_batch(batch)
        loss = self._loss(self.network(*args, **kwargs), label)
        return loss, loss

    def _loss(self, y_pred: Any, label: Any) -> Any:
        if self.capture is not None:
            self.capture(y_pred, label)
        return self.loss_fn(y_pred, label)
