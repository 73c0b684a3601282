"""``SummaryLandscape``'s inputs: the metadata checks (MindSpore's), the weight snapshots and
the first ``num_samples`` samples of the dataset."""

from __future__ import annotations

import os
from typing import Any

import torch

from trainledger.callbacks.summary_options import check_landscape
from trainledger.checkpoint import load_checkpoint
from trainledger.run import to_device

__all__ = ["METADATA_KEYS", "check_metadata", "first_samples", "load_snapshot"]

METADATA_KEYS = (
    "epoch_group",
    "model_params_file_map",
    "step_per_epoch",
    "unit",
    "num_samples",
    "landscape_size",
    "create_landscape",
)


def check_metadata(data: Any) -> None:
    """``train_metadata.json`` as MindSpore's ``SummaryLandscape`` checks it: exactly its
    keys, every interval of at least 3 points, a snapshot for every point."""
    if not isinstance(data, dict):
        raise ValueError(f"train_metadata.json expected a JSON object, received: {data!r}")
    unknown = sorted(set(data) - set(METADATA_KEYS))
    missing = [k for k in METADATA_KEYS if k not in data]
    if unknown or missing:
        raise ValueError(
            f"train_metadata.json expected the keys {list(METADATA_KEYS)}, received unknown "
            f"{unknown} and missing {missing}"
        )
    files = data["model_params_file_map"]
    for epochs in data["epoch_group"].values():
        if not isinstance(epochs, list) or len(epochs) < 3:
            raise ValueError(
                f"train_metadata.json expected intervals of at least 3 points, received: {epochs}"
            )
        absent = [e for e in epochs if str(e) not in files]
        if absent:
            raise ValueError(
                f"train_metadata.json has no weight snapshot for {data['unit']} {absent} of the "
                f"interval {epochs} (the run ended before them?); pass collect_landscape="
                '{"intervals": [...]} with points the run reached'
            )
    step_per_epoch = data["step_per_epoch"]
    if step_per_epoch is not None and (
        isinstance(step_per_epoch, bool) or not isinstance(step_per_epoch, int)
    ):
        raise TypeError(
            f"train_metadata.json step_per_epoch expected an int, received: {step_per_epoch!r}"
        )
    create = data["create_landscape"]
    if not isinstance(create, dict) or set(create) != {"train", "result"}:
        raise ValueError(
            "train_metadata.json create_landscape expected the keys 'train' and 'result', "
            f"received: {create!r}"
        )
    check_landscape(
        {k: data[k] for k in ("landscape_size", "unit", "num_samples")}
        | {"create_landscape": create}
    )
    if data["num_samples"] <= 0:
        raise ValueError(
            f"num_samples expected a value greater than 0, received: {data['num_samples']}"
        )


def load_snapshot(data: dict[str, Any], ckpt_dir: str, number: int) -> dict[str, torch.Tensor]:
    """The tensors of the snapshot of step/epoch ``number``; found by file name in
    ``ckpt_dir`` when the recorded path moved with the run directory."""
    path = data["model_params_file_map"][str(number)]
    if not os.path.isfile(path):
        path = os.path.join(ckpt_dir, os.path.basename(path))
    loaded = load_checkpoint(path)
    return {k: v for k, v in loaded.items() if isinstance(v, torch.Tensor)}


def _cut(batch: Any, count: int) -> Any:
    """The first ``count`` samples of a batch (tensors sliced along their first dimension)."""
    if isinstance(batch, torch.Tensor):
        return batch[:count]
    if isinstance(batch, (tuple, list)):
        return type(batch)(_cut(b, count) for b in batch)
    if isinstance(batch, dict):
        return {k: _cut(v, count) for k, v in batch.items()}
    return batch


def _samples(batch: Any) -> int:
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() else 1
    if isinstance(batch, (tuple, list)) and batch:
        return _samples(batch[0])
    if isinstance(batch, dict) and batch:
        return _samples(next(iter(batch.values())))
    return 1


def first_samples(dataset: Any, num_samples: int, device: torch.device) -> list[Any]:
    """The batches holding the first ``num_samples`` samples (the last batch cut), on
    ``device``."""
    batches: list[Any] = []
    taken = 0
    for batch in dataset:
        batch = to_device(batch, device)
        count = _samples(batch)
        if taken + count > num_samples:
            batch = _cut(batch, num_samples - taken)
            count = num_samples - taken
        batches.append(batch)
        taken += count
        if taken >= num_samples:
            break
    if not batches:
        raise ValueError("the landscape dataset expected at least one batch, received none")
    return batches
