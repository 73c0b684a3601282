"""Mixed precision for ``Model``: MindSpore's ``amp_level`` names mapped onto ``torch.autocast``.

=========  ======================================  =====================================
level      CPU                                     CUDA
=========  ======================================  =====================================
``O0``     full precision                          full precision
``O2``     autocast bfloat16                       autocast float16 + ``GradScaler``
``auto``   autocast bfloat16                       autocast float16 + ``GradScaler``
``O3``     autocast bfloat16                       autocast bfloat16 (no scaler needed)
=========  ======================================  =====================================

bfloat16 has float32's exponent range, so it needs no loss scaling; float16 on CUDA does.
A ``loss_scale_manager`` (``run/loss_scale.py``) replaces that scaler, at any level and on any
device, as MindSpore applies the manager it is given.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from trainledger.run.loss_scale import LossScaleManager

__all__ = ["AMP_LEVELS", "BOOST_LEVELS", "AmpPolicy"]

AMP_LEVELS = ("O0", "O1", "O2", "O3", "auto")
BOOST_LEVELS = ("O0", "O1", "O2")


class AmpPolicy:
    """Autocast context and optional gradient scaler for one device."""

    def __init__(
        self, level: str, device: torch.device, manager: LossScaleManager | None = None
    ) -> None:
        if level not in AMP_LEVELS:
            raise ValueError(
                f"amp_level expected one of {', '.join(AMP_LEVELS)}, received: {level!r}"
            )
        self.level = level
        self.device_type = device.type
        self.enabled = level != "O0"
        self.dtype: torch.dtype | None = None
        self.scaler: Any = None
        self.manager = manager
        if manager is not None:
            self.scaler = manager.scaler(device)
        if not self.enabled:
            return
        if device.type == "cuda" and level != "O3":
            self.dtype = torch.float16
            if manager is None:
                self.scaler = torch.amp.GradScaler("cuda")
        else:
            self.dtype = torch.bfloat16
        # O1 (MindSpore: fp16 for a white list of ops) is what autocast does already.

    def autocast(self) -> AbstractContextManager[Any]:
        """The context to run forward and loss in."""
        if not self.enabled:
            return nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)
