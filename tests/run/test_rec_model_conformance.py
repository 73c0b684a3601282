"""RecModel.online_train checks its sink arguments as MindSpore does, and fills batch_num.

Reference: the "sink_checks" of tests/golden/conformance/mindspore_checkpoints.json, MindSpore
2.10's own validators (``check_bool``, ``check_positive_int``) on the same values.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.run.helpers import Recorder
from trainledger.run.rec_model import RecModel

MS = json.loads(
    (
        Path(__file__).parents[1] / "golden" / "conformance" / "mindspore_checkpoints.json"
    ).read_text()
)


def _batches() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    while True:
        yield torch.randn(4, 3, generator=gen), torch.randn(4, 1, generator=gen)


def _model() -> RecModel:
    net = nn.Linear(3, 1)
    return RecModel(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))


@pytest.mark.parametrize("case", MS["sink_checks"]["dataset_sink_mode"], ids=str)
def test_dataset_sink_mode_must_be_a_bool(case: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        _model().online_train(_batches(), dataset_sink_mode=case["value"], max_steps=1)
    assert type(info.value).__name__ == case["error"]
    assert str(info.value).startswith(case["message"])  # MindSpore's sentence, then ours
    assert "dataset_sink_mode" in str(info.value)


@pytest.mark.parametrize("case", MS["sink_checks"]["sink_size"], ids=str)
def test_sink_size_in_sink_mode(case: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        _model().online_train(_batches(), sink_size=case["value"], max_steps=1)
    assert type(info.value).__name__ == case["error"]
    assert str(info.value).startswith(case["message"])
    assert "sink_size expected a positive int" in str(info.value)


def test_sink_size_unchecked_without_sink_mode() -> None:
    rec = Recorder(("cur_step_num",))
    _model().online_train(_batches(), callbacks=[rec], dataset_sink_mode=False, sink_size=0,
                          max_steps=2)  # fmt: skip
    assert rec.events.count("on_train_step_end") == 2  # as MindSpore: sink_size ignored


@pytest.mark.parametrize("sink", [False, True])
def test_batch_num_is_the_length_of_a_pass(sink: bool) -> None:
    rec = Recorder(("batch_num",))
    data = list(itertools.islice(_batches(), 5))
    _model().online_train(data, callbacks=[rec], dataset_sink_mode=sink, max_steps=7)
    assert {p["batch_num"] for p in rec.params} == {5}


def test_batch_num_of_a_stream_is_none() -> None:
    rec = Recorder(("batch_num",))
    _model().online_train(_batches(), callbacks=[rec], max_steps=3)
    assert {p["batch_num"] for p in rec.params} == {None}
