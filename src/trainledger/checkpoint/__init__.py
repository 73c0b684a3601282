"""Checkpoints: safetensors container, atomic writes, retention, async writer, crypto, load.

Public names are re-exported lazily so ``import trainledger.checkpoint`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "CheckpointConfig": "trainledger.checkpoint.config",
    "CheckpointManager": "trainledger.checkpoint.manager",
    "Checkpoint": "trainledger.checkpoint.api",
    "checkpoint_info": "trainledger.checkpoint.api",
    "latest_checkpoint": "trainledger.checkpoint.api",
    "load_checkpoint": "trainledger.checkpoint.api",
    "load_param_into_net": "trainledger.checkpoint.api",
    "read_checkpoint": "trainledger.checkpoint.api",
    "save_checkpoint": "trainledger.checkpoint.api",
    "wait_async_save": "trainledger.checkpoint.api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'trainledger.checkpoint' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
