"""TrainLineage/EvalLineage as MindInsight documents them, in a real ``Model.train``.

raise_exception=False logs bad arguments and lets training go on; a loss held inside a
WithLossCell-style wrapper is found; a list of batches counts samples and records the batch
size; a run without a checkpoint has model_size 0 (as MindSpore writes it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.callbacks._train import data
from tests.run.helpers import Recorder, make_net
from trainledger.callbacks.lineage import EvalLineage, TrainLineage
from trainledger.errors import LineageParamTypeError, LineageParamValueError
from trainledger.lineage.analyzers import loss_function_name
from trainledger.lineage.reader import read_lineage
from trainledger.query.lineage_api import filter_summary_lineage
from trainledger.run import Model


class WithLossCell(nn.Module):
    """MindSpore's WithLossCell: the backbone and the loss as submodules; returns the loss."""

    def __init__(self, backbone: nn.Module, loss: nn.Module) -> None:
        super().__init__()
        self._backbone = backbone
        self.loss_cell = loss  # a name the attribute lookup does not know

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.loss_cell(self._backbone(x), y)


class Outer(nn.Module):
    """One more wrapper level, as a TrainOneStepCell around a WithLossCell."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.network = inner

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.network(x, y)


class FocalLoss(nn.Module):  # a user loss that is not a torch _Loss
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(a, b)


def _train(callbacks: list[Any], net: nn.Module | None = None, batches: Any = None) -> Model:
    net = net or make_net(0)
    loss = None if isinstance(net, (WithLossCell, Outer)) else nn.CrossEntropyLoss()
    model = Model(net, loss, torch.optim.SGD(net.parameters(), lr=0.1))
    model.train(1, batches if batches is not None else data(32, 8), callbacks=callbacks)
    return model


@pytest.mark.parametrize("cls", [TrainLineage, EvalLineage])
def test_bad_summary_record_logs_and_training_goes_on(
    cls: type, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="trainledger.lineage"):
        cb = cls(42)
    assert cb.log_dir is None
    assert "SummaryRecord or a directory path" in caplog.text and "training goes on" in caplog.text
    steps = Recorder()
    _train([cb, steps])
    assert steps.events.count("on_train_step_end") == 4  # training went on to the end
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere we know of
    with pytest.raises(LineageParamTypeError, match="SummaryRecord or a directory path"):
        cls(42, raise_exception=True)


def test_bad_raise_exception_value_follows_its_truth(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(LineageParamTypeError, match="raise_exception expected a bool"):
        TrainLineage(tmp_path, raise_exception="yes")  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="trainledger.lineage"):
        cb = TrainLineage(tmp_path / "run", raise_exception=0)  # type: ignore[arg-type]
    assert "raise_exception expected a bool" in caplog.text
    assert cb.log_dir is None  # MindInsight stops validating at the first error too


@pytest.mark.parametrize(
    ("info", "error"), [({"a": [1]}, LineageParamTypeError), ({"a": 2**40}, LineageParamValueError)]
)
def test_bad_user_info_is_dropped_and_the_rest_recorded(
    tmp_path: Path, info: dict[str, Any], error: type, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="trainledger.lineage"):
        cb = TrainLineage(tmp_path, user_defined_info=info)
    assert "training goes on" in caplog.text
    _train([cb])
    lineage = read_lineage(tmp_path)
    assert lineage["hyper_parameters"]["optimizer"] == "SGD"
    assert not lineage.get("user_defined")
    with pytest.raises(error):
        TrainLineage(tmp_path, user_defined_info=info, raise_exception=True)


def test_loss_nested_in_wrappers_is_found(tmp_path: Path) -> None:
    net = Outer(WithLossCell(make_net(0), nn.CrossEntropyLoss()))
    _train([TrainLineage(tmp_path)], net=net)
    lineage = read_lineage(tmp_path)
    assert lineage["hyper_parameters"]["loss_function"] == "CrossEntropyLoss"
    assert lineage["algorithm"]["network"] == "Sequential"  # the backbone rule still holds


def test_user_loss_module_nested_is_found() -> None:
    assert loss_function_name(None, Outer(WithLossCell(make_net(0), FocalLoss()))) == "FocalLoss"
    assert loss_function_name(None, make_net(0)) is None  # no loss anywhere: none invented


def test_list_of_batches_counts_samples(tmp_path: Path) -> None:
    batches = data(30, 8)  # 8, 8, 8, 6 samples
    assert len(batches) == 4
    _train([TrainLineage(tmp_path / "run")], batches=batches)
    row = filter_summary_lineage(str(tmp_path))["object"][0]["model_lineage"]
    assert row["train_dataset_count"] == 30
    assert row["batch_size"] == 8


def test_run_without_checkpoint_has_model_size_zero(tmp_path: Path) -> None:
    _train([TrainLineage(tmp_path / "run")])
    row = filter_summary_lineage(str(tmp_path))["object"][0]["model_lineage"]
    assert row["model_size"] == 0
    assert filter_summary_lineage(str(tmp_path), {"model_size": {"eq": 0}})["count"] == 1
