"""Pieces of ``SummaryCollector`` that need no collector state: reading deferred losses and
the learning rate from a step's cb_params, choosing the parameters for histograms, and staging
a collection's values so that the device ones reach the host in one copy."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import torch

from trainledger.callbacks.tensor_buckets import DeviceBuckets, cpu_buckets
from trainledger.checkpoint import unwrap_network
from trainledger.run import device_memory, device_of, to_host
from trainledger.summary import SummaryRecord

logger = logging.getLogger("trainledger.summary")

__all__ = [
    "add_device_stats",
    "add_histograms",
    "add_input_images",
    "learning_rate",
    "read_deferred",
    "record_staged",
    "select_parameters",
    "StagedValues",
    "ValueSink",
]


class ValueSink(Protocol):
    """What values are staged into: a ``SummaryRecord`` or a ``StagedValues``."""

    def add_value(self, plugin: str, name: str, value: Any) -> None: ...


class StagedValues:
    """A collection's values, held until ``on_host`` hands them over with every device tensor
    among them copied to the host by one ``run.to_host`` call (one device wait per record,
    instead of one per value)."""

    def __init__(self) -> None:
        self.values: list[tuple[str, str, Any]] = []
        self._packed: list[tuple[list[str], torch.Tensor, DeviceBuckets]] = []

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        self.values.append((plugin, name, value))

    def add_buckets(self, names: list[str], packed: torch.Tensor, maker: DeviceBuckets) -> None:
        """Histograms ``names`` counted on the device (``DeviceBuckets.count``)."""
        self._packed.append((names, packed, maker))

    def on_host(self) -> list[tuple[str, str, Any]]:
        """The staged ``(plugin, name, value)``, device tensors replaced by host copies."""
        on_device = [
            i
            for i, (_, _, v) in enumerate(self.values)
            if isinstance(v, torch.Tensor) and not v.is_cpu
        ]
        values = list(self.values)
        tensors = [values[i][2] for i in on_device] + [packed for _, packed, _ in self._packed]
        copies = to_host(tensors)
        singles, packed = copies[: len(on_device)], copies[len(on_device) :]
        for i, host in zip(on_device, singles, strict=True):
            values[i] = (values[i][0], values[i][1], host)
        for (names, _, maker), host in zip(self._packed, packed, strict=True):
            values += [("histogram", n, b) for n, b in zip(names, maker.unpack(host), strict=True)]
        return values


def read_deferred(rows: list[tuple[Any, ...]], column: int) -> list[tuple[Any, ...]]:
    """``rows`` with the scalar tensors in ``column`` read as floats, in one torch call
    (``stack(...).tolist()``, one device sync) instead of one ``.item()`` per step. Rows are
    transposed and rebuilt with ``zip`` (C speed): this runs once per 1024 training steps,
    between torch ops."""
    if not rows:
        return rows
    columns = list(zip(*rows, strict=True))
    values = columns[column]
    if set(map(type, values)) == {torch.Tensor}:
        try:
            columns[column] = tuple(torch.stack(values).float().tolist())
        except (RuntimeError, TypeError):  # mixed devices or dtypes: one by one
            columns[column] = tuple(float(t.float().item()) for t in values)
    else:
        columns[column] = tuple(
            float(v.float().item()) if isinstance(v, torch.Tensor) else v for v in values
        )
    return list(zip(*columns, strict=True))


def learning_rate(optimizer: Any) -> float | None:
    """The first parameter group's current ``lr`` (schedulers update it in place)."""
    groups = getattr(optimizer, "param_groups", None)
    if not groups or "lr" not in groups[0]:
        return None
    lr = groups[0]["lr"]
    try:
        return float(lr.item() if hasattr(lr, "item") else lr)
    except (TypeError, ValueError):
        return None


