"""amp_level on CPU: autocast to bfloat16 in forward, float32 parameters, training works."""

from __future__ import annotations

import pytest
import torch

from trainledger.run.amp import AmpPolicy
from trainledger.run.model import Model

from .helpers import make_data, make_net


class DtypeSpy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = make_net()
        self.dtypes: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        self.dtypes.append(out.dtype)
        return out


@pytest.mark.parametrize(
    ("level", "dtype"),
    [
        ("O0", torch.float32),
        ("O2", torch.bfloat16),
        ("O3", torch.bfloat16),
        ("auto", torch.bfloat16),
    ],
)
def test_amp_levels_on_cpu(level: str, dtype: torch.dtype) -> None:
    spy = DtypeSpy()
    model = Model(
        spy,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(spy.parameters(), lr=0.1),
        metrics={"acc", "loss"},
        amp_level=level,
    )
    data = make_data(n=32)
    model.train(2, data)
    assert set(spy.dtypes) == {dtype}
    assert spy.net[0].weight.dtype == torch.float32
    result = model.eval(data)
    assert 0.0 <= result["acc"] <= 1.0 and result["loss"] > 0


def test_policy_cpu_has_no_scaler() -> None:
    policy = AmpPolicy("O2", torch.device("cpu"))
    assert policy.enabled and policy.dtype == torch.bfloat16 and policy.scaler is None
    assert not AmpPolicy("O0", torch.device("cpu")).enabled
