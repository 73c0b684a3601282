"""The toy network, datasets and a recording callback shared by the run and callback tests."""

from __future__ import annotations

from typing import Any

import torch

from trainledger.run.callback import HOOKS, Callback, RunContext


def make_data(
    n: int = 48, batch: int = 8, seed: int = 0, label_features: int = 2
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Batches ``(x, y)`` of 4 features; ``y`` is whether the first ``label_features``
    features sum above 0."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen)
    y = (x[:, :label_features].sum(dim=1) > 0).long()
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def make_net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


class Recorder(Callback):
    """Records every new-name hook with a few cb_params fields."""

    def __init__(self, fields: tuple[str, ...] = ()) -> None:
        self.events: list[Any] = []
        self.fields = fields
        self.params: list[dict[str, Any]] = []

    def _record(self, hook: str, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.events.append(hook)
        self.params.append({k: cb.get(k) for k in self.fields})


def _make_hook(hook: str) -> Any:
    def method(self: Recorder, run_context: RunContext) -> None:
        self._record(hook, run_context)

    method.__name__ = hook
    return method


for _hook in HOOKS:
    setattr(Recorder, _hook, _make_hook(_hook))


class OldStyle(Callback):
    """A MindSpore 1.x callback: only the old names."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def begin(self, run_context: RunContext) -> None:
        self.events.append("begin")

    def epoch_begin(self, run_context: RunContext) -> None:
        self.events.append("epoch_begin")

    def step_begin(self, run_context: RunContext) -> None:
        self.events.append("step_begin")

    def step_end(self, run_context: RunContext) -> None:
        self.events.append("step_end")

    def epoch_end(self, run_context: RunContext) -> None:
        self.events.append("epoch_end")

    def end(self, run_context: RunContext) -> None:
        self.events.append("end")
