"""Overhead of ``RecModel.online_train`` (no callbacks) against a hand-written online loop.

Both consume the same stream (a generator over the same pre-built batches, so data loading is
not measured), train the same MLP from the same initial weights, one process run, rounds
interleaved (alternating who goes first) to spread machine noise evenly. Rates are steps per
second of process CPU time with one torch thread: on a machine shared with other work, wall
time mostly measures the scheduler. Prints best and median steps/s of each and the ratio
ours/theirs; the target is >= 0.95 (within 5%).

    .venv/bin/python bench/online_overhead.py [--steps 400] [--rounds 5] [--batch 256]

Run with stdout not a terminal (or ``| cat``): on a TTY ``online_train`` adds a progress bar,
which is not "no callbacks".
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator

import torch
from torch import nn

from trainledger.run.rec_model import RecModel

_clock = time.process_time  # CPU time of this process (see the docstring)


def make_batches(n: int, batch: int, features: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        x = torch.randn(batch, features, generator=g)
        out.append((x, (x[:, :4].sum(1) > 0).float()))
    return out


def make_net(features: int, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(features, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 1),
        nn.Flatten(0),
    )


Batch = tuple[torch.Tensor, torch.Tensor]


def stream(batches: list[Batch]) -> Iterator[Batch]:
    yield from batches  # one-shot, like a real stream


def hand_loop(batches: list[tuple[torch.Tensor, torch.Tensor]], features: int) -> float:
    net = make_net(features)
    loss_fn = nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    net.train()
    start = _clock()
    for x, y in stream(batches):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return len(batches) / (_clock() - start)


def online_train(batches: list[tuple[torch.Tensor, torch.Tensor]], features: int) -> float:
    net = make_net(features)
    model = RecModel(net, nn.BCEWithLogitsLoss(), torch.optim.SGD(net.parameters(), lr=0.01))
    start = _clock()
    model.online_train(stream(batches), callbacks=None)
    return len(batches) / (_clock() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--features", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)  # a shared 2-core machine: fewer scheduling surprises
    batches = make_batches(args.steps, args.batch, args.features)
    hand_loop(batches[:50], args.features)  # warm-up (allocator, kernels)
    online_train(batches[:50], args.features)
    ours, theirs = [], []
    for i in range(args.rounds):  # alternate who goes first: no order bias
        if i % 2:
            ours.append(online_train(batches, args.features))
            theirs.append(hand_loop(batches, args.features))
        else:
            theirs.append(hand_loop(batches, args.features))
            ours.append(online_train(batches, args.features))
    print(f"steps={args.steps} batch={args.batch} features={args.features} rounds={args.rounds}")
    print(f"{'':22}{'best':>10}{'median':>10}  steps/s")
    for name, runs in (("hand loop", theirs), ("online_train (none)", ours)):
        print(f"{name:22}{max(runs):10.1f}{statistics.median(runs):10.1f}")
    # best-of-N is the least disturbed by other load on a shared machine
    print(
        f"ratio ours/theirs     {max(ours) / max(theirs):10.3f}"
        f"{statistics.median(ours) / statistics.median(theirs):10.3f}  (target >= 0.95)"
    )


if __name__ == "__main__":
    main()
