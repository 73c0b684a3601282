"""What recording a network's weight digests at train begin costs (issue 53 item 1).

A network of ``--mib`` MiB of float32 weights (square linear layers) on the CPU. In
alternating paired rounds, one process run:

- ours: ``checkpoint.digests.network_digests`` (each tensor's constant check, its bytes'
  crc32c, dtype and shape: what ``TrainLineage`` records at train begin);
- the floor: the crc32c of the same bytes alone (``crc32c.crc32c`` over each tensor).

It prints seconds per GiB for each (median and range; the issue's budget is 0.3 s per GiB
on one core) and the ratio ours / floor. On a GPU the host copy of each tensor comes on top
(``bench/gpu.py`` measures the GPU paths).

    .venv/bin/python bench/digests.py [--mib 1024] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import crc32c
import torch
from torch import nn

from trainledger.checkpoint import network_digests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)  # (the budget is per core)
    side = 2048
    layers = max(1, args.mib * 2**20 // (side * side * 4))
    torch.manual_seed(0)
    net = nn.Sequential(*[nn.Linear(side, side) for _ in range(layers)])
    gib = sum(p.numel() * 4 for p in net.state_dict().values()) / 2**30

    def ours() -> None:
        network_digests(net)

    def floor() -> None:
        for tensor in net.state_dict().values():
            crc32c.crc32c(tensor.detach().reshape(-1).view(torch.uint8).numpy())

    found: dict[str, list[float]] = {"ours": [], "floor": []}
    for k in range(args.rounds):
        order = [("ours", ours), ("floor", floor)]
        for name, fn in order if k % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn()
            found[name].append((time.perf_counter() - start) / gib)
    print(f"{layers} layers of {side}x{side} float32, {gib:.2f} GiB, one thread")
    for name, values in found.items():
        print(
            f"{name}: {statistics.median(values):.3f} s/GiB [{min(values):.3f}-{max(values):.3f}]"
        )
    ratios = [o / f for o, f in zip(found["ours"], found["floor"], strict=True)]
    print(
        f"ratio ours / floor: {statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
    )


if __name__ == "__main__":
    main()
