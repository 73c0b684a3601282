"""The offline demo: a few small runs on scikit-learn's digits, then the lineage table.

Each run has its own function that builds its network, optimizer and callbacks;
``fit_and_score`` adds what every run records: checkpoints (``ModelCheckpoint``), summaries
and train/eval lineage (``SummaryCollector``) and the final score (``EvalLineage``). The table
printed at the end is not built from the rows the runs returned: it is the answer of
``filter_summary_lineage`` over the output directory, i.e. what a user gets back later.

The digits set (1,797 8x8 images of handwritten digits, 10 classes) ships inside
scikit-learn, so the demo needs no download. The whole demo takes seconds on 2 CPU cores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainledger.callbacks import (
    EarlyStopping,
    EvalLineage,
    History,
    ModelCheckpoint,
    SummaryCollector,
)
from trainledger.checkpoint import CheckpointConfig, latest_checkpoint, load_checkpoint
from trainledger.cli import cli_command, render_table
from trainledger.demos.dirs import next_run_dir
from trainledger.query import filter_summary_lineage, run_family
from trainledger.run import Callback, Model

__all__ = [
    "DigitsData",
    "load_digits_data",
    "print_lineage",
    "run_cnn_adam",
    "run_demo",
    "run_mlp_adam",
    "run_mlp_momentum",
    "run_mlp_sgd",
]

SEED = 0
METRICS = {"accuracy", "loss"}


@dataclass(frozen=True)
class DigitsData:
    """Train and test tensors of the digits set (pixels scaled to [0, 1])."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    def train_loader(self, batch_size: int, image: bool = False) -> DataLoader[Any]:
        x = self.x_train.view(-1, 1, 8, 8) if image else self.x_train
        gen = torch.Generator().manual_seed(SEED)
        return DataLoader(
            TensorDataset(x, self.y_train), batch_size=batch_size, shuffle=True, generator=gen
        )

    def test_loader(self, image: bool = False) -> DataLoader[Any]:
        x = self.x_test.view(-1, 1, 8, 8) if image else self.x_test
        return DataLoader(TensorDataset(x, self.y_test), batch_size=256)


def load_digits_data(test_fraction: float = 0.2) -> DigitsData:
    """The digits set, shuffled with a fixed seed and split into train and test."""
    from sklearn.datasets import load_digits  # the optional "demo" extra

    digits = load_digits()
    x = digits.data.astype(np.float32) / 16.0
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(y))
    x, y = x[order], y[order]
    n_test = int(len(y) * test_fraction)
    return DigitsData(
        x_train=torch.from_numpy(x[n_test:]),
        y_train=torch.from_numpy(y[n_test:]),
        x_test=torch.from_numpy(x[:n_test]),
        y_test=torch.from_numpy(y[:n_test]),
    )


class DigitsMLP(nn.Module):
    """A one-hidden-layer MLP over the 64 pixels (named, so lineage shows its class)."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class DigitsCNN(nn.Module):
    """A two-convolution CNN over the 1x8x8 images."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8x4x4
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * 4 * 4, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def mlp(hidden: int = 64) -> nn.Module:
    return DigitsMLP(hidden)


def cnn() -> nn.Module:
    return DigitsCNN()


def fit_and_score(
    *,
    run_dir: Path,
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: DigitsData,
    batch_size: int,
    epochs: int,
    callbacks: list[Callback],
    image: bool = False,
) -> dict[str, Any]:
    """Fit one run with checkpoints, summaries and lineage; return its table row."""
    model = Model(network, nn.CrossEntropyLoss(), optimizer, metrics=METRICS)
    history = next((cb for cb in callbacks if isinstance(cb, History)), None)
    train_loader = data.train_loader(batch_size, image)
    recorders: list[Callback] = [
        ModelCheckpoint(
            prefix=run_dir.name,
            directory=run_dir / "ckpt",
            config=CheckpointConfig(save_checkpoint_steps=len(train_loader), keep_checkpoint_max=2),
        ),
        SummaryCollector(
            run_dir,
            collect_freq=10,
            # sample images for the CNN runs; the MLP runs see flat pixel vectors
            collect_specified_data={"collect_input_data": image},
            custom_lineage_data={"arch": "cnn" if image else "mlp", "seed": SEED},
        ),
    ]
    model.fit(epochs, train_loader, data.test_loader(image), callbacks=recorders + callbacks)
    # The final score (after EarlyStopping may have restored the best weights) is what the
    # run's lineage reports.
    result = model.eval(data.test_loader(image), callbacks=[EvalLineage(run_dir)])
    return {
        "run_dir": str(run_dir),
        "optimizer": type(optimizer).__name__,
        "lr": optimizer.param_groups[0]["lr"],
        "batch": batch_size,
        "epochs": len(history.epoch) if history is not None else epochs,
        "accuracy": float(result["accuracy"]),
        "loss": float(result["loss"]),
    }


