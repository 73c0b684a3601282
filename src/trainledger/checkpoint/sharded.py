"""Sharded checkpoints: ``torch.distributed.checkpoint``'s planner, safetensors and JSON only.

Why: under DDP or FSDP every rank can write its own part at once (``integrated_save=False``),
and DCP's planner knows which rank owns which chunk of which tensor (DTensor shards, replicated
DDP tensors written once) and how to reshard on load. DCP's own file format pickles its
metadata, which this project never reads back; so these storage classes keep DCP's planning
and write each rank's chunks as one safetensors file and the metadata as ``manifest.json``.

Layout: a directory named like a checkpoint file (``<prefix>-<epoch>_<step>.ckpt``) holding
``shard_<rank>.safetensors`` and ``manifest.json``. Every rank writes into
``.<name>.tmp/``; rank 0 writes the manifest last and renames the directory into place, so a
directory under the final name is always complete. Non-tensor state (optimizer
hyperparameters, epoch/step info) lives in the manifest as JSON (``encode_tree``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import warnings
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import (
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    TensorProperties,
    TensorStorageMetadata,
)
from torch.distributed.checkpoint.planner import (
    LoadPlan,
    LoadPlanner,
    SavePlan,
    SavePlanner,
    WriteItemType,
)
from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
from torch.futures import Future

from trainledger.checkpoint.torch_adapter import decode_tree, encode_tree, unwrap_network
from trainledger.errors import CheckpointFormatError
from trainledger.storage import SHARDED_MANIFEST, atomic_write, fsync_dir, remove_written

__all__ = [
    "FORMAT",
    "MANIFEST",
    "is_sharded_checkpoint",
    "load_distributed_checkpoint",
    "load_sharded",
    "full_state",
    "is_fsdp",
    "save_sharded",
]

FORMAT = "trainledger-sharded/1"
MANIFEST = SHARDED_MANIFEST


def is_sharded_checkpoint(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a complete sharded checkpoint (a directory with its manifest)."""
    return (Path(path) / MANIFEST).is_file()


def _key(index: MetadataIndex) -> str:
    offsets = ",".join(str(int(o)) for o in (index.offset or ()))
    return f"{index.fqn}@{offsets}"


def _rank() -> int:
    dist = torch.distributed
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


class _Writer(StorageWriter):
    """Each rank's planned chunks into ``shard_<rank>.safetensors``; the coordinator's
    ``finish`` writes the manifest from every rank's results."""

    def __init__(self, directory: Path, extra: dict[str, Any]) -> None:
        super().__init__()
        self.directory = directory
        self.extra = extra

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        return None

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        return plans

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future[list[WriteResult]]:
        from safetensors.torch import save

        name = f"shard_{_rank():05d}.safetensors"
        tensors: dict[str, torch.Tensor] = {}
        results = []
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                raise CheckpointFormatError(
                    f"a sharded checkpoint holds tensors only; {item.index.fqn!r} is not a "
                    "tensor (non-tensor state belongs in the manifest)"
                )
            data = planner.resolve_data(item)
            tensor = data.detach().to("cpu").contiguous()  # type: ignore[union-attr]
            key = _key(item.index)
            tensors[key] = tensor
            nbytes = tensor.numel() * tensor.element_size()
            results.append(WriteResult(item.index, nbytes, {"file": name, "key": key}))
        with atomic_write(self.directory / name) as fh:
            fh.write(save(tensors))
        future: Future[list[WriteResult]] = Future()
        future.set_result(results)
        return future

    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        where = {_key(r.index): r.storage_data for rank in results for r in rank}
        tensors: dict[str, Any] = {}
        for fqn, meta in metadata.state_dict_metadata.items():
            if not isinstance(meta, TensorStorageMetadata):
                raise CheckpointFormatError(f"{fqn!r}: only tensors can be stored in shards")
            chunks = []
            for chunk in meta.chunks:
                found = where[_key(MetadataIndex(fqn, chunk.offsets))]
                chunks.append({"offsets": list(chunk.offsets), "sizes": list(chunk.sizes), **found})
            dtype = str(meta.properties.dtype).removeprefix("torch.")
            tensors[fqn] = {"dtype": dtype, "size": list(meta.size), "chunks": chunks}
        manifest = {"format": FORMAT, "tensors": tensors, **self.extra}
        with atomic_write(self.directory / MANIFEST) as fh:
            fh.write(json.dumps(manifest).encode())

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return True

    def storage_meta(self) -> None:
        return None


