"""What ``TrainledgerCallback`` adds to a Lightning epoch (target: at most 3%).

A LightningModule around the MLP of ``bench/train_overhead.py`` (64-128-10, batch 64) that
logs its loss at every step (``self.log("loss", loss)``) and an accuracy in validation, fitted
for one epoch with Lightning's defaults for logging (``log_every_n_steps=50``), without and
with a ``pl.Callback()`` that does nothing (Lightning calls every hook of every callback, so
this is the floor any callback pays), and with ``TrainledgerCallback``, in one process. Each
round runs the three in a rotated order so machine noise hits all alike.

What is timed: Lightning's training epochs (two per fit), each from ``on_train_epoch_start``
to ``on_train_epoch_end`` of a timer callback placed after ours; that includes the validation
pass at the epoch's end, our evaluation lineage write (fsynced), the scalars, and our epoch
snapshot. The second epoch is the steady state (the target); the first also pays our
once-per-run work that happens inside it (opening the summary file, analysing the validation
dataset at the first evaluation) and is reported too. The rest of the fit (the start and end
lineage records, the HParams files, closing the summary) is reported apart, per run. Figures
are wall and process CPU time per epoch; the slowdown is the median of the paired rounds'
differences and the ratio of medians, each with a 95% bootstrap interval. torch runs on one
intra-op thread (``--threads``).

    .venv/bin/python bench/integrations_overhead.py [--steps 500] [--rounds 40] | cat
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_overhead import make  # noqa: E402  the same MLP as the training-loop benchmark

from trainledger.integrations.lightning import TrainledgerCallback  # noqa: E402
from trainledger.query import get_summary_lineage  # noqa: E402


class Lit(pl.LightningModule):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net, self.opt = make(hidden)
        self.loss_fn = nn.CrossEntropyLoss()

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = self.loss_fn(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("accuracy", (self.net(x).argmax(1) == y).float().mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.opt


class EpochTimer(pl.Callback):
    """Wall and process CPU time of each training epoch."""

    def __init__(self) -> None:
        self.elapsed: list[tuple[float, float]] = []

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.start = (time.perf_counter(), time.process_time())

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        wall, cpu = self.start
        self.elapsed.append((time.perf_counter() - wall, time.process_time() - cpu))


def run(
    train: DataLoader[Any], valid: DataLoader[Any], hidden: int, run_dir: Path | None | str
) -> tuple[float, ...]:
    """Epoch 2 wall and CPU s, epoch 1 wall and CPU s, CPU s of the rest of the fit.

    ``run_dir``: ours into that directory, None for no callback, "empty" for a
    ``pl.Callback()`` that does nothing (what Lightning's hook dispatch costs any callback)."""
    timer = EpochTimer()
    callbacks: list[pl.Callback] = [timer]
    if run_dir == "empty":
        callbacks.insert(0, pl.Callback())
    elif isinstance(run_dir, Path):
        callbacks.insert(0, TrainledgerCallback(run_dir))
    trainer = pl.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        accelerator="cpu",
        callbacks=callbacks,
    )
    torch.manual_seed(0)
    module = Lit(hidden)
    cpu = time.process_time()
    trainer.fit(module, train, valid)
    total = time.process_time() - cpu
    (wall1, cpu1), (wall2, cpu2) = timer.elapsed
    return wall2, cpu2, wall1, cpu1, total - cpu1 - cpu2


def _interval(base: np.ndarray, ours: np.ndarray, estimate: Any) -> tuple[float, float, float]:
    pick = np.random.default_rng(0).integers(0, len(base), (2000, len(base)))
    low, high = np.percentile([estimate(base[i], ours[i]) for i in pick], [2.5, 97.5])
    return estimate(base, ours), low, high


ESTIMATES = {
    "median of paired differences": lambda b, o: float(np.median(o - b) / np.median(b) * 100),
    "ratio of medians": lambda b, o: float((np.median(o) / np.median(b) - 1) * 100),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    n = args.steps * args.batch
    x, y = torch.randn(n, 64, generator=gen), torch.randint(0, 10, (n,), generator=gen)
    train = DataLoader(TensorDataset(x, y), batch_size=args.batch)
    valid = DataLoader(TensorDataset(x[: n // 10], y[: n // 10]), batch_size=args.batch)
    root = Path(tempfile.mkdtemp(prefix="tl-bench-lightning-"))
    try:
        run(train, valid, args.hidden, None)  # warm-up
        run(train, valid, args.hidden, root / "warm")
        base: list[tuple[float, ...]] = []
        empty: list[tuple[float, ...]] = []
        ours: list[tuple[float, ...]] = []
        for i in range(args.rounds):
            run_dir = root / f"r{i}"
            configs: list[tuple[Any, list[tuple[float, ...]]]] = [
                (None, base),
                ("empty", empty),
                (run_dir, ours),
            ]
            for where, into in configs[i % 3 :] + configs[: i % 3]:  # rotate the order
                into.append(run(train, valid, args.hidden, where))
            lineage = get_summary_lineage(str(run_dir))
            assert lineage["run"]["status"] == "finished", lineage["run"]
            assert lineage["run"]["total_steps"] == 2 * args.steps
            shutil.rmtree(run_dir)
        report(args, np.array(base), np.array(empty), np.array(ours))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(args: argparse.Namespace, base: np.ndarray, empty: np.ndarray, ours: np.ndarray) -> None:
    print(
        f"Lightning {pl.__version__}, MLP 64-{args.hidden}-10, batch {args.batch}, "
        f"{args.steps} steps + validation per epoch, 2 epochs per fit, {args.rounds} paired "
        f"rounds, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    print(f"  {'ms':40s} {'wall median':>11} {'(IQR)':>15} {'CPU median':>11} {'(IQR)':>15}")
    rows = (("epoch 2 (steady)", 0), ("epoch 1 (first)", 2))
    configs = (
        ("fit, no callback", base),
        ("+ empty pl.Callback", empty),
        ("+ TrainledgerCallback", ours),
    )
    for name, values in configs:
        for epoch, col in rows:
            wall, cpu = values[:, col] * 1e3, values[:, col + 1] * 1e3
            w25, w75 = np.percentile(wall, [25, 75])
            c25, c75 = np.percentile(cpu, [25, 75])
            print(
                f"  {name + ', ' + epoch:40s} {np.median(wall):11.1f} {w25:7.1f}-{w75:7.1f} "
                f"{np.median(cpu):11.1f} {c25:7.1f}-{c75:7.1f}"
            )
        print(f"  {name + ', rest of fit CPU':40s} {np.median(values[:, 4]) * 1e3:11.1f}")
    for epoch, col in rows:
        for kind, offset in (("wall", 0), ("CPU", 1)):
            print(f"  slowdown of {epoch}, {kind}, vs no callback (95% bootstrap interval):")
            for label, other in (("+ empty pl.Callback", empty), ("+ TrainledgerCallback", ours)):
                for name, estimate in ESTIMATES.items():
                    b, o = base[:, col + offset], other[:, col + offset]
                    value, low, high = _interval(b, o, estimate)
                    print(f"    {label:22s} {name:29s} {value:5.2f}%  ({low:.2f}% to {high:.2f}%)")


if __name__ == "__main__":
    main()