# --- the runs: one function each, so each can get its own collectors ----------------------
def run_mlp_sgd(out: Path, data: DigitsData) -> dict[str, Any]:
    torch.manual_seed(SEED)
    run_dir = next_run_dir(out, "mlp_sgd")
    net = mlp()
    callbacks: list[Callback] = [History()]
    return fit_and_score(
        run_dir=run_dir,
        network=net,
        optimizer=torch.optim.SGD(net.parameters(), lr=0.1),
        data=data,
        batch_size=32,
        epochs=8,
        callbacks=callbacks,
    )


def run_mlp_momentum(out: Path, data: DigitsData) -> dict[str, Any]:
    torch.manual_seed(SEED)
    run_dir = next_run_dir(out, "mlp_momentum")
    net = mlp()
    callbacks: list[Callback] = [History()]
    return fit_and_score(
        run_dir=run_dir,
        network=net,
        optimizer=torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9),
        data=data,
        batch_size=16,
        epochs=6,
        callbacks=callbacks,
    )


def run_mlp_adam(out: Path, data: DigitsData) -> dict[str, Any]:
    torch.manual_seed(SEED)
    run_dir = next_run_dir(out, "mlp_adam")
    net = mlp(hidden=128)
    callbacks: list[Callback] = [
        History(),
        EarlyStopping(monitor="eval_loss", patience=2, restore_best_weights=True),
    ]
    return fit_and_score(
        run_dir=run_dir,
        network=net,
        optimizer=torch.optim.Adam(net.parameters(), lr=0.001),
        data=data,
        batch_size=64,
        epochs=12,
        callbacks=callbacks,
    )


def run_cnn_adam(out: Path, data: DigitsData) -> dict[str, Any]:
    torch.manual_seed(SEED)
    run_dir = next_run_dir(out, "cnn_adam")
    net = cnn()
    callbacks: list[Callback] = [History()]
    return fit_and_score(
        run_dir=run_dir,
        network=net,
        optimizer=torch.optim.Adam(net.parameters(), lr=0.003),
        data=data,
        batch_size=32,
        epochs=6,
        callbacks=callbacks,
        image=True,
    )


def run_mlp_finetune(out: Path, data: DigitsData) -> dict[str, Any]:
    """A fine-tune: the newest ``mlp_sgd`` run's last checkpoint, trained on with Adam at a
    small learning rate. Nothing declares where it started: its family is found from the
    weights themselves (``trainledger family``)."""
    torch.manual_seed(SEED + 1)
    parent = max(out.glob("mlp_sgd*"), key=lambda p: p.stat().st_mtime)
    run_dir = next_run_dir(out, "mlp_finetune")
    net = mlp()
    start = latest_checkpoint(parent / "ckpt")
    if start is None:
        raise FileNotFoundError(f"the fine-tune expected a checkpoint in {parent / 'ckpt'}")
    load_checkpoint(start, net)
    return fit_and_score(
        run_dir=run_dir,
        network=net,
        optimizer=torch.optim.Adam(net.parameters(), lr=0.0005),
        data=data,
        batch_size=32,
        epochs=3,
        callbacks=[History()],
    )


RUNS: tuple[Callable[[Path, DigitsData], dict[str, Any]], ...] = (
    run_mlp_sgd,
    run_mlp_momentum,
    run_mlp_adam,
    run_cnn_adam,
    run_mlp_finetune,
)


def run_demo(out: Path, console: Console | None = None) -> list[dict[str, Any]]:
    """Train every demo run under ``out``, print the lineage table of ``out``, return the rows."""
    console = console if console is not None else Console()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_digits_data()
    console.print(
        f"digits: {len(data.y_train)} train / {len(data.y_test)} test images, "
        f"{len(RUNS)} runs -> {out}"
    )
    rows = []
    for run in RUNS:
        row = run(out, data)
        console.print(f"  {Path(row['run_dir']).name}: accuracy {row['accuracy']:.4f}")
        rows.append(row)
    print_lineage(out, console)
    print_family(out, Path(rows[-1]["run_dir"]).name, console)
    return rows


def print_family(out: Path, run: str, console: Console) -> None:
    """Where the fine-tune's weights came from, found from the weights themselves."""
    family: dict[str, Any] = run_family(str(out), run)
    for parent in family["ancestors"]:
        console.print(
            f"{run} started from {parent['run']} at step {parent['step']} "
            f"({parent['match']:.0%} of its weights), found from the weights themselves: "
            f"{cli_command()} family {out} {run}",
            soft_wrap=True,
        )


def print_lineage(out: Path, console: Console) -> None:
    """The lineage table of every run under ``out`` (best accuracy first), then how to browse."""
    result = filter_summary_lineage(
        str(out), {"sorted_name": "metric/accuracy", "sorted_type": "descending"}
    )
    render_table(result, console, title=f"lineage of the runs under {out}, best accuracy first")
    cmd = cli_command()  # as it can be typed here (the venv may not be activated)
    console.print(
        f"Query them again: {cmd} lineage {out} --where 'metric/accuracy > 0.9'\n"
        f"Browse them:      {cmd} ui {out}   then open http://127.0.0.1:8080/",
        soft_wrap=True,
    )
