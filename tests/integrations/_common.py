"""The native ``Model`` run the integration tests compare against: same network, optimizer,
data and hyper-parameters, recorded with TrainLineage + EvalLineage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainledger.callbacks import EvalLineage, TrainLineage
from trainledger.query import get_summary_lineage
from trainledger.run import Model

LR = 0.05
EPOCHS = 2
BATCH = 8
HPARAMS = {"lr": LR, "hidden": 8, "batch_size": BATCH}
#: the lineage fields an integration must give exactly as the native path does
SAME_FIELDS = ("hyper_parameters", "train_dataset", "valid_dataset")


class MLP(nn.Module):
    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def dataset(n: int, seed: int = 0) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def loaders() -> tuple[DataLoader[Any], DataLoader[Any]]:
    return DataLoader(dataset(48), batch_size=BATCH), DataLoader(dataset(16, 1), batch_size=BATCH)


def accuracy(net: nn.Module, loader: DataLoader[Any]) -> float:
    with torch.no_grad():
        hits = sum(int((net(x).argmax(1) == y).sum()) for x, y in loader)
    return hits / len(loader.dataset)  # type: ignore[arg-type]


def native_run(run_dir: Path) -> dict[str, Any]:
    """``get_summary_lineage`` of the native Model.fit run."""
    torch.manual_seed(0)
    net = MLP()
    model = Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=LR), metrics={"accuracy"}
    )
    train, valid = loaders()
    model.fit(
        EPOCHS,
        train,
        valid,
        callbacks=[TrainLineage(run_dir, user_defined_info=HPARAMS), EvalLineage(run_dir)],
    )
    return get_summary_lineage(str(run_dir))


def assert_same_lineage(ours: dict[str, Any], native: dict[str, Any]) -> None:
    """Same hyper-parameters, network and dataset fields; metrics under the same names."""
    for key in SAME_FIELDS:
        assert ours[key] == native[key], key
    assert ours["algorithm"]["network"] == native["algorithm"]["network"]
    assert isinstance(ours["algorithm"]["loss"], float)
    assert set(ours["metric"]) == set(native["metric"])
    assert ours["run"]["status"] == "finished"
