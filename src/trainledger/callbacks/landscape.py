"""``SummaryLandscape``: MindSpore's loss-landscape generator, batched over grid points.

Training with ``SummaryCollector`` (``collect_landscape``, on by default) leaves weight
snapshots and ``ckpt_dir/train_metadata.json`` in the summary directory
(``callbacks/landscape_collect.py``). ``SummaryLandscape(summary_dir)
.gen_landscapes_with_multi_process(callback_fn)`` then makes, as MindSpore does:

* one "train" landscape per interval: the plane of the two principal directions of the
  interval's weight trajectory, the grid spanning the projected path plus 20 % on each side,
  the path kept with its losses;
* one "result" landscape around the last snapshot: two random filter-normalised directions,
  the grid over ``[-1, 1]`` on both axes (its centre, for an odd size, is the final weights);

each a ``landscape_size`` x ``landscape_size`` grid of the mean loss over the first
``num_samples`` samples of the dataset ``callback_fn()`` returns, written into the run's
summaries (``summary.landscape``; ``trainledger.summary.read_landscapes`` reads them back).

Differences from MindSpore, on purpose: many grid points per forward pass
(``callbacks/landscape_math.py``; memory per chunk bounded by ``memory_bytes``) instead of one
point per pass; the network runs in eval mode (MindSpore runs the training network: batch
statistics and dropout make a point's loss random); PCA directions are unit vectors (the path
coordinates are exact projections, where MindSpore rescales them and fits least squares);
``num_samples`` is honoured exactly (the last batch is cut) where MindSpore drops a partial
batch; ``metrics`` from ``callback_fn`` is not used (the loss is the model's loss function).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from trainledger.callbacks.landscape_collect import CKPT_DIR, METADATA_FILE
from trainledger.callbacks.landscape_inputs import check_metadata, first_samples, load_snapshot
from trainledger.callbacks.landscape_math import (
    DEFAULT_MEMORY_BYTES,
    LossGrid,
    pca_plane,
    random_plane,
)
from trainledger.callbacks.summary_options import check_landscape
from trainledger.run import to_device
from trainledger.storage import atomic_write_bytes, remove_written, writable_dir
from trainledger.summary import SummaryRecord

__all__ = ["SummaryLandscape"]

logger = logging.getLogger("trainledger.landscape")

_MARGIN = 0.2  # MindSpore's "proz": the train grid extends 20 % beyond the path
_RESULT_SPAN = 1.0  # MindSpore: proz * 5 on each side of the final weights


class SummaryLandscape:
    """Makes loss landscapes from what ``SummaryCollector`` saved under ``summary_dir``.

    Args:
        summary_dir: the summary directory of the training run.
        memory_bytes: memory for one chunk of grid points (their weights and activations)
            per device; 256 MiB by default.
        seed: seed of the result landscape's random directions (None: a fresh draw).
        show_progress: a progress bar on stderr (default: when stderr is a terminal).
    """

    def __init__(
        self,
        summary_dir: str | os.PathLike[str],
        *,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        seed: int | None = None,
        show_progress: bool | None = None,
    ) -> None:
        if not isinstance(summary_dir, (str, os.PathLike)):
            raise TypeError(
                f"summary_dir expected a str or path, received: {type(summary_dir).__name__}"
            )
        self._summary_dir = os.path.realpath(writable_dir(summary_dir, "summary_dir"))
        self._ckpt_dir = os.path.join(self._summary_dir, CKPT_DIR)
        self._memory = memory_bytes
        self._seed = seed
        self._progress = sys.stderr.isatty() if show_progress is None else show_progress

    def clean_ckpt(self) -> None:
        """Delete the weight snapshots and the metadata (``{summary_dir}/ckpt_dir``), from
        the object store too for a run in ``s3://``."""
        remove_written(self._ckpt_dir)

    def gen_landscapes_with_multi_process(
        self,
        callback_fn: Any,
        collect_landscape: dict[str, Any] | None = None,
        device_ids: list[int] | None = None,
        output: str | os.PathLike[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Make the landscapes ``train_metadata.json`` asks for and write them to ``output``
        (default: the summary directory); returns them (``read_landscapes``' dicts).

        ``callback_fn()`` returns ``(model, network, dataset, metrics)``: a ``Model`` (its
        ``loss_fn`` gives the loss), the network whose weights are varied, and the dataset
        whose first ``num_samples`` samples are evaluated. ``collect_landscape`` overrides
        the recorded settings (saved back to the metadata, as MindSpore does);
        ``device_ids`` spreads the grid over those CUDA devices.
        """
        if not callable(callback_fn):
            raise TypeError(
                f"callback_fn expected a callable, received: {type(callback_fn).__name__}"
            )
        devices = _devices(device_ids)
        data = self._metadata(collect_landscape)
        model, network, dataset, _metrics = callback_fn()
        if not isinstance(network, torch.nn.Module):
            raise TypeError(
                "callback_fn expected to return (model, network, dataset, metrics) with a "
                f"torch.nn.Module network, received: {type(network).__name__}"
            )
        home = next(network.parameters()).device
        batches = first_samples(dataset, int(data["num_samples"]), home)
        loss_fn = getattr(model, "loss_fn", None)
        size = int(data["landscape_size"])
        jobs = self._jobs(data)
        results = []
        total = sum(size * size + (len(e) if k == "train" else 0) for k, e in jobs)
        with _Progress(self._progress, total) as progress:
            for kind, epochs in jobs:
                snapshots = [load_snapshot(data, self._ckpt_dir, e) for e in epochs]
                names = [n for n, _ in network.named_parameters()]
                params = [{n: s[n].to(home) for n in names} for s in snapshots]
                buffers = {k: v.to(home) for k, v in snapshots[-1].items() if k not in names}
                grid = LossGrid(network, loss_fn, batches, buffers, self._memory)
                make = self._train if kind == "train" else self._result
                landscape = make(grid, params, size, devices, progress.advance)
                landscape.update(intervals=list(epochs), unit=data["unit"])
                landscape.update(step_per_epoch=data["step_per_epoch"])
                landscape["num_samples"] = data["num_samples"]
                results.append(landscape)
        self._write(results, output)
        return results

    # --- steps ----------------------------------------------------------------------------
    def _metadata(self, collect_landscape: dict[str, Any] | None) -> dict[str, Any]:
        path = os.path.join(self._ckpt_dir, METADATA_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"SummaryLandscape expected {path} (written by SummaryCollector with "
                "collect_landscape at the end of training), received: no such file"
            )
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if collect_landscape is not None:
            if not isinstance(collect_landscape, dict):
                raise TypeError(
                    "collect_landscape expected a dict or None, received: "
                    f"{type(collect_landscape).__name__}"
                )
            check_landscape(collect_landscape)
            data.update({k: v for k, v in collect_landscape.items() if k in data})
            if "intervals" in collect_landscape:
                groups = enumerate(collect_landscape["intervals"])
                data["epoch_group"] = {str(i): list(g) for i, g in groups}
            atomic_write_bytes(path, json.dumps(data).encode("utf-8"))
        check_metadata(data)
        return data

    @staticmethod
    def _jobs(data: dict[str, Any]) -> list[tuple[str, list[int]]]:
        groups = [list(g) for g in data["epoch_group"].values()]
        jobs = [("train", g) for g in groups] if data["create_landscape"].get("train") else []
        if data["create_landscape"].get("result") and groups:
            jobs.append(("result", [groups[-1][-1]]))
        return jobs

    def _train(
        self, grid: LossGrid, params: list[Any], size: int, devices: list[Any], advance: Any
    ) -> dict[str, Any]:
        d1, d2, coords, ratios = pca_plane(params)
        coords = coords.detach().cpu()  # the snapshots may be on the GPU; numpy needs the host
        axes = []
        for column in (coords[:, 0], coords[:, 1]):
            low, high = float(column.min()), float(column.max())
            span = (high - low) or 1.0
            axes.append(np.linspace(low - _MARGIN * span, high + _MARGIN * span, size))
        x, y = axes
        points = np.concatenate([_mesh(x, y), coords.numpy()])
        losses = _evaluate(grid, params[-1], d1, d2, points, devices, advance)
        path_z = losses[size * size :]
        return {
            "kind": "train",
            "decomposition": "PCA",
            "x": x,
            "y": y,
            "z": losses[: size * size].reshape(size, size),
            "path": {"x": coords[:, 0].tolist(), "y": coords[:, 1].tolist(), "z": path_z.tolist()},
            "convergence_point": [0.0, 0.0, float(path_z[-1])],
            "explained_variance": ratios,
        }

    def _result(
        self, grid: LossGrid, params: list[Any], size: int, devices: list[Any], advance: Any
    ) -> dict[str, Any]:
        generator = torch.Generator()
        generator.manual_seed(self._seed if self._seed is not None else torch.seed())
        final = params[-1]
        d1, d2 = random_plane({n: p.cpu() for n, p in final.items()}, generator)
        axis = np.linspace(-_RESULT_SPAN, _RESULT_SPAN, size)
        if size % 2:
            axis[size // 2] = 0.0  # the centre is the final weights exactly
        z = _evaluate(grid, final, d1, d2, _mesh(axis, axis), devices, advance)
        z = z.reshape(size, size)
        mid = size // 2
        return {
            "kind": "result",
            "decomposition": "Random",
            "x": axis,
            "y": axis.copy(),
            "z": z,
            "path": None,
            "convergence_point": [float(axis[mid]), float(axis[mid]), float(z[mid, mid])],
        }

    def _write(self, results: list[dict[str, Any]], output: Any) -> None:
        target = os.path.realpath(output) if output is not None else self._summary_dir
        with SummaryRecord(target) as record:
            for landscape in results:
                epochs = landscape["intervals"]
                span = [epochs[0], epochs[-1]] if landscape["kind"] == "train" else epochs
                record.add_value("landscape", f"landscape_{span}", landscape)
                record.record(0)


def _mesh(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Grid points ``(x[j], y[i])`` in row-major order of ``z[i, j]``."""
    xs, ys = np.meshgrid(x, y)
    return np.stack([xs.ravel(), ys.ravel()], axis=1)


def _devices(device_ids: Any) -> list[torch.device]:
    if device_ids is None:
        return []
    if (
        not isinstance(device_ids, list)
        or not device_ids
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in device_ids)
    ):
        raise TypeError(
            f"device_ids expected a non-empty list of device numbers, received: {device_ids!r}"
        )
    if not torch.cuda.is_available():
        logger.warning(
            "device_ids %s: no CUDA device here; the landscape is made on CPU", device_ids
        )
        return []
    count = torch.cuda.device_count()
    bad = [i for i in device_ids if i >= count]
    if bad:
        raise ValueError(f"device_ids expected numbers below {count}, received: {bad}")
    return [torch.device("cuda", i) for i in device_ids]


def _evaluate(
    grid: LossGrid,
    base: dict[str, torch.Tensor],
    d1: dict[str, torch.Tensor],
    d2: dict[str, torch.Tensor],
    points: np.ndarray,
    devices: list[torch.device],
    advance: Any,
) -> np.ndarray:
    """Losses at ``points`` (an ``(n, 2)`` array), on the grid's own device or shared
    between ``devices`` (one replica of the network per device, one thread each)."""
    coords = torch.from_numpy(points).float()
    if len(devices) <= 1:
        dev = devices[0] if devices else next(iter(base.values())).device
        grid = _on(grid, dev) if devices else grid
        b, v, w = _to(dev, base, d1, d2)
        return grid.losses(b, v, w, coords, advance).cpu().numpy()
    parts = np.array_split(np.arange(len(points)), len(devices))

    def run(index: int) -> torch.Tensor:
        dev = devices[index]
        replica = _on(grid, dev)
        part = coords[torch.from_numpy(parts[index])]
        b, v, w = _to(dev, base, d1, d2)
        return replica.losses(b, v, w, part, advance).cpu()

    with ThreadPoolExecutor(len(devices)) as pool:
        return torch.cat(list(pool.map(run, range(len(devices))))).numpy()


def _to(device: torch.device, *dicts: dict[str, torch.Tensor]) -> tuple[Any, ...]:
    return tuple({k: v.to(device) for k, v in d.items()} for d in dicts)


def _on(grid: LossGrid, device: torch.device) -> LossGrid:
    """A copy of ``grid`` with its network, batches and buffers on ``device``."""
    network = copy.deepcopy(grid.network).to(device)
    batches = [to_device(b, device) for b in grid.batches]
    (buffers,) = _to(device, grid.buffers)
    return LossGrid(network, grid.loss_fn, batches, buffers, grid.memory_bytes)


class _Progress:
    """A rich progress bar over grid points (nothing when off)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        if enabled:
            from rich.progress import Progress  # rich only when a bar is shown

            self._bar = Progress(transient=True)
            self._task = self._bar.add_task("loss landscape", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, count)
