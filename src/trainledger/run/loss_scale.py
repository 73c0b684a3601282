"""MindSpore's loss-scale managers, mapped onto torch's ``GradScaler``.

Why: a ported MindSpore script passes ``Model(..., loss_scale_manager=...)``; its semantics
(scale the loss, skip a step whose gradients overflowed, grow or shrink the scale) are exactly
what ``torch.amp.GradScaler`` does, so the managers only configure one:

* ``DynamicLossScaleManager(init_loss_scale, scale_factor, scale_window)``: growth factor =
  ``scale_factor``, backoff = ``1 / scale_factor``, growth interval = ``scale_window``; an
  overflowed step is skipped. (MindSpore never lets the scale fall below 1; torch's may.)
* ``FixedLossScaleManager(loss_scale, drop_overflow_update)``: a constant scale; an overflowed
  step is skipped when ``drop_overflow_update`` (the default), else applied as it is.

As in MindSpore's loss-scaled training cell, a step's ``net_outputs`` is then ``(loss,
overflow, loss_scale)``: three device tensors (no host read), the step's loss, whether its
gradients overflowed (bool), and the scale used for the next step.
"""

from __future__ import annotations

from typing import Any

import torch

from trainledger.values import check_positive_int

__all__ = ["DynamicLossScaleManager", "FixedLossScaleManager", "LossScaleManager", "scaled_step"]


class LossScaleManager:
    """Base of the two managers: builds the ``GradScaler`` of a run on a device."""

    drop_overflow_update = True
    fixed_scale: float | None = None

    def get_drop_overflow_update(self) -> bool:
        """Whether an overflowed step is skipped (MindSpore's name)."""
        return self.drop_overflow_update

    def get_loss_scale(self) -> float:
        """The initial (fixed: the constant) scale; the current one is ``net_outputs[2]``."""
        raise NotImplementedError

    def scaler(self, device: torch.device) -> Any:
        """A ``torch.amp.GradScaler`` for ``device`` that follows this manager."""
        raise NotImplementedError


def _check_scale(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} expected a number >= 1, received: {type(value).__name__}")
    if not value >= 1:
        raise ValueError(f"{name} expected a number >= 1, received: {value!r}")
    return float(value)


class FixedLossScaleManager(LossScaleManager):
    """A constant loss scale (MindSpore's defaults: 128, overflowed steps dropped)."""

    def __init__(self, loss_scale: float = 128.0, drop_overflow_update: bool = True) -> None:
        self.fixed_scale = _check_scale("loss_scale", loss_scale)
        if not isinstance(drop_overflow_update, bool):
            raise TypeError(
                "drop_overflow_update expected a bool, received: "
                f"{type(drop_overflow_update).__name__}"
            )
        self.drop_overflow_update = drop_overflow_update

    def get_loss_scale(self) -> float:
        return self.fixed_scale or 1.0

    def scaler(self, device: torch.device) -> Any:
        # growth and backoff never apply: scaled_step sets the constant back after each update
        return torch.amp.GradScaler(device.type, init_scale=self.get_loss_scale())


class DynamicLossScaleManager(LossScaleManager):
    """A scale that halves (``/ scale_factor``) on overflow and grows after ``scale_window``
    steps without one (MindSpore's defaults: 2**24, 2, 2000)."""

    def __init__(
        self, init_loss_scale: float = 2**24, scale_factor: int = 2, scale_window: int = 2000
    ) -> None:
        self.init_loss_scale = _check_scale("init_loss_scale", init_loss_scale)
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, (int, float)):
            raise TypeError(
                f"scale_factor expected a number > 1, received: {type(scale_factor).__name__}"
            )
        if not scale_factor > 1:
            raise ValueError(f"scale_factor expected a number > 1, received: {scale_factor!r}")
        self.scale_factor = scale_factor
        check_positive_int("scale_window", scale_window)
        self.scale_window = scale_window

    def get_loss_scale(self) -> float:
        return self.init_loss_scale

    def scaler(self, device: torch.device) -> Any:
        return torch.amp.GradScaler(
            device.type,
            init_scale=self.init_loss_scale,
            growth_factor=float(self.scale_factor),
            backoff_factor=1.0 / self.scale_factor,
            growth_interval=self.scale_window,
        )


def scaled_step(
    scaler: Any, manager: LossScaleManager, optimizer: Any, loss: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Backward, update and scale update of one step under ``manager``; returns
    ``(loss, overflow, scale)`` as device tensors, without reading any of them."""
    scaler.scale(loss).backward()
    if manager.drop_overflow_update:
        scaler.step(optimizer)  # skipped when the unscaled gradients hold an inf or a NaN
    else:
        scaler.unscale_(optimizer)
        optimizer.step()  # applied whatever the gradients hold
    # the per-device flags unscale_ left (torch keeps them until update: no public getter)
    found = scaler._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
    if found:
        overflow = torch.stack([v.to(loss.device) for v in found.values()]).sum() > 0
    else:  # no parameter had a gradient
        overflow = torch.zeros((), dtype=torch.bool, device=loss.device)
    if manager.fixed_scale is None:
        scaler.update()
    else:
        scaler.update(manager.fixed_scale)
    return loss.detach(), overflow, scaler._scale.detach().clone()
