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
from trainledger.run import HostCopy, device_memory, device_of, loss_of, loss_value
from trainledger.summary import SummaryRecord

logger = logging.getLogger("trainledger.summary")

__all__ = [
    "add_device_stats",
    "add_metric",
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
    among them copied to the host together (``run.HostCopy``: one transfer per device and
    dtype, and on CUDA started by ``start`` without waiting for the device)."""

    def __init__(self) -> None:
        self.values: list[tuple[str, str, Any]] = []
        self._packed: list[tuple[list[str], torch.Tensor, DeviceBuckets]] = []
        self._copy: HostCopy | None = None
        self._on_device: list[int] = []

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        self.values.append((plugin, name, value))

    def add_buckets(self, names: list[str], packed: torch.Tensor, maker: DeviceBuckets) -> None:
        """Histograms ``names`` counted on the device (``DeviceBuckets.count``)."""
        self._packed.append((names, packed, maker))

    def start(self) -> None:
        """Start the device tensors' copy to the host (once; nothing can be added after)."""
        if self._copy is None:
            self._on_device = [
                i
                for i, (_, _, v) in enumerate(self.values)
                if isinstance(v, torch.Tensor) and not v.is_cpu
            ]
            tensors = [self.values[i][2] for i in self._on_device]
            self._copy = HostCopy(tensors + [packed for _, packed, _ in self._packed])

    def ready(self) -> bool:
        """Whether ``on_host`` would not wait for the device (``start`` first)."""
        return self._copy is not None and self._copy.ready()

    def on_host(self) -> list[tuple[str, str, Any]]:
        """The staged ``(plugin, name, value)``, device tensors replaced by host copies
        (waits for the copy still on its way)."""
        self.start()
        copies = self._copy.tensors()  # type: ignore[union-attr]
        on_device = self._on_device
        values = list(self.values)
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


def add_metric(
    params: Any, sink: ValueSink, loss_ok: bool, lr_group: dict[str, Any] | None
) -> tuple[bool, dict[str, Any] | None]:
    """Stage ``loss/auto`` (while ``loss_ok``), ``learning_rate/auto`` and online training's
    ``window/<name>``; return ``loss_ok`` (False once no loss was found, with a warning) and
    the optimizer's first parameter group, whose ``lr`` a scheduler updates in place (the
    collector's fast path reads it from there)."""
    if loss_ok:
        loss: Any = loss_of(params.get("net_outputs"))
        if isinstance(loss, torch.Tensor) and not loss.is_cpu:
            # read with the record's other values: float64, the dtype of the histograms'
            # buckets (run.HostCopy copies one tensor per dtype)
            loss = loss.detach().float().mean().double()
        else:
            loss = loss_value(params.get("net_outputs"))
        if loss is None:
            logger.warning("SummaryCollector found no loss in net_outputs; loss not collected")
            loss_ok = False
        else:
            sink.add_value("scalar", "loss/auto", loss)
    lr = lr_group.get("lr") if lr_group is not None else None
    if type(lr) is not float:  # a tensor lr, or the first step: the general path
        lr = learning_rate(params.get("optimizer"))
        groups = getattr(params.get("optimizer"), "param_groups", None)
        lr_group = groups[0] if groups else None
    if lr is not None:
        sink.add_value("scalar", "learning_rate/auto", lr)
    # RecModel.online_train's sliding-window metrics: an online epoch may never end, so
    # they are written with every collection rather than at epoch end.
    for name, value in (params.get("window_metrics") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            sink.add_value("scalar", f"window/{name}", float(value))
    return loss_ok, lr_group


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