class _Reader(StorageReader):
    """Reads the manifest back into DCP's metadata, and chunks from the shard files."""

    def __init__(self, directory: Path, manifest: Mapping[str, Any]) -> None:
        super().__init__()
        self.directory = directory
        self.manifest = manifest

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        return None

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        state: dict[str, Any] = {}
        storage: dict[MetadataIndex, dict[str, str]] = {}
        for fqn, entry in self.manifest["tensors"].items():
            chunks = []
            for chunk in entry["chunks"]:
                offsets = torch.Size(chunk["offsets"])
                chunks.append(ChunkStorageMetadata(offsets, torch.Size(chunk["sizes"])))
                storage[MetadataIndex(fqn, offsets)] = {"file": chunk["file"], "key": chunk["key"]}
            props = TensorProperties(dtype=getattr(torch, entry["dtype"]))
            state[fqn] = TensorStorageMetadata(props, torch.Size(entry["size"]), chunks)
        return Metadata(state_dict_metadata=state, storage_data=storage)

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *a: Any) -> None:
        self.storage = metadata.storage_data

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future[None]:
        from safetensors import safe_open

        by_file: dict[str, list[Any]] = defaultdict(list)
        for item in plan.items:
            by_file[self.storage[item.storage_index]["file"]].append(item)
        for name, items in by_file.items():
            with safe_open(str(self.directory / name), framework="pt") as shard:
                for item in items:
                    data = shard.get_tensor(self.storage[item.storage_index]["key"])
                    for dim, (start, length) in enumerate(
                        zip(item.storage_offsets, item.lengths, strict=True)
                    ):
                        data = data.narrow(dim, start, length)
                    target = planner.resolve_tensor(item).detach()
                    target.copy_(data)
                    planner.commit_tensor(item, target)
        future: Future[None] = Future()
        future.set_result(None)
        return future

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return True


def save_sharded(
    path: str | os.PathLike[str],
    network: torch.nn.Module,
    optimizer: Any = None,
    info: Mapping[str, Any] | None = None,
) -> Path:
    """Save ``network`` (and ``optimizer``) as a sharded checkpoint directory at ``path``.
    A collective: every rank calls it with the same ``path``. Returns ``path``."""
    final = Path(path)
    temp = final.with_name(f".{final.name}.tmp")
    rank = _rank()
    if rank == 0:
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir(parents=True)
    _barrier()
    tensors, tree = _flatten(network, optimizer)
    extra = {"state": tree, "info": dict(info or {})}
    with _one_process_is_fine():
        dcp.save(tensors, storage_writer=_Writer(temp, extra))
    if rank == 0:
        fsync_dir(temp)
        if final.exists():
            remove_written(final)  # objects the new version no longer has leave the store too
        os.replace(temp, final)
        fsync_dir(final.parent)
    _barrier()  # no rank goes on (or reads it) before it is complete under its name
    return final


def load_sharded(
    path: str | os.PathLike[str], network: torch.nn.Module, optimizer: Any = None
) -> dict[str, Any]:
    """Load a sharded checkpoint into ``network`` (and ``optimizer``), resharding to this
    job's world size when it differs. A collective under a process group. Returns the
    checkpoint's info."""
    from torch.distributed.checkpoint.state_dict import set_state_dict

    directory = Path(path)
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointFormatError(
            f"expected a sharded checkpoint directory with {MANIFEST}, received: {path} ({exc})"
        ) from exc
    if manifest.get("format") != FORMAT:
        raise CheckpointFormatError(
            f"expected format {FORMAT!r}, received: {manifest.get('format')!r} in {path}"
        )
    targets, _ = _flatten(network, optimizer)
    saved = manifest["tensors"]
    if set(targets) != set(saved):
        missing, extra = sorted(set(saved) - set(targets)), sorted(set(targets) - set(saved))
        raise CheckpointFormatError(
            f"{path} does not match this network/optimizer: in the checkpoint only "
            f"{missing[:5]}, in the network only {extra[:5]}"
        )
    with _one_process_is_fine():
        dcp.load(targets, storage_reader=_Reader(directory, manifest))
    state = manifest["state"]
    state["optimizer"] = decode_tree(state["optimizer"], targets)
    set_state_dict(
        network,
        optimizer if optimizer is not None else [],
        model_state_dict={k: targets[f"model/{k}"] for k in state["model"]},
        optim_state_dict=state["optimizer"] or {},
    )
    return dict(manifest.get("info") or {})


