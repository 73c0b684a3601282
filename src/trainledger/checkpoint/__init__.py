"""Checkpoints: the safetensors container, save and load, retention, async writers, crypto.

* ``format``          the container (safetensors + our JSON header, crc32c), bytes only, no torch
* ``torch_adapter``   torch tensors and optimizer state <-> the container's raw tensors
* ``io``              MindSpore's ``save_checkpoint``, ``load_checkpoint``... for torch objects
* ``config``          ``CheckpointConfig``: when to save, what to keep, how to write
* ``policy``          pure decisions: save now? which files to delete?
* ``retention``       ``CheckpointManager``: applies the policy to the files of one prefix
* ``async_save``      synchronous, thread and process savers (training waits for a copy only)
* ``writer_process``  the process saver's child (``python -m``; no torch)
* ``crypto``          AES-GCM, or AES-CBC + HMAC, over the container bytes
* ``mindspore_ckpt``  MindSpore's protobuf ``.ckpt`` files, read (schema in ``proto/``)
* ``sharded``         sharded checkpoints under torch.distributed (DCP planner, safetensors)
* ``export``          one checkpoint (ours or MindSpore's) as a plain ``.safetensors`` file
* ``references``      ``load_checkpoint(base=)``'s named-model references, resolved by the
  registry the facade registers (``set_reference_resolver``)

Atomic writes and checkpoint file names come from ``trainledger.storage``; ``ModelCheckpoint``
lives in ``trainledger.callbacks``. Public names are re-exported lazily so
``import trainledger.checkpoint`` does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "file_digests": "trainledger.checkpoint.digests",
    "network_digests": "trainledger.checkpoint.digests",
    "take_loads": "trainledger.checkpoint.digests",
    "Checkpoint": "trainledger.checkpoint.io",
    "build_payload": "trainledger.checkpoint.io",
    "checkpoint_info": "trainledger.checkpoint.io",
    "latest_checkpoint": "trainledger.checkpoint.io",
    "load_checkpoint": "trainledger.checkpoint.io",
    "load_param_into_net": "trainledger.checkpoint.io",
    "read_checkpoint": "trainledger.checkpoint.io",
    "save_checkpoint": "trainledger.checkpoint.io",
    "wait_async_save": "trainledger.checkpoint.io",
    "SyncSaver": "trainledger.checkpoint.async_save",
    "make_saver": "trainledger.checkpoint.async_save",
    "CheckpointConfig": "trainledger.checkpoint.config",
    "export_safetensors": "trainledger.checkpoint.safetensors_export",
    "read_container": "trainledger.checkpoint.format",
    "read_info": "trainledger.checkpoint.format",
    "CheckpointManager": "trainledger.checkpoint.retention",
    "full_state": "trainledger.checkpoint.sharded",
    "is_fsdp": "trainledger.checkpoint.sharded",
    "is_sharded_checkpoint": "trainledger.checkpoint.sharded",
    "load_distributed_checkpoint": "trainledger.checkpoint.sharded",
    "save_sharded": "trainledger.checkpoint.sharded",
    "unwrap_network": "trainledger.checkpoint.torch_adapter",
    "next_free_prefix": "trainledger.checkpoint.retention",
    "resume_prefix": "trainledger.checkpoint.retention",
    "should_save": "trainledger.checkpoint.policy",
    "set_reference_resolver": "trainledger.checkpoint.references",
}

__all__ = [
    "file_digests",
    "network_digests",
    "take_loads",
    "build_payload",
    "Checkpoint",
    "checkpoint_info",
    "CheckpointConfig",
    "CheckpointManager",
    "full_state",
    "is_fsdp",
    "is_sharded_checkpoint",
    "load_distributed_checkpoint",
    "save_sharded",
    "unwrap_network",
    "export_safetensors",
    "latest_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "make_saver",
    "next_free_prefix",
    "read_checkpoint",
    "read_container",
    "read_info",
    "resume_prefix",
    "save_checkpoint",
    "set_reference_resolver",
    "should_save",
    "SyncSaver",
    "wait_async_save",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.checkpoint.async_save import SyncSaver, make_saver
    from trainledger.checkpoint.config import CheckpointConfig
    from trainledger.checkpoint.digests import file_digests, network_digests, take_loads
    from trainledger.checkpoint.format import read_container, read_info
    from trainledger.checkpoint.io import (
        Checkpoint,
        build_payload,
        checkpoint_info,
        latest_checkpoint,
        load_checkpoint,
        load_param_into_net,
        read_checkpoint,
        save_checkpoint,
        wait_async_save,
    )
    from trainledger.checkpoint.policy import should_save
    from trainledger.checkpoint.references import set_reference_resolver
    from trainledger.checkpoint.retention import CheckpointManager, next_free_prefix, resume_prefix
    from trainledger.checkpoint.safetensors_export import export_safetensors
    from trainledger.checkpoint.sharded import (
        full_state,
        is_fsdp,
        is_sharded_checkpoint,
        load_distributed_checkpoint,
        save_sharded,
    )
    from trainledger.checkpoint.torch_adapter import unwrap_network
