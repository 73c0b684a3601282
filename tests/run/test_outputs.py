"""The one rule for "the loss of the outputs" (run.outputs), as a table."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from trainledger.errors import DatasetError
from trainledger.run import loss_value
from trainledger.run.outputs import extract_loss, loss_of

LOSS_TABLE: list[tuple[str, Any, float | None]] = [
    ("scalar tensor", torch.tensor(0.5), 0.5),
    ("one-element tensor", torch.tensor([0.25]), 0.25),
    ("non-scalar tensor: its mean", torch.tensor([1.0, 3.0]), 2.0),
    ("bfloat16 scalar", torch.tensor(1.5, dtype=torch.bfloat16), 1.5),
    ("tuple: the first element", (torch.tensor(0.75), torch.zeros(3)), 0.75),
    ("list: the first element, averaged", [torch.tensor([1.0, 2.0]), "pred"], 1.5),
    ("empty tuple", (), None),
    ("nested tuple: one level only, as MindSpore", ((torch.tensor(1.0),), 2), None),
    ("dict: its loss", {"loss": 0.25, "x": 1}, 0.25),
    ("dict without loss", {"logits": torch.tensor(1.0)}, None),
    ("object with a loss attribute", SimpleNamespace(loss=torch.tensor(2.0)), 2.0),
    ("python float", 0.75, 0.75),
    ("python int", 3, 3.0),
    ("numpy array: its mean", np.array([1.0, 2.0, 6.0]), 3.0),
    ("numpy scalar", np.float32(0.5), 0.5),
    ("None", None, None),
    ("bool is no loss", True, None),
    ("string is no loss", "loss", None),
    ("eval outputs (None loss first)", (None, torch.zeros(2), torch.zeros(2)), None),
]


@pytest.mark.parametrize(
    ("outputs", "expected"), [row[1:] for row in LOSS_TABLE], ids=[row[0] for row in LOSS_TABLE]
)
def test_loss_value_table(outputs: Any, expected: float | None) -> None:
    assert loss_value(outputs) == expected


def test_extract_loss_keeps_the_tuple_and_rejects_outputs_without_loss() -> None:
    loss = torch.tensor(1.0, requires_grad=True)
    assert extract_loss([loss, 2]) == (loss, (loss, 2))
    assert extract_loss(SimpleNamespace(loss=loss)) == (loss, loss)
    assert loss_of({"loss": loss}) is loss
    with pytest.raises(DatasetError, match=r"received: dict\{'logits'"):
        extract_loss({"logits": loss})
