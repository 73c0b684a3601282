"""Batch helpers: moving to the device without copying, splitting, describing."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
import torch

from trainledger.errors import DatasetError
from trainledger.run.batches import describe, split_batch, to_device
from trainledger.run.model import Model
from trainledger.run.outputs import extract_loss

CPU = torch.device("cpu")


def test_batch_on_device_is_returned_as_is() -> None:
    batch = (torch.zeros(2), torch.ones(2))
    assert to_device(batch, CPU) is batch
    listed = [torch.zeros(2)]
    assert to_device(listed, CPU) is listed


def test_numpy_becomes_tensor_and_containers_keep_their_type() -> None:
    Pair = namedtuple("Pair", "x y")
    moved = to_device(Pair(np.zeros(3, dtype=np.float32), torch.ones(1)), CPU)
    assert isinstance(moved, Pair) and isinstance(moved.x, torch.Tensor)
    moved_list = to_device([np.ones(2)], CPU)
    assert isinstance(moved_list, list) and isinstance(moved_list[0], torch.Tensor)
    moved_dict = to_device({"a": np.ones(2), "b": "text"}, CPU)
    assert isinstance(moved_dict["a"], torch.Tensor) and moved_dict["b"] == "text"


def test_split_batch() -> None:
    x, y = torch.zeros(2, 3), torch.zeros(2)
    assert split_batch((x, x, y)) == ((x, x), {}, y)
    args, kwargs, label = split_batch({"x": x, "labels": y})
    assert args == () and kwargs == {"x": x} and label is y
    with pytest.raises(DatasetError, match="at least 2 elements"):
        split_batch((x,))


def test_extract_loss_shapes() -> None:
    loss = torch.tensor(1.0)
    assert extract_loss(loss) == (loss, loss)
    out = extract_loss((loss, torch.zeros(2)))
    assert out[0] is loss and isinstance(out[1], tuple)
    assert extract_loss({"loss": loss})[0] is loss
    with pytest.raises(DatasetError, match="expected to return its loss"):
        extract_loss("nope")


def test_describe() -> None:
    text = describe((torch.zeros(2, 3), {"k": np.zeros(1, dtype=np.int64)}))
    assert (
        text
        == "tuple[Tensor(shape=(2, 3), dtype=float32), dict{'k': ndarray(shape=(1,), dtype=int64)}]"
    )


def test_a_cpu_models_batches_of_cpu_tensors_are_not_copied_and_others_are_moved() -> None:
    """``TrainStep.move``'s fast path: tuples, lists and dicts of CPU tensors are
    returned as they are (one check per item); anything else goes through ``to_device``."""
    net = torch.nn.Linear(2, 2)
    model = Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    x, y = torch.zeros(2), torch.ones(2)
    for batch in ((x, y), [x, y], {"x": x, "label": y}):
        assert model._step.move(batch) is batch
    for batch in ((np.zeros(2), y), [x, np.ones(2)], {"x": np.zeros(2), "label": y}):
        moved = model._step.move(batch)
        assert type(moved) is type(batch) and moved is not batch
        values = moved.values() if isinstance(moved, dict) else moved
        assert all(isinstance(v, torch.Tensor) for v in values)
    nested = {"inputs": (x, y), "label": y}  # a container inside: to_device looks into it
    assert model._step.move(nested) == nested
