"""One rule for what a monitor names and for a scalar from a value (``run.monitored_value``,
``values.scalar_of``): the table below is the rule, and ``EarlyStopping`` and
``ModelCheckpoint``'s best-N read exactly it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from trainledger.callbacks import EarlyStopping, ModelCheckpoint
from trainledger.checkpoint import CheckpointConfig
from trainledger.run import monitored_value
from trainledger.values import check_positive_int, scalar_of

LOSS = torch.tensor(0.25)
# (monitor, eval_results, net_outputs, expected)
MONITORED: list[tuple[str, Any, Any, float | None]] = [
    ("loss", None, LOSS, 0.25),
    ("loss", None, (LOSS, torch.zeros(3)), 0.25),  # a tuple: the loss is the first output
    ("loss", None, [torch.tensor([0.5, 1.5])], 1.0),  # a non-scalar loss is averaged
    ("loss", {"loss": 9.0}, LOSS, 0.25),  # "loss" is the training loss, not the evaluation's
    ("loss", None, {"loss": LOSS, "logits": torch.zeros(2)}, 0.25),
    ("loss", None, None, None),
    ("accuracy", {"accuracy": 0.75}, LOSS, 0.75),
    ("eval_accuracy", {"accuracy": torch.tensor(0.5)}, LOSS, 0.5),  # eval_x finds x
    ("eval_loss", {"eval_loss": np.float32(0.125)}, LOSS, 0.125),
    ("accuracy", {"accuracy": True}, LOSS, None),  # a bool is not a measurement
    ("accuracy", {"accuracy": [0.1, 0.2]}, LOSS, None),  # several values: none
    ("accuracy", {"accuracy": "n/a"}, LOSS, None),
    ("accuracy", None, {"accuracy": torch.tensor([0.875])}, 0.875),  # a dict output
    ("accuracy", {"f1": 0.3}, LOSS, None),
]


@pytest.mark.parametrize(("name", "evaluation", "outputs", "expected"), MONITORED)
def test_the_monitored_value_and_both_monitors_that_read_it(
    tmp_path: Any, name: str, evaluation: Any, outputs: Any, expected: float | None
) -> None:
    assert monitored_value(name, evaluation, outputs) == expected
    cb_params = {"eval_results": evaluation, "net_outputs": outputs}
    assert EarlyStopping(monitor=name).monitor_value(cb_params) == expected
    config = CheckpointConfig(monitor=name, keep_best_max=1)
    saver = ModelCheckpoint("m", str(tmp_path), config)
    assert saver._score(cb_params) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3.0),
        (2.5, 2.5),
        (np.float16(0.5), 0.5),
        (np.array([7]), 7.0),
        (torch.tensor(1.5, dtype=torch.bfloat16), 1.5),
        (torch.tensor([[2]]), 2.0),
        (True, None),
        (torch.tensor(True), None),
        (None, None),
        ("1.0", None),
        (torch.zeros(2), None),
        (object(), None),
    ],
)
def test_a_scalar_from_a_value(value: Any, expected: float | None) -> None:
    assert scalar_of(value) == expected


@pytest.mark.parametrize(
    ("value", "allow_none", "error"),
    [(0, False, ValueError), (-3, False, ValueError), (True, False, TypeError),
     (1.0, False, TypeError), ("2", False, TypeError), (None, False, TypeError),
     (None, True, None), (5, False, None)],
)  # fmt: skip
def test_positive_int_checks_split_type_and_range(
    value: Any, allow_none: bool, error: type[Exception] | None
) -> None:
    """MindSpore's split: a TypeError for the type, a ValueError for the range, naming the
    argument and what was received."""
    if error is None:
        check_positive_int("n", value, allow_none=allow_none)
        return
    with pytest.raises(error, match=r"n expected a positive int.*received: "):
        check_positive_int("n", value, allow_none=allow_none)
