"""What ``SummaryCollector`` saves during training for the loss landscape (``collect_landscape``).

At every step (``unit="step"``) or epoch end (``unit="epoch"``) listed in ``intervals``, the
network's weights (its ``state_dict``: parameters and buffers) go to
``{summary_dir}/ckpt_dir/<Network>_<n>_<unit>.ckpt`` (trainledger's safetensors container,
written on a background thread), and at the end of training
``{summary_dir}/ckpt_dir/train_metadata.json`` gets MindSpore's keys: ``epoch_group``
(``{"0": interval, ...}``), ``model_params_file_map`` (``{"<n>": path}``), ``step_per_epoch``,
``unit``, ``num_samples``, ``landscape_size``, ``create_landscape``. ``SummaryLandscape``
reads them back.

Disk cost: one weight snapshot per point of ``intervals``: the default intervals (steps 1..19)
keep 19 copies of the weights. ``collect_specified_data={"collect_landscape": None}`` turns
this off.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from trainledger.callbacks.collected_values import warn_once
from trainledger.checkpoint import is_fsdp, save_checkpoint, unwrap_network, wait_async_save
from trainledger.run import RunContext
from trainledger.storage import LANDSCAPE_DIR, LANDSCAPE_METADATA, atomic_write_bytes

__all__ = ["CKPT_DIR", "METADATA_FILE", "LandscapeSaver", "landscape_saver", "snapshot_name"]

logger = logging.getLogger("trainledger.summary")

CKPT_DIR = LANDSCAPE_DIR
METADATA_FILE = LANDSCAPE_METADATA


def snapshot_name(network: Any, number: int, unit: str) -> str:
    """MindSpore's snapshot file name: ``<Network>_<n>_<unit>.ckpt``."""
    return f"{type(network).__name__}_{number}_{unit}.ckpt"


class LandscapeSaver:
    """Saves the interval snapshots and the metadata of one ``collect_landscape`` setting."""

    def __init__(self, summary_dir: str, landscape: dict[str, Any]) -> None:
        self.unit: str = landscape.get("unit", "step")
        self._landscape = landscape
        self._intervals: list[list[int]] = [list(i) for i in landscape["intervals"]]
        self._points = frozenset(n for interval in self._intervals for n in interval)
        self.ckpt_dir = os.path.join(summary_dir, CKPT_DIR)
        self._files: dict[str, str] = {}
        self._step_per_epoch: int | None = None

    def step_end(self, run_context: RunContext) -> None:
        """At a training step's end (called on every step: a set lookup when nothing is due)."""
        if self.unit == "step":
            params = run_context.original_args()
            step = params.get("cur_step_num")
            if step in self._points and params.get("mode", "train") == "train":
                self._save(params, int(step))

    def epoch_end(self, run_context: RunContext) -> None:
        if self.unit == "epoch":
            params = run_context.original_args()
            epoch = params.get("cur_epoch_num")
            if epoch in self._points and params.get("mode", "train") == "train":
                self._save(params, int(epoch))

    def _save(self, params: Any, number: int) -> None:
        network = unwrap_network(params.get("network") or params.get("train_network"))
        if network is None or str(number) in self._files:
            return
        if is_fsdp(network):
            warn_once("collect_landscape: no snapshots of an FSDP network (sharded weights)")
            return
        path = os.path.join(self.ckpt_dir, snapshot_name(network, number, self.unit))
        try:
            save_checkpoint(network, path, async_save=True)
        except (OSError, TypeError, ValueError) as exc:  # no landscape, but the run goes on
            logger.error(
                "collect_landscape: saving the weights of %s %d failed: %s", self.unit, number, exc
            )
            return
        self._files[str(number)] = path

    def train_end(self, run_context: RunContext) -> None:
        """Write ``train_metadata.json`` (after the snapshots are on disk)."""
        params = run_context.original_args()
        if params.get("mode", "train") != "train":
            return
        wait_async_save()
        landscape = self._landscape
        data = {
            "epoch_group": {str(i): interval for i, interval in enumerate(self._intervals)},
            "model_params_file_map": dict(self._files),
            "step_per_epoch": params.get("batch_num"),
            "unit": self.unit,
            "num_samples": landscape.get("num_samples", 128),
            "landscape_size": landscape.get("landscape_size", 40),
            "create_landscape": landscape.get("create_landscape", {"train": True, "result": True}),
        }
        os.makedirs(self.ckpt_dir, exist_ok=True)
        path = os.path.join(self.ckpt_dir, METADATA_FILE)
        atomic_write_bytes(path, json.dumps(data).encode("utf-8"))
        missing = sorted(self._points - {int(n) for n in self._files})
        if missing:
            logger.warning(
                "collect_landscape: the run ended before %s %s of intervals; those landscapes "
                "cannot be made (set intervals within the run, or collect_landscape=None)",
                self.unit,
                missing,
            )


def landscape_saver(summary_dir: str, specified: dict[str, Any]) -> LandscapeSaver | None:
    """The saver of a collector's effective switches; None when ``collect_landscape`` is off."""
    landscape = specified.get("collect_landscape")
    return LandscapeSaver(summary_dir, landscape) if landscape else None