def _flatten(network: torch.nn.Module, optimizer: Any) -> tuple[dict[str, Any], Any]:
    """Every tensor of the network's and optimizer's state, named ``model/<fqn>`` and
    ``optimizer/<n>`` (DCP's names: DDP's ``module.`` removed, FSDP's DTensors as they are),
    and the JSON tree that puts them back together."""
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_sd, optim_sd = get_state_dict(network, optimizer if optimizer is not None else [])
    tensors: dict[str, Any] = {}
    for fqn, value in model_sd.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointFormatError(
                f"a sharded checkpoint expected tensors in the network's state, received "
                f"{type(value).__name__} for {fqn!r}"
            )
        tensors[f"model/{fqn}"] = value
    optim_tensors: list[tuple[str, torch.Tensor]] = []
    tree = encode_tree(optim_sd or None, optim_tensors, "optimizer/")
    tensors.update(optim_tensors)
    return tensors, {"model": list(model_sd), "optimizer": tree}


def is_fsdp(network: torch.nn.Module) -> bool:
    """Whether the network is sharded by FSDP (``fully_shard`` or ``FullyShardedDataParallel``):
    its full state then exists only after a gather in which every rank takes part. By module
    type, not by parameter type: after a forward FSDP leaves the root's parameters unsharded."""
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel

    kinds = (FSDPModule, FullyShardedDataParallel)
    return any(isinstance(module, kinds) for module in network.modules())


def full_state(network: torch.nn.Module, optimizer: Any) -> tuple[dict[str, Any], Any]:
    """The gathered full state of a sharded network and its optimizer (keyed by parameter
    names), on rank 0; empty elsewhere. A collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    opt = optimizer if optimizer is not None else []
    model_sd, optim_sd = get_state_dict(network, opt, options=options)
    return model_sd, (optim_sd if optimizer is not None else None)


def load_distributed_checkpoint(
    path: str | os.PathLike[str], network: torch.nn.Module, optimizer: Any = None
) -> dict[str, Any]:
    """Resume from either form ``ModelCheckpoint`` writes under torch.distributed: a sharded
    directory (``integrated_save=False``; every rank calls this) or a full-state file
    (``integrated_save=True``; loads on any world size). Returns the checkpoint's info."""
    if Path(path).is_dir():
        return load_sharded(path, network, optimizer)
    from trainledger.checkpoint.io import load_param_into_net, read_checkpoint

    ckpt = read_checkpoint(path)
    if ckpt.info.get("optimizer_keys") == "names" or is_fsdp(network):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

        set_state_dict(  # a gathered FSDP state, or a state into a sharded network
            network,
            optimizer if optimizer is not None else [],
            model_state_dict=ckpt.tensors,
            optim_state_dict=ckpt.optimizer_state or {},
            options=StateDictOptions(full_state_dict=True, strict=True),
        )
        return dict(ckpt.info)
    load_param_into_net(unwrap_network(network), ckpt.tensors, strict_load=True)
    if optimizer is not None:
        if ckpt.optimizer_state is None:
            raise CheckpointFormatError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(ckpt.optimizer_state)
    return dict(ckpt.info)


@contextlib.contextmanager
def _one_process_is_fine() -> Iterator[None]:
    """DCP warns when there is no process group; one process is a supported use here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _barrier() -> None:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