def select_parameters(
    named: Iterable[tuple[str, Any]], regular: str | None, default_count: int
) -> Iterator[tuple[str, Any]]:
    """Trainable parameters whose name matches ``regular`` (``re.match``, as MindSpore), or
    the first ``default_count`` when ``regular`` is None."""
    count = 0
    for name, param in named:
        if not getattr(param, "requires_grad", True):
            continue
        if regular is None:
            yield name, param
            count += 1
            if count == default_count:
                return
        elif re.match(regular, name):
            yield name, param


_HISTOGRAM_DEFAULT_COUNT = 5
_MAX_INPUT_IMAGES = 16


def add_histograms(
    params: Any, record: StagedValues, regular: str | None, maker: DeviceBuckets
) -> None:
    """Stage ``<param>/auto`` histograms of the network's parameters (see
    ``select_parameters``), bucketed where they live (``tensor_buckets``): those of a device
    in one go, without a host read. FSDP's sharded parameters are skipped: rank 0 holds only a
    shard, and gathering them would need every rank."""
    network = unwrap_network(params.get("network") or params.get("train_network"))
    named = getattr(network, "named_parameters", None)
    if named is None:
        return
    devices: dict[torch.device, list[tuple[str, torch.Tensor]]] = {}
    for name, param in select_parameters(named(), regular, _HISTOGRAM_DEFAULT_COUNT):
        if type(param).__name__ == "DTensor":
            warn_once("SummaryCollector: no histograms of FSDP's sharded parameters")
        elif param.is_cpu:
            record.add_value("histogram", f"{name}/auto", cpu_buckets(param, maker.bins))
        else:
            devices.setdefault(param.device, []).append((name, param))
    for members in devices.values():
        packed = maker.count([param for _, param in members])
        record.add_buckets([f"{name}/auto" for name, _ in members], packed, maker)


@functools.cache
def warn_once(message: str) -> None:
    """Log ``message`` once per process (a per-step condition must not flood the log)."""
    logger.warning(message)


def record_staged(staged: StagedValues, record: SummaryRecord) -> bool:
    """Add the staged values to ``record`` (device ones copied to the host together); False
    (with a warning) when the input images could not be recorded, so the collector stops."""
    images_ok = True
    for plugin, name, value in staged.on_host():
        try:
            record.add_value(plugin, name, value)
        except (TypeError, ValueError) as exc:
            if plugin != "image":
                raise
            logger.warning("SummaryCollector could not record input images (%s); disabled", exc)
            images_ok = False
    return images_ok


def add_device_stats(params: Any, record: ValueSink) -> bool:
    """Stage ``device/<stat>`` scalars of the network's CUDA device (``run.device_memory``);
    False (with a warning) when the network is not on one, so the collector stops trying."""
    network = unwrap_network(params.get("network") or params.get("train_network"))
    device = device_of(network) if isinstance(network, torch.nn.Module) else None
    stats = device_memory(device) if device is not None else None
    if stats is None:
        logger.warning(
            "SummaryCollector collects device stats of CUDA devices only; the network is on "
            "%s: device stats will not be collected",
            device,
        )
        return False
    for name, value in stats.items():
        record.add_value("scalar", f"device/{name}", value)
    return True


def add_input_images(params: Any, record: ValueSink) -> bool:
    """Stage the step's input images as ``input_data/auto``; False (with a warning) when the
    batch holds no images, so the collector stops trying (``record_staged`` warns too when
    the staged images cannot be encoded)."""
    batch = params.get("train_dataset_element")
    if isinstance(batch, (list, tuple)):
        batch = batch[0] if batch else None
    elif isinstance(batch, dict):
        batch = next(iter(batch.values()), None)
    shape = tuple(getattr(batch, "shape", ()))
    if batch is None or len(shape) != 4 or not (shape[1] in (1, 3) or shape[3] in (1, 3)):
        logger.warning(
            "SummaryCollector collects input data only for image batches (NCHW or NHWC with "
            "1 or 3 channels); received shape %s: input data will not be collected",
            shape,
        )
        return False
    record.add_value("image", "input_data/auto", batch[:_MAX_INPUT_IMAGES])
    return True
